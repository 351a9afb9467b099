//===- AtomicFile.cpp - Write an output file atomically -------------------===//
#include "support/AtomicFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace tpcc;

bool tpcc::writeFileAtomically(llvm::StringRef path, llvm::StringRef contents, std::string &error) {
  return writeFileAtomically(
      path, [&](llvm::raw_ostream &os) { os << contents; }, error);
}

bool tpcc::writeFileAtomically(llvm::StringRef path,
                               llvm::function_ref<void(llvm::raw_ostream &)> write,
                               std::string &error) {
  llvm::SmallString<256> model(path);
  model += ".tmp-%%%%%%";
  int fd;
  llvm::SmallString<256> tmp;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(model, fd, tmp)) {
    error = ec.message();
    return false;
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    write(os);
    os.flush();
    if (os.has_error()) {
      error = os.error().message();
      os.clear_error();
      llvm::sys::fs::remove(tmp);
      return false;
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, path)) {
    error = ec.message();
    llvm::sys::fs::remove(tmp);
    return false;
  }
  return true;
}

bool tpcc::readFile(llvm::StringRef path, std::string &contents, std::string &error, size_t limit) {
  llvm::sys::fs::file_status st;
  if (std::error_code ec = llvm::sys::fs::status(path, st)) {
    error = ec.message();
    return false;
  }
  if (llvm::sys::fs::is_directory(st)) {
    error = "is a directory";
    return false;
  }
  if (st.getSize() > limit) {
    error = "file is larger than " + std::to_string(limit) + " bytes";
    return false;
  }
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf) {
    error = buf.getError().message();
    return false;
  }
  contents = (*buf)->getBuffer().str();
  return true;
}

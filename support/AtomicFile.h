//===- AtomicFile.h - Write an output file atomically ------------*- C++ -*-===//
#ifndef TPCC_SUPPORT_ATOMICFILE_H
#define TPCC_SUPPORT_ATOMICFILE_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"
#include <string>

namespace tpcc {

/// Writes `contents` to `path` through a temporary file in the same directory
/// and a rename, so readers never see a partly written file. On failure returns
/// false and sets `error`; `path` is then untouched.
bool writeFileAtomically(llvm::StringRef path, llvm::StringRef contents, std::string &error);

/// The same, for output written by `write` as it is produced (large outputs
/// need not be held in memory).
bool writeFileAtomically(llvm::StringRef path, llvm::function_ref<void(llvm::raw_ostream &)> write,
                         std::string &error);

/// Reads a whole file (at most `limit` bytes). Returns false and sets `error`
/// when it cannot be read or is larger than the limit.
bool readFile(llvm::StringRef path, std::string &contents, std::string &error, size_t limit);

} // namespace tpcc

#endif

//===- ImportLoader.cpp - Reading input files and their imports -----------===//
//
// Reads every input file and, depth first, every file it imports; lists the
// files so that each one comes after the files it imports. `import "name"`
// searches the -I directories, then the standard library; `import "./x.tpc"`
// (or "../", or an absolute path) is a path relative to the importing file.
// Importing a file twice is a no-op; an import cycle is an error at the
// `import` that closes it.
//
//===----------------------------------------------------------------------===//
#include "frontend/Frontend.h"
#include "support/AtomicFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace tpcc;

namespace {

class ImportLoader {
public:
  explicit ImportLoader(Compilation &c) : c(c) {}

  /// Loads a file named on the command line; I/O errors are failures.
  LogicalResult loadInput(const std::string &path) {
    std::string contents, error;
    if (!readFile(path, contents, error, c.options.maxFileSize)) {
      c.diags.emit(SourceRange(), diag::err_cannot_open_file, path, error);
      return failure();
    }
    ast::File *f = load(canonical(path), path, std::move(contents));
    if (f && std::find(c.inputs.begin(), c.inputs.end(), f) == c.inputs.end())
      c.inputs.push_back(f);
    return success();
  }

private:
  static std::string canonical(const std::string &path) {
    llvm::SmallString<256> real;
    if (!llvm::sys::fs::real_path(path, real))
      return std::string(real);
    llvm::SmallString<256> abs(path);
    llvm::sys::fs::make_absolute(abs);
    llvm::sys::path::remove_dots(abs, /*remove_dot_dot=*/true);
    return std::string(abs);
  }

  ast::File *load(const std::string &key, const std::string &displayName, std::string contents) {
    auto it = c.byPath.find(key);
    if (it != c.byPath.end())
      return it->second;
    unsigned errorsBefore = c.diags.getNumErrors();
    ast::File *f = parseBuffer(c, displayName, contents);
    f->path = key;
    c.byPath[key] = f;
    if (f->imports.empty() && f->decls.empty() && c.diags.getNumErrors() == errorsBefore)
      c.diags.emit(SourceLoc{f->bufferId, 0}, diag::err_empty_file, displayName);
    stack.push_back(f);
    for (ast::ImportDecl *imp : f->imports)
      loadImport(*f, *imp);
    stack.pop_back();
    c.files.push_back(f);
    return f;
  }

  void loadImport(ast::File &from, ast::ImportDecl &imp) {
    std::vector<std::string> searched;
    std::string found = resolve(from, imp.path, searched);
    if (found.empty()) {
      auto d = c.diags.emit(imp.pathRange, diag::err_import_not_found, imp.path);
      std::string list;
      for (const std::string &s : searched)
        list += (list.empty() ? "" : ", ") + s;
      d.note(imp.pathRange, diag::note_searched, list);
      return;
    }
    std::string key = canonical(found);
    for (size_t i = 0; i < stack.size(); ++i) {
      if (stack[i]->path != key)
        continue;
      std::string chain;
      for (size_t j = i; j < stack.size(); ++j)
        chain += c.sources.getName(stack[j]->bufferId).str() + " -> ";
      chain += c.sources.getName(stack[i]->bufferId).str();
      c.diags.emit(imp.getRange(), diag::err_import_cycle, chain);
      return;
    }
    if (c.byPath.count(key))
      return;
    std::string contents, error;
    if (!readFile(found, contents, error, c.options.maxFileSize)) {
      c.diags.emit(imp.pathRange, diag::err_cannot_open_file, found, error);
      return;
    }
    load(key, displayName(from, imp.path, found), std::move(contents));
  }

  /// A relative import prints relative to how its importer printed (so
  /// diagnostics in `dir/a.tpc` importing "./b.tpc" say `dir/b.tpc`).
  std::string displayName(const ast::File &from, llvm::StringRef spec,
                          const std::string &found) const {
    if (!(spec.startswith("./") || spec.startswith("../")))
      return found;
    llvm::SmallString<256> p(llvm::sys::path::parent_path(c.sources.getName(from.bufferId)));
    llvm::sys::path::append(p, spec);
    llvm::sys::path::remove_dots(p, /*remove_dot_dot=*/false);
    return std::string(p);
  }

  std::string resolve(const ast::File &from, const std::string &spec,
                      std::vector<std::string> &searched) {
    llvm::StringRef s(spec);
    bool isPath = s.startswith("./") || s.startswith("../") || llvm::sys::path::is_absolute(s);
    std::string name = spec;
    if (!llvm::sys::path::has_extension(s))
      name += ".tpc";
    auto exists = [](const llvm::Twine &p) {
      return llvm::sys::fs::exists(p) && !llvm::sys::fs::is_directory(p);
    };
    if (isPath) {
      llvm::SmallString<256> p;
      if (!llvm::sys::path::is_absolute(s)) {
        p = from.path.empty() ? llvm::StringRef(".") : llvm::sys::path::parent_path(from.path);
      }
      llvm::sys::path::append(p, spec);
      searched.push_back(std::string(p));
      return exists(p) ? std::string(p) : std::string();
    }
    std::vector<std::string> dirs = c.options.includeDirs;
    if (!c.options.stdlibDir.empty())
      dirs.push_back(c.options.stdlibDir);
    for (const std::string &dir : dirs) {
      llvm::SmallString<256> p(dir);
      llvm::sys::path::append(p, name);
      searched.push_back(dir);
      if (exists(p))
        return std::string(p);
    }
    return {};
  }

  Compilation &c;
  std::vector<ast::File *> stack;
};

} // namespace

LogicalResult tpcc::loadFiles(Compilation &c, const std::vector<std::string> &paths) {
  ImportLoader loader(c);
  bool ok = true;
  for (const std::string &p : paths)
    ok &= succeeded(loader.loadInput(p));
  return success(ok);
}

std::string tpcc::findStdlibDir(const char *argv0) {
  if (const char *env = std::getenv("TPCC_STDLIB"))
    return env;
  std::string exe =
      llvm::sys::fs::getMainExecutable(argv0, reinterpret_cast<void *>(&findStdlibDir));
  if (!exe.empty()) {
    llvm::SmallString<256> p(llvm::sys::path::parent_path(exe));
    llvm::sys::path::append(p, "..", TPCC_STDLIB_INSTALL_REL);
    llvm::sys::path::remove_dots(p, /*remove_dot_dot=*/true);
    if (llvm::sys::fs::is_directory(p))
      return std::string(p);
  }
  return TPCC_STDLIB_SOURCE_DIR;
}

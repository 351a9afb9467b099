//===- Frontend.h - Loading .tpc files into ASTs -----------------*- C++ -*-===//
//
// The frontend's public entry points. A `Compilation` owns the sources, the
// diagnostics engine and the AST of one run. `loadFiles` parses the inputs and,
// transitively, every file they import (search path: the importing file's
// directory for "./x" paths, then -I directories, then the built-in stdlib),
// and lists the files so that every file comes after the files it imports.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_FRONTEND_FRONTEND_H
#define TPCC_FRONTEND_FRONTEND_H

#include "frontend/AST.h"
#include "support/Diagnostics.h"
#include "support/LogicalResult.h"
#include "support/SourceManager.h"

#include <map>
#include <string>
#include <vector>

namespace tpcc {

struct FrontendOptions {
  std::vector<std::string> includeDirs; ///< -I, searched in order
  std::string stdlibDir;                ///< the built-in standard library
  size_t maxFileSize = 64u << 20;       ///< larger inputs are refused
  unsigned maxNesting = 256;            ///< brackets and `not`s, combined
};

class Compilation {
public:
  explicit Compilation(FrontendOptions opts = {}) : options(std::move(opts)), diags(sources) {}

  FrontendOptions options;
  SourceManager sources;
  DiagnosticEngine diags;
  ast::ASTContext astContext;
  /// Every parsed file, each after the files it imports.
  std::vector<ast::File *> files;
  /// The files named on the command line (a subset of `files`).
  std::vector<ast::File *> inputs;

  // Owned by the compilation; managed by the frontend.
  std::vector<std::unique_ptr<ast::File>> ownedFiles;
  std::map<std::string, ast::File *> byPath;
};

/// Parses `paths` and everything they import. Returns failure on I/O errors
/// (a path that cannot be read); syntax errors are only reported (the
/// diagnostics engine has them) so later stages can report more.
LogicalResult loadFiles(Compilation &c, const std::vector<std::string> &paths);

/// Parses one in-memory buffer (no imports are followed). For tests.
ast::File *parseBuffer(Compilation &c, llvm::StringRef name, llvm::StringRef text);

/// The standard library directory next to an installed or built binary
/// (`<exe>/../share/tpcc/stdlib`), else the source tree's `stdlib/`.
std::string findStdlibDir(const char *argv0);

/// Prints the AST of `file` (for `tpcc emit --emit=ast`).
void dumpAST(const SourceManager &sm, const ast::File &file, llvm::raw_ostream &os);

} // namespace tpcc

#endif

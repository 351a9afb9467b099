//===- Internal.h - Interfaces between the passes ----------------*- C++ -*-===//
//
// Not exported: the pieces `buildModule` (Passes.cpp) runs in order.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_PASSES_INTERNAL_H
#define TPCC_PASSES_INTERNAL_H

#include "frontend/Frontend.h"
#include "ir/TpcIR.h"

#include <map>
#include <string>
#include <vector>

namespace tpcc::passes {

/// Every top-level declaration of the compilation by name (one namespace
/// across all files; Rule 1 is checked when this is built).
struct TopLevelNames {
  std::map<std::string, ast::TopDecl *> decls;
  ast::TopDecl *lookup(llvm::StringRef name) const {
    auto it = decls.find(name.str());
    return it == decls.end() ? nullptr : it->second;
  }
  /// Names of declarations of one kind, for "did you mean" suggestions.
  std::vector<std::string> namesOfKind(ast::Node::Kind kind) const {
    std::vector<std::string> out;
    for (auto &[n, d] : decls)
      if (d->getKind() == kind)
        out.push_back(n);
    return out;
  }
};

/// A human-readable kind name ("a platform", "a recipe", ...), for messages.
const char *describeTopDecl(const ast::TopDecl &d);

/// Resolves one framework declaration (Rule 12 for op names, attributes and
/// input indices in weight slots).
ir::Framework checkFramework(Compilation &c, const ast::FrameworkDecl &decl);

/// Resolves one capabilities declaration against the already resolved
/// platforms and frameworks in `m` (Rules 2 and 12), starting from the
/// bindings of `parent`, the resolved capabilities it extends (if any).
ir::Capabilities checkCapabilities(Compilation &c, const ast::CapabilitiesDecl &decl,
                                   const TopLevelNames &names, const ir::Module &m,
                                   const ir::Capabilities *parent);

/// Rule 14: in a platform that some capabilities binds, an opset with options
/// that no binding covers never matches.
void checkNeverMatches(Compilation &c, const ir::Module &m);

} // namespace tpcc::passes

#endif

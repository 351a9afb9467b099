//===- Extends.h - Declarations that extend others --------------*- C++ -*-===//
//
// Platforms and recipes may `extends` another declaration of their kind; the
// parent must be resolved first, whatever the order of the files. This finds
// each declaration's parent (Rule 2 for an unknown name, a parent of the
// wrong kind, cycles) and visits them parent first.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_PASSES_EXTENDS_H
#define TPCC_PASSES_EXTENDS_H

#include "passes/Internal.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <vector>

namespace tpcc::passes {

struct ExtendsKind {
  ast::Node::Kind kind;    ///< what a parent must be
  const char *word;        ///< "platform": use of undefined platform `x`
  const char *withArticle; ///< "a platform": ... is expected here
  diag::Kind cycle;        ///< err_extends_cycle, err_recipe_extends_cycle
};

/// Calls `visit(decl, parent)` for every declaration of `decls` (all of kind
/// `kind.kind`, in declaration order) whose parent chain is sound, each after
/// its parent and otherwise in declaration order, so that diagnostics come out
/// close to reading order. `parent` returns the name after `extends`, if any.
/// A declaration whose parent is unknown, of the wrong kind, or on a cycle is
/// reported and skipped, and so is every declaration that extends it.
void visitByExtends(
    Compilation &c, const TopLevelNames &names, const std::vector<const ast::TopDecl *> &decls,
    const ExtendsKind &kind,
    llvm::function_ref<const std::optional<ast::Ident> &(const ast::TopDecl &)> parent,
    llvm::function_ref<void(const ast::TopDecl &decl, const ast::TopDecl *parent)> visit);

} // namespace tpcc::passes

#endif

//===- RecipeResolver.h - Recipe declarations to IR -------------*- C++ -*-===//
//
// A recipe is one field block (docs/language.md §8); `recipe X extends Y`
// starts from Y's resolved fields. Fields that force a choice the platform
// makes (`activation_bits`, `per_channel`, ...) are accepted with a warning.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_PASSES_RECIPERESOLVER_H
#define TPCC_PASSES_RECIPERESOLVER_H

#include "frontend/Frontend.h"
#include "ir/TpcIR.h"

namespace tpcc::passes {

/// Resolves `decl`; `parent` is its resolved parent recipe, if it has one.
ir::Recipe resolveRecipe(Compilation &c, const ast::RecipeDecl &decl, const ir::Recipe *parent);

} // namespace tpcc::passes

#endif

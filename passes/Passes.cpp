//===- Passes.cpp - The compile-time pipeline -----------------------------===//
//
// buildModule runs, in order:
//   1. top-level names across all files, imports first (Rule 1);
//   2. platforms, each after the platform it extends (PlatformResolver);
//   3. frameworks, then capabilities against the resolved platforms and
//      frameworks, each after the capabilities it extends (FrameworkChecker,
//      CapabilitiesChecker);
//   4. Rule 14 (opsets that never match);
//   5. recipes, each after the recipe it extends (RecipeResolver), and the
//      recipe each platform names as its default.
// Every declaration is checked, also one whose name is a redefinition, but
// only the first declaration of a name enters the module.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "passes/Extends.h"
#include "passes/Internal.h"
#include "passes/PlatformResolver.h"
#include "passes/RecipeResolver.h"

#include "llvm/Support/ErrorHandling.h"

#include <set>

using namespace tpcc;
using namespace tpcc::passes;

const char *passes::describeTopDecl(const ast::TopDecl &d) {
  switch (d.getKind()) {
  case ast::Node::Kind::PlatformDecl:
    return "a platform";
  case ast::Node::Kind::FrameworkDecl:
    return "a framework";
  case ast::Node::Kind::CapabilitiesDecl:
    return "a capabilities declaration";
  case ast::Node::Kind::RecipeDecl:
    return "a recipe";
  case ast::Node::Kind::IntLit:
  case ast::Node::Kind::FloatLit:
  case ast::Node::Kind::Pow2Lit:
  case ast::Node::Kind::StringLit:
  case ast::Node::Kind::BoolLit:
  case ast::Node::Kind::NoneLit:
  case ast::Node::Kind::InfLit:
  case ast::Node::Kind::Quantity:
  case ast::Node::Kind::NameValue:
  case ast::Node::Kind::BlockValue:
  case ast::Node::Kind::ListValue:
  case ast::Node::Kind::NamedOptions:
  case ast::Node::Kind::ListOptions:
  case ast::Node::Kind::ConcatOptions:
  case ast::Node::Kind::SetName:
  case ast::Node::Kind::SetUnion:
  case ast::Node::Kind::VersionItem:
  case ast::Node::Kind::TypeItem:
  case ast::Node::Kind::SimdPaddingItem:
  case ast::Node::Kind::MetadataItem:
  case ast::Node::Kind::PreservingQuantizersItem:
  case ast::Node::Kind::ResourcesItem:
  case ast::Node::Kind::RecipeItem:
  case ast::Node::Kind::AttrDecl:
  case ast::Node::Kind::ConfigDecl:
  case ast::Node::Kind::OptionsDecl:
  case ast::Node::Kind::DefaultDecl:
  case ast::Node::Kind::OpsetDecl:
  case ast::Node::Kind::GroupDecl:
  case ast::Node::Kind::FuseDecl:
  case ast::Node::Kind::WeightDecl:
  case ast::Node::Kind::OpListDecl:
  case ast::Node::Kind::RangeDecl:
  case ast::Node::Kind::CompositeDecl:
  case ast::Node::Kind::OrPred:
  case ast::Node::Kind::AndPred:
  case ast::Node::Kind::NotPred:
  case ast::Node::Kind::CmpPred:
  case ast::Node::Kind::InPred:
  case ast::Node::Kind::ConstPred:
  case ast::Node::Kind::HasPred:
  case ast::Node::Kind::AttrOperand:
  case ast::Node::Kind::InputOperand:
  case ast::Node::Kind::RankOperand:
  case ast::Node::Kind::ShapeOperand:
  case ast::Node::Kind::LiteralOperand:
  case ast::Node::Kind::ListOperand:
  case ast::Node::Kind::ImportDecl:
    return "a declaration";
  }
  llvm_unreachable("every node kind is handled");
}

namespace {

/// Every top-level declaration, in file order (imports first).
std::vector<const ast::TopDecl *> allDecls(const Compilation &c) {
  std::vector<const ast::TopDecl *> out;
  for (const ast::File *f : c.files)
    if (f)
      for (const ast::TopDecl *d : f->decls)
        if (d)
          out.push_back(d);
  return out;
}

/// Rule 1 across files: one namespace for all top-level names.
TopLevelNames collectNames(Compilation &c, const std::vector<const ast::TopDecl *> &decls) {
  TopLevelNames names;
  for (const ast::TopDecl *d : decls) {
    auto [it, fresh] = names.decls.emplace(d->name.name, const_cast<ast::TopDecl *>(d));
    if (!fresh)
      c.diags.emit(d->name.range, diag::err_redefinition, d->name.name)
          .note(it->second->name.range, diag::note_previous_definition);
  }
  return names;
}

std::vector<const ast::TopDecl *> declsOfKind(const std::vector<const ast::TopDecl *> &decls,
                                              ast::Node::Kind kind) {
  std::vector<const ast::TopDecl *> out;
  for (const ast::TopDecl *d : decls)
    if (d->getKind() == kind)
      out.push_back(d);
  return out;
}

template <typename T> const std::optional<ast::Ident> &parentName(const ast::TopDecl &d) {
  return llvm::cast<T>(d).parent;
}

void resolvePlatforms(Compilation &c, const TopLevelNames &names,
                      const std::vector<const ast::TopDecl *> &decls, ir::Module &m) {
  std::vector<const ast::TopDecl *> platforms = declsOfKind(decls, ast::Node::Kind::PlatformDecl);
  std::map<const ast::TopDecl *, PlatformResult> results;
  std::map<const ast::TopDecl *, std::vector<const ast::PlatformDecl *>> chains;
  visitByExtends(c, names, platforms,
                 {ast::Node::Kind::PlatformDecl, "platform", "a platform", diag::err_extends_cycle},
                 parentName<ast::PlatformDecl>,
                 [&](const ast::TopDecl &d, const ast::TopDecl *parent) {
                   std::vector<const ast::PlatformDecl *> chain;
                   if (parent)
                     chain = chains.at(parent);
                   chain.push_back(llvm::cast<ast::PlatformDecl>(&d));
                   chains.emplace(&d, chain);
                   results.emplace(&d, resolvePlatform(c, std::move(chain),
                                                       parent ? &results.at(parent) : nullptr));
                 });
  for (const ast::TopDecl *d : platforms) {
    auto it = results.find(d);
    if (it != results.end() && names.lookup(d->name.name) == d)
      m.platforms.push_back(std::move(it->second.platform));
  }
}

/// Resolves the declarations of kind `Decl` in `decls`, each after the one
/// it extends, with `resolve(decl, parent's result or null)`, and appends to
/// `out` the results of those that own their name (Rule 1).
template <typename Decl, typename Result, typename F>
void resolveExtending(Compilation &c, const TopLevelNames &names,
                      const std::vector<const ast::TopDecl *> &decls, const ExtendsKind &kind,
                      std::vector<Result> &out, F resolve) {
  std::vector<const ast::TopDecl *> own = declsOfKind(decls, kind.kind);
  std::map<const ast::TopDecl *, Result> results;
  visitByExtends(c, names, own, kind, parentName<Decl>,
                 [&](const ast::TopDecl &d, const ast::TopDecl *parent) {
                   results.emplace(
                       &d, resolve(llvm::cast<Decl>(d), parent ? &results.at(parent) : nullptr));
                 });
  for (const ast::TopDecl *d : own) {
    auto it = results.find(d);
    if (it != results.end() && names.lookup(d->name.name) == d)
      out.push_back(it->second);
  }
}

void resolveRecipes(Compilation &c, const TopLevelNames &names,
                    const std::vector<const ast::TopDecl *> &decls, ir::Module &m) {
  resolveExtending<ast::RecipeDecl>(
      c, names, decls,
      {ast::Node::Kind::RecipeDecl, "recipe", "a recipe", diag::err_recipe_extends_cycle},
      m.recipes, [&](const ast::RecipeDecl &d, const ir::Recipe *parent) {
        return resolveRecipe(c, d, parent);
      });
}

void resolveCapabilities(Compilation &c, const TopLevelNames &names,
                         const std::vector<const ast::TopDecl *> &decls, ir::Module &m) {
  resolveExtending<ast::CapabilitiesDecl>(
      c, names, decls,
      {ast::Node::Kind::CapabilitiesDecl, "capabilities", "a capabilities declaration",
       diag::err_caps_extends_cycle},
      m.capabilities, [&](const ast::CapabilitiesDecl &d, const ir::Capabilities *parent) {
        return checkCapabilities(c, d, names, m, parent);
      });
}

/// Each platform's `recipe NAME` names a recipe (checked once where it is
/// written: a child inherits its parent's item).
void checkPlatformRecipes(Compilation &c, const TopLevelNames &names, ir::Module &m) {
  std::set<SourceLoc> checked;
  for (ir::Platform &p : m.platforms) {
    if (!p.recipe)
      continue;
    const ast::TopDecl *d = names.lookup(*p.recipe);
    bool ok = d && d->getKind() == ast::Node::Kind::RecipeDecl;
    if (!ok && checked.insert(p.recipeLoc.begin).second) {
      if (!d)
        c.diags.emit(p.recipeLoc, diag::err_undefined, "recipe", *p.recipe,
                     didYouMean(*p.recipe, names.namesOfKind(ast::Node::Kind::RecipeDecl)));
      else
        c.diags.emit(p.recipeLoc, diag::err_wrong_kind, *p.recipe, describeTopDecl(*d), "a recipe")
            .note(d->name.range, diag::note_declared_here, *p.recipe);
    }
    if (!ok)
      p.recipe.reset();
  }
}

} // namespace

ir::Module tpcc::buildModule(Compilation &c) {
  std::vector<const ast::TopDecl *> decls = allDecls(c);
  TopLevelNames names = collectNames(c, decls);
  ir::Module m;

  resolvePlatforms(c, names, decls, m);

  for (const ast::TopDecl *d : declsOfKind(decls, ast::Node::Kind::FrameworkDecl)) {
    ir::Framework f = checkFramework(c, llvm::cast<ast::FrameworkDecl>(*d));
    if (names.lookup(d->name.name) == d)
      m.frameworks.push_back(std::move(f));
  }
  resolveCapabilities(c, names, decls, m);
  checkNeverMatches(c, m);

  resolveRecipes(c, names, decls, m);
  checkPlatformRecipes(c, names, m);
  return m;
}

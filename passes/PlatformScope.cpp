//===- PlatformScope.cpp - What a platform and its parents define ---------===//
#include "passes/PlatformScope.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace tpcc;
using namespace tpcc::passes;

const char *passes::describeDefKind(DefKind k) {
  switch (k) {
  case DefKind::Attr:
    return "an attr";
  case DefKind::Config:
    return "a config";
  case DefKind::Options:
    return "an options declaration";
  case DefKind::Opset:
    return "an opset";
  case DefKind::Group:
    return "a group";
  }
  return "a definition";
}

std::vector<std::string> PlatformScope::visibleNames(unsigned level,
                                                     llvm::ArrayRef<DefKind> kinds) const {
  std::vector<std::string> out;
  for (const auto &[name, def] : defs) {
    auto first = firstLevel.find(name);
    if (first == firstLevel.end() || first->second > level)
      continue;
    if (llvm::is_contained(kinds, def.kind))
      out.push_back(name);
  }
  return out;
}

namespace {

/// Adds the items of one platform of the chain to the scope.
class LevelBuilder {
public:
  LevelBuilder(Compilation &c, PlatformScope &s, unsigned level)
      : c(c), s(s), level(level), platform(*s.chain[level]) {}

  void run() {
    for (const ast::PlatformItem *item : platform.items) {
      if (!item)
        continue;
      if (auto *v = llvm::dyn_cast<ast::VersionItem>(item))
        setProperty(s.version, v, versionHere, "version");
      else if (auto *t = llvm::dyn_cast<ast::TypeItem>(item))
        setProperty(s.type, t, typeHere, "type");
      else if (auto *p = llvm::dyn_cast<ast::SimdPaddingItem>(item))
        setProperty(s.simdPadding, p, simdHere, "simd_padding");
      else if (auto *m = llvm::dyn_cast<ast::MetadataItem>(item))
        setProperty(s.metadata, m, metadataHere, "metadata");
      else if (auto *q = llvm::dyn_cast<ast::PreservingQuantizersItem>(item))
        setProperty(s.preservingQuantizers, q, preservingHere, "insert_preserving_quantizers");
      else if (auto *a = llvm::dyn_cast<ast::AttrDecl>(item))
        define(a->name, DefKind::Attr, *item);
      else if (auto *cf = llvm::dyn_cast<ast::ConfigDecl>(item))
        define(cf->name, DefKind::Config, *item);
      else if (auto *o = llvm::dyn_cast<ast::OptionsDecl>(item))
        define(o->name, DefKind::Options, *item);
      else if (auto *op = llvm::dyn_cast<ast::OpsetDecl>(item))
        for (const ast::Ident &n : op->names)
          define(n, DefKind::Opset, *item);
      else if (auto *g = llvm::dyn_cast<ast::GroupDecl>(item))
        define(g->name, DefKind::Group, *item);
      else if (auto *d = llvm::dyn_cast<ast::DefaultDecl>(item))
        setDefault(*d);
      else if (auto *f = llvm::dyn_cast<ast::FuseDecl>(item))
        (f->isRemove ? s.removes : s.fuses).push_back({f, level});
      else if (auto *r = llvm::dyn_cast<ast::ResourcesItem>(item))
        addResources(*r);
      else if (auto *rc = llvm::dyn_cast<ast::RecipeItem>(item))
        setProperty(s.recipe, rc, recipeHere, "recipe");
    }
  }

private:
  /// "which parent platform `p` does not define", for err_override_missing.
  std::string missingInParent() const {
    if (level == 0)
      return fmt::format("no parent platform defines (platform `{}` extends "
                         "no platform)",
                         platform.name.name);
    return fmt::format("parent platform `{}` does not define", s.chain[level - 1]->name.name);
  }

  void define(const ast::Ident &name, DefKind kind, const ast::PlatformItem &item) {
    // `super` names what an override replaces (the resolver).
    if (name.name == "super") {
      c.diags.emit(name.range, diag::err_super_defined);
      return;
    }
    auto [first, fresh] = namesHere.emplace(name.name, &name);
    if (!fresh) {
      c.diags.emit(name.range, diag::err_redefinition, name.name)
          .note(first->second->range, diag::note_previous_definition);
      return;
    }
    ScopeDef def{kind, &item, &name, level};
    auto it = s.defs.find(name.name);
    if (it == s.defs.end()) {
      if (item.isOverride)
        c.diags.emit(name.range, diag::err_override_missing, name.name, missingInParent());
      s.defs.emplace(name.name, def);
      s.firstLevel.emplace(name.name, level);
      if (kind == DefKind::Opset)
        s.opsetOrder.push_back(name.name);
      return;
    }
    // `name` is inherited: only `override` may replace it.
    ScopeDef &prev = it->second;
    const std::string &owner = s.chain[prev.level]->name.name;
    if (!item.isOverride) {
      c.diags.emit(name.range, diag::err_parent_defines, name.name, owner)
          .note(prev.name->range, diag::note_previous_definition);
      // Of another kind, the child's definition is rejected: the inherited
      // definitions that use the name expect the parent's kind.
      if (prev.kind != kind)
        return;
    } else if (prev.kind != kind) {
      c.diags
          .emit(name.range, diag::err_override_missing, name.name,
                fmt::format("parent platform `{}` defines as {}, not as {}", owner,
                            describeDefKind(prev.kind), describeDefKind(kind)))
          .note(prev.name->range, diag::note_previous_definition);
      // Keep the parent's definition: the inherited definitions that use
      // the name expect its kind, and would otherwise all report errors
      // that only repeat this one.
      return;
    }
    // The child's definition is the one in effect.
    if (prev.kind == DefKind::Opset && kind != DefKind::Opset)
      s.opsetOrder.erase(std::find(s.opsetOrder.begin(), s.opsetOrder.end(), name.name));
    else if (prev.kind != DefKind::Opset && kind == DefKind::Opset)
      s.opsetOrder.push_back(name.name);
    s.replaced.insert_or_assign({name.name, level}, prev);
    prev = def;
  }

  void setDefault(const ast::DefaultDecl &d) {
    if (defaultHere) {
      c.diags.emit(d.getRange(), diag::err_redefinition, "default")
          .note(defaultHere->getRange(), diag::note_previous_definition);
      return;
    }
    defaultHere = &d;
    if (s.defaultDecl) {
      if (!d.isOverride)
        c.diags
            .emit(d.getRange(), diag::err_parent_defines, "default",
                  s.chain[s.defaultDecl->level]->name.name)
            .note(s.defaultDecl->decl->getRange(), diag::note_previous_definition);
    } else if (d.isOverride) {
      c.diags.emit(d.getRange(), diag::err_override_missing, "default", missingInParent());
    }
    s.defaultDecl = AtLevel<ast::DefaultDecl>{&d, level};
  }

  /// One `resources` block per platform; a child's adds to its parent's.
  void addResources(const ast::ResourcesItem &r) {
    // At the keyword: the blocks may span many lines.
    auto keyword = [](const ast::ResourcesItem &i) {
      SourceLoc end = i.getLoc();
      end.offset += sizeof("resources") - 1;
      return SourceRange(i.getLoc(), end);
    };
    if (resourcesHere) {
      c.diags.emit(keyword(r), diag::err_redefinition, "resources")
          .note(keyword(*resourcesHere), diag::note_previous_definition);
      return;
    }
    resourcesHere = &r;
    s.resources.push_back({&r, level});
  }

  /// `version`, `type`, ...: a child replaces the parent's without `override`.
  template <typename T>
  void setProperty(const T *&slot, const T *item, const T *&here, const char *word) {
    if (here) {
      c.diags.emit(item->getRange(), diag::err_redefinition, word)
          .note(here->getRange(), diag::note_previous_definition);
      return;
    }
    here = item;
    slot = item;
  }

  Compilation &c;
  PlatformScope &s;
  unsigned level;
  const ast::PlatformDecl &platform;
  std::map<std::string, const ast::Ident *> namesHere;
  const ast::DefaultDecl *defaultHere = nullptr;
  const ast::VersionItem *versionHere = nullptr;
  const ast::TypeItem *typeHere = nullptr;
  const ast::SimdPaddingItem *simdHere = nullptr;
  const ast::MetadataItem *metadataHere = nullptr;
  const ast::PreservingQuantizersItem *preservingHere = nullptr;
  const ast::ResourcesItem *resourcesHere = nullptr;
  const ast::RecipeItem *recipeHere = nullptr;
};

} // namespace

PlatformScope passes::buildPlatformScope(Compilation &c,
                                         std::vector<const ast::PlatformDecl *> chain) {
  PlatformScope s;
  s.chain = std::move(chain);
  for (unsigned level = 0; level < s.chain.size(); ++level)
    LevelBuilder(c, s, level).run();
  return s;
}

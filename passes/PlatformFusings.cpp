//===- PlatformFusings.cpp - Groups and fusing patterns -------------------===//
//
// Every fusing element (an opset, a group, or an inline `(A | B)`) expands to
// the opset names it accepts, in the order written (kept for MCT's groups),
// and sorted. Two patterns are equal when they
// have the same length and the same sets element by element (`as` names and
// `with` configs do not count). A pattern's `with CONFIG` is evaluated in the
// platform's scope, like any config reference (late binding). The pattern list of a platform is its
// parents' patterns minus those its `remove fuse` lines delete, then its own (Rules 6, 15).
//
//===----------------------------------------------------------------------===//
#include "passes/PlatformResolverImpl.h"

using namespace tpcc;
using namespace tpcc::passes;

namespace {

const ExpectedKind groupKind{{DefKind::Group}, "group", "a group"};
const ExpectedKind setKind{
    {DefKind::Opset, DefKind::Group}, "opset or group", "an opset or a group"};

using Pattern = std::vector<std::vector<std::string>>;

/// An element as written: `Conv`, `(AnyReLU|Swish)`.
std::string spell(const ast::SetExpr *e) {
  if (auto *n = llvm::dyn_cast_or_null<ast::SetName>(e))
    return n->name.name;
  std::string s = "(";
  if (auto *u = llvm::dyn_cast_or_null<ast::SetUnion>(e))
    for (size_t i = 0; i < u->members.size(); ++i)
      s += (i ? "|" : "") + spell(u->members[i]);
  return s + ")";
}

/// The `as` name, else the elements as written joined by "->".
std::string fusingName(const ast::FuseDecl &f) {
  if (f.asName)
    return f.asName->name;
  std::string s;
  for (size_t i = 0; i < f.elements.size(); ++i)
    s += (i ? "->" : "") + spell(f.elements[i]);
  return s;
}

} // namespace

const std::vector<std::string> *PlatformResolver::lookupGroup(const ast::Ident &name) {
  const ScopeDef *def = resolveRef(name, groupKind);
  if (!def)
    return nullptr;
  return evaluate(groups, name, *def, [&]() -> std::optional<std::vector<std::string>> {
    std::vector<std::string> members;
    bool ok = true;
    for (const ast::SetExpr *m : llvm::cast<ast::GroupDecl>(def->item)->members)
      ok &= m && expandSet(*m, members);
    if (!ok)
      return std::nullopt;
    return members;
  });
}

bool PlatformResolver::expandSet(const ast::SetExpr &e, std::vector<std::string> &out) {
  auto add = [&](const std::string &name) {
    if (!llvm::is_contained(out, name))
      out.push_back(name);
  };
  if (auto *n = llvm::dyn_cast<ast::SetName>(&e)) {
    const ScopeDef *def = resolveRef(n->name, setKind);
    if (!def)
      return false;
    if (def->kind == DefKind::Opset) {
      add(n->name.name);
      return true;
    }
    const std::vector<std::string> *members = lookupGroup(n->name);
    if (!members)
      return false;
    for (const std::string &m : *members)
      add(m);
    return true;
  }
  bool ok = true;
  for (const ast::SetExpr *m : llvm::cast<ast::SetUnion>(e).members)
    ok &= m && expandSet(*m, out);
  return ok;
}

const std::optional<Pattern> &PlatformResolver::expandPattern(const ast::FuseDecl &f,
                                                              unsigned level) {
  auto it = patterns.find(&f);
  if (it != patterns.end())
    return it->second;
  std::optional<Pattern> result;
  if (f.elements.size() < 2) {
    c.diags.emit(f.getRange(), diag::err_fuse_too_short, f.elements.size());
  } else {
    LevelGuard guard(currentLevel, level);
    Pattern pattern;
    bool ok = true;
    for (const ast::SetExpr *e : f.elements) {
      std::vector<std::string> opsets;
      ok &= e && expandSet(*e, opsets);
      pattern.push_back(std::move(opsets));
    }
    if (ok)
      result = std::move(pattern);
  }
  return patterns.emplace(&f, std::move(result)).first->second;
}

void PlatformResolver::resolveFusings(ir::Platform &p) {
  struct Entry {
    Pattern pattern; ///< sorted sets: what equality compares
    Pattern written; ///< the sets in the order written
    const ast::FuseDecl *decl;
    unsigned level;
  };
  auto sorted = [](Pattern p) {
    for (std::vector<std::string> &e : p)
      llvm::sort(e);
    return p;
  };
  std::vector<Entry> entries;
  for (unsigned level = 0; level < scope.chain.size(); ++level) {
    // `remove fuse` deletes inherited patterns only.
    for (const AtLevel<ast::FuseDecl> &r : scope.removes) {
      if (r.level != level)
        continue;
      if (r.decl->config)
        c.diags.emit(r.decl->config->getRange(), diag::err_remove_fuse_with);
      const std::optional<Pattern> &written = expandPattern(*r.decl, level);
      if (!written)
        continue;
      Pattern pattern = sorted(*written);
      size_t before = entries.size();
      llvm::erase_if(entries,
                     [&](const Entry &e) { return e.level < level && e.pattern == pattern; });
      if (entries.size() == before)
        c.diags.emit(r.decl->getRange(), diag::err_remove_fuse_absent, fusingName(*r.decl));
    }
    for (const AtLevel<ast::FuseDecl> &f : scope.fuses)
      if (f.level == level)
        if (const std::optional<Pattern> &written = expandPattern(*f.decl, level))
          entries.push_back({sorted(*written), *written, f.decl, level});
  }

  // Rule 6: an equal pattern is reported and left out.
  std::map<Pattern, const ast::FuseDecl *> first;
  for (Entry &e : entries) {
    auto [it, fresh] = first.emplace(e.pattern, e.decl);
    if (!fresh) {
      c.diags.emit(e.decl->getRange(), diag::warn_duplicate_fuse, fusingName(*e.decl))
          .note(it->second->getRange(), diag::note_previous_pattern);
      continue;
    }
    ir::Fusing f{fusingName(*e.decl),        std::move(e.pattern), std::move(e.written),
                 e.decl->asName.has_value(), std::nullopt,         e.decl->getRange()};
    if (e.decl->config) {
      LevelGuard guard(currentLevel, e.level);
      if (auto cfg = evalOptionElement(*e.decl->config))
        f.config = std::move(cfg->second);
    }
    p.fusings.push_back(std::move(f));
  }
}

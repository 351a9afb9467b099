//===- Extends.cpp - Ordering declarations that extend others -------------===//
#include "passes/Extends.h"

#include <map>

using namespace tpcc;
using namespace tpcc::passes;

void passes::visitByExtends(
    Compilation &c, const TopLevelNames &names, const std::vector<const ast::TopDecl *> &decls,
    const ExtendsKind &kind,
    llvm::function_ref<const std::optional<ast::Ident> &(const ast::TopDecl &)> parent,
    llvm::function_ref<void(const ast::TopDecl &, const ast::TopDecl *)> visit) {
  enum State { New, Open, Done, Broken };
  std::map<const ast::TopDecl *, State> state;

  for (const ast::TopDecl *start : decls) {
    if (state[start] != New)
      continue;
    // Follow `extends` up from `start` (iteratively: chains may be long)
    // until a root, a declaration already visited, or a problem. `path`
    // holds each declaration with its parent.
    std::vector<std::pair<const ast::TopDecl *, const ast::TopDecl *>> path;
    bool broken = false;
    for (const ast::TopDecl *cur = start; cur;) {
      state[cur] = Open;
      path.emplace_back(cur, nullptr);
      const std::optional<ast::Ident> &name = parent(*cur);
      if (!name)
        break;
      const ast::TopDecl *p = names.lookup(name->name);
      if (!p) {
        c.diags.emit(name->range, diag::err_undefined, kind.word, name->name,
                     didYouMean(name->name, names.namesOfKind(kind.kind)));
        broken = true;
        break;
      }
      if (p->getKind() != kind.kind) {
        c.diags
            .emit(name->range, diag::err_wrong_kind, name->name, describeTopDecl(*p),
                  kind.withArticle)
            .note(p->name.range, diag::note_declared_here, name->name);
        broken = true;
        break;
      }
      path.back().second = p;
      switch (state[p]) {
      case Open:
        c.diags.emit(name->range, kind.cycle, p->name.name);
        broken = true;
        cur = nullptr;
        break;
      case Broken:
        broken = true;
        cur = nullptr;
        break;
      case Done:
        cur = nullptr;
        break;
      case New:
        cur = p;
        break;
      }
    }
    // Everything on the path depends on its end; visit parents first.
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      state[it->first] = broken ? Broken : Done;
      if (!broken)
        visit(*it->first, it->second);
    }
  }
}

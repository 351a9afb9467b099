//===- EvaluationOrder.cpp - Definitions after what they refer to ---------===//
//
// Definitions may refer forward, so the resolver evaluates them on demand,
// recursively. A long chain written backwards (`c1 = c2 with {}`,
// `c2 = c3 with {}`, ...) would recurse once per link; ordering the
// definitions first (an iterative depth-first walk over the names each
// definition mentions) makes every reference find its target already
// evaluated. The order is otherwise the source order, parents first, so
// diagnostics come out in reading order.
//
//===----------------------------------------------------------------------===//
#include "passes/PlatformResolverImpl.h"

using namespace tpcc;
using namespace tpcc::passes;

namespace {

/// Collects the names an AST fragment mentions (some are enumerators such as
/// `symmetric`; the caller keeps those that name definitions).
struct NameCollector {
  std::vector<const ast::Ident *> names;

  void value(const ast::Value *v) {
    if (auto *n = llvm::dyn_cast_or_null<ast::NameValue>(v)) {
      names.push_back(&n->name);
      for (const ast::BlockValue *w : n->withs)
        value(w);
    } else if (auto *b = llvm::dyn_cast_or_null<ast::BlockValue>(v)) {
      for (const ast::Field &f : b->fields)
        value(f.value);
    } else if (auto *l = llvm::dyn_cast_or_null<ast::ListValue>(v)) {
      for (const ast::Value *e : l->elements)
        value(e);
    }
  }
  void options(const ast::OptionsExpr *e) {
    if (auto *n = llvm::dyn_cast_or_null<ast::NamedOptions>(e)) {
      names.push_back(&n->name);
      for (const ast::BlockValue *w : n->withs)
        value(w);
    } else if (auto *cat = llvm::dyn_cast_or_null<ast::ConcatOptions>(e)) {
      for (const ast::OptionsExpr *p : cat->parts)
        options(p);
    } else if (auto *l = llvm::dyn_cast_or_null<ast::ListOptions>(e))
      for (const ast::Value *v : l->elements)
        value(v);
  }
  void set(const ast::SetExpr *e) {
    if (auto *n = llvm::dyn_cast_or_null<ast::SetName>(e))
      names.push_back(&n->name);
    else if (auto *u = llvm::dyn_cast_or_null<ast::SetUnion>(e))
      for (const ast::SetExpr *m : u->members)
        set(m);
  }
};

std::vector<const ast::Ident *> mentionedNames(const ast::PlatformItem *item) {
  NameCollector nc;
  if (auto *a = llvm::dyn_cast<ast::AttrDecl>(item))
    nc.value(a->value);
  else if (auto *cf = llvm::dyn_cast<ast::ConfigDecl>(item))
    nc.value(cf->value);
  else if (auto *o = llvm::dyn_cast<ast::OptionsDecl>(item))
    nc.options(o->options);
  else if (auto *op = llvm::dyn_cast<ast::OpsetDecl>(item))
    nc.options(op->options);
  else if (auto *d = llvm::dyn_cast<ast::DefaultDecl>(item))
    nc.options(d->options);
  else if (auto *g = llvm::dyn_cast<ast::GroupDecl>(item))
    for (const ast::SetExpr *m : g->members)
      nc.set(m);
  else if (auto *f = llvm::dyn_cast<ast::FuseDecl>(item)) {
    for (const ast::SetExpr *e : f->elements)
      nc.set(e);
    if (f->config)
      nc.value(f->config);
  }
  return std::move(nc.names);
}

/// The name an item defines, for items other than opsets.
const ast::Ident *definedName(const ast::PlatformItem *item) {
  if (auto *a = llvm::dyn_cast<ast::AttrDecl>(item))
    return &a->name;
  if (auto *cf = llvm::dyn_cast<ast::ConfigDecl>(item))
    return &cf->name;
  if (auto *o = llvm::dyn_cast<ast::OptionsDecl>(item))
    return &o->name;
  if (auto *g = llvm::dyn_cast<ast::GroupDecl>(item))
    return &g->name;
  return nullptr;
}

} // namespace

std::vector<PlatformResolver::EvalStep> PlatformResolver::evaluationOrder() const {
  // The items in effect, in source order (parents first).
  std::vector<EvalStep> roots;
  for (unsigned level = 0; level < scope.chain.size(); ++level)
    for (const ast::PlatformItem *item : scope.chain[level]->items) {
      if (!item)
        continue;
      if (llvm::isa<ast::FuseDecl>(item)) {
        roots.push_back({item, level, nullptr});
      } else if (auto *d = llvm::dyn_cast<ast::DefaultDecl>(item)) {
        if (scope.defaultDecl && scope.defaultDecl->decl == d)
          roots.push_back({item, level, nullptr});
      } else if (auto *op = llvm::dyn_cast<ast::OpsetDecl>(item)) {
        // One opset item defines several names; evaluate it once.
        for (const ast::Ident &n : op->names)
          if (scope.isInEffect(item, n.name)) {
            roots.push_back({item, level, scope.lookup(n.name)});
            break;
          }
      } else if (const ast::Ident *name = definedName(item)) {
        if (scope.isInEffect(item, name->name))
          roots.push_back({item, level, scope.lookup(name->name)});
      }
    }

  // Iterative post-order depth-first walk over the names each item mentions.
  enum State { New, Open, Closed };
  std::map<const ast::PlatformItem *, State> state;
  std::vector<EvalStep> order;
  struct Frame {
    EvalStep step;
    std::vector<const ast::Ident *> deps;
    size_t next = 0;
  };
  for (const EvalStep &root : roots) {
    if (state[root.item] != New)
      continue;
    std::vector<Frame> stack;
    stack.push_back({root, mentionedNames(root.item)});
    state[root.item] = Open;
    while (!stack.empty()) {
      Frame &top = stack.back();
      if (top.next == top.deps.size()) {
        state[top.step.item] = Closed;
        order.push_back(top.step);
        stack.pop_back();
        continue;
      }
      const ScopeDef *dep = scope.lookup(top.deps[top.next++]->name);
      // A cycle (Open) is left for the evaluation to report.
      if (!dep || dep->kind == DefKind::Opset || state[dep->item] != New)
        continue;
      state[dep->item] = Open;
      stack.push_back({{dep->item, dep->level, dep}, mentionedNames(dep->item)});
    }
  }
  return order;
}

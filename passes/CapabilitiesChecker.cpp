//===- CapabilitiesChecker.cpp - Checking `capabilities` declarations -----===//
//
// Resolves `capabilities NAME = PLATFORM on FRAMEWORK { OPSET <- OP [where P],
// ... }` into ir::Capabilities: the platform and the framework must be
// declared (Rule 2), each opset must be one of the platform's, each op an
// ONNX operator and each predicate must fit the op's schema (Rule 12). Also
// Rule 14: an opset with options that no binding covers never matches.
//
// Binding one ONNX op to two opsets is not checked here: whether two
// predicates can both hold is decided per node, at plan time (Rule 13).
//
// `capabilities X = P on F extends Y { ... }` starts from Y's resolved
// bindings: Y must be on the same framework, and every opset Y binds must be
// one of P's. A plain binding adds to the inherited ones (the `none` rules
// hold across both); `override OPSET <- ...` first drops Y's bindings of
// OPSET, and is an error when Y has none.
//
//===----------------------------------------------------------------------===//
#include "passes/Internal.h"
#include "passes/PredicateChecker.h"

#include <algorithm>
#include <map>
#include <set>

using namespace tpcc;
using namespace tpcc::passes;

namespace {

class CapabilitiesChecker {
public:
  CapabilitiesChecker(Compilation &c, const ast::CapabilitiesDecl &decl, const TopLevelNames &names,
                      const ir::Module &m, const ir::Capabilities *parent)
      : c(c), decl(decl), names(names), m(m), parent(parent) {}

  ir::Capabilities run();

private:
  /// The declaration `ref` names when it is of kind `kind`; reports an
  /// undefined name or one of another kind.
  const ast::TopDecl *resolve(const ast::Ident &ref, ast::Node::Kind kind, const char *kindName,
                              const char *expected);
  void checkOpset(const ast::Ident &opset);
  /// The parent's bindings that no `override` replaces, checked against this
  /// platform and framework.
  void inherit(ir::Capabilities &caps);
  /// The `group` named `name` in platform `platform` or its parents, if any.
  const ast::GroupDecl *findGroup(const ast::PlatformDecl *platform, llvm::StringRef name) const;

  Compilation &c;
  const ast::CapabilitiesDecl &decl;
  const TopLevelNames &names;
  const ir::Module &m;
  const ir::Capabilities *parent;
  const ast::PlatformDecl *platformDecl = nullptr;
  const ir::Platform *platform = nullptr;
};

} // namespace

const ast::TopDecl *CapabilitiesChecker::resolve(const ast::Ident &ref, ast::Node::Kind kind,
                                                 const char *kindName, const char *expected) {
  const ast::TopDecl *d = names.lookup(ref.name);
  if (!d) {
    c.diags
        .emit(ref.range, diag::err_undefined, kindName, ref.name,
              didYouMean(ref.name, names.namesOfKind(kind)))
        .report();
    return nullptr;
  }
  if (d->getKind() != kind) {
    c.diags.emit(ref.range, diag::err_wrong_kind, ref.name, describeTopDecl(*d), expected)
        .note(d->name.range, diag::note_declared_here, ref.name);
    return nullptr;
  }
  return d;
}

const ast::GroupDecl *CapabilitiesChecker::findGroup(const ast::PlatformDecl *p,
                                                     llvm::StringRef name) const {
  std::set<const ast::PlatformDecl *> visited; // `extends` cycles
  while (p && visited.insert(p).second) {
    for (const ast::PlatformItem *item : p->items)
      if (auto *g = llvm::dyn_cast<ast::GroupDecl>(item))
        if (g->name.name == name)
          return g;
    p = p->parent ? llvm::dyn_cast_or_null<ast::PlatformDecl>(names.lookup(p->parent->name))
                  : nullptr;
  }
  return nullptr;
}

void CapabilitiesChecker::checkOpset(const ast::Ident &opset) {
  if (!platform || platform->findOpset(opset.name))
    return;
  if (const ast::GroupDecl *g = findGroup(platformDecl, opset.name)) {
    c.diags.emit(opset.range, diag::err_wrong_kind, opset.name, "a group", "an opset")
        .note(g->name.range, diag::note_declared_here, opset.name);
    return;
  }
  std::vector<std::string> candidates;
  for (const ir::Opset &o : platform->opsets)
    candidates.push_back(o.name);
  c.diags
      .emit(opset.range, diag::err_unknown_opset, platform->name, opset.name,
            didYouMean(opset.name, candidates))
      .report();
}

void CapabilitiesChecker::inherit(ir::Capabilities &caps) {
  std::set<std::string> overridden;
  for (const ast::Binding &binding : decl.bindings) {
    if (!binding.isOverride())
      continue;
    const std::string &name = binding.opset.name;
    bool bound = parent && (std::count(parent->unbound.begin(), parent->unbound.end(), name) > 0 ||
                            std::any_of(parent->bindings.begin(), parent->bindings.end(),
                                        [&](const ir::OpBinding &b) { return b.opset == name; }));
    if (!parent)
      c.diags
          .emit(binding.overrideRange, diag::err_caps_override_unbound, name,
                "`" + decl.name.name + "` extends no capabilities")
          .report();
    else if (!bound)
      c.diags
          .emit(binding.overrideRange, diag::err_caps_override_unbound, name,
                "`" + parent->name + "` does not bind it")
          .note(parent->loc, diag::note_declared_here, parent->name);
    overridden.insert(name);
  }
  if (!parent)
    return;
  if (parent->framework != caps.framework)
    c.diags
        .emit(decl.parent->range, diag::err_caps_other_framework, parent->name, parent->framework,
              caps.framework)
        .note(parent->loc, diag::note_declared_here, parent->name);
  // One error per inherited opset the platform lacks, at `extends`.
  std::set<std::string> missing;
  auto known = [&](const std::string &opset, SourceRange at) {
    if (!platform || platform->findOpset(opset))
      return true;
    if (missing.insert(opset).second)
      c.diags
          .emit(decl.parent->range, diag::err_caps_inherited_opset, parent->name, opset,
                platform->name)
          .note(at, diag::note_binding_here, opset);
    return false;
  };
  for (const ir::OpBinding &b : parent->bindings)
    if (!overridden.count(b.opset) && known(b.opset, b.loc))
      caps.bindings.push_back(b);
  for (const std::string &opset : parent->unbound)
    if (!overridden.count(opset) && known(opset, parent->loc))
      caps.unbound.push_back(opset);
}

ir::Capabilities CapabilitiesChecker::run() {
  ir::Capabilities caps;
  caps.name = decl.name.name;
  caps.platform = decl.platform.name;
  caps.framework = decl.framework.name;
  caps.loc = decl.name.range;

  platformDecl = llvm::cast_or_null<ast::PlatformDecl>(
      resolve(decl.platform, ast::Node::Kind::PlatformDecl, "platform", "a platform"));
  // A platform that failed to resolve is not in the module: its opsets are
  // then unknown, and not checked.
  if (platformDecl)
    platform = m.findPlatform(decl.platform.name);
  (void)resolve(decl.framework, ast::Node::Kind::FrameworkDecl, "framework", "a framework");
  const ir::Framework *framework = m.findFramework(decl.framework.name);
  inherit(caps);

  // Where each opset is bound to `none`, and first bound to ops: one or the
  // other, across the bindings as within one, inherited ones included.
  std::map<std::string, SourceRange> noneAt, opsAt;
  for (const ir::OpBinding &b : caps.bindings)
    opsAt.emplace(b.opset, b.loc);
  for (const std::string &opset : caps.unbound)
    noneAt.emplace(opset, parent ? parent->loc : caps.loc);
  for (const ast::Binding &binding : decl.bindings) {
    checkOpset(binding.opset);
    const std::string &name = binding.opset.name;
    if (!binding.none && binding.noneRange.isValid())
      c.diags.emit(binding.noneRange, diag::err_none_with_ops, name).report();
    if (binding.none) {
      auto [it, inserted] = noneAt.emplace(name, binding.range);
      if (!inserted)
        c.diags.emit(binding.range, diag::err_none_twice, name)
            .note(it->second, diag::note_binding_here, name);
      else if (auto b = opsAt.find(name); b != opsAt.end())
        c.diags.emit(binding.range, diag::err_bound_and_none, name)
            .note(b->second, diag::note_binding_here, name);
      else
        caps.unbound.push_back(name);
    } else if (opsAt.emplace(name, binding.range).second) {
      if (auto n = noneAt.find(name); n != noneAt.end()) {
        c.diags.emit(binding.range, diag::err_bound_and_none, name)
            .note(n->second, diag::note_binding_here, name);
        caps.unbound.erase(std::find(caps.unbound.begin(), caps.unbound.end(), name));
      }
    }
    for (const ast::OpRef &ref : binding.ops) {
      ir::OpBinding b;
      b.opset = binding.opset.name;
      b.op = ref.op.name;
      b.loc = ref.range;
      // A composite of the framework is bound as a whole; its pattern says
      // which attributes it needs.
      if (framework && framework->findComposite(ref.op.name)) {
        b.composite = true;
        if (ref.where)
          c.diags.emit(ref.where->getRange(), diag::err_composite_where, ref.op.name).report();
        caps.bindings.push_back(std::move(b));
        continue;
      }
      const ir::OnnxOp *op = lookupOnnxOp(c, ref.op);
      if (ref.where)
        b.where = checkPredicate(c, *ref.where, op);
      caps.bindings.push_back(std::move(b));
    }
  }
  return caps;
}

ir::Capabilities passes::checkCapabilities(Compilation &c, const ast::CapabilitiesDecl &decl,
                                           const TopLevelNames &names, const ir::Module &m,
                                           const ir::Capabilities *parent) {
  return CapabilitiesChecker(c, decl, names, m, parent).run();
}

void passes::checkNeverMatches(Compilation &c, const ir::Module &m) {
  for (const ir::Capabilities &caps : m.capabilities) {
    const ir::Platform *platform = m.findPlatform(caps.platform);
    if (!platform)
      continue;
    std::set<llvm::StringRef> covered;
    for (const ir::OpBinding &b : caps.bindings)
      covered.insert(b.opset);
    for (const std::string &opset : caps.unbound)
      covered.insert(opset);
    for (const ir::Opset &opset : platform->opsets)
      if (opset.options && !covered.count(opset.name))
        c.diags.emit(opset.loc, diag::warn_never_matches, opset.name, caps.name)
            .note(caps.loc, diag::note_declared_here, caps.name);
  }
}

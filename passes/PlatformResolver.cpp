//===- PlatformResolver.cpp - Names, configs, options and opsets ----------===//
//
// The resolver evaluates every definition in effect in the platform's scope
// (its own and its parents', late bound), then assembles the IR: default
// options (Rule 5), opsets with their options (Rules 3, 4), fusing patterns
// (PlatformFusings.cpp) and the bit-width checks (BitWidthChecks.cpp).
//
//===----------------------------------------------------------------------===//
#include "passes/PlatformResolverImpl.h"

#include "llvm/ADT/STLExtras.h"

using namespace tpcc;
using namespace tpcc::passes;

namespace {
const ExpectedKind attrKind{{DefKind::Attr}, "attr", "an attr"};
const ExpectedKind configKind{{DefKind::Config}, "config", "a config"};
const ExpectedKind optionsKind{{DefKind::Options}, "options", "an options name"};
} // namespace

PlatformResult passes::resolvePlatform(Compilation &c, std::vector<const ast::PlatformDecl *> chain,
                                       const PlatformResult *parent) {
  PlatformScope scope = buildPlatformScope(c, std::move(chain));
  return PlatformResolver(c, scope, parent).run();
}

PlatformResult PlatformResolver::run() {
  PlatformResult result;
  if (parent)
    result.inputBitsWarnings = parent->inputBitsWarnings;
  ir::Platform &p = result.platform;
  const ast::PlatformDecl &decl = scope.platform();
  p.name = decl.name.name;
  p.loc = decl.name.range;
  if (scope.chain.size() > 1)
    p.parent = scope.chain[scope.chain.size() - 2]->name.name;
  if (scope.version)
    p.version = ir::Version{scope.version->minor, scope.version->patch};
  // An unset type is inherited like any property: the root platform's name
  // (a chip that `extends imx500` is of type "imx500" unless it says so).
  p.type = scope.type ? scope.type->type : scope.chain.front()->name.name;
  p.simdPadding = scope.simdPadding && scope.simdPadding->value;
  p.metadata = scope.metadata && scope.metadata->value;
  p.insertPreservingQuantizers = scope.preservingQuantizers && scope.preservingQuantizers->value;

  if (!scope.defaultDecl)
    c.diags.emit(decl.name.range, diag::err_platform_no_default, decl.name.name);

  evaluateDefinitions();
  if (const std::optional<ir::Options> &d = defaultOptions())
    p.defaultOptions = *d;
  for (const std::string &name : scope.opsetOrder) {
    const ScopeDef &def = *scope.lookup(name);
    ir::Opset opset;
    opset.name = name;
    opset.loc = def.name->range;
    opset.options = opsetOptions(*llvm::cast<ast::OpsetDecl>(def.item), def.level);
    p.opsets.push_back(std::move(opset));
  }
  resolveFusings(p);
  resolveResources(p);
  checkInputBits(result);
  checkFusingBits(p);
  return result;
}

void PlatformResolver::evaluateDefinitions() {
  for (const EvalStep &step : evaluationOrder()) {
    if (auto *f = llvm::dyn_cast<ast::FuseDecl>(step.item)) {
      expandPattern(*f, step.level);
      continue;
    }
    if (llvm::isa<ast::DefaultDecl>(step.item)) {
      defaultOptions();
      continue;
    }
    switch (step.def->kind) {
    case DefKind::Attr:
      lookupAttr(*step.def->name);
      break;
    case DefKind::Config:
      lookupConfig(*step.def->name);
      break;
    case DefKind::Options:
      lookupOptions(*step.def->name);
      break;
    case DefKind::Group:
      lookupGroup(*step.def->name);
      break;
    case DefKind::Opset:
      opsetOptions(*llvm::cast<ast::OpsetDecl>(step.item), step.level);
      break;
    }
  }
}

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

const ScopeDef *PlatformResolver::resolveRef(const ast::Ident &ref, const ExpectedKind &kind) {
  const ScopeDef *def = scope.lookup(ref.name);
  if (!def) {
    // Never suggest a definition being evaluated: using it would be a cycle
    // (`config a = a9 with {}` must not suggest `a`).
    std::vector<std::string> candidates;
    for (std::string &n : scope.visibleNames(currentLevel, kind.kinds))
      if (!isActive(n))
        candidates.push_back(std::move(n));
    c.diags.emit(ref.range, diag::err_undefined, kind.word, ref.name,
                 didYouMean(ref.name, candidates));
    return nullptr;
  }
  if (llvm::is_contained(kind.kinds, def->kind)) {
    // An inherited definition that uses a later level's override.
    if (def->item && def->item->isOverride)
      useOverride(def);
    return def;
  }
  auto d = c.diags.emit(ref.range, diag::err_wrong_kind, ref.name, describeDefKind(def->kind),
                        kind.withArticle);
  d.note(def->name->range, diag::note_declared_here, ref.name);
  if (def->kind == DefKind::Config && &kind == &optionsKind)
    d.note(ref.range, diag::note_options_from_config, ref.name);
  return nullptr;
}

void PlatformResolver::noteOverrides(size_t first, const std::vector<const ScopeDef *> &overrides) {
  const ast::PlatformDecl &own = scope.platform();
  SourceRange ownRange = own.getRange();
  auto inherited = [&](const Diagnostic &d) {
    return d.range.begin.file != ownRange.begin.file || d.range.begin < ownRange.begin ||
           ownRange.end < d.range.begin;
  };
  for (const ScopeDef *o : overrides)
    c.diags.noteErrorsSince(first, inherited, o->name->range, diag::note_override_behind,
                            scope.chain[o->level]->name.name, o->name->name);
}

const PartialAttr *PlatformResolver::lookupAttr(const ast::Ident &name) {
  const ScopeDef *def = resolveRef(name, attrKind);
  if (!def)
    return nullptr;
  return evaluate(attrs, name, *def, [&]() -> std::optional<PartialAttr> {
    const ast::Value *v = llvm::cast<ast::AttrDecl>(def->item)->value;
    std::optional<PartialAttr> a = v ? builder.buildAttr(*v) : std::nullopt;
    if (a)
      checkAttr(c, *a);
    return a;
  });
}

const PartialConfig *PlatformResolver::lookupConfig(const ast::Ident &name) {
  const ScopeDef *def = resolveRef(name, configKind);
  if (!def)
    return nullptr;
  return evaluate(configs, name, *def, [&]() -> std::optional<PartialConfig> {
    const ast::Value *v = llvm::cast<ast::ConfigDecl>(def->item)->value;
    std::optional<PartialConfig> p = v ? builder.buildConfig(*v) : std::nullopt;
    if (p) {
      checkConfig(c, *p);
      record(*p, finalizeConfig(*p, name.name, def->name->range));
    }
    return p;
  });
}

void PlatformResolver::record(const PartialConfig &partial, const ir::OpConfig &cfg) {
  SeenConfig s{cfg, {}};
  if (partial.inputBits)
    s.explicitInputBits = partial.inputBits->value;
  seen.push_back(std::move(s));
}

//===----------------------------------------------------------------------===//
// Options (Rules 3-5) and opsets
//===----------------------------------------------------------------------===//

const ir::Options *PlatformResolver::lookupOptions(const ast::Ident &name) {
  const ScopeDef *def = resolveRef(name, optionsKind);
  if (!def)
    return nullptr;
  return evaluate(options, name, *def, [&]() -> std::optional<ir::Options> {
    const ast::OptionsExpr *e = llvm::cast<ast::OptionsDecl>(def->item)->options;
    return e ? evalOptions(*e) : std::nullopt;
  });
}

std::optional<ir::Options> PlatformResolver::evalOptions(const ast::OptionsExpr &e) {
  if (auto *named = llvm::dyn_cast<ast::NamedOptions>(&e)) {
    const ir::Options *o = lookupOptions(named->name);
    return o ? std::optional<ir::Options>(*o) : std::nullopt;
  }
  const auto &list = llvm::cast<ast::ListOptions>(e);
  ir::Options result;
  result.loc = list.getRange();
  // The index in `result.configs` of each element, or -1 if it failed.
  std::vector<int> index;
  for (const ast::Value *v : list.elements) {
    std::optional<ir::OpConfig> cfg = v ? evalOptionElement(*v) : std::optional<ir::OpConfig>();
    index.push_back(cfg ? static_cast<int>(result.configs.size()) : -1);
    if (cfg)
      result.configs.push_back(std::move(*cfg));
  }

  if (!list.base) {
    if (list.elements.size() > 1)
      c.diags.emit(list.getRange(), diag::err_options_need_base, list.elements.size());
  } else {
    // `base` names an element by its config name: the element that is
    // exactly that config when there is one (MCT's `base_config` equal to a
    // plain config), else an edited `NAME with {...}`.
    std::vector<size_t> exact, edited;
    for (size_t i = 0; i < list.elements.size(); ++i) {
      auto *n = llvm::dyn_cast_or_null<ast::NameValue>(list.elements[i]);
      if (n && n->name.name == list.base->name)
        (n->withs.empty() ? exact : edited).push_back(i);
    }
    const std::vector<size_t> &matches = exact.empty() ? edited : exact;
    if (matches.empty())
      c.diags.emit(list.base->range, diag::err_base_not_in_list, list.base->name);
    else if (matches.size() > 1)
      c.diags.emit(list.base->range, diag::err_base_ambiguous, list.base->name, matches.size());
    else if (index[matches[0]] >= 0)
      result.base = static_cast<unsigned>(index[matches[0]]);
  }
  if (result.configs.empty())
    return std::nullopt;
  return result;
}

std::optional<ir::OpConfig> PlatformResolver::evalOptionElement(const ast::Value &v) {
  auto *named = llvm::dyn_cast<ast::NameValue>(&v);
  if (named && named->withs.empty()) {
    const PartialConfig *p = lookupConfig(named->name);
    if (!p)
      return std::nullopt;
    return finalizeConfig(*p, named->name.name, scope.lookup(named->name.name)->name->range);
  }
  // `NAME with {...}` or an inline block.
  std::optional<PartialConfig> p = builder.buildConfig(v);
  if (!p)
    return std::nullopt;
  checkConfig(c, *p);
  ir::OpConfig cfg = finalizeConfig(*p, named ? named->name.name : "", v.getRange());
  record(*p, cfg);
  return cfg;
}

const std::optional<ir::Options> &PlatformResolver::opsetOptions(const ast::OpsetDecl &d,
                                                                 unsigned level) {
  auto it = opsets.find(&d);
  if (it != opsets.end())
    return it->second;
  std::optional<ir::Options> o;
  if (d.options) {
    LevelGuard guard(currentLevel, level);
    o = evalOptions(*d.options);
  }
  return opsets.emplace(&d, std::move(o)).first->second;
}

const std::optional<ir::Options> &PlatformResolver::defaultOptions() {
  if (defaultMemo)
    return *defaultMemo;
  defaultMemo.emplace();
  if (!scope.defaultDecl || !scope.defaultDecl->decl->options)
    return *defaultMemo;
  const ast::DefaultDecl &d = *scope.defaultDecl->decl;
  LevelGuard guard(currentLevel, scope.defaultDecl->level);
  std::optional<ir::Options> o = evalOptions(*d.options);
  if (o) {
    auto *list = llvm::dyn_cast<ast::ListOptions>(d.options);
    size_t count = list ? list->elements.size() : o->configs.size();
    if (count != 1)
      c.diags.emit(d.options->getRange(), diag::err_default_not_one_config, count);
  }
  *defaultMemo = std::move(o);
  return *defaultMemo;
}

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
  if (scope.recipe) {
    p.recipe = scope.recipe->recipe.name;
    p.recipeLoc = scope.recipe->recipe.range;
  }

  if (!scope.defaultDecl)
    c.diags.emit(decl.name.range, diag::err_platform_no_default, decl.name.name);

  evaluateDefinitions();
  if (const std::optional<OptionsValue> &d = defaultOptions())
    p.defaultOptions = d->options;
  for (const std::string &name : scope.opsetOrder) {
    const ScopeDef &def = *scope.lookup(name);
    ir::Opset opset;
    opset.name = name;
    opset.loc = def.name->range;
    if (const auto &o = opsetOptions(def))
      opset.options = o->options;
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
      opsetOptions(*step.def);
      break;
    }
  }
}

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

const ScopeDef *PlatformResolver::superOf(const ast::Ident &ref) {
  const ScopeDef *self = currentDef();
  if (!self) {
    c.diags.emit(ref.range, diag::err_super_outside_override,
                 "only an `override` attr, config, options, opset or group can use it");
    return nullptr;
  }
  if (!self->item->isOverride) {
    c.diags
        .emit(ref.range, diag::err_super_outside_override,
              fmt::format("`{}` is not an `override`", self->name->name))
        .note(self->name->range, diag::note_declared_here, self->name->name);
    return nullptr;
  }
  if (auto *op = llvm::dyn_cast<ast::OpsetDecl>(self->item); op && op->names.size() > 1) {
    c.diags.emit(ref.range, diag::err_super_several_opsets, op->names.size());
    return nullptr;
  }
  // Null when the override replaces nothing (reported with the scope).
  return scope.replacedBy(*self);
}

const ScopeDef *PlatformResolver::definitionOf(const ast::Ident &ref) const {
  if (ref.name != "super")
    return scope.lookup(ref.name);
  const ScopeDef *self = currentDef();
  return self ? scope.replacedBy(*self) : nullptr;
}

const ScopeDef *PlatformResolver::resolveRef(const ast::Ident &ref, const ExpectedKind &kind) {
  if (ref.name == "super") {
    const ScopeDef *def = superOf(ref);
    if (def && !llvm::is_contained(kind.kinds, def->kind)) {
      c.diags
          .emit(ref.range, diag::err_wrong_kind, ref.name, describeDefKind(def->kind),
                kind.withArticle)
          .note(def->name->range, diag::note_declared_here, def->name->name);
      return nullptr;
    }
    return def;
  }
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

const OptionsValue *PlatformResolver::lookupOptions(const ast::Ident &name) {
  // In `override opset X : super ...`, `super` is the options of the opset
  // it replaces (the default's, when that opset is config-less).
  const ScopeDef *self = currentDef();
  if (name.name == "super" && self && self->kind == DefKind::Opset) {
    const ScopeDef *def = superOf(name);
    if (!def)
      return nullptr;
    const std::optional<OptionsValue> &o =
        llvm::cast<ast::OpsetDecl>(def->item)->options ? opsetOptions(*def) : defaultOptions();
    return o ? &*o : nullptr;
  }
  const ScopeDef *def = resolveRef(name, optionsKind);
  if (!def)
    return nullptr;
  return evaluate(options, name, *def, [&]() -> std::optional<OptionsValue> {
    const ast::OptionsExpr *e = llvm::cast<ast::OptionsDecl>(def->item)->options;
    return e ? evalOptions(*e) : std::nullopt;
  });
}

std::optional<OptionsValue> PlatformResolver::evalOptions(const ast::OptionsExpr &e) {
  if (auto *named = llvm::dyn_cast<ast::NamedOptions>(&e))
    return evalNamedOptions(*named);
  if (auto *list = llvm::dyn_cast<ast::ListOptions>(&e))
    return evalListOptions(*list);
  // `A + B`: A's candidates, then B's; A's base.
  std::optional<OptionsValue> result;
  bool ok = true;
  for (const ast::OptionsExpr *part : llvm::cast<ast::ConcatOptions>(e).parts) {
    std::optional<OptionsValue> o = part ? evalOptions(*part) : std::nullopt;
    if (!o) {
      ok = false;
      continue;
    }
    if (!result) {
      result = std::move(o);
      continue;
    }
    llvm::append_range(result->options.configs, o->options.configs);
    llvm::append_range(result->partials, o->partials);
  }
  if (!ok || !result)
    return std::nullopt;
  result->options.loc = e.getRange();
  return result;
}

std::optional<OptionsValue> PlatformResolver::evalNamedOptions(const ast::NamedOptions &named) {
  const OptionsValue *o = lookupOptions(named.name);
  if (!o)
    return std::nullopt;
  if (named.withs.empty())
    return *o;
  // MCT's QuantizationConfigOptions.clone_and_edit: each candidate (the
  // base among them) is edited as `CONFIG with {...}` would be. The same
  // problem in two candidates is reported once.
  OptionsValue result = *o;
  result.options.loc = named.getRange();
  for (size_t i = 0; i < result.partials.size(); ++i) {
    PartialConfig &p = result.partials[i];
    for (const ast::BlockValue *w : named.withs)
      if (w)
        builder.applyConfigBlock(p, *w);
    checkConfig(c, p);
    ir::OpConfig &cfg = result.options.configs[i];
    cfg = finalizeConfig(p, cfg.name, named.getRange());
    record(p, cfg);
  }
  return result;
}

std::optional<OptionsValue> PlatformResolver::evalListOptions(const ast::ListOptions &list) {
  OptionsValue result;
  result.options.loc = list.getRange();
  // The index in `result` of each element, or -1 if it failed.
  std::vector<int> index;
  for (const ast::Value *v : list.elements) {
    auto cfg = v ? evalOptionElement(*v) : std::nullopt;
    index.push_back(cfg ? static_cast<int>(result.partials.size()) : -1);
    if (cfg) {
      result.partials.push_back(std::move(cfg->first));
      result.options.configs.push_back(std::move(cfg->second));
    }
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
      result.options.base = static_cast<unsigned>(index[matches[0]]);
  }
  if (result.partials.empty())
    return std::nullopt;
  return result;
}

std::optional<std::pair<PartialConfig, ir::OpConfig>>
PlatformResolver::evalOptionElement(const ast::Value &v) {
  auto *named = llvm::dyn_cast<ast::NameValue>(&v);
  // `super` is named after the config it stands for.
  const ScopeDef *def = named ? definitionOf(named->name) : nullptr;
  std::string name = def ? def->name->name : named ? named->name.name : "";
  if (named && named->withs.empty()) {
    const PartialConfig *p = lookupConfig(named->name);
    if (!p)
      return std::nullopt;
    return std::make_pair(*p, finalizeConfig(*p, name, def->name->range));
  }
  // `NAME with {...}` or an inline block.
  std::optional<PartialConfig> p = builder.buildConfig(v);
  if (!p)
    return std::nullopt;
  checkConfig(c, *p);
  ir::OpConfig cfg = finalizeConfig(*p, name, v.getRange());
  record(*p, cfg);
  return std::make_pair(std::move(*p), std::move(cfg));
}

const std::optional<OptionsValue> &PlatformResolver::opsetOptions(const ScopeDef &def) {
  // One item may declare several opsets: its options are evaluated once.
  const auto &d = *llvm::cast<ast::OpsetDecl>(def.item);
  auto it = opsets.find(&d);
  if (it != opsets.end())
    return it->second;
  std::optional<OptionsValue> o;
  if (d.options)
    o = inFrame(def.level, &def, [&] { return evalOptions(*d.options); }).first;
  return opsets.emplace(&d, std::move(o)).first->second;
}

const std::optional<OptionsValue> &PlatformResolver::defaultOptions() {
  if (defaultMemo)
    return *defaultMemo;
  defaultMemo.emplace();
  if (!scope.defaultDecl || !scope.defaultDecl->decl->options)
    return *defaultMemo;
  const ast::DefaultDecl &d = *scope.defaultDecl->decl;
  std::optional<OptionsValue> o =
      inFrame(scope.defaultDecl->level, nullptr, [&] { return evalOptions(*d.options); }).first;
  if (o) {
    auto *list = llvm::dyn_cast<ast::ListOptions>(d.options);
    size_t count = list ? list->elements.size() : o->options.configs.size();
    if (count != 1)
      c.diags.emit(d.options->getRange(), diag::err_default_not_one_config, count);
  }
  *defaultMemo = std::move(o);
  return *defaultMemo;
}

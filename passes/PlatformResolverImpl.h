//===- PlatformResolverImpl.h - The platform resolver -----------*- C++ -*-===//
//
// Private to the files of the platform resolver: PlatformResolver.cpp (names,
// configs, options, opsets), EvaluationOrder.cpp, PlatformFusings.cpp (groups,
// fusing patterns), BitWidthChecks.cpp (Rule 11) and PlatformResources.cpp
// (the `resources` block). Every named definition
// is evaluated at most once, on demand (references may point forward), with
// cycles reported where they close.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_PASSES_PLATFORMRESOLVERIMPL_H
#define TPCC_PASSES_PLATFORMRESOLVERIMPL_H

#include "passes/PlatformResolver.h"
#include "passes/PlatformScope.h"
#include "passes/QuantConfig.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tpcc::passes {

/// What a reference must name, and how messages call it.
struct ExpectedKind {
  std::vector<DefKind> kinds;
  const char *word;        ///< "config": use of undefined config `x`
  const char *withArticle; ///< "a config": ... but a config is expected here
};

/// Sets `currentLevel` for the duration of a scope.
class LevelGuard {
public:
  LevelGuard(unsigned &slot, unsigned level) : slot(slot), saved(slot) { slot = level; }
  ~LevelGuard() { slot = saved; }

private:
  unsigned &slot;
  unsigned saved;
};

/// Options together with each candidate's partial config: an options-level
/// `with` edits those, as a config-level one does.
struct OptionsValue {
  ir::Options options;
  std::vector<PartialConfig> partials;
};

class PlatformResolver : public QuantNames {
public:
  PlatformResolver(Compilation &c, const PlatformScope &scope, const PlatformResult *parent)
      : c(c), scope(scope), parent(parent), builder(c, *this) {}

  PlatformResult run();

  const PartialAttr *lookupAttr(const ast::Ident &name) override;
  const PartialConfig *lookupConfig(const ast::Ident &name) override;

private:
  template <typename T> struct Memo {
    enum State { Unvisited, Active, Done, Failed } state = Unvisited;
    std::optional<T> value;
    /// The later levels' overrides it used, directly or through others.
    std::vector<const ScopeDef *> overrides;
  };

  /// The definition `ref` names, or null after reporting that it is
  /// undefined or of the wrong kind.
  const ScopeDef *resolveRef(const ast::Ident &ref, const ExpectedKind &kind);
  /// What `super` names where it is written: the definition that the
  /// override being evaluated replaced; null after reporting a misuse.
  const ScopeDef *superOf(const ast::Ident &ref);
  /// The definition `ref` names, without diagnostics (`super` included).
  const ScopeDef *definitionOf(const ast::Ident &ref) const;

  /// Evaluates the definition `def` named by `ref` once, with `compute`;
  /// a reference back to a definition being evaluated is a cycle.
  template <typename T, typename F>
  const T *evaluate(std::map<std::string, Memo<T>> &memo, const ast::Ident &ref,
                    const ScopeDef &def, F compute);

  // Options and opsets (PlatformResolver.cpp).
  const OptionsValue *lookupOptions(const ast::Ident &name);
  std::optional<OptionsValue> evalOptions(const ast::OptionsExpr &e);
  std::optional<OptionsValue> evalListOptions(const ast::ListOptions &list);
  /// `NAME with {...}`: every candidate of NAME edited.
  std::optional<OptionsValue> evalNamedOptions(const ast::NamedOptions &named);
  std::optional<std::pair<PartialConfig, ir::OpConfig>> evalOptionElement(const ast::Value &v);
  /// The options of the opset item that defines `def` (evaluated once).
  const std::optional<OptionsValue> &opsetOptions(const ScopeDef &def);
  /// One item to evaluate: a named definition in effect (`def` set), the
  /// `default` in effect, or a `fuse` / `remove fuse`.
  struct EvalStep {
    const ast::PlatformItem *item;
    unsigned level;
    const ScopeDef *def;
  };
  /// Every item to evaluate, each after the definitions it refers to,
  /// otherwise in source order, parents first (EvaluationOrder.cpp).
  /// Evaluating in this order keeps recursion shallow however long a `with`
  /// chain is, and reports problems in reading order.
  std::vector<EvalStep> evaluationOrder() const;
  void evaluateDefinitions();
  /// The `default` in effect (Rule 5), evaluated once.
  const std::optional<OptionsValue> &defaultOptions();
  /// Records a resolved config for Rule 11.
  void record(const PartialConfig &partial, const ir::OpConfig &cfg);

  // Groups and fusing patterns (PlatformFusings.cpp).
  const std::vector<std::string> *lookupGroup(const ast::Ident &name);
  /// Appends the opsets `e` accepts to `out`, in the order written, each once.
  bool expandSet(const ast::SetExpr &e, std::vector<std::string> &out);
  /// The opset sets of a pattern's elements (Rule 6), evaluated once.
  const std::optional<std::vector<std::vector<std::string>>> &expandPattern(const ast::FuseDecl &f,
                                                                            unsigned level);
  void resolveFusings(ir::Platform &p);

  // The memory the platform declares (PlatformResources.cpp): the parent's,
  // with the fields of this platform's own `resources` block replaced.
  void resolveResources(ir::Platform &p);

  // Rule 11 (BitWidthChecks.cpp).
  void checkInputBits(PlatformResult &r);
  void checkFusingBits(const ir::Platform &p);

  Compilation &c;
  const PlatformScope &scope;
  const PlatformResult *parent;
  QuantConfigBuilder builder;
  /// Whether the definition named `name` is being evaluated right now.
  bool isActive(const std::string &name) const {
    auto active = [&](const auto &memo) {
      auto it = memo.find(name);
      return it != memo.end() && it->second.state == std::decay_t<decltype(it->second)>::Active;
    };
    return active(attrs) || active(configs) || active(options) || active(groups);
  }
  /// The level of the definition being evaluated: names it may suggest.
  unsigned currentLevel = 0;
  /// The definitions being evaluated, innermost last, each with the
  /// overrides of a later level it refers to: an error in an inherited
  /// definition's text gets a note at them (resolveRef, evaluate).
  struct Frame {
    unsigned level;
    /// The definition (`super` names what it replaces); null for others.
    const ScopeDef *def;
    std::vector<const ScopeDef *> overrides;
  };
  std::vector<Frame> frames;
  /// The definition being evaluated, if any (`super` refers to it).
  const ScopeDef *currentDef() const { return frames.empty() ? nullptr : frames.back().def; }
  /// Runs `compute` as the evaluation of `def` (null: the `default`) at
  /// `level`, noting the overrides it used on the errors in its text.
  template <typename F> auto inFrame(unsigned level, const ScopeDef *def, F compute) {
    size_t first = c.diags.getDiagnostics().size();
    frames.push_back({level, def, {}});
    decltype(compute()) value;
    {
      LevelGuard guard(currentLevel, level);
      value = compute();
    }
    std::vector<const ScopeDef *> overrides = std::move(frames.back().overrides);
    frames.pop_back();
    noteOverrides(first, overrides);
    for (const ScopeDef *o : overrides)
      useOverride(o);
    return std::make_pair(std::move(value), std::move(overrides));
  }
  /// Notes at `overrides` on the errors since index `first` that are not in
  /// this platform's own text.
  void noteOverrides(size_t first, const std::vector<const ScopeDef *> &overrides);
  /// Records that the definitions being evaluated use override `o` (when it
  /// is of a later level than theirs).
  void useOverride(const ScopeDef *o) {
    for (Frame &f : frames)
      if (f.level < o->level && !llvm::is_contained(f.overrides, o))
        f.overrides.push_back(o);
  }

  std::map<std::string, Memo<PartialAttr>> attrs;
  std::map<std::string, Memo<PartialConfig>> configs;
  std::map<std::string, Memo<OptionsValue>> options;
  std::map<std::string, Memo<std::vector<std::string>>> groups;
  std::map<const ast::OpsetDecl *, std::optional<OptionsValue>> opsets;
  std::map<const ast::FuseDecl *, std::optional<std::vector<std::vector<std::string>>>> patterns;
  std::optional<std::optional<OptionsValue>> defaultMemo;

  /// Every config resolved for the platform, for Rule 11.
  struct SeenConfig {
    ir::OpConfig config;
    std::vector<Explicit<int64_t>> explicitInputBits;
  };
  std::vector<SeenConfig> seen;
};

template <typename T, typename F>
const T *PlatformResolver::evaluate(std::map<std::string, Memo<T>> &memo, const ast::Ident &ref,
                                    const ScopeDef &def, F compute) {
  // A definition an override replaced (`super`) has a memo of its own.
  Memo<T> &m = memo[scope.lookup(def.name->name) == &def
                        ? def.name->name
                        : def.name->name + '\0' + std::to_string(def.level)];
  switch (m.state) {
  case Memo<T>::Done:
    for (const ScopeDef *o : m.overrides)
      useOverride(o);
    return &*m.value;
  case Memo<T>::Failed:
    for (const ScopeDef *o : m.overrides)
      useOverride(o);
    return nullptr;
  case Memo<T>::Active:
    c.diags.emit(ref.range, diag::err_cyclic_definition, ref.name)
        .note(def.name->range, diag::note_declared_here, ref.name);
    return nullptr;
  case Memo<T>::Unvisited:
    break;
  }
  m.state = Memo<T>::Active;
  auto [value, overrides] =
      inFrame(def.level, &def, [&]() -> std::optional<T> { return compute(); });
  m.overrides = std::move(overrides);
  // `m` is still valid: std::map never moves its elements.
  m.state = value ? Memo<T>::Done : Memo<T>::Failed;
  m.value = std::move(value);
  return m.value ? &*m.value : nullptr;
}

} // namespace tpcc::passes

#endif

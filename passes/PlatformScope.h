//===- PlatformScope.h - What a platform can see ----------------*- C++ -*-===//
//
// A platform sees every definition of its parents. Its scope is built level by
// level, from the root of its `extends` chain down to the platform itself:
// each level's `attr`, `config`, `options`, `opset` and `group` names (one
// namespace) replace inherited ones only with `override`, and likewise
// `default`; `version`, `type`, `simd_padding`, `metadata` and `recipe` are simply
// replaced, and a `resources` block replaces the inherited fields it names.
// Each of those may be written once per platform. Rules 1, 7 and the `override` half of 15 are
// checked here.
//
// The scope records *which* AST definition is in effect for each name; the
// resolver then evaluates all of them in this scope (late binding: a parent's
// `config linear8 = a8 with {...}` sees the child's `override config a8`).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_PASSES_PLATFORMSCOPE_H
#define TPCC_PASSES_PLATFORMSCOPE_H

#include "frontend/Frontend.h"

#include "llvm/ADT/ArrayRef.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tpcc::passes {

enum class DefKind { Attr, Config, Options, Opset, Group };

/// "an attr", "a config", "an options declaration", "an opset", "a group".
const char *describeDefKind(DefKind k);

/// The definition in effect for one name.
struct ScopeDef {
  DefKind kind;
  const ast::PlatformItem *item;
  const ast::Ident *name;
  /// Index in the chain of the platform that wrote `item`.
  unsigned level;
};

/// An item together with the level of the platform that wrote it.
template <typename T> struct AtLevel {
  const T *decl;
  unsigned level;
};

struct PlatformScope {
  /// The `extends` chain, root first; the platform itself is the last.
  std::vector<const ast::PlatformDecl *> chain;
  std::map<std::string, ScopeDef> defs;
  /// The definition each `override` replaced, by (name, level of the
  /// override): what `super` names in it.
  std::map<std::pair<std::string, unsigned>, ScopeDef> replaced;
  /// The level at which each name was first defined (for suggestions: the
  /// definitions of a level only know the names of that level and above).
  std::map<std::string, unsigned> firstLevel;
  /// Opset names in definition order; an override keeps the parent's place.
  std::vector<std::string> opsetOrder;
  std::optional<AtLevel<ast::DefaultDecl>> defaultDecl;
  const ast::VersionItem *version = nullptr;
  const ast::TypeItem *type = nullptr;
  const ast::SimdPaddingItem *simdPadding = nullptr;
  const ast::MetadataItem *metadata = nullptr;
  const ast::PreservingQuantizersItem *preservingQuantizers = nullptr;
  const ast::RecipeItem *recipe = nullptr;     ///< the nearest level's `recipe`
  std::vector<AtLevel<ast::FuseDecl>> fuses;   ///< `fuse`, in order
  std::vector<AtLevel<ast::FuseDecl>> removes; ///< `remove fuse`, in order
  /// `resources` blocks, root first (at most one per level).
  std::vector<AtLevel<ast::ResourcesItem>> resources;

  const ast::PlatformDecl &platform() const { return *chain.back(); }
  const ScopeDef *lookup(llvm::StringRef name) const {
    auto it = defs.find(name.str());
    return it == defs.end() ? nullptr : &it->second;
  }
  /// The definition that `def` (an override) replaced, if any.
  const ScopeDef *replacedBy(const ScopeDef &def) const {
    auto it = replaced.find({def.name->name, def.level});
    return it == replaced.end() ? nullptr : &it->second;
  }
  /// True when `item` is in effect for `name`.
  bool isInEffect(const ast::PlatformItem *item, llvm::StringRef name) const {
    const ScopeDef *d = lookup(name);
    return d && d->item == item;
  }
  /// Names of the given kinds that definitions written at `level` know.
  std::vector<std::string> visibleNames(unsigned level, llvm::ArrayRef<DefKind> kinds) const;
};

/// Builds the scope of `chain.back()`, reporting redefinitions (Rules 1, 7),
/// a parent's name defined again without `override`, and `override` of a
/// name no parent defines (Rule 15).
PlatformScope buildPlatformScope(Compilation &c, std::vector<const ast::PlatformDecl *> chain);

} // namespace tpcc::passes

#endif

//===- FieldBlock.h - Reading `{ key: value }` blocks -----------*- C++ -*-===//
//
// Attrs, configs and recipes are all written as field blocks, and they are
// read the same way: a nested block means the same as its dotted keys, so a
// block is first flattened into leaf fields (`activation: { bits: 16 }` becomes
// `activation.bits: 16`), reporting a key given twice. The typed readers then
// check each leaf value against what its field expects and report
// `err_field_type` / `err_bad_enum` at the value.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_PASSES_FIELDBLOCK_H
#define TPCC_PASSES_FIELDBLOCK_H

#include "frontend/Frontend.h"
#include "ir/TpcIR.h"

#include "llvm/ADT/ArrayRef.h"

#include <optional>
#include <string>
#include <vector>

namespace tpcc::passes {

/// One leaf field of a flattened block.
struct FlatField {
  /// The key's components, those of enclosing blocks first.
  std::vector<const ast::Ident *> path;
  /// A leaf value; a block only when it is empty (`weights.kernel: {}`).
  const ast::Value *value = nullptr;
  /// The whole dotted key ("weights.kernel.bits").
  std::string key;
  /// The key as written in its own block.
  SourceRange keyRange;

  llvm::StringRef name(size_t i) const { return path[i]->name; }
  /// The dotted key of the first `n` components.
  std::string prefix(size_t n) const;
};

/// Flattens `block` into its leaf fields in source order. A key given twice
/// (also through a nested block: `activation: {bits: 8}, activation.bits: 8`)
/// is reported at the second, with a note at the first, and dropped.
std::vector<FlatField> flattenBlock(Compilation &c, const ast::BlockValue &block);

/// True for `{}`.
bool isEmptyBlock(const ast::Value *v);

/// "an integer", "a block", "the name `x`": how a value is described in
/// `err_field_type`.
std::string describeValue(const ast::Value &v);

/// Reports `err_unknown_field` for component `i` of `f`, which is not a field
/// of what the first `i` components name (`where`: "a config", "an attr"...
/// for i == 0). `known` lists the valid names there, for a suggestion.
void reportUnknownField(Compilation &c, const FlatField &f, size_t i, llvm::StringRef where,
                        llvm::ArrayRef<const char *> known);

/// Reports `err_field_type`: field `f` expects `expected`.
void reportFieldType(Compilation &c, const FlatField &f, llvm::StringRef expected);

// Typed readers: the value of `f`, or nullopt after reporting a type error.

std::optional<int64_t> readInt(Compilation &c, const FlatField &f,
                               llvm::StringRef expected = "an integer");
/// An integer or `none` (the inner nullopt): `lut_bits`, `fixed_zero_point`, `simd`.
std::optional<std::optional<int64_t>> readIntOrNone(Compilation &c, const FlatField &f);
/// An integer, a decimal number, `2^N`, and `inf`/`-inf` when `allowInf`.
std::optional<double> readNumber(Compilation &c, const FlatField &f, bool allowInf,
                                 llvm::StringRef expected = "a number");
std::optional<bool> readBool(Compilation &c, const FlatField &f);
/// A bare name (an enumerator such as `symmetric`).
const ast::Ident *readWord(Compilation &c, const FlatField &f, llvm::StringRef expected);
/// An amount of resource `r` (language.md "Quantities"): a quantity (`41 KiB`,
/// `1.2 G`, `75%`), an integer (bytes, BOPs) or, for BOPs, a decimal number,
/// read by ir::parseBudget (the rules the quantizer's flags follow too). A bad
/// amount is one `err_bad_amount` at the value. `loc` is the value's range.
std::optional<ir::Budget> readBudget(Compilation &c, const FlatField &f, ir::Resource r);

/// Reads an enumerator of `E`: `what` names the enum in messages, `all`
/// lists its values (spelled with `ir::toString`).
template <typename E, typename ParseFn>
std::optional<E> readEnum(Compilation &c, const FlatField &f, llvm::StringRef what,
                          llvm::ArrayRef<E> all, ParseFn parse);

/// "`a`, `b`, `c`".
std::string joinQuoted(llvm::ArrayRef<std::string> words);

/// A double as the user would write it ("0", "-0.5", "inf").
std::string formatNumber(double d);

template <typename E, typename ParseFn>
std::optional<E> readEnum(Compilation &c, const FlatField &f, llvm::StringRef what,
                          llvm::ArrayRef<E> all, ParseFn parse) {
  const ast::Ident *word = readWord(c, f, "a " + what.str());
  if (!word)
    return std::nullopt;
  if (std::optional<E> e = parse(word->name))
    return e;
  std::vector<std::string> names;
  for (E e : all)
    names.push_back(toString(e));
  c.diags.emit(word->range, diag::err_bad_enum, word->name, what, joinQuoted(names));
  return std::nullopt;
}

} // namespace tpcc::passes

#endif

//===- AST.h - The .tpc abstract syntax tree ---------------------*- C++ -*-===//
//
// The AST is the parse tree with its noise removed: every node carries the
// source range it was parsed from, names are `Ident`s with their own ranges,
// and nothing is resolved yet (that is passes/' job). Nodes are created through
// `ASTContext::create`, which owns them; dispatch on `getKind()` with
// llvm::isa / dyn_cast / cast.
//
// Long `and` / `or` chains and runs of `not` are flat (AndPred/OrPred hold a
// list, NotPred a count), so the tree stays shallow whatever the input.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_FRONTEND_AST_H
#define TPCC_FRONTEND_AST_H

#include "support/CmpOp.h"
#include "support/SourceManager.h"

#include "llvm/Support/Casting.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tpcc::ast {

struct Ident {
  std::string name;
  SourceRange range;
};

class Node {
public:
  enum class Kind {
    // values
    IntLit,
    FloatLit,
    Pow2Lit,
    StringLit,
    BoolLit,
    NoneLit,
    InfLit,
    Quantity,
    NameValue,
    BlockValue,
    ListValue,
    // options and sets
    NamedOptions,
    ListOptions,
    ConcatOptions,
    SetName,
    SetUnion,
    // platform items
    VersionItem,
    TypeItem,
    SimdPaddingItem,
    MetadataItem,
    PreservingQuantizersItem,
    ResourcesItem,
    RecipeItem,
    AttrDecl,
    ConfigDecl,
    OptionsDecl,
    DefaultDecl,
    OpsetDecl,
    GroupDecl,
    FuseDecl,
    // framework items
    WeightDecl,
    OpListDecl,
    RangeDecl,
    CompositeDecl,
    // predicates
    OrPred,
    AndPred,
    NotPred,
    CmpPred,
    InPred,
    ConstPred,
    HasPred,
    // operands
    AttrOperand,
    InputOperand,
    RankOperand,
    ShapeOperand,
    LiteralOperand,
    ListOperand,
    // top level
    ImportDecl,
    PlatformDecl,
    FrameworkDecl,
    CapabilitiesDecl,
    RecipeDecl,
  };

  virtual ~Node() = default;
  Kind getKind() const { return kind; }
  SourceRange getRange() const { return range; }
  SourceLoc getLoc() const { return range.begin; }

protected:
  Node(Kind kind, SourceRange range) : kind(kind), range(range) {}

private:
  Kind kind;
  SourceRange range;
};

/// Owns every node of a compilation.
class ASTContext {
public:
  template <typename T, typename... Args> T *create(Args &&...args) {
    auto node = std::unique_ptr<T>(new T(std::forward<Args>(args)...));
    T *raw = node.get();
    nodes.push_back(std::move(node));
    return raw;
  }

private:
  std::vector<std::unique_ptr<Node>> nodes;
};

#define TPCC_AST_CLASSOF(K)                                                                        \
  static bool classof(const Node *n) { return n->getKind() == Kind::K; }

//===----------------------------------------------------------------------===//
// Values: literals, names, `{...}` blocks and `[...]` lists
//===----------------------------------------------------------------------===//

class Value : public Node {
public:
  static bool classof(const Node *n) {
    return n->getKind() >= Kind::IntLit && n->getKind() <= Kind::ListValue;
  }

protected:
  using Node::Node;
};

class IntLit : public Value {
public:
  TPCC_AST_CLASSOF(IntLit)
  int64_t value;
  IntLit(SourceRange r, int64_t v) : Value(Kind::IntLit, r), value(v) {}
};

class FloatLit : public Value {
public:
  TPCC_AST_CLASSOF(FloatLit)
  double value;
  std::string text; ///< as written, e.g. "1.0" (versions keep MINOR.PATCH)
  FloatLit(SourceRange r, double v, std::string t)
      : Value(Kind::FloatLit, r), value(v), text(std::move(t)) {}
};

/// `2^N`
class Pow2Lit : public Value {
public:
  TPCC_AST_CLASSOF(Pow2Lit)
  int exponent;
  Pow2Lit(SourceRange r, int e) : Value(Kind::Pow2Lit, r), exponent(e) {}
};

class StringLit : public Value {
public:
  TPCC_AST_CLASSOF(StringLit)
  std::string value; ///< unescaped
  StringLit(SourceRange r, std::string v) : Value(Kind::StringLit, r), value(std::move(v)) {}
};

class BoolLit : public Value {
public:
  TPCC_AST_CLASSOF(BoolLit)
  bool value;
  BoolLit(SourceRange r, bool v) : Value(Kind::BoolLit, r), value(v) {}
};

class NoneLit : public Value {
public:
  TPCC_AST_CLASSOF(NoneLit)
  explicit NoneLit(SourceRange r) : Value(Kind::NoneLit, r) {}
};

/// `inf` or `-inf`
class InfLit : public Value {
public:
  TPCC_AST_CLASSOF(InfLit)
  bool negative;
  InfLit(SourceRange r, bool neg) : Value(Kind::InfLit, r), negative(neg) {}
};

/// A number with a unit: `41 KiB`, `2.5 MB`, `1.2 G`, `75%`. The unit is
/// any name (or `%`): the field that reads it decides which units it takes.
class Quantity : public Value {
public:
  TPCC_AST_CLASSOF(Quantity)
  std::string number; ///< as written: "41", "2.5", "-1e3"
  std::string unit;   ///< as written: "KiB", "G", "%"
  SourceRange numberRange, unitRange;
  Quantity(SourceRange r, std::string n, SourceRange nr, std::string u, SourceRange ur)
      : Value(Kind::Quantity, r), number(std::move(n)), unit(std::move(u)), numberRange(nr),
        unitRange(ur) {}
  bool isPercent() const { return unit == "%"; }
  /// "41 KiB", "75%": the text ir::parseBudget reads.
  std::string text() const { return isPercent() ? number + "%" : number + " " + unit; }
};

class BlockValue;

/// `NAME` or `NAME with {...} with {...}` — a reference (to an attr, a config)
/// or an enumerator (`symmetric`, `auto`), decided by the field it sits in.
class NameValue : public Value {
public:
  TPCC_AST_CLASSOF(NameValue)
  Ident name;
  std::vector<BlockValue *> withs;
  NameValue(SourceRange r, Ident n, std::vector<BlockValue *> w)
      : Value(Kind::NameValue, r), name(std::move(n)), withs(std::move(w)) {}
};

/// One `key: value` of a block; `key` has one entry per dotted component.
struct Field {
  std::vector<Ident> key;
  Value *value = nullptr;
  SourceRange range;
  std::string keyString() const {
    std::string s;
    for (const Ident &k : key)
      s += (s.empty() ? "" : ".") + k.name;
    return s;
  }
};

class BlockValue : public Value {
public:
  TPCC_AST_CLASSOF(BlockValue)
  std::vector<Field> fields;
  BlockValue(SourceRange r, std::vector<Field> f)
      : Value(Kind::BlockValue, r), fields(std::move(f)) {}
};

class ListValue : public Value {
public:
  TPCC_AST_CLASSOF(ListValue)
  std::vector<Value *> elements;
  ListValue(SourceRange r, std::vector<Value *> e)
      : Value(Kind::ListValue, r), elements(std::move(e)) {}
};

//===----------------------------------------------------------------------===//
// Options and opset sets
//===----------------------------------------------------------------------===//

class OptionsExpr : public Node {
public:
  static bool classof(const Node *n) {
    return n->getKind() == Kind::NamedOptions || n->getKind() == Kind::ListOptions ||
           n->getKind() == Kind::ConcatOptions;
  }

protected:
  using Node::Node;
};

/// `linear` — the name of an `options` declaration (or `super`), maybe
/// followed by `with` blocks that edit every candidate.
class NamedOptions : public OptionsExpr {
public:
  TPCC_AST_CLASSOF(NamedOptions)
  Ident name;
  std::vector<BlockValue *> withs;
  NamedOptions(SourceRange r, Ident n, std::vector<BlockValue *> w = {})
      : OptionsExpr(Kind::NamedOptions, r), name(std::move(n)), withs(std::move(w)) {}
};

/// `[c1, c2 with {...}, {...}] base c1`. Each element is a NameValue (a config
/// name, maybe with `with` blocks) or a BlockValue (an inline config).
class ListOptions : public OptionsExpr {
public:
  TPCC_AST_CLASSOF(ListOptions)
  std::vector<Value *> elements;
  std::optional<Ident> base;
  ListOptions(SourceRange r, std::vector<Value *> e, std::optional<Ident> b)
      : OptionsExpr(Kind::ListOptions, r), elements(std::move(e)), base(std::move(b)) {}
};

/// `A + B + ...`: the candidates of each in turn; the base is A's.
class ConcatOptions : public OptionsExpr {
public:
  TPCC_AST_CLASSOF(ConcatOptions)
  std::vector<OptionsExpr *> parts;
  ConcatOptions(SourceRange r, std::vector<OptionsExpr *> p)
      : OptionsExpr(Kind::ConcatOptions, r), parts(std::move(p)) {}
};

class SetExpr : public Node {
public:
  static bool classof(const Node *n) {
    return n->getKind() == Kind::SetName || n->getKind() == Kind::SetUnion;
  }

protected:
  using Node::Node;
};

/// An opset or group name.
class SetName : public SetExpr {
public:
  TPCC_AST_CLASSOF(SetName)
  Ident name;
  SetName(SourceRange r, Ident n) : SetExpr(Kind::SetName, r), name(std::move(n)) {}
};

/// `(A | B | C)`
class SetUnion : public SetExpr {
public:
  TPCC_AST_CLASSOF(SetUnion)
  std::vector<SetExpr *> members;
  SetUnion(SourceRange r, std::vector<SetExpr *> m)
      : SetExpr(Kind::SetUnion, r), members(std::move(m)) {}
};

//===----------------------------------------------------------------------===//
// Platform items
//===----------------------------------------------------------------------===//

class PlatformItem : public Node {
public:
  static bool classof(const Node *n) {
    return n->getKind() >= Kind::VersionItem && n->getKind() <= Kind::FuseDecl;
  }
  /// Written with a leading `override`.
  bool isOverride = false;

protected:
  using Node::Node;
};

class VersionItem : public PlatformItem {
public:
  TPCC_AST_CLASSOF(VersionItem)
  int64_t minor, patch;
  VersionItem(SourceRange r, int64_t mi, int64_t pa)
      : PlatformItem(Kind::VersionItem, r), minor(mi), patch(pa) {}
};

class TypeItem : public PlatformItem {
public:
  TPCC_AST_CLASSOF(TypeItem)
  std::string type;
  TypeItem(SourceRange r, std::string t) : PlatformItem(Kind::TypeItem, r), type(std::move(t)) {}
};

class SimdPaddingItem : public PlatformItem {
public:
  TPCC_AST_CLASSOF(SimdPaddingItem)
  bool value;
  SimdPaddingItem(SourceRange r, bool v) : PlatformItem(Kind::SimdPaddingItem, r), value(v) {}
};

class MetadataItem : public PlatformItem {
public:
  TPCC_AST_CLASSOF(MetadataItem)
  bool value;
  MetadataItem(SourceRange r, bool v) : PlatformItem(Kind::MetadataItem, r), value(v) {}
};

/// `recipe NAME`: the recipe `tpcc quantize` uses when the user names none.
class RecipeItem : public PlatformItem {
public:
  TPCC_AST_CLASSOF(RecipeItem)
  Ident recipe;
  RecipeItem(SourceRange r, Ident n) : PlatformItem(Kind::RecipeItem, r), recipe(std::move(n)) {}
};

/// `insert_preserving_quantizers BOOL`
class PreservingQuantizersItem : public PlatformItem {
public:
  TPCC_AST_CLASSOF(PreservingQuantizersItem)
  bool value;
  PreservingQuantizersItem(SourceRange r, bool v)
      : PlatformItem(Kind::PreservingQuantizersItem, r), value(v) {}
};

/// `resources { weights_memory: 8 MiB, ... }`: the memory the platform has.
class ResourcesItem : public PlatformItem {
public:
  TPCC_AST_CLASSOF(ResourcesItem)
  BlockValue *body;
  ResourcesItem(SourceRange r, BlockValue *b) : PlatformItem(Kind::ResourcesItem, r), body(b) {}
};

/// `attr NAME = VALUE` where VALUE is a BlockValue or a NameValue (`k8 with {...}`).
class AttrDecl : public PlatformItem {
public:
  TPCC_AST_CLASSOF(AttrDecl)
  Ident name;
  Value *value;
  AttrDecl(SourceRange r, Ident n, Value *v)
      : PlatformItem(Kind::AttrDecl, r), name(std::move(n)), value(v) {}
};

/// `config NAME = VALUE` (BlockValue or NameValue).
class ConfigDecl : public PlatformItem {
public:
  TPCC_AST_CLASSOF(ConfigDecl)
  Ident name;
  Value *value;
  ConfigDecl(SourceRange r, Ident n, Value *v)
      : PlatformItem(Kind::ConfigDecl, r), name(std::move(n)), value(v) {}
};

class OptionsDecl : public PlatformItem {
public:
  TPCC_AST_CLASSOF(OptionsDecl)
  Ident name;
  OptionsExpr *options;
  OptionsDecl(SourceRange r, Ident n, OptionsExpr *o)
      : PlatformItem(Kind::OptionsDecl, r), name(std::move(n)), options(o) {}
};

class DefaultDecl : public PlatformItem {
public:
  TPCC_AST_CLASSOF(DefaultDecl)
  OptionsExpr *options;
  DefaultDecl(SourceRange r, OptionsExpr *o) : PlatformItem(Kind::DefaultDecl, r), options(o) {}
};

/// `opset A, B : OPTIONS` — `options` is null for config-less sets.
class OpsetDecl : public PlatformItem {
public:
  TPCC_AST_CLASSOF(OpsetDecl)
  std::vector<Ident> names;
  OptionsExpr *options;
  OpsetDecl(SourceRange r, std::vector<Ident> n, OptionsExpr *o)
      : PlatformItem(Kind::OpsetDecl, r), names(std::move(n)), options(o) {}
};

/// `group G = A | B | (C | D)`
class GroupDecl : public PlatformItem {
public:
  TPCC_AST_CLASSOF(GroupDecl)
  Ident name;
  std::vector<SetExpr *> members;
  GroupDecl(SourceRange r, Ident n, std::vector<SetExpr *> m)
      : PlatformItem(Kind::GroupDecl, r), name(std::move(n)), members(std::move(m)) {}
};

/// `fuse E1 -> E2 ... [as NAME]`, or `remove fuse ...` when `isRemove`.
class FuseDecl : public PlatformItem {
public:
  TPCC_AST_CLASSOF(FuseDecl)
  std::vector<SetExpr *> elements;
  /// `with CONFIG`: the fused operation's quantization config (MCT's
  /// `fuse_op_quantization_config`), or null.
  Value *config = nullptr;
  std::optional<Ident> asName;
  bool isRemove;
  FuseDecl(SourceRange r, std::vector<SetExpr *> e, Value *config, std::optional<Ident> as,
           bool remove)
      : PlatformItem(Kind::FuseDecl, r), elements(std::move(e)), config(config),
        asName(std::move(as)), isRemove(remove) {}
};

//===----------------------------------------------------------------------===//
// Filter predicates
//===----------------------------------------------------------------------===//

class Operand : public Node {
public:
  static bool classof(const Node *n) {
    return n->getKind() >= Kind::AttrOperand && n->getKind() <= Kind::ListOperand;
  }

protected:
  using Node::Node;
};

/// A node attribute (an absent attribute takes its ONNX schema default).
class AttrOperand : public Operand {
public:
  TPCC_AST_CLASSOF(AttrOperand)
  Ident name;
  AttrOperand(SourceRange r, Ident n) : Operand(Kind::AttrOperand, r), name(std::move(n)) {}
};

/// `input[i]` — the value of a constant scalar input.
class InputOperand : public Operand {
public:
  TPCC_AST_CLASSOF(InputOperand)
  int64_t index;
  SourceRange indexRange;
  InputOperand(SourceRange r, int64_t i, SourceRange ir)
      : Operand(Kind::InputOperand, r), index(i), indexRange(ir) {}
};

/// `rank(input[i])`
class RankOperand : public Operand {
public:
  TPCC_AST_CLASSOF(RankOperand)
  int64_t index;
  SourceRange indexRange;
  RankOperand(SourceRange r, int64_t i, SourceRange ir)
      : Operand(Kind::RankOperand, r), index(i), indexRange(ir) {}
};

/// `shape(input[i])[d]`
class ShapeOperand : public Operand {
public:
  TPCC_AST_CLASSOF(ShapeOperand)
  int64_t index, dim;
  SourceRange indexRange;
  ShapeOperand(SourceRange r, int64_t i, int64_t d, SourceRange ir)
      : Operand(Kind::ShapeOperand, r), index(i), dim(d), indexRange(ir) {}
};

class LiteralOperand : public Operand {
public:
  TPCC_AST_CLASSOF(LiteralOperand)
  Value *literal;
  LiteralOperand(SourceRange r, Value *l) : Operand(Kind::LiteralOperand, r), literal(l) {}
};

/// `[1, 1]` — compared with list-valued attributes (`kernel_shape == [1, 1]`).
class ListOperand : public Operand {
public:
  TPCC_AST_CLASSOF(ListOperand)
  std::vector<Value *> elements;
  ListOperand(SourceRange r, std::vector<Value *> e)
      : Operand(Kind::ListOperand, r), elements(std::move(e)) {}
};

class Pred : public Node {
public:
  static bool classof(const Node *n) {
    return n->getKind() >= Kind::OrPred && n->getKind() <= Kind::HasPred;
  }

protected:
  using Node::Node;
};

class OrPred : public Pred {
public:
  TPCC_AST_CLASSOF(OrPred)
  std::vector<Pred *> operands;
  OrPred(SourceRange r, std::vector<Pred *> o) : Pred(Kind::OrPred, r), operands(std::move(o)) {}
};

class AndPred : public Pred {
public:
  TPCC_AST_CLASSOF(AndPred)
  std::vector<Pred *> operands;
  AndPred(SourceRange r, std::vector<Pred *> o) : Pred(Kind::AndPred, r), operands(std::move(o)) {}
};

/// `not not ... P` — `count` negations of `operand`.
class NotPred : public Pred {
public:
  TPCC_AST_CLASSOF(NotPred)
  unsigned count;
  Pred *operand;
  NotPred(SourceRange r, unsigned c, Pred *o) : Pred(Kind::NotPred, r), count(c), operand(o) {}
};

using tpcc::CmpOp;

class CmpPred : public Pred {
public:
  TPCC_AST_CLASSOF(CmpPred)
  Operand *lhs;
  CmpOp op;
  SourceRange opRange;
  Operand *rhs;
  CmpPred(SourceRange r, Operand *l, CmpOp o, SourceRange orange, Operand *rh)
      : Pred(Kind::CmpPred, r), lhs(l), op(o), opRange(orange), rhs(rh) {}
};

/// `X in [a, b, c]`
class InPred : public Pred {
public:
  TPCC_AST_CLASSOF(InPred)
  Operand *lhs;
  std::vector<Value *> list;
  InPred(SourceRange r, Operand *l, std::vector<Value *> li)
      : Pred(Kind::InPred, r), lhs(l), list(std::move(li)) {}
};

/// `const(input[i])`
class ConstPred : public Pred {
public:
  TPCC_AST_CLASSOF(ConstPred)
  int64_t index;
  SourceRange indexRange;
  ConstPred(SourceRange r, int64_t i, SourceRange ir)
      : Pred(Kind::ConstPred, r), index(i), indexRange(ir) {}
};

/// `has(attr)`
class HasPred : public Pred {
public:
  TPCC_AST_CLASSOF(HasPred)
  Ident attr;
  HasPred(SourceRange r, Ident a) : Pred(Kind::HasPred, r), attr(std::move(a)) {}
};

//===----------------------------------------------------------------------===//
// Framework items
//===----------------------------------------------------------------------===//

struct AxisArg {
  Ident name; ///< `out` or `in`
  int64_t value;
  SourceRange range;
};

/// `OP.input[i] [where PRED] [axes(out: a, in: b)]`
struct SlotBinding {
  Ident op;
  int64_t input;
  SourceRange inputRange;
  Pred *where = nullptr;
  std::vector<AxisArg> axes;
  SourceRange axesRange;
  SourceRange range;
};

/// `weight SLOT: binding, binding, ...`
class WeightDecl : public Node {
public:
  TPCC_AST_CLASSOF(WeightDecl)
  Ident slot;
  std::vector<SlotBinding> bindings;
  WeightDecl(SourceRange r, Ident s, std::vector<SlotBinding> b)
      : Node(Kind::WeightDecl, r), slot(std::move(s)), bindings(std::move(b)) {}
};

/// `activation A, B` or `no_quantize A, B`
class OpListDecl : public Node {
public:
  TPCC_AST_CLASSOF(OpListDecl)
  enum ListKind { Activation, NoQuantize } listKind;
  std::vector<Ident> ops;
  OpListDecl(SourceRange r, ListKind k, std::vector<Ident> o)
      : Node(Kind::OpListDecl, r), listKind(k), ops(std::move(o)) {}
};

/// `range OP [lo, hi]`
class RangeDecl : public Node {
public:
  TPCC_AST_CLASSOF(RangeDecl)
  Ident op;
  Value *lo, *hi;
  RangeDecl(SourceRange r, Ident o, Value *l, Value *h)
      : Node(Kind::RangeDecl, r), op(std::move(o)), lo(l), hi(h) {}
};

/// One term of a composite operator's pattern: `OP(args) [where P]`, a
/// parameter, or a number (a constant input matched by value).
struct PatternTerm {
  enum TermKind { Op, Param, Number } termKind = Op;
  Ident name;        ///< Op: the operator; Param: the parameter
  double number = 0; ///< Number: its value
  std::string text;  ///< Number: as written
  std::vector<PatternTerm> args;
  Pred *where = nullptr;
  SourceRange range;
};

/// `composite NAME(x, ...) = OP(args) [where P] [is OP]`
class CompositeDecl : public Node {
public:
  TPCC_AST_CLASSOF(CompositeDecl)
  Ident name;
  std::vector<Ident> params;
  PatternTerm pattern;
  /// `is OP`: the ONNX operator the pattern computes (§6.1), or absent.
  std::optional<Ident> is;
  CompositeDecl(SourceRange r, Ident n, std::vector<Ident> p, PatternTerm t,
                std::optional<Ident> is)
      : Node(Kind::CompositeDecl, r), name(std::move(n)), params(std::move(p)),
        pattern(std::move(t)), is(std::move(is)) {}
};

//===----------------------------------------------------------------------===//
// Top-level declarations
//===----------------------------------------------------------------------===//

class ImportDecl : public Node {
public:
  TPCC_AST_CLASSOF(ImportDecl)
  std::string path;
  SourceRange pathRange;
  ImportDecl(SourceRange r, std::string p, SourceRange pr)
      : Node(Kind::ImportDecl, r), path(std::move(p)), pathRange(pr) {}
};

class TopDecl : public Node {
public:
  static bool classof(const Node *n) {
    return n->getKind() >= Kind::PlatformDecl && n->getKind() <= Kind::RecipeDecl;
  }
  Ident name;

protected:
  TopDecl(Kind k, SourceRange r, Ident n) : Node(k, r), name(std::move(n)) {}
};

class PlatformDecl : public TopDecl {
public:
  TPCC_AST_CLASSOF(PlatformDecl)
  std::optional<Ident> parent;
  std::vector<PlatformItem *> items;
  PlatformDecl(SourceRange r, Ident n, std::optional<Ident> p, std::vector<PlatformItem *> i)
      : TopDecl(Kind::PlatformDecl, r, std::move(n)), parent(std::move(p)), items(std::move(i)) {}
};

class FrameworkDecl : public TopDecl {
public:
  TPCC_AST_CLASSOF(FrameworkDecl)
  /// WeightDecl, OpListDecl, RangeDecl and CompositeDecl nodes, in source order.
  std::vector<Node *> items;
  FrameworkDecl(SourceRange r, Ident n, std::vector<Node *> i)
      : TopDecl(Kind::FrameworkDecl, r, std::move(n)), items(std::move(i)) {}
};

/// `op [where PRED]` inside a binding.
struct OpRef {
  Ident op;
  Pred *where = nullptr;
  SourceRange range;
};

/// `OPSET <- op, op where PRED, ...`
struct Binding {
  Ident opset;
  std::vector<OpRef> ops; ///< empty for `OPSET <- none`
  SourceRange range;
  bool none = false; ///< `OPSET <- none`: deliberately bound to no op
  /// Where `none` is written (invalid when it is not); with ops, an error.
  SourceRange noneRange;
  /// `override OPSET <- ...`: replaces the bindings of OPSET that the
  /// capabilities extended hold (invalid range: a plain binding).
  SourceRange overrideRange;
  bool isOverride() const { return overrideRange.isValid(); }
};

class CapabilitiesDecl : public TopDecl {
public:
  TPCC_AST_CLASSOF(CapabilitiesDecl)
  Ident platform, framework;
  /// `extends PARENT`: the capabilities whose bindings this one inherits.
  std::optional<Ident> parent;
  std::vector<Binding> bindings;
  CapabilitiesDecl(SourceRange r, Ident n, Ident p, Ident f, std::optional<Ident> parent,
                   std::vector<Binding> b)
      : TopDecl(Kind::CapabilitiesDecl, r, std::move(n)), platform(std::move(p)),
        framework(std::move(f)), parent(std::move(parent)), bindings(std::move(b)) {}
};

class RecipeDecl : public TopDecl {
public:
  TPCC_AST_CLASSOF(RecipeDecl)
  std::optional<Ident> parent;
  BlockValue *body;
  RecipeDecl(SourceRange r, Ident n, std::optional<Ident> p, BlockValue *b)
      : TopDecl(Kind::RecipeDecl, r, std::move(n)), parent(std::move(p)), body(b) {}
};

/// One parsed source file.
struct File {
  uint32_t bufferId = 0;
  std::string path; ///< canonical path (empty for in-memory buffers)
  std::vector<ImportDecl *> imports;
  std::vector<TopDecl *> decls;
};

#undef TPCC_AST_CLASSOF

} // namespace tpcc::ast

#endif

//===- PredicateChecker.cpp - Checking ops and filter predicates ----------===//
//
// Type checking of filter predicates. Each operand gets the set of value
// types it may hold (an attribute has its schema types, `rank(...)` and
// `shape(...)[d]` are integers, `input[i]` is any scalar, a literal has its
// own type), and a comparison is accepted when some pair of types fits:
//
//  - numbers compare with numbers, strings with strings, booleans with
//    booleans; an integer operand (an INT attribute, a rank, a dimension)
//    does not take a decimal literal, a float operand takes an integer one;
//  - a list literal compares (`==` / `!=` only) with a list-typed attribute
//    whose elements its elements fit; `in` needs a single value on its left;
//  - `none` compares with anything, but only with `==` and `!=`;
//  - `<`, `<=`, `>`, `>=` compare numbers only;
//  - tensor, graph and type attributes compare only with `none`.
//
//===----------------------------------------------------------------------===//
#include "passes/PredicateChecker.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <cmath>

using namespace tpcc;
using namespace tpcc::passes;

//===----------------------------------------------------------------------===//
// Ops and inputs
//===----------------------------------------------------------------------===//

const ir::OnnxOp *passes::lookupOnnxOp(Compilation &c, const ast::Ident &name) {
  const ir::OnnxSchemaIndex &index = ir::OnnxSchemaIndex::get();
  if (const ir::OnnxOp *op = index.find(name.name))
    return op;
  c.diags
      .emit(name.range, diag::err_unknown_onnx_op, name.name,
            didYouMean(name.name, index.opNames()))
      .report();
  return nullptr;
}

LogicalResult passes::checkInputIndex(Compilation &c, const ir::OnnxOp *op, int64_t index,
                                      SourceRange range) {
  if (index < 0)
    return c.diags.emit(range, diag::err_negative_input_index, index);
  if (op && !op->hasInput(index))
    return c.diags.emit(range, diag::err_input_index, index, op->name,
                        std::to_string(*op->maxInputs) +
                            (*op->maxInputs == 1 ? " input" : " inputs"));
  return success();
}

//===----------------------------------------------------------------------===//
// Literals
//===----------------------------------------------------------------------===//

static ir::Literal convertLiteral(const ast::Value &v) {
  ir::Literal lit;
  lit.loc = v.getRange();
  if (auto *i = llvm::dyn_cast<ast::IntLit>(&v)) {
    lit.kind = ir::Literal::Kind::Int;
    lit.i = i->value;
  } else if (auto *f = llvm::dyn_cast<ast::FloatLit>(&v)) {
    lit.kind = ir::Literal::Kind::Float;
    lit.f = f->value;
  } else if (auto *p = llvm::dyn_cast<ast::Pow2Lit>(&v)) {
    // A whole power of two is an integer (`2^4` is 16); `2^-16` is not.
    if (p->exponent >= 0 && p->exponent <= 62) {
      lit.kind = ir::Literal::Kind::Int;
      lit.i = int64_t(1) << p->exponent;
    } else {
      lit.kind = ir::Literal::Kind::Float;
      lit.f = std::ldexp(1.0, p->exponent);
    }
  } else if (auto *inf = llvm::dyn_cast<ast::InfLit>(&v)) {
    lit.kind = ir::Literal::Kind::Float;
    lit.f = inf->negative ? -HUGE_VAL : HUGE_VAL;
  } else if (auto *s = llvm::dyn_cast<ast::StringLit>(&v)) {
    lit.kind = ir::Literal::Kind::String;
    lit.s = s->value;
  } else if (auto *b = llvm::dyn_cast<ast::BoolLit>(&v)) {
    lit.kind = ir::Literal::Kind::Bool;
    lit.b = b->value;
  } else if (llvm::isa<ast::NoneLit>(&v)) {
    lit.kind = ir::Literal::Kind::None;
  } else {
    // The grammar only puts literals into predicates.
    llvm_unreachable("a predicate literal is not a literal");
  }
  return lit;
}

namespace {

/// What an operand may hold.
enum class Ty {
  Int,
  Float,
  String,
  Bool,
  Ints,
  Floats,
  Strings,
  Bools,
  EmptyList,
  Opaque,    ///< tensors, graphs, types and their lists: only `none` fits
  AnyScalar, ///< `input[i]`: the value of a scalar input of any type
};

bool isNumeric(Ty t) { return t == Ty::Int || t == Ty::Float; }

const char *describeLiteralTy(Ty t) {
  switch (t) {
  case Ty::Int:
    return "an integer";
  case Ty::Float:
    return "a decimal number";
  case Ty::String:
    return "a string";
  case Ty::Bool:
    return "a boolean";
  case Ty::Ints:
    return "a list of integers";
  case Ty::Floats:
    return "a list of numbers";
  case Ty::Strings:
    return "a list of strings";
  case Ty::Bools:
    return "a list of booleans";
  case Ty::EmptyList:
    return "an empty list";
  case Ty::Opaque:
    return "a value of no comparable type";
  case Ty::AnyScalar:
    return "a scalar input value";
  }
  return "a value";
}

Ty fromOnnx(ir::OnnxAttrType t) {
  switch (t) {
  case ir::OnnxAttrType::Int:
    return Ty::Int;
  case ir::OnnxAttrType::Float:
    return Ty::Float;
  case ir::OnnxAttrType::String:
    return Ty::String;
  case ir::OnnxAttrType::Ints:
    return Ty::Ints;
  case ir::OnnxAttrType::Floats:
    return Ty::Floats;
  case ir::OnnxAttrType::Strings:
    return Ty::Strings;
  default:
    return Ty::Opaque;
  }
}

Ty scalarLiteralTy(const ir::Literal &lit) {
  switch (lit.kind) {
  case ir::Literal::Kind::Int:
    return Ty::Int;
  case ir::Literal::Kind::Float:
    return Ty::Float;
  case ir::Literal::Kind::String:
    return Ty::String;
  case ir::Literal::Kind::Bool:
    return Ty::Bool;
  case ir::Literal::Kind::None:
  case ir::Literal::Kind::List:
    return Ty::Opaque;
  }
  llvm_unreachable("every literal kind is handled");
}

/// The element class of a literal, for checking that a list does not mix.
const char *elementClass(Ty t) {
  switch (t) {
  case Ty::Int:
  case Ty::Float:
    return "numbers";
  case Ty::String:
    return "strings";
  case Ty::Bool:
    return "booleans";
  default:
    return "values";
  }
}

/// Whether a value of type `a` can equal one of type `b`. `aLit` / `bLit`
/// say which side is a literal: a literal must fit the other side's type.
bool fits(Ty a, bool aLit, Ty b, bool bLit) {
  if (a == Ty::Opaque || b == Ty::Opaque)
    return false;
  if (a == Ty::AnyScalar || b == Ty::AnyScalar) {
    Ty other = a == Ty::AnyScalar ? b : a;
    return other == Ty::AnyScalar || isNumeric(other) || other == Ty::String || other == Ty::Bool;
  }
  if (a == b)
    return true;
  // An integer operand does not take a decimal literal; the other way is fine.
  if (isNumeric(a) && isNumeric(b))
    return !(a == Ty::Int && !aLit && bLit) && !(b == Ty::Int && !bLit && aLit);
  if ((a == Ty::Ints || a == Ty::Floats) && (b == Ty::Ints || b == Ty::Floats))
    return !(a == Ty::Ints && !aLit && bLit) && !(b == Ty::Ints && !bLit && aLit);
  auto isList = [](Ty t) {
    return t == Ty::Ints || t == Ty::Floats || t == Ty::Strings || t == Ty::Bools ||
           t == Ty::EmptyList;
  };
  return (a == Ty::EmptyList && isList(b)) || (b == Ty::EmptyList && isList(a));
}

/// A checked operand: its IR and what it may hold.
struct TypedOperand {
  ir::Operand ir;
  SourceRange range;
  std::string spelling; ///< as written: `transB`, `rank(input[0])`, `"x"`
  /// Possible types; empty when unchecked (an error was reported, or the op
  /// is unknown).
  std::vector<Ty> types;
  bool isLiteral = false;
  bool isNone = false;
  /// For attribute operands: the schema's view of the attribute.
  const ir::OnnxAttrUnion *attr = nullptr;

  bool checked() const { return !types.empty(); }
};

class PredicateChecker {
public:
  PredicateChecker(Compilation &c, const ir::OnnxOp *op) : c(c), op(op) {}

  ir::Predicate check(const ast::Pred &pred);

private:
  ir::Predicate checkCmp(const ast::CmpPred &cmp);
  ir::Predicate checkIn(const ast::InPred &in);
  TypedOperand checkOperand(const ast::Operand &operand);
  /// Checks that `a` and `b` may be equal; reports at the literal side, else
  /// at `b`.
  void checkFits(const TypedOperand &a, const TypedOperand &b);
  /// Reports that `blamed` cannot be compared with `other`.
  void reportMismatch(const TypedOperand &blamed, const TypedOperand &other);

  std::string spelling(SourceRange r, const ir::Operand &fallback) const;
  std::string describe(const TypedOperand &t) const;
  bool checkAttrName(const ast::Ident &name, const ir::OnnxAttrUnion *&attr);

  Compilation &c;
  const ir::OnnxOp *op;
};

} // namespace

std::string PredicateChecker::spelling(SourceRange r, const ir::Operand &fallback) const {
  if (r.isValid() && r.end.file == r.begin.file && r.end.offset > r.begin.offset) {
    llvm::StringRef buf = c.sources.getBuffer(r.begin.file);
    if (r.end.offset <= buf.size())
      return buf.slice(r.begin.offset, r.end.offset).str();
  }
  switch (fallback.kind) {
  case ir::Operand::Kind::Attr:
    return fallback.attr;
  case ir::Operand::Kind::Input:
    return "input[" + std::to_string(fallback.index) + "]";
  case ir::Operand::Kind::Rank:
    return "rank(input[" + std::to_string(fallback.index) + "])";
  case ir::Operand::Kind::Shape:
    return "shape(input[" + std::to_string(fallback.index) + "])[" + std::to_string(fallback.dim) +
           "]";
  case ir::Operand::Kind::Literal:
    return "literal";
  }
  return "operand";
}

std::string PredicateChecker::describe(const TypedOperand &t) const {
  if (t.attr) {
    std::string out;
    for (ir::OnnxAttrType type : t.attr->types)
      out += (out.empty() ? "" : " or ") + std::string(ir::describe(type));
    return out;
  }
  switch (t.ir.kind) {
  case ir::Operand::Kind::Rank:
  case ir::Operand::Kind::Shape:
    return "an integer";
  case ir::Operand::Kind::Input:
    return "a scalar input value";
  case ir::Operand::Kind::Attr:
  case ir::Operand::Kind::Literal:
    break;
  }
  return t.types.empty() ? "a value" : describeLiteralTy(t.types.front());
}

bool PredicateChecker::checkAttrName(const ast::Ident &name, const ir::OnnxAttrUnion *&attr) {
  attr = nullptr;
  if (!op)
    return false;
  attr = op->findAttr(name.name);
  if (attr)
    return true;
  c.diags
      .emit(name.range, diag::err_unknown_attribute, op->name, name.name,
            didYouMean(name.name, op->attributeNames()))
      .report();
  return false;
}

TypedOperand PredicateChecker::checkOperand(const ast::Operand &operand) {
  TypedOperand t;
  t.range = operand.getRange();
  t.ir.loc = t.range;
  switch (operand.getKind()) {
  case ast::Node::Kind::AttrOperand: {
    auto &a = llvm::cast<ast::AttrOperand>(operand);
    t.ir.kind = ir::Operand::Kind::Attr;
    t.ir.attr = a.name.name;
    if (checkAttrName(a.name, t.attr))
      for (ir::OnnxAttrType type : t.attr->types)
        t.types.push_back(fromOnnx(type));
    break;
  }
  case ast::Node::Kind::InputOperand: {
    auto &in = llvm::cast<ast::InputOperand>(operand);
    t.ir.kind = ir::Operand::Kind::Input;
    t.ir.index = in.index;
    if (succeeded(checkInputIndex(c, op, in.index, in.indexRange)))
      t.types = {Ty::AnyScalar};
    break;
  }
  case ast::Node::Kind::RankOperand: {
    auto &r = llvm::cast<ast::RankOperand>(operand);
    t.ir.kind = ir::Operand::Kind::Rank;
    t.ir.index = r.index;
    if (succeeded(checkInputIndex(c, op, r.index, r.indexRange)))
      t.types = {Ty::Int};
    break;
  }
  case ast::Node::Kind::ShapeOperand: {
    auto &s = llvm::cast<ast::ShapeOperand>(operand);
    t.ir.kind = ir::Operand::Kind::Shape;
    t.ir.index = s.index;
    t.ir.dim = s.dim; // negative dimensions count from the last one
    if (succeeded(checkInputIndex(c, op, s.index, s.indexRange)))
      t.types = {Ty::Int};
    break;
  }
  case ast::Node::Kind::LiteralOperand: {
    auto &l = llvm::cast<ast::LiteralOperand>(operand);
    t.ir.kind = ir::Operand::Kind::Literal;
    t.ir.literal = convertLiteral(*l.literal);
    t.isLiteral = true;
    t.isNone = t.ir.literal.kind == ir::Literal::Kind::None;
    if (!t.isNone)
      t.types = {scalarLiteralTy(t.ir.literal)};
    break;
  }
  case ast::Node::Kind::ListOperand: {
    auto &l = llvm::cast<ast::ListOperand>(operand);
    t.ir.kind = ir::Operand::Kind::Literal;
    t.ir.literal.kind = ir::Literal::Kind::List;
    t.ir.literal.loc = l.getRange();
    t.isLiteral = true;
    bool ok = true;
    std::optional<Ty> elemTy;
    for (const ast::Value *v : l.elements) {
      ir::Literal elem = convertLiteral(*v);
      if (elem.kind == ir::Literal::Kind::None) {
        c.diags.emit(v->getRange(), diag::err_none_in_list).report();
        ok = false;
      } else if (ok) {
        Ty et = scalarLiteralTy(elem);
        if (!elemTy) {
          elemTy = et;
        } else if (isNumeric(*elemTy) && isNumeric(et)) {
          if (et == Ty::Float)
            elemTy = Ty::Float;
        } else if (*elemTy != et) {
          c.diags.emit(v->getRange(), diag::err_mixed_list, elementClass(*elemTy), elementClass(et))
              .report();
          ok = false;
        }
      }
      t.ir.literal.list.push_back(std::move(elem));
    }
    if (ok) {
      if (!elemTy)
        t.types = {Ty::EmptyList};
      else if (*elemTy == Ty::Int)
        t.types = {Ty::Ints};
      else if (*elemTy == Ty::Float)
        t.types = {Ty::Floats};
      else if (*elemTy == Ty::String)
        t.types = {Ty::Strings};
      else
        t.types = {Ty::Bools};
    }
    break;
  }
  case ast::Node::Kind::IntLit:
  case ast::Node::Kind::FloatLit:
  case ast::Node::Kind::Pow2Lit:
  case ast::Node::Kind::StringLit:
  case ast::Node::Kind::BoolLit:
  case ast::Node::Kind::NoneLit:
  case ast::Node::Kind::InfLit:
  case ast::Node::Kind::Quantity:
  case ast::Node::Kind::NameValue:
  case ast::Node::Kind::BlockValue:
  case ast::Node::Kind::ListValue:
  case ast::Node::Kind::NamedOptions:
  case ast::Node::Kind::ListOptions:
  case ast::Node::Kind::ConcatOptions:
  case ast::Node::Kind::SetName:
  case ast::Node::Kind::SetUnion:
  case ast::Node::Kind::VersionItem:
  case ast::Node::Kind::TypeItem:
  case ast::Node::Kind::SimdPaddingItem:
  case ast::Node::Kind::MetadataItem:
  case ast::Node::Kind::PreservingQuantizersItem:
  case ast::Node::Kind::ResourcesItem:
  case ast::Node::Kind::RecipeItem:
  case ast::Node::Kind::AttrDecl:
  case ast::Node::Kind::ConfigDecl:
  case ast::Node::Kind::OptionsDecl:
  case ast::Node::Kind::DefaultDecl:
  case ast::Node::Kind::OpsetDecl:
  case ast::Node::Kind::GroupDecl:
  case ast::Node::Kind::FuseDecl:
  case ast::Node::Kind::WeightDecl:
  case ast::Node::Kind::OpListDecl:
  case ast::Node::Kind::RangeDecl:
  case ast::Node::Kind::CompositeDecl:
  case ast::Node::Kind::OrPred:
  case ast::Node::Kind::AndPred:
  case ast::Node::Kind::NotPred:
  case ast::Node::Kind::CmpPred:
  case ast::Node::Kind::InPred:
  case ast::Node::Kind::ConstPred:
  case ast::Node::Kind::HasPred:
  case ast::Node::Kind::ImportDecl:
  case ast::Node::Kind::PlatformDecl:
  case ast::Node::Kind::FrameworkDecl:
  case ast::Node::Kind::CapabilitiesDecl:
  case ast::Node::Kind::RecipeDecl:
    llvm_unreachable("not an operand");
  }
  t.spelling = spelling(t.range, t.ir);
  return t;
}

void PredicateChecker::reportMismatch(const TypedOperand &blamed, const TypedOperand &other) {
  SourceRange at = blamed.range;
  if (other.attr && op) {
    c.diags
        .emit(at, diag::err_literal_type, other.ir.attr, op->name, describe(other),
              describe(blamed))
        .report();
    return;
  }
  c.diags.emit(at, diag::err_operand_type, other.spelling, describe(other), describe(blamed))
      .report();
}

void PredicateChecker::checkFits(const TypedOperand &a, const TypedOperand &b) {
  for (Ty ta : a.types)
    for (Ty tb : b.types)
      if (fits(ta, a.isLiteral, tb, b.isLiteral))
        return;
  // Blame the literal; if both or neither are literals, the right side.
  if (a.isLiteral && !b.isLiteral)
    reportMismatch(a, b);
  else
    reportMismatch(b, a);
}

ir::Predicate PredicateChecker::checkCmp(const ast::CmpPred &cmp) {
  ir::Predicate p;
  p.kind = ir::Predicate::Kind::Cmp;
  p.loc = cmp.getRange();
  p.op = cmp.op;
  TypedOperand lhs = checkOperand(*cmp.lhs);
  TypedOperand rhs = checkOperand(*cmp.rhs);
  bool equality = cmp.op == ast::CmpOp::Eq || cmp.op == ast::CmpOp::Ne;

  if (lhs.isNone || rhs.isNone) {
    // `X == none` / `X != none` test whether X is known, whatever its type.
    if (!equality)
      c.diags.emit((lhs.isNone ? lhs : rhs).range, diag::err_none_compare).report();
  } else if (!equality) {
    // Ordering compares numbers only.
    bool ok = true;
    for (const TypedOperand *side : {&lhs, &rhs}) {
      if (!side->checked())
        continue;
      bool numeric = false;
      for (Ty t : side->types)
        numeric |= isNumeric(t) || t == Ty::AnyScalar;
      if (!numeric) {
        c.diags
            .emit(side->range, diag::err_ordered_compare, toString(p.op), side->spelling,
                  describe(*side))
            .report();
        ok = false;
      }
    }
    if (ok && lhs.checked() && rhs.checked()) {
      // Keep only the numeric types, then check that the literal fits.
      TypedOperand l = lhs, r = rhs;
      auto keepNumeric = [](std::vector<Ty> &ts) {
        ts.erase(std::remove_if(ts.begin(), ts.end(),
                                [](Ty t) { return !isNumeric(t) && t != Ty::AnyScalar; }),
                 ts.end());
      };
      keepNumeric(l.types);
      keepNumeric(r.types);
      checkFits(l, r);
    }
  } else if (lhs.checked() && rhs.checked()) {
    checkFits(lhs, rhs);
  }
  p.lhs = std::move(lhs.ir);
  p.rhs = std::move(rhs.ir);
  return p;
}

ir::Predicate PredicateChecker::checkIn(const ast::InPred &in) {
  ir::Predicate p;
  p.kind = ir::Predicate::Kind::In;
  p.loc = in.getRange();
  TypedOperand lhs = checkOperand(*in.lhs);
  for (const ast::Value *v : in.list)
    p.list.push_back(convertLiteral(*v));

  if (lhs.isNone) {
    c.diags.emit(lhs.range, diag::err_none_compare).report();
  } else if (llvm::isa<ast::ListOperand>(in.lhs)) {
    c.diags.emit(lhs.range, diag::err_in_needs_scalar, lhs.spelling, "a list").report();
  } else if (lhs.checked()) {
    // The left side must be able to hold a single comparable value.
    std::vector<Ty> scalars;
    for (Ty t : lhs.types)
      if (isNumeric(t) || t == Ty::String || t == Ty::Bool || t == Ty::AnyScalar)
        scalars.push_back(t);
    if (scalars.empty()) {
      c.diags.emit(lhs.range, diag::err_in_needs_scalar, lhs.spelling, describe(lhs)).report();
    } else {
      TypedOperand l = lhs;
      l.types = scalars;
      for (size_t k = 0; k < in.list.size(); ++k) {
        const ir::Literal &lit = p.list[k];
        if (lit.kind == ir::Literal::Kind::None)
          continue; // `X in [none, 0]`: X is unknown or 0
        TypedOperand elem;
        elem.range = in.list[k]->getRange();
        elem.ir.kind = ir::Operand::Kind::Literal;
        elem.ir.literal = lit;
        elem.isLiteral = true;
        elem.types = {scalarLiteralTy(lit)};
        elem.spelling = spelling(elem.range, elem.ir);
        checkFits(l, elem);
      }
    }
  }
  p.lhs = std::move(lhs.ir);
  return p;
}

ir::Predicate PredicateChecker::check(const ast::Pred &pred) {
  switch (pred.getKind()) {
  case ast::Node::Kind::OrPred:
  case ast::Node::Kind::AndPred: {
    bool isOr = pred.getKind() == ast::Node::Kind::OrPred;
    const std::vector<ast::Pred *> &operands =
        isOr ? llvm::cast<ast::OrPred>(pred).operands : llvm::cast<ast::AndPred>(pred).operands;
    if (operands.size() == 1)
      return check(*operands.front());
    ir::Predicate p;
    p.kind = isOr ? ir::Predicate::Kind::Or : ir::Predicate::Kind::And;
    p.loc = pred.getRange();
    for (const ast::Pred *operand : operands)
      p.children.push_back(check(*operand));
    return p;
  }
  case ast::Node::Kind::NotPred: {
    // The logic is two-valued (a comparison with an unknown operand is
    // false), so `not not P` is P.
    auto &n = llvm::cast<ast::NotPred>(pred);
    ir::Predicate inner = check(*n.operand);
    if (n.count % 2 == 0)
      return inner;
    ir::Predicate p;
    p.kind = ir::Predicate::Kind::Not;
    p.loc = pred.getRange();
    p.children.push_back(std::move(inner));
    return p;
  }
  case ast::Node::Kind::CmpPred:
    return checkCmp(llvm::cast<ast::CmpPred>(pred));
  case ast::Node::Kind::InPred:
    return checkIn(llvm::cast<ast::InPred>(pred));
  case ast::Node::Kind::ConstPred: {
    auto &k = llvm::cast<ast::ConstPred>(pred);
    (void)checkInputIndex(c, op, k.index, k.indexRange);
    ir::Predicate p;
    p.kind = ir::Predicate::Kind::Const;
    p.loc = pred.getRange();
    p.index = k.index;
    return p;
  }
  case ast::Node::Kind::HasPred: {
    auto &h = llvm::cast<ast::HasPred>(pred);
    const ir::OnnxAttrUnion *attr;
    checkAttrName(h.attr, attr);
    ir::Predicate p;
    p.kind = ir::Predicate::Kind::Has;
    p.loc = pred.getRange();
    p.attr = h.attr.name;
    return p;
  }
  case ast::Node::Kind::IntLit:
  case ast::Node::Kind::FloatLit:
  case ast::Node::Kind::Pow2Lit:
  case ast::Node::Kind::StringLit:
  case ast::Node::Kind::BoolLit:
  case ast::Node::Kind::NoneLit:
  case ast::Node::Kind::InfLit:
  case ast::Node::Kind::Quantity:
  case ast::Node::Kind::NameValue:
  case ast::Node::Kind::BlockValue:
  case ast::Node::Kind::ListValue:
  case ast::Node::Kind::NamedOptions:
  case ast::Node::Kind::ListOptions:
  case ast::Node::Kind::ConcatOptions:
  case ast::Node::Kind::SetName:
  case ast::Node::Kind::SetUnion:
  case ast::Node::Kind::VersionItem:
  case ast::Node::Kind::TypeItem:
  case ast::Node::Kind::SimdPaddingItem:
  case ast::Node::Kind::MetadataItem:
  case ast::Node::Kind::PreservingQuantizersItem:
  case ast::Node::Kind::ResourcesItem:
  case ast::Node::Kind::RecipeItem:
  case ast::Node::Kind::AttrDecl:
  case ast::Node::Kind::ConfigDecl:
  case ast::Node::Kind::OptionsDecl:
  case ast::Node::Kind::DefaultDecl:
  case ast::Node::Kind::OpsetDecl:
  case ast::Node::Kind::GroupDecl:
  case ast::Node::Kind::FuseDecl:
  case ast::Node::Kind::WeightDecl:
  case ast::Node::Kind::OpListDecl:
  case ast::Node::Kind::RangeDecl:
  case ast::Node::Kind::CompositeDecl:
  case ast::Node::Kind::AttrOperand:
  case ast::Node::Kind::InputOperand:
  case ast::Node::Kind::RankOperand:
  case ast::Node::Kind::ShapeOperand:
  case ast::Node::Kind::LiteralOperand:
  case ast::Node::Kind::ListOperand:
  case ast::Node::Kind::ImportDecl:
  case ast::Node::Kind::PlatformDecl:
  case ast::Node::Kind::FrameworkDecl:
  case ast::Node::Kind::CapabilitiesDecl:
  case ast::Node::Kind::RecipeDecl:
    llvm_unreachable("not a predicate");
  }
  llvm_unreachable("every node kind is handled");
}

ir::Predicate passes::checkPredicate(Compilation &c, const ast::Pred &pred, const ir::OnnxOp *op) {
  return PredicateChecker(c, op).check(pred);
}

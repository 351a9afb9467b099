//===- PredicateEval.cpp - Filter predicates evaluated on a node ----------===//

#include "plan/PredicateEval.h"

#include <fmt/format.h>

#include <cmath>

using namespace tpcc;
using namespace tpcc::plan;
using graph::Node;
using ir::Literal;
using ir::Operand;
using ir::Predicate;

namespace {

/// An operand's value on a node.
struct PValue {
  enum class Kind { Unknown, Number, String, List, Opaque } kind = Kind::Unknown;
  double num = 0;
  std::string str;
  std::vector<PValue> list;
  std::string why; ///< Unknown: why; otherwise where the value came from

  static PValue unknown(std::string why) {
    PValue v;
    v.why = std::move(why);
    return v;
  }
  static PValue number(double d) {
    PValue v;
    v.kind = Kind::Number;
    v.num = d;
    return v;
  }
  static PValue string(std::string s) {
    PValue v;
    v.kind = Kind::String;
    v.str = std::move(s);
    return v;
  }
  bool known() const { return kind != Kind::Unknown; }

  std::string show() const {
    switch (kind) {
    case Kind::Unknown:
      return "none";
    case Kind::Number:
      return fmt::format("{}", num);
    case Kind::String:
      return "\"" + str + "\"";
    case Kind::Opaque:
      return "<" + str + ">";
    case Kind::List: {
      std::string s = "[";
      for (size_t k = 0; k < list.size(); ++k)
        s += (k ? ", " : "") + list[k].show();
      return s + "]";
    }
    }
    return "?";
  }
};

PValue fromLiteral(const Literal &l) {
  switch (l.kind) {
  case Literal::Kind::Int:
    return PValue::number(double(l.i));
  case Literal::Kind::Float:
    return PValue::number(l.f);
  case Literal::Kind::Bool:
    return PValue::number(l.b ? 1 : 0);
  case Literal::Kind::String:
    return PValue::string(l.s);
  case Literal::Kind::None:
    return PValue::unknown("none");
  case Literal::Kind::List: {
    PValue v;
    v.kind = PValue::Kind::List;
    for (const Literal &e : l.list)
      v.list.push_back(fromLiteral(e));
    return v;
  }
  }
  return PValue::unknown("none");
}

PValue fromAttribute(const graph::Attribute &a) {
  using T = ir::OnnxAttrType;
  PValue v;
  switch (a.type) {
  case T::Int:
    return PValue::number(double(a.i));
  case T::Float:
    return PValue::number(a.f);
  case T::String:
    return PValue::string(a.s);
  case T::Ints:
  case T::Floats:
  case T::Strings:
    v.kind = PValue::Kind::List;
    for (int64_t i : a.ints)
      v.list.push_back(PValue::number(double(i)));
    for (double f : a.floats)
      v.list.push_back(PValue::number(f));
    for (const std::string &s : a.strings)
      v.list.push_back(PValue::string(s));
    return v;
  default:
    v.kind = PValue::Kind::Opaque;
    v.str = ir::toString(a.type);
    return v;
  }
}

PValue fromDefault(const ir::OnnxAttrValue &d) {
  graph::Attribute a;
  a.type = d.type;
  a.i = d.i;
  a.f = d.f;
  a.s = d.s;
  a.ints = d.ints;
  a.floats = d.floats;
  a.strings = d.strings;
  return fromAttribute(a);
}

class Evaluator {
public:
  Evaluator(const graph::Model &m, const Node &n, std::vector<std::string> *trace)
      : m(m), n(n), trace(trace), schema(graph::schemaFor(m, n)) {}

  bool eval(const Predicate &p, unsigned depth);

private:
  PValue operand(const Operand &o);
  const graph::Value *input(int64_t i) const { return i >= 0 ? n.input(size_t(i)) : nullptr; }
  bool compare(const PValue &a, CmpOp op, const PValue &b) const;
  void log(unsigned depth, const std::string &line) {
    if (trace)
      trace->push_back(std::string(2 * depth, ' ') + line);
  }

  const graph::Model &m;
  const Node &n;
  std::vector<std::string> *trace;
  const ir::OnnxOpVersion *schema;
};

PValue Evaluator::operand(const Operand &o) {
  switch (o.kind) {
  case Operand::Kind::Literal:
    return fromLiteral(o.literal);
  case Operand::Kind::Attr: {
    if (const graph::Attribute *a = n.attr(o.attr)) {
      PValue v = fromAttribute(*a);
      v.why = "set on the node";
      return v;
    }
    if (schema)
      if (const ir::OnnxAttr *sa = schema->findAttr(o.attr); sa && sa->defaultValue) {
        PValue v = fromDefault(*sa->defaultValue);
        v.why = fmt::format("the schema default at opset {}", schema->sinceVersion);
        return v;
      }
    return PValue::unknown("absent, with no schema default");
  }
  case Operand::Kind::Input: {
    const graph::Value *v = input(o.index);
    if (!v)
      return PValue::unknown("the node has no such input");
    if (!v->constant)
      return PValue::unknown(fmt::format("`{}` is not a constant", v->name));
    std::optional<double> s = v->constant->scalar();
    if (!s)
      return PValue::unknown(fmt::format("constant `{}` is not a scalar", v->name));
    PValue r = PValue::number(*s);
    r.why = fmt::format("constant `{}`", v->name);
    return r;
  }
  case Operand::Kind::Rank:
  case Operand::Kind::Shape: {
    const graph::Value *v = input(o.index);
    if (!v)
      return PValue::unknown("the node has no such input");
    std::vector<graph::Dim> dims;
    if (v->constant) {
      for (int64_t d : v->constant->dims)
        dims.push_back(graph::Dim{d, {}});
    } else if (v->type.shape) {
      dims = *v->type.shape;
    } else {
      return PValue::unknown(fmt::format("the shape of `{}` is unknown", v->name));
    }
    if (o.kind == Operand::Kind::Rank) {
      PValue r = PValue::number(double(dims.size()));
      r.why = fmt::format("`{}` is {}", v->name, v->type.str());
      return r;
    }
    int64_t d = o.dim < 0 ? int64_t(dims.size()) + o.dim : o.dim;
    if (d < 0 || d >= int64_t(dims.size()))
      return PValue::unknown(fmt::format("`{}` has rank {}", v->name, dims.size()));
    if (!dims[d].known())
      return PValue::unknown(fmt::format("dimension {} of `{}` is not a number", d, v->name));
    PValue r = PValue::number(double(dims[d].value));
    r.why = fmt::format("`{}` is {}", v->name, v->constant ? "a constant" : v->type.str());
    return r;
  }
  }
  return PValue::unknown("?");
}

bool Evaluator::compare(const PValue &a, CmpOp op, const PValue &b) const {
  if (a.kind != b.kind || a.kind == PValue::Kind::Opaque)
    return false;
  if (a.kind == PValue::Kind::List) {
    if (op != CmpOp::Eq && op != CmpOp::Ne)
      return false;
    bool eq = a.list.size() == b.list.size();
    for (size_t k = 0; eq && k < a.list.size(); ++k)
      eq = compare(a.list[k], CmpOp::Eq, b.list[k]);
    return op == CmpOp::Eq ? eq : !eq;
  }
  if (a.kind == PValue::Kind::String) {
    if (op == CmpOp::Eq)
      return a.str == b.str;
    if (op == CmpOp::Ne)
      return a.str != b.str;
    return false;
  }
  switch (op) {
  case CmpOp::Eq:
    return a.num == b.num;
  case CmpOp::Ne:
    return a.num != b.num;
  case CmpOp::Lt:
    return a.num < b.num;
  case CmpOp::Le:
    return a.num <= b.num;
  case CmpOp::Gt:
    return a.num > b.num;
  case CmpOp::Ge:
    return a.num >= b.num;
  }
  return false;
}

std::string describe(const Operand &o, const PValue &v) {
  if (o.kind == Operand::Kind::Literal)
    return "";
  return fmt::format("{} = {} ({})", o.str(), v.show(), v.why);
}

bool Evaluator::eval(const Predicate &p, unsigned depth) {
  auto result = [](bool b) { return b ? "true" : "false"; };
  switch (p.kind) {
  case Predicate::Kind::And:
  case Predicate::Kind::Or: {
    bool isAnd = p.kind == Predicate::Kind::And;
    if (p.children.size() == 1)
      return eval(p.children[0], depth);
    if (trace)
      log(depth, fmt::format("{}: {}", isAnd ? "and" : "or", p.str()));
    // Every operand is evaluated (no short cut) so that a trace shows all.
    bool r = isAnd;
    for (const Predicate &c : p.children) {
      bool v = eval(c, depth + 1);
      r = isAnd ? (r && v) : (r || v);
    }
    if (trace)
      log(depth, fmt::format("=> {}", result(r)));
    return r;
  }
  case Predicate::Kind::Not: {
    if (trace)
      log(depth, "not:");
    bool r = !eval(p.children[0], depth + 1);
    if (trace)
      log(depth, fmt::format("=> {}", result(r)));
    return r;
  }
  case Predicate::Kind::Cmp: {
    PValue a = operand(p.lhs), b = operand(p.rhs);
    bool r;
    bool lhsNone =
        p.lhs.kind == Operand::Kind::Literal && p.lhs.literal.kind == Literal::Kind::None;
    bool rhsNone =
        p.rhs.kind == Operand::Kind::Literal && p.rhs.literal.kind == Literal::Kind::None;
    if (lhsNone || rhsNone) {
      bool unknown = lhsNone ? !b.known() : !a.known();
      r = p.op == CmpOp::Eq ? unknown : p.op == CmpOp::Ne ? !unknown : false;
    } else {
      r = a.known() && b.known() && compare(a, p.op, b);
    }
    if (!trace)
      return r;
    std::string detail;
    for (const auto &[o, v] : {std::pair{&p.lhs, &a}, std::pair{&p.rhs, &b}})
      if (std::string d = describe(*o, *v); !d.empty())
        detail += (detail.empty() ? "" : "; ") + d;
    if (trace)
      log(depth, fmt::format("{}: {} -> {}", p.str(), detail, result(r)));
    return r;
  }
  case Predicate::Kind::In: {
    PValue a = operand(p.lhs);
    bool r = false;
    for (const Literal &l : p.list)
      r = r || (a.known() && compare(a, CmpOp::Eq, fromLiteral(l)));
    if (trace)
      log(depth, fmt::format("{}: {} -> {}", p.str(), describe(p.lhs, a), result(r)));
    return r;
  }
  case Predicate::Kind::Const: {
    const graph::Value *v = input(p.index);
    bool r = v && v->constant;
    if (trace)
      log(depth,
          fmt::format("{}: {} -> {}", p.str(),
                      !v  ? std::string("the node has no such input")
                      : r ? fmt::format("`{}` is {}", v->name,
                                        v->isInitializer ? "an initializer" : "a Constant output")
                          : fmt::format("`{}` is computed", v->name),
                      result(r)));
    return r;
  }
  case Predicate::Kind::Has: {
    bool r = n.attr(p.attr) != nullptr;
    if (trace)
      log(depth, fmt::format("{}: -> {}", p.str(), result(r)));
    return r;
  }
  }
  return false;
}

} // namespace

bool plan::evaluate(const Predicate &p, const graph::Model &m, const Node &n,
                    std::vector<std::string> *trace, unsigned depth) {
  return Evaluator(m, n, trace).eval(p, depth);
}

//===- IRTest.cpp - Spellings and look-ups of the typed IR ----------------===//
//
// Enum <-> keyword round trips, the canonical spelling of literals, operands
// and predicates (precedence, flattening, escapes, float round trips), and
// the by-name look-ups.
//
//===----------------------------------------------------------------------===//
#include "ir/TpcIR.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

using namespace tpcc::ir;

namespace {

//===----------------------------------------------------------------------===//
// Builders
//===----------------------------------------------------------------------===//

Literal intLit(int64_t v) {
  Literal l;
  l.kind = Literal::Kind::Int;
  l.i = v;
  return l;
}
Literal floatLit(double v) {
  Literal l;
  l.kind = Literal::Kind::Float;
  l.f = v;
  return l;
}
Literal strLit(std::string v) {
  Literal l;
  l.kind = Literal::Kind::String;
  l.s = std::move(v);
  return l;
}
Literal boolLit(bool v) {
  Literal l;
  l.kind = Literal::Kind::Bool;
  l.b = v;
  return l;
}
Literal listLit(std::vector<Literal> v) {
  Literal l;
  l.kind = Literal::Kind::List;
  l.list = std::move(v);
  return l;
}

Operand attr(std::string name) {
  Operand o;
  o.kind = Operand::Kind::Attr;
  o.attr = std::move(name);
  return o;
}
Operand lit(Literal l) {
  Operand o;
  o.kind = Operand::Kind::Literal;
  o.literal = std::move(l);
  return o;
}
Operand input(int64_t i) {
  Operand o;
  o.kind = Operand::Kind::Input;
  o.index = i;
  return o;
}

Predicate cmp(Operand lhs, CmpOp op, Operand rhs) {
  Predicate p;
  p.kind = Predicate::Kind::Cmp;
  p.lhs = std::move(lhs);
  p.op = op;
  p.rhs = std::move(rhs);
  return p;
}
/// `NAME == V`
Predicate eq(std::string name, int64_t v) {
  return cmp(attr(std::move(name)), CmpOp::Eq, lit(intLit(v)));
}
Predicate chain(Predicate::Kind k, std::vector<Predicate> children) {
  Predicate p;
  p.kind = k;
  p.children = std::move(children);
  return p;
}
Predicate andP(std::vector<Predicate> c) { return chain(Predicate::Kind::And, std::move(c)); }
Predicate orP(std::vector<Predicate> c) { return chain(Predicate::Kind::Or, std::move(c)); }
Predicate notP(Predicate c) { return chain(Predicate::Kind::Not, {std::move(c)}); }
Predicate constP(int64_t i) {
  Predicate p;
  p.kind = Predicate::Kind::Const;
  p.index = i;
  return p;
}
Predicate hasP(std::string a) {
  Predicate p;
  p.kind = Predicate::Kind::Has;
  p.attr = std::move(a);
  return p;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

TEST(IREnums, QuantMethodRoundTrip) {
  const std::pair<QuantMethod, const char *> all[] = {{QuantMethod::PowerOfTwo, "power_of_two"},
                                                      {QuantMethod::Symmetric, "symmetric"},
                                                      {QuantMethod::Uniform, "uniform"},
                                                      {QuantMethod::LutPot, "lut_pot"},
                                                      {QuantMethod::LutSym, "lut_sym"}};
  for (auto [m, s] : all) {
    EXPECT_STREQ(toString(m), s);
    EXPECT_EQ(parseQuantMethod(s), m);
  }
  EXPECT_EQ(parseQuantMethod("Symmetric"), std::nullopt);
  EXPECT_EQ(parseQuantMethod(""), std::nullopt);
  EXPECT_EQ(parseQuantMethod("lut"), std::nullopt);
  EXPECT_TRUE(isLut(QuantMethod::LutPot));
  EXPECT_TRUE(isLut(QuantMethod::LutSym));
  EXPECT_FALSE(isLut(QuantMethod::Uniform));
}

TEST(IREnums, SignednessRoundTrip) {
  const std::pair<Signedness, const char *> all[] = {{Signedness::Auto, "auto"},
                                                     {Signedness::Signed, "signed"},
                                                     {Signedness::Unsigned, "unsigned"}};
  for (auto [v, s] : all) {
    EXPECT_STREQ(toString(v), s);
    EXPECT_EQ(parseSignedness(s), v);
  }
  EXPECT_EQ(parseSignedness("int"), std::nullopt);
  EXPECT_EQ(parseSignedness("AUTO"), std::nullopt);
}

TEST(IREnums, ThresholdMethodRoundTrip) {
  const std::pair<ThresholdMethod, const char *> all[] = {
      {ThresholdMethod::NoClipping, "no_clipping"},
      {ThresholdMethod::MSE, "mse"},
      {ThresholdMethod::MAE, "mae"},
      {ThresholdMethod::KL, "kl"},
      {ThresholdMethod::LP, "lp"}};
  for (auto [m, s] : all) {
    EXPECT_STREQ(toString(m), s);
    EXPECT_EQ(parseThresholdMethod(s), m);
  }
  EXPECT_EQ(parseThresholdMethod("noclipping"), std::nullopt);
  EXPECT_EQ(parseThresholdMethod("MSE"), std::nullopt);
}

TEST(IREnums, CmpOpSpelling) {
  EXPECT_STREQ(toString(CmpOp::Eq), "==");
  EXPECT_STREQ(toString(CmpOp::Ne), "!=");
  EXPECT_STREQ(toString(CmpOp::Lt), "<");
  EXPECT_STREQ(toString(CmpOp::Le), "<=");
  EXPECT_STREQ(toString(CmpOp::Gt), ">");
  EXPECT_STREQ(toString(CmpOp::Ge), ">=");
}

//===----------------------------------------------------------------------===//
// Literals
//===----------------------------------------------------------------------===//

TEST(IRLiteral, Scalars) {
  EXPECT_EQ(intLit(8).str(), "8");
  EXPECT_EQ(intLit(-1).str(), "-1");
  EXPECT_EQ(intLit(0).str(), "0");
  EXPECT_EQ(intLit(std::numeric_limits<int64_t>::min()).str(), "-9223372036854775808");
  EXPECT_EQ(boolLit(true).str(), "true");
  EXPECT_EQ(boolLit(false).str(), "false");
  EXPECT_EQ(Literal().str(), "none");
}

TEST(IRLiteral, Floats) {
  EXPECT_EQ(floatLit(0.25).str(), "0.25");
  EXPECT_EQ(floatLit(1.0).str(), "1.0");
  EXPECT_EQ(floatLit(-2.0).str(), "-2.0");
  EXPECT_EQ(floatLit(0.0).str(), "0.0");
  EXPECT_EQ(floatLit(-0.0).str(), "-0.0");
  EXPECT_EQ(floatLit(0.1).str(), "0.1");
  EXPECT_EQ(floatLit(1.0 / 3).str(), "0.3333333333333333");
  EXPECT_EQ(floatLit(123.5).str(), "123.5");
  EXPECT_EQ(floatLit(1500.0).str(), "1500.0");
  EXPECT_EQ(floatLit(0.0001).str(), "0.0001");
  EXPECT_EQ(floatLit(1e-5).str(), "1e-05");
  EXPECT_EQ(floatLit(1.5e-7).str(), "1.5e-07");
  EXPECT_EQ(floatLit(1.0 / 65536).str(), "1.52587890625e-05");
  EXPECT_EQ(floatLit(1e15).str(), "1000000000000000.0");
  EXPECT_EQ(floatLit(1e16).str(), "1e+16");
  EXPECT_EQ(floatLit(2.5e300).str(), "2.5e+300");
  EXPECT_EQ(floatLit(5e-324).str(), "5e-324");
  EXPECT_EQ(floatLit(std::numeric_limits<double>::max()).str(), "1.7976931348623157e+308");
}

TEST(IRLiteral, Infinities) {
  double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(floatLit(inf).str(), "inf");
  EXPECT_EQ(floatLit(-inf).str(), "-inf");
}

/// Every float spells as a FLOAT token (a point or an exponent) that reads
/// back as the same double.
TEST(IRLiteral, FloatsRoundTrip) {
  std::mt19937_64 rng(12345);
  std::vector<double> values = {
      0.1, 0.2, 0.3, 1e-300, 1e300, 123456789.125, 9007199254740993.0, 2.0 / 3, -1.0 / 7};
  for (int i = 0; i < 2000; ++i) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    if (std::isfinite(d))
      values.push_back(d);
  }
  std::uniform_real_distribution<double> small(-1000, 1000);
  for (int i = 0; i < 2000; ++i)
    values.push_back(small(rng));
  for (double d : values) {
    std::string s = floatLit(d).str();
    EXPECT_EQ(std::strtod(s.c_str(), nullptr), d) << s;
    EXPECT_NE(s.find_first_of(".e"), std::string::npos) << s;
  }
}

TEST(IRLiteral, StringEscapes) {
  EXPECT_EQ(strLit("imx500").str(), "\"imx500\"");
  EXPECT_EQ(strLit("").str(), "\"\"");
  EXPECT_EQ(strLit("say \"hi\"").str(), "\"say \\\"hi\\\"\"");
  EXPECT_EQ(strLit("a\\b").str(), "\"a\\\\b\"");
  EXPECT_EQ(strLit("\\\"").str(), "\"\\\\\\\"\"");
  EXPECT_EQ(strLit("é€").str(), "\"é€\"");
}

TEST(IRLiteral, Lists) {
  EXPECT_EQ(listLit({}).str(), "[]");
  EXPECT_EQ(listLit({intLit(1), intLit(2)}).str(), "[1, 2]");
  EXPECT_EQ(listLit({strLit("a"), floatLit(0.5), Literal(), boolLit(true)}).str(),
            "[\"a\", 0.5, none, true]");
}

//===----------------------------------------------------------------------===//
// Operands
//===----------------------------------------------------------------------===//

TEST(IROperand, Spelling) {
  EXPECT_EQ(attr("transB").str(), "transB");
  EXPECT_EQ(input(1).str(), "input[1]");
  Operand rank;
  rank.kind = Operand::Kind::Rank;
  rank.index = 0;
  EXPECT_EQ(rank.str(), "rank(input[0])");
  Operand shape;
  shape.kind = Operand::Kind::Shape;
  shape.index = 0;
  shape.dim = 1;
  EXPECT_EQ(shape.str(), "shape(input[0])[1]");
  shape.dim = -1;
  EXPECT_EQ(shape.str(), "shape(input[0])[-1]");
  EXPECT_EQ(lit(intLit(-3)).str(), "-3");
  EXPECT_EQ(lit(floatLit(-std::numeric_limits<double>::infinity())).str(), "-inf");
  EXPECT_EQ(lit(strLit("NOTSET")).str(), "\"NOTSET\"");
  EXPECT_EQ(lit(listLit({intLit(1), intLit(1)})).str(), "[1, 1]");
}

//===----------------------------------------------------------------------===//
// Predicates
//===----------------------------------------------------------------------===//

TEST(IRPredicate, Atoms) {
  EXPECT_EQ(eq("transB", 1).str(), "transB == 1");
  EXPECT_EQ(cmp(input(1), CmpOp::Le, lit(floatLit(0.0))).str(), "input[1] <= 0.0");
  EXPECT_EQ(cmp(attr("x"), CmpOp::Lt, lit(intLit(-1))).str(), "x < -1");
  EXPECT_EQ(cmp(attr("mode"), CmpOp::Ne, lit(strLit("a\"b"))).str(), "mode != \"a\\\"b\"");
  EXPECT_EQ(cmp(attr("x"), CmpOp::Eq, lit(Literal())).str(), "x == none");
  EXPECT_EQ(constP(1).str(), "const(input[1])");
  EXPECT_EQ(hasP("alpha").str(), "has(alpha)");

  Predicate in;
  in.kind = Predicate::Kind::In;
  in.lhs = attr("x");
  in.list = {intLit(1), intLit(2)};
  EXPECT_EQ(in.str(), "x in [1, 2]");
  in.list = {strLit("a"), strLit("b")};
  EXPECT_EQ(in.str(), "x in [\"a\", \"b\"]");
}

TEST(IRPredicate, AndOverOrNeedsParens) {
  Predicate p =
      andP({cmp(attr("group"), CmpOp::Gt, lit(intLit(1))), orP({eq("a", 1), eq("b", 2)})});
  EXPECT_EQ(p.str(), "group > 1 and (a == 1 or b == 2)");
  Predicate q = andP({orP({eq("a", 1), eq("b", 2)}), eq("c", 3)});
  EXPECT_EQ(q.str(), "(a == 1 or b == 2) and c == 3");
}

TEST(IRPredicate, OrOverAndNeedsNone) {
  Predicate p = orP({andP({eq("a", 1), eq("b", 2)}), eq("c", 3)});
  EXPECT_EQ(p.str(), "a == 1 and b == 2 or c == 3");
  Predicate q = orP({eq("c", 3), andP({eq("a", 1), eq("b", 2)})});
  EXPECT_EQ(q.str(), "c == 3 or a == 1 and b == 2");
}

TEST(IRPredicate, Not) {
  EXPECT_EQ(notP(constP(1)).str(), "not const(input[1])");
  EXPECT_EQ(notP(eq("a", 1)).str(), "not a == 1");
  EXPECT_EQ(notP(notP(hasP("x"))).str(), "not not has(x)");
  EXPECT_EQ(notP(andP({eq("a", 1), eq("b", 2)})).str(), "not (a == 1 and b == 2)");
  EXPECT_EQ(notP(orP({eq("a", 1), eq("b", 2)})).str(), "not (a == 1 or b == 2)");
  EXPECT_EQ(andP({notP(eq("a", 1)), notP(eq("b", 2))}).str(), "not a == 1 and not b == 2");
  EXPECT_EQ(orP({notP(eq("a", 1)), eq("b", 2)}).str(), "not a == 1 or b == 2");
}

TEST(IRPredicate, NestedChainsAreFlattened) {
  // Associativity: `a and (b and c)` is `a and b and c`.
  EXPECT_EQ(andP({eq("a", 1), andP({eq("b", 2), eq("c", 3)})}).str(),
            "a == 1 and b == 2 and c == 3");
  EXPECT_EQ(orP({orP({eq("a", 1), eq("b", 2)}), eq("c", 3)}).str(), "a == 1 or b == 2 or c == 3");
  // An `or` inside `and` inside `or` keeps exactly the parentheses it needs.
  EXPECT_EQ(orP({eq("a", 1), andP({eq("b", 2), orP({eq("c", 3), eq("d", 4)})})}).str(),
            "a == 1 or b == 2 and (c == 3 or d == 4)");
}

TEST(IRPredicate, SingletonChainsAreTransparent) {
  // An `and` of one `or` is that `or`: it needs parentheses under `and`, none
  // at the top.
  Predicate single = andP({orP({eq("a", 1), eq("b", 2)})});
  EXPECT_EQ(single.str(), "a == 1 or b == 2");
  EXPECT_EQ(andP({eq("c", 3), single}).str(), "c == 3 and (a == 1 or b == 2)");
  EXPECT_EQ(orP({andP({eq("a", 1)})}).str(), "a == 1");
  EXPECT_EQ(notP(andP({eq("a", 1)})).str(), "not a == 1");
}

//===----------------------------------------------------------------------===//
// Look-ups
//===----------------------------------------------------------------------===//

TEST(IRLookup, PlatformFindOpset) {
  Platform p;
  p.name = "chip";
  for (const char *n : {"Conv", "FullyConnected", "AnyReLU"}) {
    Opset o;
    o.name = n;
    p.opsets.push_back(o);
  }
  p.opsets[1].options = Options();
  ASSERT_NE(p.findOpset("FullyConnected"), nullptr);
  EXPECT_EQ(p.findOpset("FullyConnected"), &p.opsets[1]);
  EXPECT_EQ(p.findOpset("Conv"), &p.opsets[0]);
  EXPECT_EQ(p.findOpset("conv"), nullptr);
  EXPECT_EQ(p.findOpset(""), nullptr);
  EXPECT_EQ(&p.optionsFor(p.opsets[0]), &p.defaultOptions);
  EXPECT_EQ(&p.optionsFor(p.opsets[1]), &*p.opsets[1].options);
}

TEST(IRLookup, ModuleFind) {
  Module m;
  m.platforms.resize(2);
  m.platforms[0].name = "imx500";
  m.platforms[1].name = "my_chip";
  m.frameworks.resize(1);
  m.frameworks[0].name = "onnx";
  m.capabilities.resize(1);
  m.capabilities[0].name = "imx500_onnx";
  m.recipes.resize(2);
  m.recipes[0].name = "fast";
  m.recipes[1].name = "careful";

  EXPECT_EQ(m.findPlatform("my_chip"), &m.platforms[1]);
  EXPECT_EQ(m.findPlatform("imx500"), &m.platforms[0]);
  EXPECT_EQ(m.findPlatform("onnx"), nullptr);
  EXPECT_EQ(m.findFramework("onnx"), &m.frameworks[0]);
  EXPECT_EQ(m.findFramework("imx500"), nullptr);
  EXPECT_EQ(m.findCapabilities("imx500_onnx"), &m.capabilities[0]);
  EXPECT_EQ(m.findCapabilities("imx500"), nullptr);
  EXPECT_EQ(m.findRecipe("careful"), &m.recipes[1]);
  EXPECT_EQ(m.findRecipe("Careful"), nullptr);

  Module empty;
  EXPECT_EQ(empty.findPlatform("x"), nullptr);
  EXPECT_EQ(empty.findRecipe("x"), nullptr);
}

TEST(IRConfig, WeightConfigFallsBackToDefault) {
  OpConfig c;
  c.weights.bits = 32;
  AttrConfig k;
  k.bits = 4;
  k.quantize = true;
  c.slots["kernel"] = k;
  EXPECT_EQ(c.weightConfig("kernel"), k);
  EXPECT_EQ(c.weightConfig("bias"), c.weights);
}

} // namespace

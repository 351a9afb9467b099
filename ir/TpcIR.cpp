//===- TpcIR.cpp - Spellings and look-ups of the typed IR -----------------===//
//
// The enum <-> keyword tables, the canonical source spelling of predicate
// literals, operands and predicates, and the by-name look-ups of ir::Module
// and ir::Platform. (Budgets are parsed in Budget.cpp.)
//
// Canonical spellings are what `where` clauses look like in `tpcc emit` output
// and in diagnostics, so they must be stable, re-parseable and unambiguous:
//   - floats print as the shortest decimal that reads back as the same double,
//     in the layout of Python's repr(): fixed notation with at least one digit
//     after the point (`1.0`, `0.0001`) when the decimal exponent is in
//     [-4, 16), scientific otherwise (`1e-05`, `1.5e+16`); always a FLOAT
//     token;
//   - `inf` / `-inf`; strings in double quotes with `"` and `\` escaped;
//   - predicates use the fewest parentheses precedence allows
//     (`not` > `and` > `or`), and nested `and`s / `or`s are flattened since
//     both are associative: `group > 1 and (a == 1 or b == 2)`.
//
//===----------------------------------------------------------------------===//
#include "ir/TpcIR.h"

#include <algorithm>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

using namespace tpcc;
using namespace tpcc::ir;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

const char *ir::toString(QuantMethod m) {
  switch (m) {
  case QuantMethod::PowerOfTwo:
    return "power_of_two";
  case QuantMethod::Symmetric:
    return "symmetric";
  case QuantMethod::Uniform:
    return "uniform";
  case QuantMethod::LutPot:
    return "lut_pot";
  case QuantMethod::LutSym:
    return "lut_sym";
  }
  return "<invalid QuantMethod>";
}

std::optional<QuantMethod> ir::parseQuantMethod(llvm::StringRef s) {
  for (QuantMethod m : {QuantMethod::PowerOfTwo, QuantMethod::Symmetric, QuantMethod::Uniform,
                        QuantMethod::LutPot, QuantMethod::LutSym})
    if (s == toString(m))
      return m;
  return std::nullopt;
}

const char *ir::toString(Signedness s) {
  switch (s) {
  case Signedness::Auto:
    return "auto";
  case Signedness::Signed:
    return "signed";
  case Signedness::Unsigned:
    return "unsigned";
  }
  return "<invalid Signedness>";
}

std::optional<Signedness> ir::parseSignedness(llvm::StringRef s) {
  for (Signedness v : {Signedness::Auto, Signedness::Signed, Signedness::Unsigned})
    if (s == toString(v))
      return v;
  return std::nullopt;
}

const char *ir::toString(ElementFormat e) {
  switch (e) {
  case ElementFormat::Int:
    return "int";
  case ElementFormat::Fp8E4M3:
    return "fp8_e4m3";
  case ElementFormat::Fp8E5M2:
    return "fp8_e5m2";
  case ElementFormat::Fp4E2M1:
    return "fp4_e2m1";
  }
  return "<invalid ElementFormat>";
}

std::optional<ElementFormat> ir::parseElementFormat(llvm::StringRef s) {
  for (ElementFormat e :
       {ElementFormat::Int, ElementFormat::Fp8E4M3, ElementFormat::Fp8E5M2, ElementFormat::Fp4E2M1})
    if (s == toString(e))
      return e;
  return std::nullopt;
}

int ir::elementBits(ElementFormat e) {
  switch (e) {
  case ElementFormat::Int:
    return 0;
  case ElementFormat::Fp8E4M3:
  case ElementFormat::Fp8E5M2:
    return 8;
  case ElementFormat::Fp4E2M1:
    return 4;
  }
  return 0;
}

int ir::scaleBits(ScaleFormat s) {
  switch (s) {
  case ScaleFormat::Float32:
    return 32;
  case ScaleFormat::Float16:
    return 16;
  case ScaleFormat::UInt4:
    return 4;
  case ScaleFormat::E8M0:
  case ScaleFormat::Fp8E4M3:
  case ScaleFormat::UInt8:
    return 8;
  }
  return 32;
}

const char *ir::toString(ScaleFormat s) {
  switch (s) {
  case ScaleFormat::Float32:
    return "float32";
  case ScaleFormat::Float16:
    return "float16";
  case ScaleFormat::E8M0:
    return "e8m0";
  case ScaleFormat::Fp8E4M3:
    return "fp8_e4m3";
  case ScaleFormat::UInt4:
    return "uint4";
  case ScaleFormat::UInt8:
    return "uint8";
  }
  return "<invalid ScaleFormat>";
}

std::optional<ScaleFormat> ir::parseScaleFormat(llvm::StringRef s) {
  for (ScaleFormat f : {ScaleFormat::Float32, ScaleFormat::Float16, ScaleFormat::E8M0,
                        ScaleFormat::Fp8E4M3, ScaleFormat::UInt4, ScaleFormat::UInt8})
    if (s == toString(f))
      return f;
  return std::nullopt;
}

const char *ir::toString(BlockAxis a) { return a == BlockAxis::Reduction ? "reduction" : "output"; }

std::optional<BlockAxis> ir::parseBlockAxis(llvm::StringRef s) {
  for (BlockAxis a : {BlockAxis::Reduction, BlockAxis::Output})
    if (s == toString(a))
      return a;
  return std::nullopt;
}

std::string ir::formatText(const FormatConfig &f, int bits) {
  std::string s = f.element == ElementFormat::Int ? std::to_string(bits) + "-bit integers"
                                                  : std::string(toString(f.element)) + " values";
  if (f.block)
    s += " in blocks of " + std::to_string(*f.block) + " along the " + toString(f.blockAxis) +
         " axis";
  s += " with ";
  if (f.blockScale)
    s += std::string(toString(*f.blockScale)) + " factors under ";
  return s + toString(f.scale) + " scales";
}

void ir::forEachFormat(
    const OpConfig &c,
    llvm::function_ref<void(const std::string &, const FormatConfig &, int, QuantMethod)> f) {
  auto visit = [&](const std::string &tensors, bool quantize, const FormatConfig &format, int bits,
                   QuantMethod method) {
    if (quantize && !format.plain())
      f(tensors, format, bits, method);
  };
  visit("activations", c.activation.quantize, c.activation.format, c.activation.bits,
        c.activation.method);
  visit("default weights", c.weights.quantize, c.weights.format, c.weights.bits, c.weights.method);
  for (const auto &[slot, a] : c.slots)
    visit("`" + slot + "` weights", a.quantize, a.format, a.bits, a.method);
}

const char *ir::toString(ThresholdMethod m) {
  switch (m) {
  case ThresholdMethod::NoClipping:
    return "no_clipping";
  case ThresholdMethod::MSE:
    return "mse";
  case ThresholdMethod::MAE:
    return "mae";
  case ThresholdMethod::KL:
    return "kl";
  case ThresholdMethod::LP:
    return "lp";
  case ThresholdMethod::HMSE:
    return "hmse";
  }
  return "<invalid ThresholdMethod>";
}

std::optional<ThresholdMethod> ir::parseThresholdMethod(llvm::StringRef s) {
  for (ThresholdMethod m : {ThresholdMethod::NoClipping, ThresholdMethod::MSE, ThresholdMethod::MAE,
                            ThresholdMethod::KL, ThresholdMethod::LP, ThresholdMethod::HMSE})
    if (s == toString(m))
      return m;
  return std::nullopt;
}

const char *ir::toString(Resource r) {
  switch (r) {
  case Resource::WeightsMemory:
    return "weights_memory";
  case Resource::ActivationMemory:
    return "activation_memory";
  case Resource::TotalMemory:
    return "total_memory";
  case Resource::Bops:
    return "bops";
  }
  return "<invalid Resource>";
}

std::string ir::flagOf(Resource r) {
  std::string flag = std::string("--") + toString(r);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

const char *ir::toString(MixedDistance d) {
  switch (d) {
  case MixedDistance::Avg:
    return "avg";
  case MixedDistance::LastLayer:
    return "last_layer";
  case MixedDistance::Hessian:
    return "hessian";
  }
  return "<invalid MixedDistance>";
}

std::optional<MixedDistance> ir::parseMixedDistance(llvm::StringRef s) {
  for (MixedDistance d : {MixedDistance::Avg, MixedDistance::LastLayer, MixedDistance::Hessian})
    if (s == toString(d))
      return d;
  return std::nullopt;
}

const char *ir::toString(FinetuneQuantizer q) {
  return q == FinetuneQuantizer::Lsq ? "lsq" : "ste";
}

std::optional<FinetuneQuantizer> ir::parseFinetuneQuantizer(llvm::StringRef s) {
  for (FinetuneQuantizer q : {FinetuneQuantizer::Ste, FinetuneQuantizer::Lsq})
    if (s == toString(q))
      return q;
  return std::nullopt;
}

const char *ir::toString(GptqMethod m) {
  switch (m) {
  case GptqMethod::SoftRounding:
    return "soft_rounding";
  case GptqMethod::Ste:
    return "ste";
  case GptqMethod::SecondOrder:
    return "second_order";
  }
  return "?";
}

std::optional<GptqMethod> ir::parseGptqMethod(llvm::StringRef s) {
  for (GptqMethod m : {GptqMethod::SoftRounding, GptqMethod::Ste, GptqMethod::SecondOrder})
    if (s == toString(m))
      return m;
  return std::nullopt;
}

const std::optional<Budget> &MixedPrecision::budget(Resource r) const {
  switch (r) {
  case Resource::WeightsMemory:
    return weightsMemory;
  case Resource::ActivationMemory:
    return activationMemory;
  case Resource::TotalMemory:
    return totalMemory;
  case Resource::Bops:
    break;
  }
  return bops;
}

std::optional<Budget> &MixedPrecision::budget(Resource r) {
  return const_cast<std::optional<Budget> &>(std::as_const(*this).budget(r));
}

//===----------------------------------------------------------------------===//
// Literals and operands
//===----------------------------------------------------------------------===//

/// The shortest round-trip spelling of a finite or infinite double, laid out
/// as Python's repr() lays it out (see the file comment).
static std::string spellDouble(double d) {
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d < 0 ? "-inf" : "inf";

  // Shortest digits that round-trip, in scientific form: [-]D[.DDD]e[+-]XX.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool negative = !sci.empty() && sci[0] == '-';
  size_t ePos = sci.find('e');
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < ePos; ++i)
    if (sci[i] != '.')
      digits += sci[i];
  int exp10 = std::atoi(sci.c_str() + ePos + 1); // value = D.DDD * 10^exp10

  std::string out = negative ? "-" : "";
  if (exp10 < -4 || exp10 >= 16) {
    out += digits[0];
    if (digits.size() > 1)
      out += "." + digits.substr(1);
    out += exp10 < 0 ? "e-" : "e+";
    std::string e = std::to_string(std::abs(exp10));
    if (e.size() < 2)
      e = "0" + e;
    return out + e;
  }
  int pointPos = exp10 + 1; // digits before the decimal point
  if (pointPos <= 0) {
    out += "0." + std::string(-pointPos, '0') + digits;
  } else if (static_cast<size_t>(pointPos) < digits.size()) {
    out += digits.substr(0, pointPos) + "." + digits.substr(pointPos);
  } else {
    out += digits + std::string(pointPos - digits.size(), '0') + ".0";
  }
  return out;
}

static std::string quoteString(llvm::StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string Literal::str() const {
  switch (kind) {
  case Kind::Int:
    return std::to_string(i);
  case Kind::Float:
    return spellDouble(f);
  case Kind::String:
    return quoteString(s);
  case Kind::Bool:
    return b ? "true" : "false";
  case Kind::None:
    return "none";
  case Kind::List: {
    std::string out = "[";
    for (size_t k = 0; k < list.size(); ++k)
      out += (k ? ", " : "") + list[k].str();
    return out + "]";
  }
  }
  return "<invalid literal>";
}

std::string Operand::str() const {
  switch (kind) {
  case Kind::Attr:
    return attr;
  case Kind::Input:
    return "input[" + std::to_string(index) + "]";
  case Kind::Rank:
    return "rank(input[" + std::to_string(index) + "])";
  case Kind::Shape:
    return "shape(input[" + std::to_string(index) + "])[" + std::to_string(dim) + "]";
  case Kind::Literal:
    return literal.str();
  }
  return "<invalid operand>";
}

//===----------------------------------------------------------------------===//
// Fixed grids
//===----------------------------------------------------------------------===//

Signedness ir::fixedSignedness(const OpConfig &c) {
  if (c.activation.signedness != Signedness::Auto)
    return c.activation.signedness;
  int64_t signedMax = (int64_t(1) << (c.activation.bits - 1)) - 1;
  return c.fixedZeroPoint.value_or(0) > signedMax ? Signedness::Unsigned : Signedness::Signed;
}

std::pair<double, double> ir::fixedRange(const OpConfig &c) {
  int bits = c.activation.bits;
  double qmin, qmax;
  if (fixedSignedness(c) == Signedness::Unsigned) {
    qmin = 0;
    qmax = std::ldexp(1.0, bits) - 1;
  } else {
    qmin = -std::ldexp(1.0, bits - 1);
    qmax = std::ldexp(1.0, bits - 1) - 1;
  }
  double scale = c.fixedScale.value_or(1.0);
  double zp = static_cast<double>(c.fixedZeroPoint.value_or(0));
  return {scale * (qmin - zp), scale * (qmax - zp)};
}

//===----------------------------------------------------------------------===//
// Predicates
//===----------------------------------------------------------------------===//

namespace {
/// Binding strength of a predicate's outermost operator; atoms bind tightest.
enum class Prec { Or = 0, And = 1, Not = 2, Atom = 3 };

/// An `and` / `or` of one operand is that operand.
const Predicate &skipSingletons(const Predicate &p) {
  const Predicate *q = &p;
  while ((q->kind == Predicate::Kind::And || q->kind == Predicate::Kind::Or) &&
         q->children.size() == 1)
    q = &q->children.front();
  return *q;
}

Prec precOf(const Predicate &p) {
  switch (skipSingletons(p).kind) {
  case Predicate::Kind::Or:
    return Prec::Or;
  case Predicate::Kind::And:
    return Prec::And;
  case Predicate::Kind::Not:
    return Prec::Not;
  default:
    return Prec::Atom;
  }
}

void print(const Predicate &p, std::string &out);

/// Prints `p` as an operand of an operator of precedence `ctx`, parenthesized
/// if it binds more loosely than that operator.
void printOperand(const Predicate &p, Prec ctx, std::string &out) {
  bool parens = precOf(p) < ctx;
  if (parens)
    out += '(';
  print(p, out);
  if (parens)
    out += ')';
}

/// Prints the operands of a chain of `kind` (`and` / `or`), inlining nested
/// chains of the same kind.
void printChain(const Predicate &p, Predicate::Kind kind, Prec prec, const char *sep, bool &first,
                std::string &out) {
  for (const Predicate &child : p.children) {
    const Predicate &c = skipSingletons(child);
    if (c.kind == kind) {
      printChain(c, kind, prec, sep, first, out);
      continue;
    }
    if (!first)
      out += sep;
    first = false;
    printOperand(c, prec, out);
  }
}

void print(const Predicate &p0, std::string &out) {
  const Predicate &p = skipSingletons(p0);
  switch (p.kind) {
  case Predicate::Kind::Or:
  case Predicate::Kind::And: {
    bool isOr = p.kind == Predicate::Kind::Or;
    bool first = true;
    printChain(p, p.kind, isOr ? Prec::Or : Prec::And, isOr ? " or " : " and ", first, out);
    return;
  }
  case Predicate::Kind::Not:
    out += "not ";
    if (!p.children.empty())
      printOperand(p.children.front(), Prec::Not, out);
    return;
  case Predicate::Kind::Cmp:
    out += p.lhs.str();
    out += ' ';
    out += toString(p.op);
    out += ' ';
    out += p.rhs.str();
    return;
  case Predicate::Kind::In:
    out += p.lhs.str();
    out += " in [";
    for (size_t k = 0; k < p.list.size(); ++k) {
      if (k)
        out += ", ";
      out += p.list[k].str();
    }
    out += ']';
    return;
  case Predicate::Kind::Const:
    out += "const(input[" + std::to_string(p.index) + "])";
    return;
  case Predicate::Kind::Has:
    out += "has(" + p.attr + ")";
    return;
  }
}
} // namespace

std::string Predicate::str() const {
  std::string out;
  print(*this, out);
  return out;
}

//===----------------------------------------------------------------------===//
// Look-ups
//===----------------------------------------------------------------------===//

template <typename T>
static const T *findByName(const std::vector<T> &items, llvm::StringRef name) {
  for (const T &item : items)
    if (item.name == name)
      return &item;
  return nullptr;
}

const Opset *Platform::findOpset(llvm::StringRef n) const { return findByName(opsets, n); }

const Platform *Module::findPlatform(llvm::StringRef n) const { return findByName(platforms, n); }

const Framework *Module::findFramework(llvm::StringRef n) const {
  return findByName(frameworks, n);
}

const Composite *Framework::findComposite(llvm::StringRef n) const {
  for (const Composite &c : composites)
    if (c.name == n)
      return &c;
  return nullptr;
}

static std::string termText(const PatternTerm &t, const std::vector<std::string> &params) {
  switch (t.kind) {
  case PatternTerm::Kind::Param:
    return t.param < params.size() ? params[t.param] : "?";
  case PatternTerm::Kind::Constant:
    return t.value == std::floor(t.value) && std::abs(t.value) < 1e15
               ? std::to_string(int64_t(t.value))
               : spellDouble(t.value);
  case PatternTerm::Kind::Op:
    break;
  }
  std::string out = t.op + "(";
  for (size_t k = 0; k < t.args.size(); ++k)
    out += (k ? ", " : "") + termText(t.args[k], params);
  out += ")";
  if (t.where)
    out += " where " + t.where->str();
  return out;
}

std::string Composite::str() const {
  std::string head = name + "(";
  for (size_t k = 0; k < params.size(); ++k)
    head += (k ? ", " : "") + params[k];
  return head + ") = " + termText(root, params) + (is.empty() ? "" : " is " + is);
}

const Capabilities *Module::findCapabilities(llvm::StringRef n) const {
  return findByName(capabilities, n);
}

const Recipe *Module::findRecipe(llvm::StringRef n) const { return findByName(recipes, n); }

std::vector<const Platform *> Module::lineage(const Platform &p) const {
  std::vector<const Platform *> out;
  for (const Platform *q = &p; q && out.size() <= platforms.size();
       q = q->parent ? findPlatform(*q->parent) : nullptr)
    out.push_back(q);
  return out;
}

const Capabilities *Module::capabilitiesFor(const Platform &p, llvm::StringRef name,
                                            DiagnosticEngine &diags) const {
  std::vector<const Platform *> line = lineage(p);
  if (!name.empty()) {
    std::vector<std::string> all;
    for (const Capabilities &c : capabilities)
      all.push_back(c.name);
    if (failed(lookUpName(diags, "capabilities", "capabilities", name, all)))
      return nullptr;
    const Capabilities *c = findCapabilities(name);
    for (const Platform *q : line)
      if (q->name == c->platform)
        return c;
    diags.emitAt("", diag::err_capabilities_not_for_platform, c->name, c->platform, p.name);
    return nullptr;
  }
  for (const Platform *q : line) {
    std::vector<const Capabilities *> here;
    for (const Capabilities &c : capabilities)
      if (c.platform == q->name)
        here.push_back(&c);
    if (here.size() == 1)
      return here.front();
    if (here.size() > 1) {
      std::string names;
      for (const Capabilities *c : here)
        names += (names.empty() ? "`" : ", `") + c->name + "`";
      diags.emitAt("", diag::err_platform_several_capabilities, q->name, names);
      return nullptr;
    }
  }
  diags.emitAt("", diag::err_platform_no_capabilities, p.name);
  return nullptr;
}

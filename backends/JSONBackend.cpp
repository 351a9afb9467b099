//===- JSONBackend.cpp - The canonical JSON of the typed IR ---------------===//
//
// `tpcc emit --emit=json`: the fully resolved IR as one JSON document,
// `"tpcc_ir_version": 1`. Every config is inlined and every field is present
// (null where the IR has nothing), so consumers never apply defaults.
//
// Conventions (the JSON is canonical: the same IR always gives the same bytes,
// identical to Python's `json.dumps(v, indent=2, sort_keys=True,
// ensure_ascii=False)` followed by a newline):
//   - object keys sorted (byte order), 2-space indentation, trailing newline;
//   - JSON has no infinity: +inf / -inf are written as the strings "inf" and
//     "-inf" (a NaN, which the passes never produce, as "nan");
//   - numbers with an integral value are written as integers (`2`), other
//     doubles as the shortest decimal that reads back as the same double, in
//     the layout of Python's repr() (`0.25`, `1e-05`);
//   - strings are UTF-8, with `"`, `\` and control characters escaped as
//     Python's json does (`\n`, `\b`, `\u001b`, ...);
//   - `where` is the predicate's canonical spelling (ir::Predicate::str()).
//
// The document is built as an llvm::json::Value and written by a small
// printer on llvm::json::OStream (LLVM's own printer spells doubles with 17
// digits and `\b` / `\f` as `\u0008` / `\u000c`).
//
//===----------------------------------------------------------------------===//
#include "backends/Backends.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace tpcc;
namespace json = llvm::json;

namespace {

//===----------------------------------------------------------------------===//
// IR -> json::Value
//===----------------------------------------------------------------------===//

/// `s` with invalid UTF-8 replaced (the frontend rejects such input; this
/// keeps hand-built IR from tripping llvm::json's UTF-8 assertion).
std::string utf8(llvm::StringRef s) {
  return json::isUTF8(s) ? s.str() : json::fixUTF8(s);
}

json::Value str(llvm::StringRef s) { return json::Value(utf8(s)); }

json::Value orNull(const std::string &s) {
  return s.empty() ? json::Value(nullptr) : str(s);
}

template <typename T> json::Value orNull(const std::optional<T> &v) {
  return v ? json::Value(*v) : json::Value(nullptr);
}

json::Value number(double d) {
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d < 0 ? "-inf" : "inf";
  return d;
}

json::Value number(const std::optional<double> &d) {
  return d ? number(*d) : json::Value(nullptr);
}

json::Value where(const std::optional<ir::Predicate> &p) {
  return p ? str(p->str()) : json::Value(nullptr);
}

json::Value strings(const std::vector<std::string> &v) {
  json::Array a;
  for (const std::string &s : v)
    a.push_back(str(s));
  return a;
}

json::Value toJSON(const ir::AttrConfig &a) {
  return json::Object{{"method", ir::toString(a.method)},
                      {"bits", a.bits},
                      {"per_channel", a.perChannel},
                      {"quantize", a.quantize},
                      {"lut_bits", orNull(a.lutBits)}};
}

json::Value toJSON(const ir::OpConfig &c) {
  json::Object slots;
  for (const auto &[slot, attr] : c.slots)
    slots[utf8(slot)] = toJSON(attr);
  json::Array inputBits;
  for (int b : c.inputBits)
    inputBits.push_back(b);
  return json::Object{
      {"name", orNull(c.name)},
      {"activation",
       json::Object{{"method", ir::toString(c.activation.method)},
                    {"bits", c.activation.bits},
                    {"quantize", c.activation.quantize},
                    {"signedness", ir::toString(c.activation.signedness)}}},
      {"input_bits", std::move(inputBits)},
      {"weights", json::Object{{"default", toJSON(c.weights)},
                               {"slots", std::move(slots)}}},
      {"preserving", c.preserving},
      {"fixed_scale", number(c.fixedScale)},
      {"fixed_zero_point", orNull(c.fixedZeroPoint)},
      {"simd", c.simd}};
}

json::Value toJSON(const ir::Options &o) {
  json::Array configs;
  for (const ir::OpConfig &c : o.configs)
    configs.push_back(toJSON(c));
  return json::Object{{"configs", std::move(configs)}, {"base", o.base}};
}

json::Value toJSON(const ir::Platform &p) {
  json::Array opsets;
  for (const ir::Opset &o : p.opsets)
    opsets.push_back(json::Object{
        {"name", str(o.name)},
        {"options", o.options ? toJSON(*o.options) : json::Value(nullptr)}});
  json::Array fusings;
  for (const ir::Fusing &f : p.fusings) {
    json::Array pattern;
    for (const std::vector<std::string> &element : f.pattern)
      pattern.push_back(strings(element));
    fusings.push_back(
        json::Object{{"name", orNull(f.name)}, {"pattern", std::move(pattern)}});
  }
  json::Value version = nullptr;
  if (p.version)
    version = std::to_string(p.version->minor) + "." +
              std::to_string(p.version->patch);
  return json::Object{{"name", str(p.name)},
                      {"version", std::move(version)},
                      {"type", str(p.type)},
                      {"parent", p.parent ? str(*p.parent) : nullptr},
                      {"simd_padding", p.simdPadding},
                      {"metadata", p.metadata},
                      {"default", toJSON(p.defaultOptions)},
                      {"opsets", std::move(opsets)},
                      {"fusings", std::move(fusings)}};
}

json::Value toJSON(const ir::Framework &f) {
  json::Array weights;
  for (const ir::WeightSlot &w : f.weights) {
    json::Value axes = nullptr;
    if (w.outAxis || w.inAxis)
      axes = json::Object{{"out", orNull(w.outAxis)}, {"in", orNull(w.inAxis)}};
    weights.push_back(json::Object{{"slot", str(w.slot)},
                                   {"op", str(w.op)},
                                   {"input", w.input},
                                   {"where", where(w.where)},
                                   {"axes", std::move(axes)}});
  }
  json::Array ranges;
  for (const ir::OpRange &r : f.ranges)
    ranges.push_back(json::Object{
        {"op", str(r.op)}, {"min", number(r.lo)}, {"max", number(r.hi)}});
  return json::Object{{"name", str(f.name)},
                      {"weights", std::move(weights)},
                      {"activation", strings(f.activationOps)},
                      {"no_quantize", strings(f.noQuantizeOps)},
                      {"ranges", std::move(ranges)}};
}

json::Value toJSON(const ir::Capabilities &c) {
  json::Array bindings;
  for (const ir::OpBinding &b : c.bindings)
    bindings.push_back(json::Object{{"opset", str(b.opset)},
                                    {"op", str(b.op)},
                                    {"where", where(b.where)}});
  return json::Object{{"name", str(c.name)},
                      {"platform", str(c.platform)},
                      {"framework", str(c.framework)},
                      {"bindings", std::move(bindings)}};
}

json::Value toJSON(const ir::Recipe &r) {
  auto method = [](const std::optional<ir::QuantMethod> &m) {
    return m ? json::Value(ir::toString(*m)) : json::Value(nullptr);
  };
  return json::Object{
      {"name", str(r.name)},
      {"parent", r.parent ? str(*r.parent) : nullptr},
      {"activation_threshold", ir::toString(r.activationThreshold)},
      {"weights_threshold", ir::toString(r.weightsThreshold)},
      {"lp", number(r.lp)},
      {"bias_correction", r.biasCorrection},
      {"shift_negative",
       json::Object{{"enabled", r.shiftNegative.enabled},
                    {"ratio", number(r.shiftNegative.ratio)},
                    {"recompute_threshold", r.shiftNegative.recomputeThreshold}}},
      {"relu_unbound_correction", r.reluUnboundCorrection},
      {"activation_channel_equalization", r.activationChannelEqualization},
      {"input_scaling", r.inputScaling},
      {"z_threshold", number(r.zThreshold)},
      {"min_threshold", number(r.minThreshold)},
      {"overrides",
       json::Object{{"activation_bits", orNull(r.activationBits)},
                    {"weights_bits", orNull(r.weightsBits)},
                    {"activation_method", method(r.activationMethod)},
                    {"weights_method", method(r.weightsMethod)},
                    {"per_channel", orNull(r.perChannel)},
                    {"quantize_activations", orNull(r.quantizeActivations)},
                    {"quantize_weights", orNull(r.quantizeWeights)}}}};
}

template <typename T> json::Value listOf(const std::vector<T> &items) {
  json::Array a;
  a.reserve(items.size());
  for (const T &item : items)
    a.push_back(toJSON(item));
  return a;
}

//===----------------------------------------------------------------------===//
// json::Value -> text
//===----------------------------------------------------------------------===//

/// A JSON string literal, escaped as Python's json.dumps(ensure_ascii=False).
void writeString(llvm::raw_ostream &os, llvm::StringRef s) {
  os << '"';
  for (char ch : s) {
    unsigned char c = ch;
    switch (c) {
    case '"':
      os << "\\\"";
      break;
    case '\\':
      os << "\\\\";
      break;
    case '\n':
      os << "\\n";
      break;
    case '\r':
      os << "\\r";
      break;
    case '\t':
      os << "\\t";
      break;
    case '\b':
      os << "\\b";
      break;
    case '\f':
      os << "\\f";
      break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        os << buf;
      } else {
        os << ch;
      }
    }
  }
  os << '"';
}

/// A number: integers (and integral doubles) as integers, other doubles as
/// the shortest round-trip decimal (ir::Literal::str() spells floats that way).
void writeNumber(llvm::raw_ostream &os, const json::Value &v) {
  if (auto i = v.getAsInteger()) {
    os << *i;
    return;
  }
  if (auto u = v.getAsUINT64()) {
    os << *u;
    return;
  }
  ir::Literal lit;
  lit.kind = ir::Literal::Kind::Float;
  lit.f = *v.getAsNumber();
  os << lit.str();
}

void write(json::OStream &j, const json::Value &v) {
  switch (v.kind()) {
  case json::Value::Null:
  case json::Value::Boolean:
    j.value(v);
    return;
  case json::Value::Number:
    j.rawValue([&](llvm::raw_ostream &os) { writeNumber(os, v); });
    return;
  case json::Value::String:
    j.rawValue(
        [&](llvm::raw_ostream &os) { writeString(os, *v.getAsString()); });
    return;
  case json::Value::Array:
    j.array([&] {
      for (const json::Value &e : *v.getAsArray())
        write(j, e);
    });
    return;
  case json::Value::Object: {
    const json::Object &o = *v.getAsObject();
    std::vector<const json::Object::value_type *> fields;
    fields.reserve(o.size());
    for (const auto &kv : o)
      fields.push_back(&kv);
    llvm::sort(fields, [](const auto *a, const auto *b) {
      return a->first.str() < b->first.str();
    });
    // Keys are field names and slot names (identifiers), which LLVM's
    // attributeBegin escapes exactly as Python does.
    j.object([&] {
      for (const auto *kv : fields) {
        j.attributeBegin(kv->first);
        write(j, kv->second);
        j.attributeEnd();
      }
    });
    return;
  }
  }
}

} // namespace

void tpcc::emitJSON(const ir::Module &m, llvm::raw_ostream &os) {
  json::Value doc = json::Object{{"tpcc_ir_version", 1},
                                 {"platforms", listOf(m.platforms)},
                                 {"frameworks", listOf(m.frameworks)},
                                 {"capabilities", listOf(m.capabilities)},
                                 {"recipes", listOf(m.recipes)}};
  {
    json::OStream j(os, /*IndentSize=*/2);
    write(j, doc);
  }
  os << '\n';
}

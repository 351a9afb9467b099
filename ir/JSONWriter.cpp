//===- JSONWriter.cpp - Streaming canonical-JSON writer for backends ------===//
//
// Strings escaped as Python's json.dumps(ensure_ascii=False) does, doubles as
// Python's repr() spells them, objects with sorted keys (see JSONWriter.h).
//
//===----------------------------------------------------------------------===//
#include "ir/JSONWriter.h"
#include "ir/TpcIR.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <cmath>
#include <cstdio>

using namespace tpcc;
namespace json = llvm::json;

void JSONWriter::object(llvm::ArrayRef<Field> fields) {
  // Sort pointers, not the fields: copying a std::function may allocate.
  llvm::SmallVector<const Field *, 16> sorted;
  for (const Field &f : fields)
    sorted.push_back(&f);
  llvm::sort(sorted, [](const Field *a, const Field *b) { return a->first < b->first; });
  j.objectBegin();
  for (const Field *fp : sorted) {
    const Field &f = *fp;
    // Keys are fixed field names and slot names (identifiers), which LLVM
    // escapes exactly as Python does.
    j.attributeBegin(f.first);
    f.second();
    j.attributeEnd();
  }
  j.objectEnd();
}

/// A JSON string literal, escaped as Python's json.dumps(ensure_ascii=False).
void JSONWriter::string(llvm::StringRef s) {
  std::string fixed;
  if (!json::isUTF8(s)) {
    fixed = json::fixUTF8(s);
    s = fixed;
  }
  j.rawValue([&](llvm::raw_ostream &os) {
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
  });
}

/// Infinities as "inf" / "-inf", integral values as integers, other doubles
/// as the shortest round-trip decimal (ir::Literal::str() spells floats that
/// way, in Python's layout).
void JSONWriter::number(double d) {
  if (std::isnan(d))
    return string("nan");
  if (std::isinf(d))
    return string(d < 0 ? "-inf" : "inf");
  double intPart;
  if (std::modf(d, &intPart) == 0.0 && d >= -0x1p63 && d < 0x1p63)
    return integer(static_cast<int64_t>(d));
  ir::Literal lit;
  lit.kind = ir::Literal::Kind::Float;
  lit.f = d;
  std::string text = lit.str();
  j.rawValue(text);
}

//===----------------------------------------------------------------------===//
// Configs (shared by the IR's JSON and the plan's)
//===----------------------------------------------------------------------===//

void JSONWriter::formatConfig(const ir::FormatConfig &f, bool withAxis) {
  std::vector<Field> fields = {
      {"element", [&] { string(ir::toString(f.element)); }},
      {"block", [&] { integerOrNull(f.block); }},
      {"scale", [&] { string(ir::toString(f.scale)); }},
      {"block_scale", [&] { f.blockScale ? string(ir::toString(*f.blockScale)) : null(); }}};
  if (withAxis)
    fields.push_back({"block_axis", [&] { string(ir::toString(f.blockAxis)); }});
  object(fields);
}

void JSONWriter::attrConfig(const ir::AttrConfig &a) {
  std::vector<Field> fields = {{"method", [&] { string(ir::toString(a.method)); }},
                               {"bits", [&] { integer(a.bits); }},
                               {"per_channel", [&] { boolean(a.perChannel); }},
                               {"quantize", [&] { boolean(a.quantize); }},
                               {"lut_bits", [&] { integerOrNull(a.lutBits); }}};
  if (!a.format.plain())
    fields.push_back({"format", [&] { formatConfig(a.format, /*withAxis=*/true); }});
  object(fields);
}

void JSONWriter::opConfig(const ir::OpConfig &c) {
  const ir::ActivationConfig &act = c.activation;
  object({{"name", [&] { nameOrNull(c.name); }},
          {"activation",
           [&] {
             std::vector<Field> fields = {
                 {"method", [&] { string(ir::toString(act.method)); }},
                 {"bits", [&] { integer(act.bits); }},
                 {"quantize", [&] { boolean(act.quantize); }},
                 {"signedness", [&] { string(ir::toString(act.signedness)); }}};
             if (!act.format.plain())
               fields.push_back({"format", [&] { formatConfig(act.format, /*withAxis=*/false); }});
             object(fields);
           }},
          {"input_bits", [&] { array(c.inputBits, [&](int b) { integer(b); }); }},
          {"weights",
           [&] {
             object({{"default", [&] { attrConfig(c.weights); }},
                     {"slots", [&] {
                        // std::map iterates in byte order of the slot names.
                        j.objectBegin();
                        for (const auto &[slot, a] : c.slots) {
                          j.attributeBegin(json::isUTF8(slot) ? slot : json::fixUTF8(slot));
                          attrConfig(a);
                          j.attributeEnd();
                        }
                        j.objectEnd();
                      }}});
           }},
          {"preserving", [&] { boolean(c.preserving); }},
          {"fixed_scale", [&] { c.fixedScale ? number(*c.fixedScale) : null(); }},
          {"fixed_zero_point", [&] { integerOrNull(c.fixedZeroPoint); }},
          {"simd", [&] { integerOrNull(c.simd); }}});
}

//===- OrtOverrides.cpp - The plan as ONNX Runtime TensorQuantOverrides ----===//
//
// ORT's quantizer (`quantize_static(..., extra_options={"TensorQuantOverrides":
// ...})`) takes, per tensor name, a list of dicts: one for a per-tensor
// quantizer, `axis` in the first for a per-channel weight. Keys written:
// `quant_type` (QInt8, QUInt8, QInt16, QUInt16, QInt4, QUInt4, QFLOAT8E4M3FN
// — the `QuantType` member names), `symmetric`, `axis`, and `scale` /
// `zero_point` for fixed quantizers (ORT rejects `symmetric` beside them). What ORT cannot
// express is reported, one warning per concept, with the tensors it affects.
//
//===----------------------------------------------------------------------===//

#include "ir/JSONWriter.h"
#include "plan/Plan.h"

#include "llvm/ADT/StringExtras.h"

#include <map>

using namespace tpcc;
using namespace tpcc::plan;

namespace {

struct Override {
  std::string quantType;
  std::optional<bool> symmetric;
  std::optional<int64_t> axis;
  std::optional<double> scale;
  std::optional<int64_t> zeroPoint;
};

/// Collects the tensors each warning is about (first few named).
struct Affected {
  unsigned count = 0;
  std::vector<std::string> names;
  void add(const std::string &n) {
    if (count++ < 5)
      names.push_back("`" + n + "`");
  }
  std::string list() const {
    return llvm::join(names, ", ") + (count > names.size() ? ", ..." : "");
  }
};

class OrtWriter {
public:
  OrtWriter(const Plan &plan, DiagnosticEngine &diags) : plan(plan), diags(diags) {}
  void run(llvm::raw_ostream &os);

private:
  /// ORT's type for `bits` (rounded up to a type ORT has).
  std::string quantType(int bits, bool isSigned, const std::string &tensor) {
    int width = bits <= 4 ? 4 : bits <= 8 ? 8 : 16;
    if (bits != width || bits > 16) {
      std::string t = std::string(isSigned ? "QInt" : "QUInt") + std::to_string(width);
      auto &a = narrowed[{bits, t}];
      a.add(tensor);
    }
    return std::string(isSigned ? "QInt" : "QUInt") + std::to_string(width);
  }

  /// ORT's type for a number format other than plain integers: FP8 E4M3
  /// with one float scale per tensor or channel is QFLOAT8E4M3FN (symmetric);
  /// any other is written as integers of its bits, with a warning.
  bool formatType(const ir::FormatConfig &f, int bits, const std::string &tensor, Override &o) {
    if (f.plain())
      return false;
    if (f.element == ir::ElementFormat::Fp8E4M3 && !f.block &&
        (f.scale == ir::ScaleFormat::Float32 || f.scale == ir::ScaleFormat::Float16)) {
      o.quantType = "QFLOAT8E4M3FN";
      o.symmetric = true;
      return true;
    }
    lostFormats[ir::formatText(f, bits)].add(tensor);
    return false;
  }

  const Plan &plan;
  DiagnosticEngine &diags;
  std::map<std::string, Override> out;
  std::map<std::string, Affected> lostFormats; ///< by ir::formatText
  Affected powerOfTwo, lut, floatTensors;
  std::map<std::pair<int, std::string>, Affected> narrowed;
  std::vector<std::string> excluded;
};

} // namespace

void OrtWriter::run(llvm::raw_ostream &os) {
  for (const PlanTensor &t : plan.tensors) {
    const std::string &name = t.value->name;
    if (!t.quantize) {
      // Inside a fusing group ORT fuses on its own (no QDQ between Conv and
      // Relu); any other float tensor needs its producer excluded.
      if (t.producer && t.producer->fusingGroup >= 0 &&
          t.reason.rfind("inside fusing group", 0) == 0)
        continue;
      bool isFloat = t.value->type.elem == graph::ElemType::Undefined ||
                     graph::isFloatingPoint(t.value->type.elem);
      if (!isFloat)
        continue;
      floatTensors.add(name);
      if (t.producer) {
        std::string node = t.producer->node->name;
        if (!node.empty() && std::find(excluded.begin(), excluded.end(), node) == excluded.end())
          excluded.push_back(node);
      }
      continue;
    }
    Override o;
    bool isSigned = t.signedness == ir::Signedness::Signed ||
                    (t.signedness == ir::Signedness::Auto && t.method != ir::QuantMethod::Uniform);
    o.quantType = quantType(t.bits, isSigned, name);
    if (formatType(t.format, t.bits, name, o)) {
      out[name] = o;
      continue;
    }
    if (t.scale && t.zeroPoint) {
      o.scale = t.scale;
      o.zeroPoint = t.zeroPoint;
    } else {
      // Unsigned symmetric ranges ([0, t]) are ORT's asymmetric uint8 with
      // rmin 0; ORT's symmetric uint8 would centre the zero point at 128.
      o.symmetric = t.method != ir::QuantMethod::Uniform && isSigned;
      if (t.method == ir::QuantMethod::PowerOfTwo)
        powerOfTwo.add(name);
    }
    out[name] = o;
  }
  for (const PlanNode &n : plan.nodes)
    for (const PlanWeight &w : n.weights) {
      if (!w.quantize || !w.input)
        continue;
      const std::string &name = w.input->name;
      Override o;
      o.quantType = quantType(w.config.bits, /*isSigned=*/true, name);
      o.symmetric = w.config.method != ir::QuantMethod::Uniform;
      formatType(w.config.format, w.config.bits, name, o);
      if (w.config.method == ir::QuantMethod::PowerOfTwo)
        powerOfTwo.add(name);
      if (ir::isLut(w.config.method))
        lut.add(name);
      o.axis = w.axis;
      out[name] = o;
    }

  JSONWriter j(os);
  llvm::json::OStream &raw = j.raw();
  raw.objectBegin();
  for (const auto &[name, o] : out) {
    raw.attributeBegin(name);
    raw.arrayBegin();
    std::vector<JSONWriter::Field> fields;
    fields.push_back({"quant_type", [&] { j.string(o.quantType); }});
    if (o.symmetric)
      fields.push_back({"symmetric", [&] { j.boolean(*o.symmetric); }});
    if (o.axis)
      fields.push_back({"axis", [&] { j.integer(*o.axis); }});
    if (o.scale)
      fields.push_back({"scale", [&] { j.number(*o.scale); }});
    if (o.zeroPoint)
      fields.push_back({"zero_point", [&] { j.integer(*o.zeroPoint); }});
    j.object(fields);
    raw.arrayEnd();
    raw.attributeEnd();
  }
  raw.objectEnd();
  os << "\n";

  if (powerOfTwo.count)
    diags.emitAt(plan.modelName, diag::warn_ort_power_of_two, powerOfTwo.count, powerOfTwo.list());
  for (const auto &[key, a] : narrowed)
    diags.emitAt(plan.modelName, diag::warn_ort_bits, key.first, a.count, a.list(), key.second);
  if (lut.count)
    diags.emitAt(plan.modelName, diag::warn_ort_lut, lut.count, lut.list());
  for (const auto &[format, a] : lostFormats)
    diags.emitAt(plan.modelName, diag::warn_ort_format, format, a.count, a.list(),
                 "integers of the same bits");
  if (floatTensors.count) {
    std::vector<std::string> quoted;
    for (const std::string &n : excluded)
      quoted.push_back("\"" + n + "\"");
    diags.emitAt(plan.modelName, diag::warn_ort_float_tensors, floatTensors.count,
                 floatTensors.list(), llvm::join(quoted, ", "));
  }
}

void plan::emitOrtOverrides(const Plan &plan, DiagnosticEngine &diags, llvm::raw_ostream &os) {
  OrtWriter(plan, diags).run(os);
}

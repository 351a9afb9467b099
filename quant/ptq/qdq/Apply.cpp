//===- Apply.cpp - A calibrated plan back into a QDQ spec -------------------===//
#include "quant/ptq/qdq/Apply.h"
#include "quant/ptq/corrections/Replay.h"
#include "quant/ptq/qdq/Finish.h"
#include "quant/ptq/qdq/Mx.h"

#include "plan/ConstantOperands.h"

#include "quant/core/grids/Lut.h"
#include "quant/core/grids/Threshold.h"
#include "runtime/Tensor.h"

#include "llvm/Support/JSON.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

using namespace tpcc;
using namespace tpcc::quant;
namespace json = llvm::json;

namespace {

class PlanReader {
public:
  PlanReader(llvm::StringRef where, graph::Model &m, QuantizeResult &r, DiagnosticEngine &diags)
      : where(where.str()), m(m), r(r), diags(diags) {}

  bool read(const json::Object &plan);

private:
  bool fail(const std::string &msg) {
    diags.emitAt(where, diag::err_apply_plan, msg);
    return false;
  }
  bool checkModel(const json::Array &nodes);
  bool corrections(const json::Array &records);
  bool tensor(const json::Object &t);
  bool node(const json::Object &n);

  std::string where;
  graph::Model &m;
  QuantizeResult &r;
  DiagnosticEngine &diags;
  RecordedCorrections recorded;
};

/// The corrections the plan records: the weight edits made before
/// statistics are replayed on the model at once (its weights are then read
/// as quantize read them), the graph edits are kept for applyCorrections.
bool PlanReader::corrections(const json::Array &records) {
  if (failed(readCorrections(records, where, m, recorded, diags)))
    return false;
  if (recorded.pre.empty())
    return true;
  return succeeded(applyPreStatisticsCorrections(m, recorded.pre, diags));
}

/// Integer range of a `bits`-wide grid.
/// Whether `key` of `o` is there and not null.
bool given(const json::Object &o, llvm::StringRef key) {
  const json::Value *v = o.get(key);
  return v && !v->getAsNull();
}

void setRange(QuantGrid &g, bool isSigned) {
  g.isSigned = isSigned;
  g.qmin = isSigned ? -(int64_t(1) << (g.bits - 1)) : 0;
  g.qmax = isSigned ? (int64_t(1) << (g.bits - 1)) - 1 : (int64_t(1) << g.bits) - 1;
}

bool PlanReader::checkModel(const json::Array &nodes) {
  const auto &ours = m.graph.nodes();
  if (nodes.size() != ours.size())
    return fail(fmt::format("the plan is for another model: it has {} nodes, `{}` has {} "
                            "(after clean-up)",
                            nodes.size(), m.path, ours.size()));
  for (size_t i = 0; i < nodes.size(); ++i) {
    const json::Object *n = nodes[i].getAsObject();
    if (!n)
      return fail(fmt::format("nodes[{}] is not an object", i));
    std::string name = n->getString("name").getValueOr("").str();
    std::string op = n->getString("op_type").getValueOr("").str();
    if (name != ours[i]->displayName() || op != ours[i]->opType)
      return fail(fmt::format("the plan is for another model: node {} is `{}` ({}) in the plan "
                              "but `{}` ({}) in `{}`",
                              i, name, op, ours[i]->displayName(), ours[i]->opType, m.path));
  }
  return true;
}

bool PlanReader::tensor(const json::Object &t) {
  std::string name = t.getString("name").getValueOr("").str();
  if (!t.getBoolean("quantize").getValueOr(false) || recorded.moved.count(name))
    return true; // float, or its grid moved to an input scaling's output
  std::optional<ir::ElementFormat> element = ir::ElementFormat::Int;
  if (const json::Object *f = t.getObject("format")) {
    element = ir::parseElementFormat(f->getString("element").getValueOr("int"));
    if (element && given(*f, "block") && !given(*f, "block_scale") &&
        t.getString("statistic").getValueOr("") == "mx") {
      // MX: blocks along `block_dim` of a tensor of rank `rank`.
      MxActivation a;
      a.element = *element;
      a.bits = int(t.getInteger("bits").getValueOr(8));
      a.block = f->getInteger("block").getValueOr(0);
      a.axis = t.getInteger("block_dim").getValueOr(-1);
      a.rank = t.getInteger("rank").getValueOr(0);
      a.length = t.getInteger("block_length").getValueOr(0);
      if (std::string why = checkMx(a); !why.empty())
        return fail(fmt::format("tensor `{}`: {}", name, why));
      r.spec.mxActivations.push_back({name, a});
      return true;
    }
    if (!element || given(*f, "block") || given(*f, "block_scale"))
      return fail(fmt::format("tensor `{}`: its number format (`format`) is not one `tpcc "
                              "quantize` writes",
                              name));
  }
  llvm::Optional<double> scale = t.getNumber("scale");
  llvm::Optional<int64_t> zp = t.getInteger("zero_point");
  if (!scale || !zp)
    return fail(fmt::format("tensor `{}` is quantized but has no scale and zero point; apply "
                            "takes plans written by `tpcc quantize --plan-out`",
                            name));
  auto method = ir::parseQuantMethod(t.getString("method").getValueOr(""));
  if (!method)
    return fail(fmt::format("tensor `{}`: unknown method", name));
  int bits = int(t.getInteger("bits").getValueOr(8));
  if (bits < 2 || bits > 32)
    return fail(fmt::format("tensor `{}`: {} bits is not a width", name, bits));
  double lo = 0;
  if (const json::Array *range = t.getArray("range"); range && !range->empty())
    lo = (*range)[0].getAsNumber().getValueOr(0);
  // The rewrite checks the scale and zero point against the grid's integers.
  r.spec.activations.push_back({name, *element != ir::ElementFormat::Int
                                          ? floatGridOfScale(*element, *scale, *method)
                                          : gridFromPlan(*method, bits, *scale, *zp, lo)});
  return true;
}

bool PlanReader::node(const json::Object &n) {
  std::string name = n.getString("name").getValueOr("").str();
  const json::Object *weights = n.getObject("weights");
  const json::Object *grids = n.getObject("weight_grids");
  if (weights)
    for (const auto &[slot, value] : *weights) {
      const json::Object *w = value.getAsObject();
      if (!w || slot == "bias" || !w->getBoolean("quantize").getValueOr(false))
        continue;
      int64_t index = w->getInteger("input_index").getValueOr(-1);
      const graph::Node *node = nullptr;
      for (const auto &x : m.graph.nodes())
        if (x->displayName() == name)
          node = x.get();
      const graph::Value *in = node ? node->input(size_t(index)) : nullptr;
      if (!in || !in->constant)
        continue;
      // A number format: its element and blocks (the scales are recorded
      // as stored, already on their scale format).
      ir::ElementFormat element = ir::ElementFormat::Int;
      int64_t block = 0;
      std::optional<ir::ScaleFormat> factor; // two-level scales
      if (const json::Object *f = w->getObject("format")) {
        auto e = ir::parseElementFormat(f->getString("element").getValueOr("int"));
        block = f->getInteger("block").getValueOr(0);
        if (given(*f, "block_scale"))
          factor = ir::parseScaleFormat(f->getString("block_scale").getValueOr(""));
        const json::Object *g = grids ? grids->getObject(slot) : nullptr;
        if (!e || (given(*f, "block_scale") && !(factor && block && g && g->getArray("factors"))) ||
            (block && !w->getInteger("block_dim")) || !g)
          return fail(fmt::format("node `{}` weight `{}`: its number format (`format`) is not one "
                                  "`tpcc quantize` writes",
                                  name, slot.str()));
        element = *e;
      }
      auto method = ir::parseQuantMethod(w->getString("method").getValueOr(""));
      int bits = int(w->getInteger("bits").getValueOr(8));
      if (!method || bits < 2 || bits > 16)
        return fail(fmt::format("node `{}` weight `{}`: a method and 2 to 16 bits are needed", name,
                                slot.str()));
      WeightQDQ q;
      q.node = node->name;
      q.inputIndex = unsigned(index);
      q.operand = plan::isOperandSlot(slot);
      llvm::Optional<int64_t> axis = w->getInteger("axis");
      rt::Tensor t = rt::Tensor::fromGraph(*in->constant);
      if (t.elem() != graph::ElemType::Float)
        continue;
      bool perChannel = w->getBoolean("per_channel").getValueOr(false) && axis && !block;
      int64_t channels = perChannel ? t.dim(*axis) : 1;
      q.axis = perChannel ? *axis : -1;
      if (block) {
        q.block = block;
        q.blockAxis = *w->getInteger("block_dim");
      }
      const json::Object *g = grids ? grids->getObject(slot) : nullptr;
      if (factor) { // the factors and group scales as recorded (the rewrite checks them)
        TwoLevelScales two;
        two.factor = *factor;
        two.axis = g->getInteger("group_axis").getValueOr(-1);
        for (const json::Value &v : *g->getArray("factors"))
          two.factors.push_back(v.getAsNumber().getValueOr(0));
        if (const json::Array *gs = g->getArray("group_scales"))
          for (const json::Value &v : *gs)
            two.groupScales.push_back(v.getAsNumber().getValueOr(0));
        q.twoLevel = std::move(two);
      }
      if (g) {
        const json::Array *scales = g->getArray("scales"), *zps = g->getArray("zero_points");
        const json::Array *luts = g->getArray("luts");
        if (const json::Array *trained = g->getArray("trained")) {
          QuantizeResult::TrainedWeight tw{node->name, unsigned(index), {}};
          for (const json::Value &v : *trained)
            tw.values.push_back(float(v.getAsNumber().getValueOr(0)));
          r.trainedWeights.push_back(std::move(tw));
        }
        if (!scales || !zps || zps->size() != scales->size())
          return fail(fmt::format("node `{}` weight `{}`: weight_grids needs as many scales as "
                                  "zero points",
                                  name, slot.str()));
        for (size_t c = 0; c < scales->size(); ++c) {
          QuantGrid qg;
          qg.method = *method;
          qg.bits = ir::isLut(*method) ? int(w->getInteger("lut_bits").getValueOr(8)) : bits;
          qg.scale = (*scales)[c].getAsNumber().getValueOr(0);
          qg.zeroPoint = (*zps)[c].getAsInteger().getValueOr(0);
          // Uniform weights are unsigned codes with a zero point (an embedding
          // table), the other methods signed and symmetric.
          setRange(qg, *method != ir::QuantMethod::Uniform);
          qg.bits = bits;
          if (ir::isLut(*method) && luts && c < luts->size())
            if (const json::Array *table = (*luts)[c].getAsArray())
              for (const json::Value &v : *table)
                qg.lut.push_back(v.getAsInteger().getValueOr(0));
          qg.lo = qg.scale * double(qg.qmin - qg.zeroPoint);
          qg.hi = qg.scale * double(qg.qmax - qg.zeroPoint);
          qg.threshold = -qg.lo;
          q.grids.push_back(element != ir::ElementFormat::Int
                                ? floatGridOfScale(element, qg.scale, *method)
                                : qg);
        }
      } else { // no calibrated grid: choose it from the weight's values
        int64_t inner = 1;
        for (int64_t d = (perChannel ? *axis : -1) + 1; perChannel && d < t.rank(); ++d)
          inner *= t.dim(d);
        int64_t outer =
            t.numel() / std::max<int64_t>(1, channels * (perChannel ? inner : t.numel()));
        if (!perChannel)
          inner = t.numel();
        std::vector<float> v(size_t(outer * inner));
        for (int64_t c = 0; c < channels; ++c) {
          for (int64_t o = 0; o < outer; ++o)
            std::copy(t.data<float>() + (o * channels + c) * inner,
                      t.data<float>() + (o * channels + c + 1) * inner, v.begin() + o * inner);
          q.grids.push_back(ir::isLut(*method)
                                ? selectLutGrid(v.data(), int64_t(v.size()), *method, bits,
                                                int(w->getInteger("lut_bits").getValueOr(8)))
                                : selectWeightGrid(v.data(), int64_t(v.size()), *method, bits,
                                                   perChannel, SelectionOptions()));
        }
      }
      r.spec.weights.push_back(std::move(q));
    }
  if (const json::Array *bias = n.getArray("corrected_bias")) {
    std::vector<float> values;
    for (const json::Value &v : *bias)
      values.push_back(float(v.getAsNumber().getValueOr(0)));
    const graph::Node *node = nullptr;
    for (const auto &x : m.graph.nodes())
      if (x->displayName() == name)
        node = x.get();
    if (node)
      r.biases.emplace_back(node->name, std::move(values));
  }
  return true;
}

bool PlanReader::read(const json::Object &plan) {
  if (plan.getInteger("plan_version").getValueOr(0) != 1)
    return fail("not a plan (plan_version 1 expected)");
  const json::Array *nodes = plan.getArray("nodes");
  const json::Array *tensors = plan.getArray("tensors");
  if (!nodes || !tensors)
    return fail("the plan has no `nodes` or `tensors`");
  // The plan's nodes are those of the model its weight edits made (they may
  // drop Constant nodes nothing reads any more): replayed first.
  if (const json::Value *c = plan.get("corrections"); c && !c->getAsNull()) {
    if (!c->getAsArray())
      return fail("`corrections` is not an array");
    if (!corrections(*c->getAsArray()))
      return false;
  }
  if (!checkModel(*nodes))
    return false;
  for (const json::Value &t : *tensors)
    if (const json::Object *o = t.getAsObject(); !o || !tensor(*o))
      return o ? false : fail("a tensor entry is not an object");
  for (const json::Value &n : *nodes)
    if (!node(*n.getAsObject()))
      return false;
  // The grids the graph edits give: a tensor's wider one in its place, the
  // new tensors' after the plan's, in the order quantize added them.
  for (ActivationQDQ &a : recorded.grids) {
    auto same = std::find_if(r.spec.activations.begin(), r.spec.activations.end(),
                             [&](const ActivationQDQ &x) { return x.value == a.value; });
    if (same != r.spec.activations.end())
      same->grid = a.grid;
    else
      r.spec.activations.push_back(std::move(a));
  }
  r.edits = std::move(recorded.edits);
  r.kernels = std::move(recorded.kernels);
  if (r.edits.empty())
    completeSpec(m, r); // else applyCorrections completes it on the edited model
  return true;
}

/// The names of `o`, sorted (llvm's JSON objects are unordered).
std::vector<std::string> sortedKeys(const json::Object &o) {
  std::vector<std::string> names;
  for (const auto &kv : o)
    names.push_back(kv.first.str());
  std::sort(names.begin(), names.end());
  return names;
}
} // namespace

LogicalResult quant::specializationOfPlan(llvm::StringRef text, llvm::StringRef where,
                                          transforms::FixedInputs &fixed, graph::DimValues &dims,
                                          DiagnosticEngine &diags) {
  llvm::Expected<json::Value> v = json::parse(text);
  if (!v) {
    diags.emitAt(where.str(), diag::err_apply_plan, "not JSON: " + llvm::toString(v.takeError()));
    return failure();
  }
  const json::Object *o = v->getAsObject();
  if (const json::Object *inputs = o ? o->getObject("fixed_inputs") : nullptr)
    for (const std::string &name : sortedKeys(*inputs)) {
      llvm::Optional<double> value = inputs->getNumber(name);
      if (!value)
        return diags.emitAt(where.str(), diag::err_apply_plan,
                            fmt::format("fixed input `{}` is not a number", name));
      fixed.emplace_back(name, *value);
    }
  if (const json::Object *sizes = o ? o->getObject("dims") : nullptr)
    for (const std::string &name : sortedKeys(*sizes)) {
      llvm::Optional<int64_t> value = sizes->getInteger(name);
      if (!value || *value <= 0)
        return diags.emitAt(where.str(), diag::err_apply_plan,
                            fmt::format("dimension `{}` is not a positive integer", name));
      dims.emplace_back(name, *value);
    }
  return success();
}

LogicalResult quant::specFromPlan(llvm::StringRef text, llvm::StringRef where, graph::Model &m,
                                  QuantizeResult &result, DiagnosticEngine &diags) {
  llvm::Expected<json::Value> v = json::parse(text);
  if (!v) {
    diags.emitAt(where.str(), diag::err_apply_plan, "not JSON: " + llvm::toString(v.takeError()));
    return failure();
  }
  const json::Object *o = v->getAsObject();
  if (!o) {
    diags.emitAt(where.str(), diag::err_apply_plan, "not a plan (a JSON object expected)");
    return failure();
  }
  return success(PlanReader(where, m, result, diags).read(*o));
}

//===- ResourcesTest.cpp - Weights, activation and BOPs of plans -----------===//
//
// plan::buildResourceModel and resourceReport on small graphs built here,
// against figures computed by hand in the comments: kernel weights without
// biases, LUT tables per channel and per tensor, the activation peak over
// live sets (a fused group's inner tensor not counted, a branchy cut of three
// tensors), BOPs of a grouped Conv, a Gemm on a float input (32 bits) and a
// MatMul, product terms when the producer has 8/16-bit candidates; then
// ResourceModel::evaluate against an independent brute-force recomputation on
// every assignment of a graph with preserving ops, a composite, a fusing group
// and a node whose candidates differ in whether they preserve; and the
// platform's declared memory (checkPlatformMemory, the summary, the JSON).
//
//===----------------------------------------------------------------------===//
#include "plan/Resources.h"
#include "test/unit/PlanFixture.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <variant>

using namespace tpcc;
using tpcc::test::GraphBuilder;

namespace {

const char *kSpec = R"(
framework fw {
  weight kernel: Conv.input[1] axes(out: 0, in: 1),
                 Gemm.input[1] where transB == 1 axes(out: 0, in: 1),
                 Gemm.input[1] where transB == 0 axes(out: 1, in: 0),
                 MatMul.input[1] where const(input[1]) axes(out: -1, in: -2)
  weight bias: Conv.input[2], Gemm.input[2]
  composite SiLU(x) = Mul(x, Sigmoid(x))
}
platform chip {
  attr kern8 = { method: symmetric, bits: 8, per_channel: true }
  attr off = { method: power_of_two, bits: 32, quantize: false }
  config a8 = { activation: { bits: 8 } }
  config a16 = a8 with { activation.bits: 16 }
  config k8 = a8 with { weights.kernel: kern8, weights.bias: off }
  config k4 = k8 with { weights.kernel.bits: 4 }
  config k2 = k8 with { weights.kernel.bits: 2 }
  config k8a16 = k8 with { activation.bits: 16 }
  config lut4 = k8 with {
    weights.kernel: { method: lut_sym, bits: 4, lut_bits: 8, per_channel: true }
  }
  config lut2 = k8 with {
    weights.kernel: { method: lut_pot, bits: 2, lut_bits: 5, per_channel: false }
  }
  config pool = a8 with { preserving: true }
  config nq = a8 with { activation.quantize: false }
  default [a8]
  opset Conv : [k8, k4, k2, k8a16] base k8
  opset Fc : [k8, k4] base k8
  opset Lut : [k8, lut4, lut2] base k8
  opset Act : [a8, a16] base a8
  opset Relu
  opset Pool : [pool]
  opset Mixed : [pool, a16] base pool
  opset Float : [nq]
  fuse Conv -> Relu
}
capabilities caps = chip on fw {
  Conv  <- Conv
  Fc    <- Gemm, MatMul where const(input[1])
  Relu  <- Relu
  Act   <- Sigmoid, SiLU
  Pool  <- MaxPool
  Mixed <- AveragePool
  Float <- Flatten
}
capabilities lut = chip on fw {
  Lut <- Conv
}
)";

void ints(onnx::NodeProto *n, const std::string &name, std::vector<int64_t> v) {
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v)
    a->add_ints(x);
}

/// Model `bytes` with graph value `name` (an input or output) of shape `dims`
/// (a string: a symbolic dimension).
std::string reshaped(const std::string &bytes, const std::string &name,
                     std::vector<std::variant<int64_t, std::string>> dims) {
  onnx::ModelProto m;
  m.ParseFromString(bytes);
  auto set = [&](onnx::ValueInfoProto &v) {
    if (v.name() != name)
      return;
    auto *s = v.mutable_type()->mutable_tensor_type()->mutable_shape();
    s->clear_dim();
    for (const auto &d : dims)
      if (std::holds_alternative<int64_t>(d))
        s->add_dim()->set_dim_value(std::get<int64_t>(d));
      else
        s->add_dim()->set_dim_param(std::get<std::string>(d));
  };
  for (auto &v : *m.mutable_graph()->mutable_input())
    set(v);
  for (auto &v : *m.mutable_graph()->mutable_output())
    set(v);
  return m.SerializeAsString();
}

class ResourcesTest : public test::PlanFixture {
protected:
  void SetUp() override { compile(kSpec); }

  /// Plans `bytes` (kept alive with the fixture) on `platform` (chip).
  plan::Plan plan(const std::string &bytes, const char *caps = "caps",
                  const plan::Choices &choices = {}, const ir::Platform *platform = nullptr,
                  DiagnosticEngine *diags = nullptr) {
    models.push_back(graph::loadModelFromBuffer(bytes, "m.onnx", ".", c.diags));
    EXPECT_TRUE(models.back());
    return plan::buildPlan(module, platform ? *platform : *module.findPlatform("chip"),
                           *module.findCapabilities(caps), module.findFramework("fw"),
                           *models.back(), diags ? *diags : c.diags, choices);
  }
  unsigned id(const plan::Plan &p, const std::string &name) { return node(p, name).node->id; }
  const graph::Value *valueOf(const plan::Plan &p, const char *value) {
    return p.model->graph.findValue(value);
  }

  std::vector<std::unique_ptr<graph::Model>> models;
};

/// x[1,4,4,4] -> c1 Conv(W[4,4,1,1], B[4]) -> t1 -> r1 Relu -> t2 (c1 -> r1 fused: t1 float)
///   -> dw Conv(W[4,1,3,3], group 4) -> t3[1,4,2,2] -> fl Flatten (float) -> f[1,16]
///   -> g Gemm(W[10,16], transB, B[10]) -> y[1,10]
std::string kernels() {
  GraphBuilder b;
  b.input("x");
  b.constant("c1_W", {4, 4, 1, 1});
  b.constant("c1_B", {4});
  b.node("Conv", "c1", {"x", "c1_W", "c1_B"}, {"t1"});
  b.node("Relu", "r1", {"t1"}, {"t2"});
  b.constant("dw_W", {4, 1, 3, 3});
  GraphBuilder::intAttr(b.node("Conv", "dw", {"t2", "dw_W"}, {"t3"}), "group", 4);
  b.node("Flatten", "fl", {"t3"}, {"f"});
  b.constant("g_W", {10, 16});
  b.constant("g_B", {10});
  GraphBuilder::intAttr(b.node("Gemm", "g", {"f", "g_W", "g_B"}, {"y"}), "transB", 1);
  b.output("y");
  return reshaped(b.bytes(), "y", {int64_t(1), int64_t(10)});
}

} // namespace

// Weights (bits): c1 16 elements, dw 4*1*3*3 = 36, g 10*16 = 160; biases not counted.
//   chosen (k8 everywhere): (16 + 36 + 160) * 8 = 1696 = 212 B
//   all-min (Conv k2, Fc k4): 16*2 + 36*2 + 160*4 = 744 = 93 B
//   all-max (Conv k8a16, Fc k8): 1696
// BOPs: c1 64 outputs * 16/4 = 256 MACs, input x 8 bits; dw 16 outputs * 36/4 = 144 MACs,
//   input t2 8 bits; g 10 outputs * K 16 = 160 MACs, input f float: 32 bits.
//   chosen: 256*8*8 + 144*8*8 + 160*8*32 = 16384 + 9216 + 40960 = 66560
//   all-min: 256*2*8 + 144*2*8 + 160*4*32 = 4096 + 2304 + 20480 = 26880
// Activation (steps c1 0, r1 1, dw 2, fl 3, g 4): x 64*8 = 512 [0,0], t2 512 [1,2],
//   t3 16*8 = 128 [2,3], y 10*8 = 80 [4,4]; t1 (fused) and f (float) not counted.
//   Cuts: {x} 512, {t2} 512, {t2,t3} 640, {t3} 128, {y} 80: peak 640 = 80 B at dw.
//   all-max: dw at k8a16 makes t3 16-bit: {t2,t3} = 512 + 256 = 768 = 96 B.
TEST_F(ResourcesTest, KernelWeightsActivationPeakAndBops) {
  plan::Plan p = plan(kernels());
  ASSERT_FALSE(c.diags.hasErrors());
  plan::ResourceReport r = plan::resourceReport(p);
  EXPECT_EQ(r.chosen.weightsBits, 1696);
  EXPECT_EQ(r.chosen.weightsBytes(), 212);
  EXPECT_EQ(r.min.weightsBits, 744);
  EXPECT_EQ(r.max.weightsBits, 1696);
  EXPECT_EQ(r.base.weightsBits, 1696);
  EXPECT_EQ(r.chosen.bops, 66560);
  EXPECT_EQ(r.min.bops, 26880);
  EXPECT_EQ(r.max.bops, 66560);
  EXPECT_EQ(r.chosen.activationBits, 640);
  EXPECT_EQ(plan::stepNodeName(p, r.chosen.peakStep), "dw");
  EXPECT_EQ(r.max.activationBits, 768);
  EXPECT_EQ(r.min.activationBits, 640);
  EXPECT_EQ(r.chosen.totalBytes(), 212 + 80);
  EXPECT_EQ(r.unknownSizeTensors, 0u);
  EXPECT_EQ(r.unknownMacs, 0u);
  // The candidates: Conv's largest is k8a16 (8-bit kernel, 16-bit output), smallest k2.
  plan::Assignment max = plan::maxAssignment(p), min = plan::minAssignment(p);
  EXPECT_EQ(max[id(p, "c1")], 3u);
  EXPECT_EQ(min[id(p, "dw")], 2u);
  EXPECT_EQ(min[id(p, "g")], 1u);
  EXPECT_EQ(plan::chosenAssignment(p), plan::baseAssignment(p));
}

// A symbolic batch counts 1: the same figures.
TEST_F(ResourcesTest, SymbolicBatchCountsOne) {
  GraphBuilder b;
  b.input("x");
  b.conv("c", "x", "y");
  b.output("y");
  std::string bytes = b.bytes();
  for (const char *v : {"x", "y"})
    bytes = reshaped(bytes, v, {std::string("N"), int64_t(4), int64_t(4), int64_t(4)});
  plan::Plan p = plan(bytes);
  EXPECT_EQ(valueOf(p, "y")->type.str(), "float[N,4,4,4]");
  plan::ResourceReport r = plan::resourceReport(p);
  // x and y 64 elements at 8 bits, both live at step 0; 256 MACs * 8 * 8.
  EXPECT_EQ(r.chosen.activationBits, 1024);
  EXPECT_EQ(r.chosen.bops, 256 * 64);
  EXPECT_EQ(r.chosen.weightsBits, 16 * 8);
}

// x -> s1 Sigmoid -> u; x -> s2 Sigmoid -> v; add Add(u, v) -> w (all 64 elements).
// Intervals (steps s1 0, s2 1, add 2): x [0,1], u [0,2], v [1,2], w [2,2].
// Sets: {x,u} (a subset of the next: nothing dies at 0), {x,u,v}, {u,v,w}: two cuts.
// Chosen (8 bits): 3 * 512 = 1536 at step 1 (the first of two equal cuts).
// s1 at a16: {x,u,v} = 512 + 1024 + 512 = 2048, {u,v,w} = 2048; both at a16: 2560 each.
TEST_F(ResourcesTest, BranchyPeakCutHoldsThreeTensors) {
  GraphBuilder b;
  b.input("x");
  b.node("Sigmoid", "s1", {"x"}, {"u"});
  b.node("Sigmoid", "s2", {"x"}, {"v"});
  b.node("Add", "add", {"u", "v"}, {"w"});
  b.output("w");
  plan::Plan p = plan(b.bytes());
  plan::ResourceModel m = plan::buildResourceModel(p);
  unsigned s1 = id(p, "s1"), s2 = id(p, "s2");
  EXPECT_EQ(m.variables, (std::vector<unsigned>{s1, s2}));
  ASSERT_EQ(m.cuts.size(), 2u);
  EXPECT_EQ(m.cutSteps, (std::vector<int>{1, 2}));
  // {x,u,v}: 1536 at 8 bits, + 512 for each Sigmoid at 16.
  EXPECT_EQ(m.cuts[0].constant, 1536);
  ASSERT_EQ(m.cuts[0].linear.size(), 2u);
  EXPECT_EQ(m.cuts[0].linear[0].first.node, s1);
  EXPECT_EQ(m.cuts[0].linear[0].first.candidate, 1u);
  EXPECT_EQ(m.cuts[0].linear[0].second, 512);
  EXPECT_TRUE(m.cuts[0].products.empty());
  plan::Assignment a = plan::chosenAssignment(p);
  plan::ResourceFigures f = m.evaluate(a);
  EXPECT_EQ(f.activationBits, 1536);
  EXPECT_EQ(f.peakStep, 1);
  a[s1] = 1;
  EXPECT_EQ(m.evaluate(a).activationBits, 2048);
  a[s2] = 1;
  EXPECT_EQ(m.evaluate(a).activationBits, 2560);
  EXPECT_EQ(plan::resourceReport(p).max.activationBits, 2560);
  EXPECT_EQ(m.weights.constant, 0);
  EXPECT_TRUE(m.weights.linear.empty());
}

// x -> c Conv(W[4,4,1,1]) -> y on the `lut` capabilities (Conv is opset Lut):
//   k8: 16 * 8 = 128 bits
//   lut4, per channel (4 output channels): 16 * 4 + 4 * 2^4 * 8 = 64 + 512 = 576
//   lut2, per tensor, 5-bit table values: 16 * 2 + 1 * 2^2 * 5 = 32 + 20 = 52 (6.5 B)
TEST_F(ResourcesTest, LutTablesPerChannelAndPerTensor) {
  GraphBuilder b;
  b.input("x");
  b.conv("c", "x", "y");
  b.output("y");
  plan::Plan p = plan(b.bytes(), "lut");
  plan::ResourceModel m = plan::buildResourceModel(p);
  plan::Assignment a = plan::chosenAssignment(p);
  unsigned conv = id(p, "c");
  const double expected[] = {128, 576, 52};
  for (unsigned k = 0; k < 3; ++k) {
    a[conv] = k;
    EXPECT_EQ(m.evaluate(a).weightsBits, expected[k]) << "candidate " << k;
  }
  // BOPs count the index bits: 256 MACs * 4 * 8 with lut4.
  a[conv] = 1;
  EXPECT_EQ(m.evaluate(a).bops, 256 * 4 * 8);
  // The plan's own choice agrees.
  plan::Plan chosen = plan(b.bytes(), "lut", {{"c", "Lut.1"}});
  EXPECT_EQ(plan::resourceReport(chosen).chosen.weightsBits, 576);
  EXPECT_EQ(plan::resourceReport(chosen).min.weightsBits, 52);
  // Fractional bytes are written exactly.
  plan::Plan smallest = plan(b.bytes(), "lut", {{"c", "Lut.2"}});
  std::string json;
  llvm::raw_string_ostream os(json);
  plan::emitPlanJSON(smallest, {}, c.sources, os);
  EXPECT_NE(json.find(R"("weights_bytes": 6.5)"), std::string::npos) << json;
}

// x -> sig Sigmoid (a8 | a16) -> s -> c Conv (k8, k4, k2, k8a16) -> y:
// BOPs of c = 256 MACs * kernel bits (8, 4, 2, 8) * s's bits (8, 16): a product of the
// two choices; with sig fixed, linear in c's.
TEST_F(ResourcesTest, BopsProductOfKernelAndProducerChoices) {
  GraphBuilder b;
  b.input("x");
  b.node("Sigmoid", "sig", {"x"}, {"s"});
  b.conv("c", "s", "y");
  b.output("y");
  plan::Plan p = plan(b.bytes());
  unsigned sig = id(p, "sig"), c = id(p, "c");
  plan::ResourceModel m = plan::buildResourceModel(p);
  EXPECT_FALSE(m.bops.products.empty());
  for (const auto &t : m.bops.products) {
    EXPECT_EQ(t.a.node, c);
    EXPECT_EQ(t.b.node, sig);
  }
  const int kernelBits[] = {8, 4, 2, 8}, inputBits[] = {8, 16};
  plan::Assignment a = plan::chosenAssignment(p);
  for (unsigned i = 0; i < 4; ++i)
    for (unsigned j = 0; j < 2; ++j) {
      a[c] = i;
      a[sig] = j;
      EXPECT_EQ(m.evaluate(a).bops, 256.0 * kernelBits[i] * inputBits[j]) << i << "," << j;
    }
  std::vector<bool> fixed(p.nodes.size(), false);
  fixed[sig] = true;
  plan::ResourceModel f = plan::buildResourceModel(p, fixed);
  EXPECT_EQ(f.variables, (std::vector<unsigned>{c}));
  EXPECT_TRUE(f.bops.products.empty());
  // Constant: the smallest (k2, 256 * 2 * 8); k8 and k8a16 add 256 * 6 * 8, k4 256 * 2 * 8.
  EXPECT_EQ(f.bops.constant, 4096);
  ASSERT_EQ(f.bops.linear.size(), 3u);
  for (const auto &[choice, coef] : f.bops.linear) {
    EXPECT_EQ(choice.node, c);
    EXPECT_EQ(coef, choice.candidate == 1 ? 4096 : 12288);
  }
}

namespace {

/// x -> sig1 Sigmoid -> s1 -> mp MaxPool (preserving) -> p1 -> c1 Conv -> t1 -> r1 Relu -> t2
/// t2 -> SiLU (sg Sigmoid, silu Mul; Act) -> u
/// s1 -> ap AveragePool (Mixed: preserving or 16-bit) -> p2
/// add Add(u, p2) -> v -> c2 Conv -> y;  v -> mm MatMul(W[4,4]) -> z
std::string mixedGraph() {
  GraphBuilder b;
  b.input("x");
  b.node("Sigmoid", "sig1", {"x"}, {"s1"});
  ints(b.node("MaxPool", "mp", {"s1"}, {"p1"}), "kernel_shape", {1, 1});
  b.conv("c1", "p1", "t1");
  b.node("Relu", "r1", {"t1"}, {"t2"});
  b.node("Sigmoid", "sg", {"t2"}, {"g1"});
  b.node("Mul", "silu", {"t2", "g1"}, {"u"});
  ints(b.node("AveragePool", "ap", {"s1"}, {"p2"}), "kernel_shape", {1, 1});
  b.node("Add", "add", {"u", "p2"}, {"v"});
  b.conv("c2", "v", "y");
  b.constant("mm_W", {4, 4});
  b.node("MatMul", "mm", {"v", "mm_W"}, {"z"});
  b.output("y");
  b.output("z");
  return b.bytes();
}

double elements(const graph::Value *v) {
  double n = 1;
  for (const graph::Dim &d : *v->type.shape)
    n *= d.known() ? double(d.value) : 1;
  return n;
}

/// The figures of a plan's own choices, computed directly from its tensors
/// and weights: every step's live set summed, kernels' MACs from the shapes.
plan::ResourceFigures brute(const plan::Plan &p) {
  plan::ResourceFigures f;
  for (const plan::PlanNode &n : p.nodes)
    for (const plan::PlanWeight &w : n.weights)
      if (w.quantize && w.slot != "bias") {
        const graph::Tensor &t = *w.input->constant;
        f.weightsBits += double(t.numElements()) * w.config.bits;
        if (ir::isLut(w.config.method))
          f.weightsBits += (w.axis ? double(t.dims[size_t(*w.axis)]) : 1) *
                           std::pow(2, w.config.bits) * w.config.lutBits.value_or(8);
      }
  const auto &order = p.model->graph.topologicalOrder();
  int last = int(order.size()) - 1;
  for (int s = 0; s <= last; ++s) {
    double sum = 0;
    for (const plan::PlanTensor &t : p.tensors) {
      if (!t.quantize)
        continue;
      int begin = 0, end = -1;
      for (int k = 0; k <= last; ++k) {
        if (t.producer && order[size_t(k)] == t.producer->node)
          begin = k;
        for (const graph::Value *in : order[size_t(k)]->inputs)
          if (in == t.value)
            end = k;
      }
      end = t.value->isGraphOutput ? last : std::max(begin, end);
      if (begin <= s && s <= end)
        sum += elements(t.value) * t.bits;
    }
    if (sum > f.activationBits) {
      f.activationBits = sum;
      f.peakStep = s;
    }
  }
  for (const plan::PlanNode &n : p.nodes) {
    const graph::Node &g = *n.node;
    for (const plan::PlanWeight &w : n.weights) {
      if (w.slot != "kernel" || !w.quantize)
        continue;
      const graph::Tensor &t = *w.input->constant;
      double macs = g.opType == "Conv"
                        ? elements(g.outputs[0]) * double(t.numElements()) / double(t.dims[0])
                        : elements(g.outputs[0]) * double(t.dims[t.dims.size() - 2]);
      const plan::PlanTensor *in = p.tensorOf(g.inputs[0]);
      f.bops += macs * w.config.bits * (in && in->quantize ? in->bits : 32);
    }
  }
  return f;
}

} // namespace

// Every one of the 2 * 4 * 2 * 2 * 4 * 2 = 256 assignments of the variable nodes: the
// model of the base plan evaluated there equals the brute figures of the plan made with
// those choices (--choose), and that plan's own report.
TEST_F(ResourcesTest, EvaluateEqualsBruteRecomputationOnEveryAssignment) {
  std::string bytes = mixedGraph();
  plan::Plan base = plan(bytes);
  ASSERT_FALSE(c.diags.hasErrors());
  ASSERT_EQ(base.chains.size(), 1u);
  EXPECT_EQ(base.groups.size(), 1u);
  plan::ResourceModel m = plan::buildResourceModel(base);
  std::vector<std::string> names = {"sig1", "c1", "silu", "ap", "c2", "mm"};
  std::vector<unsigned> vars;
  for (const std::string &n : names)
    vars.push_back(id(base, n));
  std::sort(vars.begin(), vars.end());
  ASSERT_EQ(m.variables, vars);
  // The preserving output p2 of ap depends on ap's and sig1's choices; c1's BOPs on c1's
  // and sig1's (through the preserving mp).
  bool apSig = false;
  for (const plan::ResourceExpr &cut : m.cuts)
    for (const auto &t : cut.products)
      apSig |= (t.a.node == id(base, "sig1") && t.b.node == id(base, "ap")) ||
               (t.a.node == id(base, "ap") && t.b.node == id(base, "sig1"));
  EXPECT_TRUE(apSig);
  unsigned checked = 0;
  std::vector<unsigned> k(names.size(), 0);
  while (true) {
    plan::Choices choices;
    plan::Assignment a = plan::chosenAssignment(base);
    for (size_t i = 0; i < names.size(); ++i) {
      const plan::PlanNode &n = node(base, names[i]);
      choices.emplace_back(names[i], n.options.configId(k[i]));
      a[n.node->id] = k[i];
    }
    for (size_t i = 0; i < base.nodes.size(); ++i)
      if (base.nodes[i].innerOfChain)
        a[i] = a[base.chains[size_t(base.nodes[i].chain)].root->id];
    DiagnosticEngine quiet(c.sources);
    plan::Plan chosen = plan(bytes, "caps", choices, nullptr, &quiet);
    ASSERT_FALSE(quiet.hasErrors());
    plan::ResourceFigures want = brute(chosen), got = m.evaluate(a);
    std::string at;
    for (unsigned x : k)
      at += std::to_string(x);
    EXPECT_EQ(got.weightsBits, want.weightsBits) << at;
    EXPECT_EQ(got.activationBits, want.activationBits) << at;
    EXPECT_EQ(got.bops, want.bops) << at;
    plan::ResourceFigures own = plan::resourceReport(chosen).chosen;
    EXPECT_EQ(own.activationBits, want.activationBits) << at;
    EXPECT_EQ(own.bops, want.bops) << at;
    ++checked;
    size_t i = 0;
    for (; i < names.size(); ++i) {
      if (++k[i] < node(base, names[i]).options.options->configs.size())
        break;
      k[i] = 0;
    }
    if (i == names.size())
      break;
    models.pop_back(); // keep memory flat
  }
  EXPECT_EQ(checked, 256u);
}

// A platform with memory: the kernels graph needs 212 B of weights at the chosen configs
// and 93 B at the smallest.
TEST_F(ResourcesTest, PlatformMemoryFitsWarnsOrFails) {
  ir::Platform chip = *module.findPlatform("chip");
  auto declare = [&](double bytes, const char *text) {
    chip.resources.emplace();
    chip.resources->weightsMemory = ir::Budget{false, bytes, text, {}};
  };
  std::string bytes = kernels();

  declare(1024, "1 KiB");
  {
    DiagnosticEngine d(c.sources);
    plan::Plan p = plan(bytes, "caps", {}, &chip, &d);
    EXPECT_TRUE(succeeded(plan::checkPlatformMemory(p, d)));
    EXPECT_EQ(d.getNumWarnings(), 0u);
    std::string s;
    llvm::raw_string_ostream os(s);
    plan::printSummary(p, os);
    EXPECT_NE(s.find("    weights memory of chip (1 KiB): fits: 212 B (20.7 %)\n"),
              std::string::npos)
        << s;
    std::string json;
    llvm::raw_string_ostream js(json);
    plan::emitPlanJSON(p, {}, c.sources, js);
    EXPECT_NE(json.find(R"("platform": {
      "weights_memory": 1024
    })"),
              std::string::npos)
        << json;
  }
  declare(200, "200 B");
  {
    DiagnosticEngine d(c.sources);
    plan::Plan p = plan(bytes, "caps", {}, &chip, &d);
    EXPECT_TRUE(succeeded(plan::checkPlatformMemory(p, d)));
    ASSERT_EQ(d.getDiagnostics().size(), 1u);
    EXPECT_EQ(d.getDiagnostics()[0].kind, diag::warn_plan_does_not_fit_chosen);
    EXPECT_EQ(d.getDiagnostics()[0].where, "m.onnx");
    EXPECT_EQ(d.getDiagnostics()[0].message,
              "at the chosen configs the model needs 212 B, more than `chip`'s weights memory "
              "(200 B); its smallest configuration needs 93 B: mixed precision "
              "(`--weights-memory` or a recipe's `mixed_precision`) can make it fit");
    std::string s;
    llvm::raw_string_ostream os(s);
    plan::printSummary(p, os);
    EXPECT_NE(s.find("    weights memory of chip (200 B): does not fit at the chosen configs "
                     "(212 B > 200 B); all-min needs 93 B (46.5 %): mixed precision can make "
                     "it fit\n"),
              std::string::npos)
        << s;
  }
  declare(90, "90 B");
  {
    DiagnosticEngine d(c.sources);
    plan::Plan p = plan(bytes, "caps", {}, &chip, &d);
    EXPECT_TRUE(failed(plan::checkPlatformMemory(p, d)));
    ASSERT_EQ(d.getDiagnostics().size(), 1u);
    EXPECT_EQ(d.getDiagnostics()[0].message,
              "the model does not fit `chip`'s weights memory (90 B): its smallest "
              "configuration needs 93 B");
  }
  // Without declared memory, nothing to check.
  {
    DiagnosticEngine d(c.sources);
    plan::Plan p = plan(bytes, "caps", {}, nullptr, &d);
    EXPECT_TRUE(succeeded(plan::checkPlatformMemory(p, d)));
    EXPECT_TRUE(d.getDiagnostics().empty());
  }
}

//===- BlockFormatTest.cpp - Blocked grids, 4-bit storage, opset 21 -------===//
//
// Block layouts against a direct computation of ONNX's blocked scale index,
// the block-wise grid selection, the scale formats and OCP MX's shared
// scale, the 4-bit pack/unpack and file round trip, and raising a model to
// opset 21 against the same model run at its own opset.
//
//===----------------------------------------------------------------------===//
#include "GraphBuilder.h"
#include "ir/graph/OnnxIO.h"
#include "quant/core/format/NumberFormat.h"
#include "quant/ptq/Quantizer.h"
#include "runtime/Executor.h"
#include "support/HalfFloat.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>

using namespace tpcc;
using namespace tpcc::quant;

namespace {

/// ONNX's blocked DequantizeLinear: element (o, j, r) of x seen as
/// [outer, len, inner] reads scale (o, j / block, r).
size_t onnxScaleIndex(const std::vector<int64_t> &dims, int64_t axis, int64_t block, int64_t i) {
  int64_t inner = 1, len = dims[size_t(axis)];
  for (size_t d = size_t(axis) + 1; d < dims.size(); ++d)
    inner *= dims[d];
  int64_t blocks = (len + block - 1) / block;
  int64_t r = i % inner, j = i / inner % len, o = i / inner / len;
  return size_t((o * blocks + j / block) * inner + r);
}

TEST(BlockFormat, LayoutIsOnnxBlockedScaleOrder) {
  for (auto [dims, axis, block] : std::vector<std::tuple<std::vector<int64_t>, int64_t, int64_t>>{
           {{5, 3}, 0, 2}, {{4, 7}, 1, 3}, {{3, 8, 2, 2}, 1, 4}, {{6}, 0, 4}, {{2, 5, 3}, 2, 2}}) {
    NumberFormat f;
    f.block = block;
    f.blockAxis = axis;
    GroupLayout l = f.layout(dims);
    int64_t n = 1, scales = 1;
    for (int64_t d : dims)
      n *= d;
    for (int64_t d : f.blockShape(dims))
      scales *= d;
    EXPECT_EQ(int64_t(l.grids), scales);
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(l.groupOf(i), onnxScaleIndex(dims, axis, block, i)) << "element " << i;
    // runs() visits every element once, in order, with its group.
    int64_t next = 0;
    l.runs(0, n, [&](int64_t b, int64_t e, size_t k) {
      EXPECT_EQ(b, next);
      for (int64_t i = b; i < e; ++i)
        EXPECT_EQ(k, l.groupOf(i));
      next = e;
    });
    EXPECT_EQ(next, n);
  }
}

TEST(BlockFormat, EachBlockGetsItsOwnGrid) {
  // A [K=8, N=2] MatMul weight in blocks of 4 along K: the block of large
  // values must not widen the small blocks' grids.
  rt::Tensor w(graph::ElemType::Float, {8, 2});
  for (int64_t k = 0; k < 8; ++k)
    for (int64_t c = 0; c < 2; ++c)
      w.data<float>()[k * 2 + c] = (k < 4 && c == 0 ? 10.f : 0.1f) * float(k % 3 + 1);
  ir::AttrConfig cfg;
  cfg.method = ir::QuantMethod::Symmetric;
  cfg.bits = 4;
  cfg.quantize = true;
  cfg.format.block = 4;
  ir::Recipe recipe;
  recipe.weightsThreshold = ir::ThresholdMethod::NoClipping;
  WeightQDQ q = selectWeightGrids(w, cfg, std::nullopt, recipe, nullptr, 0);
  ASSERT_TRUE(q.blocked());
  ASSERT_EQ(q.grids.size(), 4u); // [2 blocks, 2 columns]
  EXPECT_GT(q.grids[0].scale, 50 * q.grids[1].scale);
  EXPECT_NEAR(q.grids[1].scale, q.grids[3].scale, 1e-12);
  std::vector<float> fq = q.fakeQuantized(w);
  for (int64_t i = 0; i < 16; ++i) // no clipping: within half a step of each value
    EXPECT_NEAR(fq[size_t(i)], w.data<float>()[i],
                q.grids[q.layout({8, 2}).groupOf(i)].scale / 2 + 1e-7);
  // Without a block axis the format is per tensor.
  EXPECT_FALSE(selectWeightGrids(w, cfg, std::nullopt, recipe).blocked());
}

TEST(BlockFormat, ScaleFormats) {
  QuantGrid g = symmetricGrid(1.3, 4, true); // scale 0.1625
  QuantGrid h = withScaleFormat(g, ir::ScaleFormat::Float16);
  EXPECT_EQ(double(halfToFloat(floatToHalf(float(h.scale)))), h.scale);
  EXPECT_NEAR(h.scale, g.scale, g.scale / 1024);
  EXPECT_NEAR(h.threshold, h.scale * 8, 1e-12);
  QuantGrid p = withScaleFormat(g, ir::ScaleFormat::E8M0);
  EXPECT_EQ(p.scale, 0.25); // up to a power of two
  EXPECT_EQ(withScaleFormat(g, ir::ScaleFormat::Float32).scale, g.scale);
  // MX: scale 2^(floor(log2 amax) - (bits - 2)); amax below 127/64 * 2^e
  // does not clip (above it, the element saturates as the MX spec says).
  for (double amax : {0.3, 1.0, 3.0, 4.0, 7.9, 1e-3}) {
    QuantGrid mx = mxGrid(amax, 8);
    double e = std::floor(std::log2(amax));
    EXPECT_EQ(mx.scale, std::ldexp(1.0, int(e) - 6)) << amax;
    EXPECT_EQ(mx.qmin, -128);
    EXPECT_EQ(mx.qmax, 127);
    EXPECT_NEAR(mx.quantize(amax), amax, mx.scale / 2) << amax;
  }
}

TEST(BlockFormat, FourBitPackingRoundTrips) {
  std::string bytes = {char(-8), 7, char(-1), 0, 3};
  std::string packed = graph::packFourBit(bytes, 5);
  ASSERT_EQ(packed.size(), 3u);
  EXPECT_EQ(uint8_t(packed[0]), 0x78); // first element in the low nibble
  EXPECT_EQ(graph::unpackFourBit(packed, 5, graph::ElemType::Int4), bytes);
  EXPECT_EQ(uint8_t(graph::unpackFourBit(packed, 5, graph::ElemType::UInt4)[0]), 8);
}

/// y = DequantizeLinear(wq int4 [4, 2], scale [2, 2], block 2 on axis 0) and
/// ReduceMean(x, axes [1]) at opset 17 raised to 21.
TEST(BlockFormat, Int4FileAndRaisedOpsetRun) {
  onnx::ModelProto m = test::emptyModel(17);
  onnx::GraphProto &g = *m.mutable_graph();
  test::typedValue(g.add_input(), "x", {2, 3});
  test::GraphBuilder::intsAttr(test::addNode(g, "ReduceMean", {"x"}, "y"), "axes", {1});
  test::typedValue(g.add_output(), "y", {2, 1});
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto model = graph::loadModelFromBuffer(m.SerializeAsString(), "m.onnx", ".", diags);
  for (const Diagnostic &d : diags.getDiagnostics())
    ADD_FAILURE() << d.where << ": " << d.message;
  ASSERT_TRUE(model);
  std::string why;
  ASSERT_TRUE(graph::canRaiseOpset(*model, 21, why)) << why;
  ASSERT_TRUE(graph::raiseOpset(*model, 21, why)) << why;
  EXPECT_EQ(model->opsetVersion(""), 21);
  EXPECT_EQ(model->irVersion, 10);
  const graph::Node &n = *model->graph.nodes()[0];
  ASSERT_EQ(n.inputs.size(), 2u); // axes moved to an input
  EXPECT_TRUE(n.attributes.empty());

  // A blocked int4 weight in the raised model, through a file and back.
  auto q = std::make_unique<graph::Tensor>();
  q->name = "wq";
  q->elem = graph::ElemType::Int4;
  q->dims = {4, 2};
  q->raw = {char(-8), 7, 1, char(-1), 2, 3, char(-4), 5};
  auto s = std::make_unique<graph::Tensor>();
  s->name = "ws";
  s->elem = graph::ElemType::Float;
  s->dims = {2, 2};
  std::vector<float> sv = {0.5f, 1.f, 2.f, 4.f};
  s->raw.assign(reinterpret_cast<const char *>(sv.data()), sv.size() * sizeof(float));
  graph::Graph &gr = model->graph;
  graph::Value *qv = gr.addConstant(std::move(q)), *sv2 = gr.addConstant(std::move(s));
  auto dq = std::make_unique<graph::Node>();
  dq->name = "dq";
  dq->opType = "DequantizeLinear";
  dq->inputs = {qv, sv2};
  graph::Value *w = gr.getOrCreateValue("w");
  dq->outputs = {w};
  for (auto [name, v] : {std::pair<const char *, int64_t>{"axis", 0}, {"block_size", 2}}) {
    graph::Attribute a;
    a.name = name;
    a.type = ir::OnnxAttrType::Int;
    a.i = v;
    dq->attributes.push_back(a);
  }
  gr.addNode(std::move(dq));
  gr.addOutput(w);
  gr.relink();
  ASSERT_TRUE(succeeded(graph::verifyGraph(gr, "m.onnx", diags)));
  std::string bytes, error;
  ASSERT_TRUE(graph::serializeModel(*model, bytes, error)) << error;
  auto back = graph::loadModelFromBuffer(bytes, "m2.onnx", ".", diags);
  ASSERT_TRUE(back);
  const graph::Value *wq = back->graph.findValue("wq");
  ASSERT_TRUE(wq && wq->constant);
  EXPECT_EQ(wq->constant->elem, graph::ElemType::Int4);
  EXPECT_EQ(wq->constant->at(0), -8);
  EXPECT_EQ(wq->constant->at(3), -1);

  auto ex = rt::Executor::create(*back, diags);
  ASSERT_TRUE(ex);
  rt::Tensor xin(graph::ElemType::Float, {2, 3});
  for (int i = 0; i < 6; ++i)
    xin.data<float>()[i] = float(i);
  std::vector<rt::Tensor> out;
  ASSERT_TRUE(succeeded(ex->run({{"x", xin}}, out, diags)));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data<float>()[0], 1.f);
  EXPECT_EQ(out[0].data<float>()[1], 4.f);
  // Rows 0-1 read scale row 0, rows 2-3 scale row 1.
  std::vector<float> want = {-8 * 0.5f, 7 * 1.f, 1 * 0.5f, -1 * 1.f,
                             2 * 2.f,   3 * 4.f, -4 * 2.f, 5 * 4.f};
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(out[1].data<float>()[i], want[size_t(i)]) << i;
}

TEST(BlockFormat, BlockedQuantizeLinearUsesEachBlocksScale) {
  // y = QuantizeLinear(x [4, 2], scale [2, 2], zero point int8 [2, 2], axis 0,
  // block_size 2) at opset 21: rows 0-1 read scale row 0, rows 2-3 row 1.
  onnx::ModelProto m = test::emptyModel(21);
  m.set_ir_version(10);
  onnx::GraphProto &g = *m.mutable_graph();
  test::typedValue(g.add_input(), "x", {4, 2});
  const float scales[] = {0.5f, 1.f, 2.f, 4.f};
  test::floatInitializer(g, "s", {2, 2}, [&](int64_t i) { return scales[i]; });
  auto *z = g.add_initializer();
  z->set_name("z");
  z->set_data_type(onnx::TensorProto::INT8);
  for (int d : {2, 2})
    z->add_dims(d);
  for (int v : {0, 1, -1, 2})
    z->add_int32_data(v);
  onnx::NodeProto *q = test::addNode(g, "QuantizeLinear", {"x", "s", "z"}, "y");
  test::GraphBuilder::intAttr(q, "axis", 0);
  test::GraphBuilder::intAttr(q, "block_size", 2);
  test::typedValue(g.add_output(), "y", {4, 2}, onnx::TensorProto::INT8);
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto model = graph::loadModelFromBuffer(m.SerializeAsString(), "q.onnx", ".", diags);
  ASSERT_TRUE(model);
  auto ex = rt::Executor::create(*model, diags);
  ASSERT_TRUE(ex);
  rt::Tensor xin(graph::ElemType::Float, {4, 2});
  std::vector<float> xs = {1.f, 1.f, -1.f, 3.f, 3.f, 3.f, 5.f, -9.f};
  std::copy(xs.begin(), xs.end(), xin.data<float>());
  std::vector<rt::Tensor> out;
  ASSERT_TRUE(succeeded(ex->run({{"x", xin}}, out, diags)));
  ASSERT_EQ(out.size(), 1u);
  // x / s rounded half to even, plus the block's zero point.
  std::vector<int> want = {2, 2, -2, 4, 1, 3, 1, 0};
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(int(out[0].data<int8_t>()[i]), want[size_t(i)]) << i;
}

TEST(BlockFormat, RaiseRefusesWhatChangedMeaning) {
  onnx::ModelProto m = test::emptyModel(12);
  onnx::GraphProto &g = *m.mutable_graph();
  test::typedValue(g.add_input(), "x", {2});
  test::addNode(g, "Relu", {"x"}, "y");
  test::typedValue(g.add_output(), "y", {2});
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto model = graph::loadModelFromBuffer(m.SerializeAsString(), "m.onnx", ".", diags);
  for (const Diagnostic &d : diags.getDiagnostics())
    ADD_FAILURE() << d.where << ": " << d.message;
  ASSERT_TRUE(model);
  std::string why;
  EXPECT_FALSE(graph::canRaiseOpset(*model, 21, why));
  EXPECT_NE(why.find("opset 12"), std::string::npos) << why;
  EXPECT_FALSE(graph::raiseOpset(*model, 21, why));
  EXPECT_EQ(model->opsetVersion(""), 12);
}

} // namespace

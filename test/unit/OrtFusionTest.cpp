//===- OrtFusionTest.cpp - Which QDQ groups ONNX Runtime fuses, and its QLinearSoftmax -===//
//
// The expectations were observed with ONNX Runtime 1.30 (onnxruntime-node) on
// x86-64: a DequantizeLinear -> Conv -> QuantizeLinear group is a QLinearConv in
// its optimized graph only where both ends are uint8 there (test/ort's
// ort_optimized.js prints the ops).

#include "GraphBuilder.h"
#include "RunUtil.h"
#include "ir/graph/OnnxIO.h"
#include "runtime/Simd.h"
#include "runtime/ort/CodeMatMul.h"
#include "runtime/ort/IntegerPairs.h"
#include "runtime/ort/OrtMode.h"
#include "runtime/ort/OrtSoftmax.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace tpcc;
using graph::ElemType;
using tpcc::test::addNode;

namespace {

struct Case {
  bool signedIn, quantizeBefore; ///< int8 codes; made by a QuantizeLinear in the graph
  bool signedOut, dequantizeAfter;
  bool sharedDq = false; ///< the input's DequantizeLinear also feeds a Shape
  /// After the output's pair: a Slice that slices nothing, then a pair of the
  /// same grid whose DequantizeLinear the graph's output and a Relu read.
  bool sliceThenTwoReaders = false;
};

void scalar(onnx::GraphProto &g, const std::string &name, int type, double v) {
  auto *t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  if (type == onnx::TensorProto::FLOAT)
    t->add_float_data(float(v));
  else
    t->add_int32_data(int32_t(v));
}

void io(onnx::ValueInfoProto *v, const std::string &name, int type, std::vector<int64_t> dims) {
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(type);
  for (int64_t d : dims)
    v->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
}

/// x -> [Q] -> DQ -> Conv(W int8 per channel) -> Q -> [DQ]; whether ortFuses.
bool fuses(const Case &c) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto &g = *m.mutable_graph();
  g.set_name("g");
  int in8 = c.signedIn ? onnx::TensorProto::INT8 : onnx::TensorProto::UINT8;
  int out8 = c.signedOut ? onnx::TensorProto::INT8 : onnx::TensorProto::UINT8;
  scalar(g, "xs", onnx::TensorProto::FLOAT, 0.05);
  scalar(g, "xz", in8, 0);
  scalar(g, "ys", onnx::TensorProto::FLOAT, 0.1);
  scalar(g, "yz", out8, 0);
  auto *w = g.add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::INT8);
  for (int64_t d : {4, 3, 1, 1})
    w->add_dims(d);
  for (int k = 0; k < 12; ++k)
    w->add_int32_data(k % 5 - 2);
  auto *ws = g.add_initializer();
  ws->set_name("ws");
  ws->set_data_type(onnx::TensorProto::FLOAT);
  ws->add_dims(4);
  for (int k = 0; k < 4; ++k)
    ws->add_float_data(0.1f);
  if (c.quantizeBefore) {
    io(g.add_input(), "xin", onnx::TensorProto::FLOAT, {1, 3, 4, 4});
    addNode(g, "QuantizeLinear", {"xin", "xs", "xz"}, "x");
  } else {
    io(g.add_input(), "x", in8, {1, 3, 4, 4});
  }
  addNode(g, "DequantizeLinear", {"x", "xs", "xz"}, "xf");
  onnx::AttributeProto *axis = addNode(g, "DequantizeLinear", {"w", "ws"}, "wf")->add_attribute();
  axis->set_name("axis"); // per output channel
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  addNode(g, "Conv", {"xf", "wf"}, "yf");
  addNode(g, "QuantizeLinear", {"yf", "ys", "yz"}, "yq");
  if (c.sliceThenTwoReaders) {
    auto *ends = g.add_initializer();
    ends->set_name("ends");
    ends->set_data_type(onnx::TensorProto::INT64);
    ends->add_dims(1);
    ends->add_int64_data(std::numeric_limits<int64_t>::max());
    for (const char *name : {"starts", "axes"}) {
      auto *t = g.add_initializer();
      t->set_name(name);
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_dims(1);
      t->add_int64_data(name == std::string("axes") ? 1 : 0);
    }
    addNode(g, "DequantizeLinear", {"yq", "ys", "yz"}, "y0");
    addNode(g, "Slice", {"y0", "starts", "ends", "axes"}, "y1");
    addNode(g, "QuantizeLinear", {"y1", "ys", "yz"}, "y1q");
    addNode(g, "DequantizeLinear", {"y1q", "ys", "yz"}, "y");
    io(g.add_output(), "y", onnx::TensorProto::FLOAT, {1, 4, 4, 4});
    addNode(g, "Relu", {"y"}, "r");
    io(g.add_output(), "r", onnx::TensorProto::FLOAT, {1, 4, 4, 4});
  } else if (c.dequantizeAfter) {
    addNode(g, "DequantizeLinear", {"yq", "ys", "yz"}, "y");
    io(g.add_output(), "y", onnx::TensorProto::FLOAT, {1, 4, 4, 4});
  } else {
    io(g.add_output(), "yq", out8, {1, 4, 4, 4});
  }
  if (c.sharedDq) {
    addNode(g, "Shape", {"xf"}, "shape");
    io(g.add_output(), "shape", onnx::TensorProto::INT64, {4});
  }
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto model = graph::loadModelFromBuffer(m.SerializeAsString(), "m.onnx", ".", diags);
  EXPECT_TRUE(model);
  if (!model)
    return false;
  for (const auto &n : model->graph.nodes())
    if (n->opType == "Conv") {
      auto grp = rt::integerGroupOf(*n);
      EXPECT_TRUE(grp) << "every case has the group's form";
      return grp && rt::ortFuses(*grp);
    }
  return false;
}

} // namespace

TEST(OrtFusion, OnlyAroundActivationsOrtSeesAsUint8) {
  EXPECT_TRUE(fuses({false, false, false, false})); // u8 -> u8
  EXPECT_FALSE(fuses({true, false, true, false}));  // s8 graph input, s8 output
  EXPECT_TRUE(fuses({true, true, true, true}));     // Q/DQ pairs ORT moves to u8
  EXPECT_FALSE(fuses({false, false, true, false})); // u8 in, s8 out: types differ
  EXPECT_FALSE(fuses({true, false, true, true}));   // the s8 input stays s8
  EXPECT_TRUE(fuses({false, false, true, true}));   // u8 in, s8 out made u8
  // A DequantizeLinear read by two nodes is copied per reader, so its
  // QuantizeLinear feeds two and keeps int8: float (PaddleOCR's attention).
  EXPECT_FALSE(fuses({true, true, true, true, /*sharedDq=*/true}));
  EXPECT_TRUE(fuses({false, true, true, true, /*sharedDq=*/true})); // u8 needs no move
}

// ORT's level 1 removes a Slice that slices nothing (EliminateSlice) and then
// the DequantizeLinear -> QuantizeLinear it leaves between two pairs of one
// grid (DoubleQDQPairsRemover): the output's QuantizeLinear then feeds the
// last DequantizeLinear, read twice, copied per reader, and keeps int8. So
// the Conv stays float (Silero VAD's STFT: Conv -> Slice [0:INT64_MAX] ->
// two Slices; this graph too, with ORT 1.30 on this CPU and under qemu's
// Haswell).
TEST(OrtFusion, SeesTheGraphAfterOrtsLevelOneRewrites) {
  Case c{true, true, true, true};
  EXPECT_TRUE(fuses(c));
  c.sliceThenTwoReaders = true;
  EXPECT_FALSE(fuses(c));
  c.signedOut = false; // uint8 codes need no move
  EXPECT_TRUE(fuses(c));
}

namespace {

rt::Tensor codes(ElemType t, rt::Shape shape, std::vector<int> v) {
  rt::Tensor x(t, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == ElemType::Int8)
      x.data<int8_t>()[i] = int8_t(v[i]);
    else
      x.data<uint8_t>()[i] = uint8_t(v[i]);
  }
  return x;
}

int at(const rt::Tensor &y, int64_t i) {
  return y.elem() == ElemType::Int8 ? int(y.data<int8_t>()[i]) : int(y.data<uint8_t>()[i]);
}

} // namespace

TEST(OrtSoftmax, SoftmaxOfCodesAsQLinearSoftmax) {
  // Two rows of 4 codes, scale 0.25: each output is the row's softmax on the
  // 1/256 grid, within the float table's rounding of the exact value.
  std::vector<int> v = {10, 12, 14, 16, 100, 100, 90, 50};
  rt::Tensor x = codes(ElemType::UInt8, {2, 4}, v), y;
  ASSERT_TRUE(rt::ortSoftmax(x, 0.25f, 1.0f / 256, ElemType::UInt8, 0, -1, 13, y));
  for (int r = 0; r < 2; ++r) {
    double sum = 0;
    for (int i = 0; i < 4; ++i)
      sum += std::exp(0.25 * v[size_t(r * 4 + i)]);
    for (int i = 0; i < 4; ++i)
      EXPECT_NEAR(at(y, r * 4 + i), 256 * std::exp(0.25 * v[size_t(r * 4 + i)]) / sum, 0.5001)
          << r << "," << i;
  }
  // int8 codes give what their uint8 codes (+128) give: ORT moves them so.
  std::vector<int> s(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    s[i] = v[i] - 128;
  rt::Tensor ys;
  ASSERT_TRUE(rt::ortSoftmax(codes(ElemType::Int8, {2, 4}, s), 0.25f, 1.0f / 256, ElemType::UInt8,
                             0, 1, 13, ys));
  for (int64_t i = 0; i < 8; ++i)
    EXPECT_EQ(at(ys, i), at(y, i)) << i;
  // Over axis 0 (transposed to the last and back).
  rt::Tensor y0;
  ASSERT_TRUE(rt::ortSoftmax(x, 0.25f, 1.0f / 256, ElemType::UInt8, 0, 0, 13, y0));
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(at(y0, i) + at(y0, 4 + i) >= 255, true) << "column " << i << " sums to one";
  // ORT's quirks, kept: an element that holds the whole row is 256 codes
  // (floor(1 / y_scale)), clamped to 255 as uint8 and wrapped past 127 as
  // int8 (zero point -128).
  rt::Tensor one = codes(ElemType::UInt8, {1, 2}, {255, 0}), u, w;
  ASSERT_TRUE(rt::ortSoftmax(one, 0.5f, 1.0f / 256, ElemType::UInt8, 0, -1, 13, u));
  EXPECT_EQ(at(u, 0), 255);
  EXPECT_EQ(at(u, 1), 0);
  ASSERT_TRUE(rt::ortSoftmax(one, 0.5f, 1.0f / 256, ElemType::Int8, -128, -1, 13, w));
  EXPECT_EQ(at(w, 0), -128);
  EXPECT_FALSE(rt::ortSoftmax(one, 0.5f, 1.0f / 256, ElemType::UInt8, 0, 2, 13, u)); // no axis 2
}

TEST(OrtSoftmax, EightRowsAtOnceGiveTheBytesOfOneRowAtATime) {
  // With AVX2 the rows are summed eight at a time, one per lane, in row
  // order: the same float sums, so the same codes as the row-by-row loop
  // (SSE2), for rows of several lengths, a tail of rows, both input and
  // output types, and a scale under which all but the largest entries vanish.
  std::mt19937 rng(7);
  for (int64_t d : {1, 3, 50, 257})
    for (ElemType in : {ElemType::UInt8, ElemType::Int8})
      for (ElemType out : {ElemType::UInt8, ElemType::Int8}) {
        std::vector<int> v(size_t(21 * d));
        for (int &c : v)
          c = int(rng() % 256) - (in == ElemType::Int8 ? 128 : 0);
        rt::Tensor x = codes(in, {21, d}, v), fast, plain;
        float xScale = d == 257 ? 4.0f : 0.0371f; // 4: entries far below the largest vanish
        ASSERT_TRUE(rt::ortSoftmax(x, xScale, 1.0f / 256, out, out == ElemType::Int8 ? -128 : 0, -1,
                                   13, fast));
        rt::SimdLevel was = rt::limitSimd(rt::SimdLevel::Sse2);
        ASSERT_TRUE(rt::ortSoftmax(x, xScale, 1.0f / 256, out, out == ElemType::Int8 ? -128 : 0, -1,
                                   13, plain));
        rt::limitSimd(was);
        for (int64_t i = 0; i < x.numel(); ++i)
          ASSERT_EQ(at(fast, i), at(plain, i)) << "d " << d << ", element " << i;
      }
}

namespace {

/// x [2, 3, 4, 8] -> Q/DQ -> a; Transpose(x) -> Q/DQ (another grid) -> b;
/// MatMul(a, b) [2, 3, 4, 4] -> (`quantized`: Q/DQ) -> y.
std::unique_ptr<graph::Model> attentionLike(bool quantized, SourceManager &sm,
                                            DiagnosticEngine &diags) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto &g = *m.mutable_graph();
  g.set_name("g");
  scalar(g, "as", onnx::TensorProto::FLOAT, 0.0371);
  scalar(g, "az", onnx::TensorProto::UINT8, 131);
  scalar(g, "bs", onnx::TensorProto::FLOAT, 0.0893);
  scalar(g, "bz", onnx::TensorProto::UINT8, 120);
  scalar(g, "ys", onnx::TensorProto::FLOAT, 0.0371 * 0.0893 * 4);
  scalar(g, "yz", onnx::TensorProto::UINT8, 128);
  io(g.add_input(), "x", onnx::TensorProto::FLOAT, {2, 3, 4, 8});
  addNode(g, "QuantizeLinear", {"x", "as", "az"}, "aq");
  addNode(g, "DequantizeLinear", {"aq", "as", "az"}, "a");
  onnx::AttributeProto *perm = addNode(g, "Transpose", {"x"}, "xt")->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  for (int64_t p : {0, 1, 3, 2})
    perm->add_ints(p);
  addNode(g, "QuantizeLinear", {"xt", "bs", "bz"}, "bq");
  addNode(g, "DequantizeLinear", {"bq", "bs", "bz"}, "b");
  addNode(g, "MatMul", {"a", "b"}, quantized ? "p" : "y");
  if (quantized) {
    addNode(g, "QuantizeLinear", {"p", "ys", "yz"}, "pq");
    addNode(g, "DequantizeLinear", {"pq", "ys", "yz"}, "y");
  }
  io(g.add_output(), "y", onnx::TensorProto::FLOAT, {2, 3, 4, 4});
  return graph::loadModelFromBuffer(m.SerializeAsString(), "m.onnx", ".", diags);
}

} // namespace

TEST(CodeMatMul, AttentionProductsOnTheCodesWatchedOrNot) {
  // Q K^T of two activations: on their codes (QLinearMatMul, or
  // MatMulIntegerToFloat without a quantizer), the same bytes whether a run
  // computes it from the codes or, watching every value, runs the float
  // MatMul and overwrites it; and the same without VNNI (uint8 x uint8 is
  // exact there too).
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0, 3);
  rt::Tensor x(ElemType::Float, {2, 3, 4, 8});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = normal(rng);
  for (bool quantized : {true, false}) {
    SourceManager sm;
    DiagnosticEngine diags(sm);
    auto m = attentionLike(quantized, sm, diags);
    ASSERT_TRUE(m);
    for (const auto &n : m->graph.nodes())
      if (n->opType == "MatMul") {
        std::optional<rt::CodeMatMul> c = rt::codeMatMulOf(*n);
        ASSERT_TRUE(c);
        EXPECT_EQ(c->q != nullptr, quantized);
      }
    rt::RunOptions plain, watched, pairs;
    plain.mode = watched.mode = rt::ortMode(rt::IntegerArithmetic::Exact);
    pairs.mode = rt::ortMode(rt::IntegerArithmetic::SaturatingPairs);
    unsigned seen = 0;
    auto count = [&](const graph::Value &, const rt::Tensor &) { ++seen; };
    watched.observe = count; // a function_ref: `count` outlives the runs
    std::vector<rt::Tensor> a = test_util::runModel(*m, x, plain),
                            b = test_util::runModel(*m, x, watched),
                            c = test_util::runModel(*m, x, pairs), f = test_util::runModel(*m, x);
    ASSERT_EQ(a.size(), 1u);
    EXPECT_GT(seen, 5u);
    EXPECT_EQ(std::memcmp(a[0].raw(), b[0].raw(), a[0].bytes()), 0) << quantized;
    EXPECT_EQ(std::memcmp(a[0].raw(), c[0].raw(), a[0].bytes()), 0) << quantized;
    // The float model is within a step of the codes' product (ties, last bits).
    double step = quantized ? 0.0371 * 0.0893 * 4 : 1e-3;
    for (int64_t i = 0; i < a[0].numel(); ++i)
      ASSERT_LE(std::fabs(a[0].data<float>()[i] - f[0].data<float>()[i]), step * 1.001) << i;
  }
}

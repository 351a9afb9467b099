//===- MxTest.cpp - MX activations as ONNX subgraphs ------------------------===//
//
// writeMx's subgraph, written into a model, saved, loaded again and run by
// the executor, gives every element its MX value as quant::mxGrid and
// QuantGrid::quantize compute it, block by block: MXINT8 and MXFP8 (E4M3,
// E5M2), blocks along the last axis and along an inner one (through
// Transposes), with a last block shorter than the others, with block maxima exactly at, just under
// and just over powers of two (where the Log's rounding needs the corrections), a block of zeros
// and values near float's largest; and applyMx computes the same.
//
//===----------------------------------------------------------------------===//
#include "quant/ptq/qdq/Mx.h"
#include "GraphBuilder.h"
#include "ir/graph/OnnxIO.h"
#include "quant/core/grids/Grid.h"
#include "runtime/Executor.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <random>

using namespace tpcc;
using namespace tpcc::quant;

namespace {

/// A model y = Identity(MX(x)) for x of `dims`, saved and loaded again.
std::unique_ptr<graph::Model> mxModel(const std::vector<int64_t> &dims, const MxActivation &a,
                                      DiagnosticEngine &diags) {
  onnx::ModelProto m = test::emptyModel(21);
  m.set_ir_version(10);
  onnx::GraphProto &g = *m.mutable_graph();
  test::typedValue(g.add_input(), "x", dims);
  test::addNode(g, "Identity", {"x"}, "y");
  test::typedValue(g.add_output(), "y", dims);
  auto model = graph::loadModelFromBuffer(m.SerializeAsString(), "mx.onnx", ".", diags);
  if (!model)
    return nullptr;
  graph::Graph &gr = model->graph;
  int count = 0;
  GraphSink sink;
  sink.constant = [&](std::unique_ptr<graph::Tensor> t, const std::string &base) {
    t->name = base + std::to_string(count++);
    return gr.addConstant(std::move(t));
  };
  sink.value = [&](const std::string &base, graph::ElemType e) {
    graph::Value *v = gr.getOrCreateValue(base + std::to_string(count++));
    v->type.elem = e;
    v->hasTypeInfo = true;
    return v;
  };
  sink.node = [&](const char *op, const std::string &base, std::vector<graph::Value *> ins,
                  graph::Value *out, std::vector<graph::Attribute> attrs) {
    auto n = std::make_unique<graph::Node>();
    n->name = base + std::to_string(count++);
    n->opType = op;
    n->inputs = std::move(ins);
    n->outputs = {out};
    n->attributes = std::move(attrs);
    return gr.addNode(std::move(n));
  };
  graph::Value *x = gr.findValue("x");
  graph::Value *q = writeMx(sink, x, a, "x_mx");
  for (const auto &n : gr.nodes())
    if (n->opType == "Identity")
      n->inputs[0] = q;
  gr.relink();
  if (failed(graph::verifyGraph(gr, "mx.onnx", diags)))
    return nullptr;
  std::string bytes, error;
  if (!graph::serializeModel(*model, bytes, error))
    return nullptr;
  return graph::loadModelFromBuffer(bytes, "mx2.onnx", ".", diags);
}

/// x's values: block b of 32 has its largest magnitude at 2^k, just under
/// it, just over it, or random; block 5 is zeros, block 6 near float's max.
std::vector<float> values(int64_t n, std::mt19937 &rng) {
  std::normal_distribution<float> z;
  std::vector<float> x(static_cast<size_t>(n));
  for (float &v : x)
    v = z(rng);
  for (int64_t b = 0; b * 32 < n; ++b) {
    float *blk = &x[size_t(b * 32)];
    float top = std::ldexp(1.0f, int(b % 13) - 6);
    switch (b % 8) {
    case 0:
      blk[3] = top * 4; // exactly a power of two above the rest
      break;
    case 1:
      blk[7] = -std::nextafter(top * 4, 0.0f);
      break;
    case 2:
      blk[0] = std::nextafter(top * 4, INFINITY);
      break;
    case 5:
      std::fill(blk, blk + 32, 0.0f);
      break;
    case 6:
      for (int i = 0; i < 32; ++i)
        blk[i] *= 1e37f;
      break;
    default:
      break;
    }
  }
  return x;
}

/// The expected MX values of x ([outer, len, inner] with blocks along the
/// middle axis, 32 long).
std::vector<float> expected(const std::vector<float> &x, int64_t outer, int64_t len, int64_t inner,
                            const MxActivation &a) {
  std::vector<float> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      for (int64_t b = 0; b < len; b += 32) {
        auto at = [&](int64_t k) { return size_t((o * len + b + k) * inner + i); };
        int64_t n = std::min<int64_t>(32, len - b); // a last block may be shorter
        double amax = 0;
        for (int64_t k = 0; k < n; ++k)
          amax = std::max(amax, std::fabs(double(x[at(k)])));
        QuantGrid g = mxGrid(amax, a.bits, 1e-300, a.element);
        for (int64_t k = 0; k < n; ++k)
          y[at(k)] = amax == 0 ? 0.0f : float(g.quantize(x[at(k)]));
      }
  return y;
}

void expectMx(const std::vector<int64_t> &dims, int64_t axis, const MxActivation &format) {
  MxActivation a = format;
  a.axis = axis;
  a.rank = int64_t(dims.size());
  a.length = dims[size_t(axis < 0 ? axis + a.rank : axis)];
  ASSERT_EQ(checkMx(a), "");
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto model = mxModel(dims, a, diags);
  ASSERT_TRUE(model);
  auto ex = rt::Executor::create(*model, diags);
  ASSERT_TRUE(ex);
  rt::Tensor xin(graph::ElemType::Float, dims);
  std::mt19937 rng(7);
  std::vector<float> x = values(xin.numel(), rng);
  std::copy(x.begin(), x.end(), xin.data<float>());
  std::vector<rt::Tensor> out;
  ASSERT_TRUE(succeeded(ex->run({{"x", xin}}, out, diags)));
  ASSERT_EQ(out.size(), 1u);
  int64_t d = axis < 0 ? axis + a.rank : axis, outer = 1, inner = 1;
  for (int64_t k = 0; k < d; ++k)
    outer *= dims[size_t(k)];
  for (int64_t k = d + 1; k < a.rank; ++k)
    inner *= dims[size_t(k)];
  std::vector<float> want = expected(x, outer, dims[size_t(d)], inner, a);
  int wrong = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (out[0].data<float>()[i] != want[i] && ++wrong < 5)
      ADD_FAILURE() << "element " << i << ": x " << x[i] << " gives " << out[0].data<float>()[i]
                    << ", MX " << want[i];
  EXPECT_EQ(wrong, 0);
  // applyMx (second-order rounding's transform) computes the same values.
  applyMx(xin, a);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(xin.data<float>()[i], want[i]) << "applyMx, element " << i;
}

} // namespace

TEST(MxActivation, Int8AlongTheLastAxis) { expectMx({3, 2, 128}, -1, {ir::ElementFormat::Int, 8}); }

TEST(MxActivation, Int8AlongAnInnerAxis) {
  // A Conv's input: blocks along its channels (axis 1).
  expectMx({2, 64, 3, 5}, 1, {ir::ElementFormat::Int, 8});
}

TEST(MxActivation, Int8WithAShorterLastBlock) {
  // 50 = 32 + 18: zeros pad the second block and are sliced off.
  expectMx({3, 50}, -1, {ir::ElementFormat::Int, 8});
  expectMx({2, 24, 5}, 1, {ir::ElementFormat::Fp8E4M3});
}

TEST(MxActivation, Fp8E4M3) { expectMx({4, 256}, -1, {ir::ElementFormat::Fp8E4M3}); }

TEST(MxActivation, Fp8E5M2AlongTheFirstAxis) { expectMx({96, 7}, 0, {ir::ElementFormat::Fp8E5M2}); }

TEST(MxActivation, RefusesWhatItCannotWrite) {
  MxActivation a;
  a.rank = 2;
  a.element = ir::ElementFormat::Fp4E2M1;
  EXPECT_NE(checkMx(a).find("fp4_e2m1"), std::string::npos);
  a.element = ir::ElementFormat::Int;
  a.axis = 2;
  EXPECT_NE(checkMx(a).find("axis 2"), std::string::npos);
}

TEST(MxActivation, CastToFp8SaturatesAsAsked) {
  // y = Cast(Cast(x, float8e4m3fn, saturate), float): 500 saturates to 448
  // or, with saturate=0, becomes NaN; 0.3 rounds to the nearest E4M3 value.
  for (int saturate : {1, 0}) {
    onnx::ModelProto m = test::emptyModel(21);
    m.set_ir_version(10);
    onnx::GraphProto &g = *m.mutable_graph();
    test::typedValue(g.add_input(), "x", {3});
    onnx::NodeProto *c = test::addNode(g, "Cast", {"x"}, "c");
    test::GraphBuilder::intAttr(c, "to", 17); // float8e4m3fn (libonnx 1.12 has no name for it)
    test::GraphBuilder::intAttr(c, "saturate", saturate);
    test::GraphBuilder::intAttr(test::addNode(g, "Cast", {"c"}, "y"), "to",
                                onnx::TensorProto::FLOAT);
    test::typedValue(g.add_output(), "y", {3});
    SourceManager sm;
    DiagnosticEngine diags(sm);
    auto model = graph::loadModelFromBuffer(m.SerializeAsString(), "c.onnx", ".", diags);
    ASSERT_TRUE(model);
    auto ex = rt::Executor::create(*model, diags);
    ASSERT_TRUE(ex);
    rt::Tensor xin(graph::ElemType::Float, {3});
    xin.data<float>()[0] = 500.f;
    xin.data<float>()[1] = 0.3f;
    xin.data<float>()[2] = -1e-9f;
    std::vector<rt::Tensor> out;
    ASSERT_TRUE(succeeded(ex->run({{"x", xin}}, out, diags)));
    const float *y = out[0].data<float>();
    if (saturate)
      EXPECT_EQ(y[0], 448.f);
    else
      EXPECT_TRUE(std::isnan(y[0]));
    EXPECT_EQ(y[1], 0.3125f); // 0.3 lies between 0.28125 and 0.3125, nearer the latter
    EXPECT_EQ(y[2], 0.f);
    EXPECT_TRUE(std::signbit(y[2]));
  }
}

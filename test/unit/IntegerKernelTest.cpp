//===- IntegerKernelTest.cpp - QDQ groups on oneDNN int8, bit for bit -----===//
//
// rt::IntegerKernel against its reference, computeIntegerGroup(Exact) (ORT's
// integer kernels with VNNI, emulated after the float kernel): every output
// byte equal, and runDequantized's floats equal to the emulation's bits.
// IntegerKernel: random groups of every form (1x1, 3x3, depthwise, grouped,
// strided, dilated, padded, auto_pad, 1-D and 3-D convolutions, Gemm, MatMul;
// u8 and s8 activations, non-zero input zero points, per-tensor and
// per-channel scales, u8 and s8 outputs), weights whose pairs saturate int16
// with u8 inputs near 255, reductions too long for a float, bad inputs.
// IntegerKernelModels: every group of the shared Fashion-MNIST models quantized
// by `tpcc quantize` for imx500 and tflite, at batch 1 and 64 (DISABLED_Speed
// times the Conv groups of fashion_mbv2 against the float Conv and the
// emulation). IntegerKernelIsa runs both again in child processes with oneDNN
// capped at AVX2 and at SSE4.1: the path of CPUs without VNNI (weights split
// in halves) on any machine.
//
//===----------------------------------------------------------------------===//
#include "runtime/ort/IntegerKernel.h"
#include "ir/graph/OnnxIO.h"
#include "runtime/DataIO.h"
#include "runtime/Executor.h"
#include "runtime/KernelUtil.h"
#include "runtime/MicroBatch.h"
#include "runtime/Simd.h"
#include "runtime/ops/Dnnl.h"
#include "runtime/ort/IntegerPairs.h"
#include "runtime/ort/OrtMode.h"
#include "runtime/ort/OrtPropagation.h"
#include "test/unit/RunUtil.h"

#include "llvm/Support/FileSystem.h"

#include <oneapi/dnnl/dnnl.hpp>
#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>

using namespace tpcc;
using rt::ElemType;
using rt::IntegerKernel;
using rt::Shape;
using rt::Tensor;

namespace {

//===----------------------------------------------------------------------===//
// Groups built from a spec
//===----------------------------------------------------------------------===//

/// DequantizeLinear(x) -> op(DequantizeLinear(int8 W), [bias]) -> [Relu] ->
/// QuantizeLinear.
struct Spec {
  std::string op = "Conv"; ///< Conv, Gemm or MatMul
  Shape x, w;              ///< input and (ONNX) weight shapes
  int64_t group = 1;
  std::vector<int64_t> strides, pads, dilations;
  std::string autoPad;
  int64_t transB = 0;
  bool signedX = false, signedY = false;
  int64_t xZero = 0, yZero = 0;
  float xScale = 0.02f;
  bool perChannel = true;
  enum Bias { None, Int32, Float } bias = Int32;
  bool relu = false;
  /// Weights: magnitude uniform in [wMin, wMax], random sign (or positive).
  int wMin = 0, wMax = 127;
  bool positive = false;
  /// Added to every int32 bias.
  int64_t biasOffset = 0;
  /// Activations as stored (u8 or s8): uniform in [xLo, xHi].
  int xLo = 0, xHi = 255;
  unsigned seed = 1;
  /// A MatMul with no QuantizeLinear after it (ORT's MatMulIntegerToFloat).
  bool floatOut = false;
};

int64_t outChannels(const Spec &s) {
  return s.op == "Conv" || (s.op == "Gemm" && s.transB) ? s.w[0] : s.w[1];
}

int64_t reduction(const Spec &s) {
  int64_t k = 1;
  for (size_t d = 1; d < s.w.size(); ++d)
    k *= s.w[d];
  return s.op == "Conv" || (s.op == "Gemm" && s.transB) ? k : s.w[0];
}

void addTensor(onnx::GraphProto *g, const std::string &name, int type, const Shape &dims,
               const std::string &raw) {
  auto *t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims)
    t->add_dims(d);
  t->set_raw_data(raw);
}

template <typename T> std::string bytesOf(const std::vector<T> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(T));
}

/// A tensor value of `shape`, or of `shape`'s rank with symbolic dimensions.
void valueInfo(onnx::ValueInfoProto *v, const std::string &name, int type, const Shape &shape,
               bool symbolic = false) {
  v->set_name(name);
  auto *t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  for (size_t d = 0; d < shape.size(); ++d)
    if (symbolic)
      t->mutable_shape()->add_dim()->set_dim_param("d" + std::to_string(d));
    else
      t->mutable_shape()->add_dim()->set_dim_value(shape[d]);
}

onnx::NodeProto *addNode(onnx::GraphProto *g, const std::string &op, std::vector<std::string> ins,
                         const std::string &out) {
  auto *n = g->add_node();
  n->set_op_type(op);
  n->set_name(op + "_" + out);
  for (auto &i : ins)
    n->add_input(i);
  n->add_output(out);
  return n;
}

void intAttr(onnx::NodeProto *n, const std::string &name, int64_t v) {
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void intsAttr(onnx::NodeProto *n, const std::string &name, const std::vector<int64_t> &v) {
  if (v.empty())
    return;
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t i : v)
    a->add_ints(i);
}

struct Built {
  SourceManager sm;
  DiagnosticEngine diags{sm};
  std::unique_ptr<graph::Model> model;
  std::optional<rt::IntegerGroup> group;
  float yScale = 1;
};

/// The model of `s` with random weights, and its group.
std::unique_ptr<Built> build(const Spec &s) {
  std::mt19937 rng(s.seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int64_t m = outChannels(s), k = reduction(s), wn = 1;
  for (int64_t d : s.w)
    wn *= d;
  std::vector<int8_t> w(static_cast<size_t>(wn));
  double w2 = 0;
  for (int8_t &v : w) {
    int a = uniform(s.wMin, s.wMax);
    v = int8_t(s.positive || uniform(0, 1) ? a : -a);
    w2 += double(v) * v;
  }
  std::vector<float> ws(size_t(s.perChannel ? m : 1));
  for (float &v : ws)
    v = 0.002f + 0.018f * float(uniform(0, 1000)) / 1000.f;
  // An output grid on which most outputs land inside the range.
  double xMean = (s.xLo + s.xHi) / 2.0 - double(s.xZero),
         xVar = std::pow(s.xHi - s.xLo, 2) / 12 + xMean * xMean;
  float yScale = float(s.xScale * ws[0] * std::sqrt(w2 / double(wn) * xVar * double(k)) / 40);

  onnx::ModelProto mp;
  mp.set_ir_version(7);
  mp.add_opset_import()->set_version(13);
  onnx::GraphProto *g = mp.mutable_graph();
  g->set_name("group");
  int xType = s.signedX ? onnx::TensorProto::INT8 : onnx::TensorProto::UINT8,
      yType = s.signedY ? onnx::TensorProto::INT8 : onnx::TensorProto::UINT8;
  valueInfo(g->add_input(), "xq", xType, s.x);
  if (s.floatOut)
    valueInfo(g->add_output(), "yf", onnx::TensorProto::FLOAT, s.x, /*symbolic=*/true);
  else
    valueInfo(g->add_output(), "yq", yType, s.x, /*symbolic=*/true);
  addTensor(g, "xs", onnx::TensorProto::FLOAT, {}, bytesOf(std::vector<float>{s.xScale}));
  std::vector<int8_t> xz8 = {int8_t(s.xZero)}, yz8 = {int8_t(s.yZero)};
  addTensor(g, "xz", xType, {}, bytesOf(xz8));
  addNode(g, "DequantizeLinear", {"xq", "xs", "xz"}, "xf");
  addTensor(g, "wq", onnx::TensorProto::INT8, s.w, bytesOf(w));
  Shape wsDims = s.perChannel ? Shape{m} : Shape{};
  addTensor(g, "ws", onnx::TensorProto::FLOAT, wsDims, bytesOf(ws));
  addTensor(g, "wz", onnx::TensorProto::INT8, wsDims, std::string(ws.size(), '\0'));
  auto *dqw = addNode(g, "DequantizeLinear", {"wq", "ws", "wz"}, "wf");
  intAttr(dqw, "axis", s.op == "Conv" || (s.op == "Gemm" && s.transB) ? 0 : 1);
  std::vector<std::string> ins = {"xf", "wf"};
  if (s.bias == Spec::Int32) {
    std::vector<int32_t> b(static_cast<size_t>(m));
    std::vector<float> bs(static_cast<size_t>(m));
    for (int64_t c = 0; c < m; ++c) {
      b[size_t(c)] = int32_t(uniform(-30000, 30000) + s.biasOffset);
      bs[size_t(c)] = s.xScale * ws[s.perChannel ? size_t(c) : 0];
    }
    addTensor(g, "bq", onnx::TensorProto::INT32, {m}, bytesOf(b));
    addTensor(g, "bs", onnx::TensorProto::FLOAT, {m}, bytesOf(bs));
    intAttr(addNode(g, "DequantizeLinear", {"bq", "bs"}, "bf"), "axis", 0);
    ins.push_back("bf");
  } else if (s.bias == Spec::Float) {
    std::vector<float> b(static_cast<size_t>(m));
    for (float &v : b)
      v = float(uniform(-1000, 1000)) * yScale / 100;
    addTensor(g, "bf", onnx::TensorProto::FLOAT, {m}, bytesOf(b));
    ins.push_back("bf");
  }
  auto *op = addNode(g, s.op, ins, "yf");
  if (s.op == "Conv") {
    if (s.group != 1)
      intAttr(op, "group", s.group);
    intsAttr(op, "strides", s.strides);
    intsAttr(op, "pads", s.pads);
    intsAttr(op, "dilations", s.dilations);
    if (!s.autoPad.empty()) {
      auto *a = op->add_attribute();
      a->set_name("auto_pad");
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(s.autoPad);
    }
  } else if (s.op == "Gemm" && s.transB) {
    intAttr(op, "transB", 1);
  }
  std::string y = "yf";
  if (s.floatOut) {
    // The graph's output is the MatMul's float output.
  } else if (s.relu) {
    addNode(g, "Relu", {"yf"}, "yr");
    y = "yr";
  }
  if (!s.floatOut) {
    addTensor(g, "ys", onnx::TensorProto::FLOAT, {}, bytesOf(std::vector<float>{yScale}));
    addTensor(g, "yz", yType, {}, bytesOf(yz8));
    addNode(g, "QuantizeLinear", {y, "ys", "yz"}, "yq");
  }

  auto b = std::make_unique<Built>();
  b->yScale = yScale;
  b->model = graph::loadModelFromBuffer(mp.SerializeAsString(), "group.onnx", "", b->diags);
  EXPECT_TRUE(b->model && !b->diags.hasErrors());
  for (const Diagnostic &d : b->diags.getDiagnostics())
    ADD_FAILURE() << d.message;
  if (b->model)
    for (const auto &n : b->model->graph.nodes())
      if (n->opType == s.op)
        b->group = rt::integerGroupOf(*n);
  EXPECT_TRUE(b->group) << s.op << " is not an integer group";
  return b;
}

Tensor randomInput(const Spec &s, const Shape &shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(s.xLo, s.xHi);
  Tensor x(s.signedX ? ElemType::Int8 : ElemType::UInt8, shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<uint8_t>()[i] = uint8_t(d(rng));
  return x;
}

//===----------------------------------------------------------------------===//
// The reference and the comparison
//===----------------------------------------------------------------------===//

int64_t quantAt(const Tensor &t, int64_t i) {
  return t.elem() == ElemType::Int8 ? int64_t(t.data<int8_t>()[i]) : int64_t(t.data<uint8_t>()[i]);
}

/// What computeIntegerGroup(`arith`) gives for the quantized input `xq`
/// (output shape `yShape`), quantized back onto the output grid. The float
/// input is `xq` dequantized as DequantizeLinear does.
bool reference(const rt::IntegerGroup &g, const Tensor &xq, const Shape &yShape, Tensor &yq,
               rt::IntegerArithmetic arith = rt::IntegerArithmetic::Exact,
               Tensor *floatOut = nullptr) {
  Tensor xf(ElemType::Float, xq.shape());
  for (int64_t i = 0; i < xq.numel(); ++i)
    xf.data<float>()[i] = float(quantAt(xq, i) - g.xZero) * g.xScale;
  std::unique_ptr<rt::NodeState> none;
  rt::KernelContext ctx(*g.node, 13, none);
  ctx.inputs = {&xf};
  ctx.outputs.resize(1);
  ctx.outputs[0] = Tensor(ElemType::Float, yShape);
  if (!rt::computeIntegerGroup(g, arith, ctx)) {
    ADD_FAILURE() << "computeIntegerGroup: " << ctx.error;
    return false;
  }
  yq = Tensor(g.yMin < 0 ? ElemType::Int8 : ElemType::UInt8, yShape);
  const float *y = ctx.outputs[0].data<float>();
  if (floatOut)
    *floatOut = ctx.outputs[0];
  for (int64_t i = 0; i < yq.numel() && !g.floatOutput; ++i) {
    int64_t q = std::llround(double(y[i]) / double(g.yScale)) + g.yZero;
    EXPECT_EQ(float(q - g.yZero) * g.yScale, y[i]) << "not on the output grid at " << i;
    yq.data<uint8_t>()[i] = uint8_t(q);
  }
  return true;
}

/// How `got` differs from `want`.
struct Diff {
  int64_t n = 0, diffs = 0, inside = 0; ///< inside: outputs not at the range's ends
  std::string first;
};

Diff compare(const Tensor &got, const Tensor &want, const rt::IntegerGroup &g) {
  Diff d;
  EXPECT_EQ(got.elem(), want.elem());
  EXPECT_EQ(got.shape(), want.shape());
  if (got.shape() != want.shape() || got.elem() != want.elem()) {
    d.diffs = 1;
    return d;
  }
  d.n = got.numel();
  for (int64_t i = 0; i < d.n; ++i) {
    int64_t a = quantAt(got, i), b = quantAt(want, i);
    d.inside += b != g.yMin && b != g.yMax;
    if (a != b && d.diffs++ == 0)
      d.first = "first at " + std::to_string(i) + ": " + std::to_string(a) + " instead of " +
                std::to_string(b);
  }
  return d;
}

bool vnniCpu() {
  int isa = int(dnnl::get_effective_cpu_isa());
  return (isa & 0x40) || (isa & 0x400); // avx512_core_vnni, avx2_vnni
}

/// Runs the kernel of `b` in `mode` on `x` and compares with the reference:
/// bit-exact, and a comparison with teeth (most outputs inside the range).
void expectExact(const Built &b, const Tensor &x, IntegerKernel::Mode mode, const std::string &what,
                 IntegerKernel *reuse = nullptr) {
  std::string err;
  std::unique_ptr<IntegerKernel> own;
  IntegerKernel *k = reuse;
  if (!k) {
    own = IntegerKernel::create(*b.group, err, mode);
    ASSERT_TRUE(own) << what << ": " << err;
    k = own.get();
  }
  Tensor got, want, gotFloat, wantFloat;
  if (b.group->floatOutput) { // MatMulIntegerToFloat: floats, no codes
    EXPECT_FALSE(k->run(x, got, err)) << what;
    ASSERT_TRUE(k->runDequantized(x, gotFloat, err)) << what << ": " << err;
    ASSERT_TRUE(
        reference(*b.group, x, gotFloat.shape(), want, rt::IntegerArithmetic::Exact, &wantFloat));
    EXPECT_EQ(std::memcmp(gotFloat.raw(), wantFloat.raw(), wantFloat.bytes()), 0) << what;
    return;
  }
  ASSERT_TRUE(k->run(x, got, err)) << what << ": " << err;
  ASSERT_TRUE(reference(*b.group, x, got.shape(), want, rt::IntegerArithmetic::Exact, &wantFloat));
  Diff d = compare(got, want, *b.group);
  EXPECT_EQ(d.diffs, 0) << what << " (" << k->describe() << "): " << d.diffs << " of " << d.n
                        << " outputs differ, " << d.first;
  EXPECT_GE(d.inside * 10, d.n * 3) << what << ": too many outputs clamped to test anything";
  // The float output computeIntegerGroup leaves, bit for bit.
  ASSERT_TRUE(k->runDequantized(x, gotFloat, err)) << what << ": " << err;
  ASSERT_EQ(gotFloat.shape(), wantFloat.shape());
  EXPECT_EQ(std::memcmp(gotFloat.raw(), wantFloat.raw(), wantFloat.bytes()), 0) << what;
}

/// `x` (N, C, spatial...) with its data channels-last, as integer runs hand
/// activations between convolution kernels.
Tensor channelsLast(const Tensor &x) {
  Tensor y = rt::dnnl_util::allocateChannelsLast(x.elem(), x.shape());
  int64_t n = x.dim(0), c = x.dim(1), pixels = x.numel() / std::max<int64_t>(n * c, 1);
  const uint8_t *from = static_cast<const uint8_t *>(x.raw());
  uint8_t *to = static_cast<uint8_t *>(y.raw());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < pixels; ++p)
        to[(i * pixels + p) * c + ch] = from[(i * c + ch) * pixels + p];
  return y;
}

/// The convolution kernel `k` reading and writing channels-last tensors
/// (either or both) gives the reference's bytes.
void expectChannelsLast(const Built &b, const Tensor &x, IntegerKernel &k,
                        const std::string &what) {
  Tensor want;
  std::string err;
  Shape shape;
  {
    Tensor y;
    ASSERT_TRUE(k.run(x, y, err)) << what << ": " << err;
    shape = y.shape();
  }
  ASSERT_TRUE(reference(*b.group, x, shape, want, rt::IntegerArithmetic::Exact));
  Tensor xl = channelsLast(x), other = x.clone();
  for (int64_t i = 0; i < other.numel(); ++i) // other bytes in the kernel's buffers first
    other.data<uint8_t>()[i] ^= 0x5a;
  for (int variant = 1; variant < 4; ++variant) {
    bool lastIn = variant & 1, lastOut = variant & 2;
    Tensor y;
    ASSERT_TRUE(k.run(other, y, err)) << what << ": " << err;
    ASSERT_TRUE(k.run(lastIn ? xl : x, y, err, lastOut)) << what << ": " << err;
    EXPECT_EQ(rt::dnnl_util::isChannelsLast(y), lastOut) << what;
    Diff d = compare(rt::dnnl_util::toPlain(y), want, *b.group);
    EXPECT_EQ(d.diffs, 0) << what << (lastIn ? ", channels-last input" : "")
                          << (lastOut ? ", channels-last output" : "") << ": " << d.diffs << " of "
                          << d.n << " outputs differ, " << d.first;
  }
}

/// `s` through the kernel (Auto; Split too; Direct where it is exact: VNNI
/// or 7-bit weights), at its batch and at batch 3.
void check(const Spec &s, const std::string &what) {
  auto b = build(s);
  ASSERT_TRUE(b->group);
  Tensor x = randomInput(s, s.x, s.seed + 7);
  Shape x3 = s.x;
  x3[0] = 3;
  Tensor xb = randomInput(s, x3, s.seed + 8);
  std::string err;
  auto k = IntegerKernel::create(*b->group, err);
  ASSERT_TRUE(k) << what << ": " << err;
  expectExact(*b, x, IntegerKernel::Mode::Auto, what, k.get());
  expectExact(*b, xb, IntegerKernel::Mode::Auto, what + ", batch 3", k.get());
  expectExact(*b, x, IntegerKernel::Mode::Auto, what + ", again", k.get());
  std::cout << "[ KERNEL   ] " << what << ": " << k->describe() << "\n";
  // Our requantizing loop on every CPU: SSE2 as well as AVX2 (Simd.h).
  rt::SimdLevel was = rt::limitSimd(rt::SimdLevel::Sse2);
  expectExact(*b, xb, IntegerKernel::Mode::Auto, what + ", SSE2", k.get());
  rt::limitSimd(was);
  if (s.op == "Conv")
    expectChannelsLast(*b, xb, *k, what);
  expectExact(*b, x, IntegerKernel::Mode::Split, what + ", split");
  if (vnniCpu() || s.wMax <= 64)
    expectExact(*b, x, IntegerKernel::Mode::Direct, what + ", direct");
}

Spec conv(Shape x, Shape w) {
  Spec s;
  s.x = std::move(x);
  s.w = std::move(w);
  return s;
}

//===----------------------------------------------------------------------===//
// Random groups
//===----------------------------------------------------------------------===//

TEST(IntegerKernel, Conv1x1) {
  for (int zero : {0, 37})
    for (bool perChannel : {false, true})
      for (bool signedY : {false, true}) {
        Spec s = conv({1, 16, 7, 7}, {24, 16, 1, 1});
        s.xZero = zero;
        s.perChannel = perChannel;
        s.signedY = signedY;
        s.yZero = signedY ? -3 : 128;
        s.seed = unsigned(zero + perChannel * 2 + signedY);
        check(s, "1x1 zero point " + std::to_string(zero) + (perChannel ? " per channel" : "") +
                     (signedY ? " s8 out" : ""));
      }
}

TEST(IntegerKernel, Conv3x3PaddingHoldsTheZeroPoint) {
  // A non-zero input zero point: padded cells hold it and add nothing.
  for (int zero : {0, 140, 255}) {
    Spec s = conv({1, 8, 9, 9}, {16, 8, 3, 3});
    s.pads = {1, 1, 1, 1};
    s.xZero = zero;
    s.yZero = 100;
    s.seed = unsigned(zero);
    check(s, "3x3 pad 1, zero point " + std::to_string(zero));
  }
  Spec s = conv({1, 5, 6, 7}, {7, 5, 3, 3});
  s.pads = {2, 0, 1, 3};
  s.xZero = 77;
  s.yZero = 128;
  s.bias = Spec::None;
  check(s, "3x3 asymmetric pads, no bias");
}

TEST(IntegerKernel, DepthwiseAndGrouped) {
  for (bool signedX : {false, true}) {
    Spec s = conv({1, 12, 10, 10}, {12, 1, 3, 3});
    s.group = 12;
    s.strides = {2, 2};
    s.pads = {1, 1, 1, 1};
    s.signedX = signedX;
    s.xLo = signedX ? -128 : 0;
    s.xHi = signedX ? 127 : 255;
    s.xZero = signedX ? -5 : 131;
    s.yZero = 128;
    check(s, std::string("depthwise stride 2") + (signedX ? " s8 in" : ""));
  }
  Spec mult = conv({1, 6, 8, 8}, {12, 1, 3, 3}); // channel multiplier 2
  mult.group = 6;
  mult.pads = {1, 1, 1, 1};
  mult.xZero = 20;
  mult.yZero = 128;
  check(mult, "depthwise, multiplier 2");
  Spec g = conv({1, 16, 11, 11}, {8, 4, 3, 3});
  g.group = 4;
  g.dilations = {2, 2};
  g.pads = {2, 2, 2, 2};
  g.xZero = 90;
  g.yZero = 128;
  check(g, "grouped 4, dilation 2");
  Spec g2 = conv({1, 32, 8, 8}, {32, 16, 3, 3});
  g2.group = 2;
  g2.pads = {1, 1, 1, 1};
  g2.signedX = true;
  g2.xLo = -128;
  g2.xHi = 127;
  g2.xZero = 7;
  g2.yZero = 128;
  check(g2, "grouped 2 of 16 channels, s8 in");
}

TEST(IntegerKernel, StridesAndAutoPad) {
  for (const char *pad : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    Spec s = conv({1, 3, 13, 12}, {8, 3, 5, 5});
    s.strides = {2, 3};
    s.autoPad = pad;
    s.xZero = 60;
    s.yZero = 128;
    check(s, std::string("5x5 strides 2,3 ") + pad);
  }
}

TEST(IntegerKernel, OneAndThreeDimensionalConvs) {
  Spec c1 = conv({1, 6, 20}, {10, 6, 3});
  c1.pads = {1, 2};
  c1.strides = {2};
  c1.xZero = 9;
  c1.yZero = 128;
  check(c1, "1-D");
  Spec c3 = conv({1, 4, 5, 6, 7}, {6, 4, 3, 3, 3});
  c3.pads = {1, 1, 1, 1, 1, 1};
  c3.xZero = 200;
  c3.yZero = 128;
  check(c3, "3-D");
  Spec dw3 = conv({1, 4, 5, 6, 7}, {4, 1, 3, 3, 3});
  dw3.group = 4;
  dw3.pads = {1, 1, 1, 1, 1, 1};
  dw3.xZero = 3;
  dw3.yZero = 128;
  check(dw3, "3-D depthwise");
}

TEST(IntegerKernel, SignedActivationsAndOutputs) {
  Spec s = conv({1, 10, 8, 8}, {12, 10, 3, 3});
  s.pads = {1, 1, 1, 1};
  s.signedX = true;
  s.xLo = -128;
  s.xHi = 127;
  s.xZero = -20;
  s.signedY = true;
  s.yZero = 5;
  check(s, "s8 in, s8 out");
  s.relu = true; // dropped by ORT: the output's zero point is its minimum
  s.yZero = -128;
  check(s, "s8 in, Relu, s8 out from -128");
  s.signedY = false;
  s.yZero = 0;
  check(s, "s8 in, Relu, u8 out from 0");
}

TEST(IntegerKernel, SevenBitWeights) {
  // No pair can overflow: the weights as they are, on every CPU.
  Spec s = conv({1, 16, 6, 6}, {16, 16, 3, 3});
  s.wMax = 64;
  s.pads = {1, 1, 1, 1};
  s.xZero = 10;
  s.yZero = 128;
  check(s, "7-bit weights");
  auto b = build(s);
  std::string err;
  auto k = IntegerKernel::create(*b->group, err);
  Tensor y;
  ASSERT_TRUE(k->run(randomInput(s, s.x, 3), y, err)) << err;
  EXPECT_EQ(k->parts(), 1) << k->describe();
}

TEST(IntegerKernel, SaturatingPairsStayExact) {
  // Adjacent weights 127, 127 (and -127) on u8 inputs near 255: VPMADDUBSW
  // saturates the pairs. The emulation of ORT without VNNI shows it; the
  // kernel stays exact everywhere, splitting the weights where the CPU lacks
  // VNNI, and the unsplit weights are wrong there.
  for (const char *form : {"dense", "depthwise", "one input channel"}) {
    std::string f = form;
    Spec s = f == "dense"       ? conv({1, 32, 9, 9}, {16, 32, 3, 3})
             : f == "depthwise" ? conv({1, 8, 9, 9}, {8, 1, 3, 3})
                                : conv({1, 1, 9, 9}, {16, 1, 3, 3});
    s.group = f == "depthwise" ? 8 : 1;
    s.pads = {1, 1, 1, 1};
    s.wMin = 120;
    s.xLo = 240;
    s.xZero = 128;
    s.yZero = 128;
    std::string what = "saturating weights, " + f;
    auto b = build(s);
    ASSERT_TRUE(b->group);
    EXPECT_EQ(b->group->canSaturate, f != "depthwise");
    Tensor x = randomInput(s, s.x, 11), exact, pairs;
    Shape yShape = {1, s.w[0], 9, 9};
    ASSERT_TRUE(reference(*b->group, x, yShape, exact));
    ASSERT_TRUE(reference(*b->group, x, yShape, pairs, rt::IntegerArithmetic::SaturatingPairs));
    Diff saturated = compare(pairs, exact, *b->group);
    if (f != "depthwise") {
      EXPECT_GT(saturated.diffs * 2, saturated.n) << "the case saturates nothing";
    }
    check(s, what);
    std::string err;
    auto k = IntegerKernel::create(*b->group, err);
    Tensor y;
    ASSERT_TRUE(k->run(x, y, err)) << err;
    std::cout << "[ KERNEL   ] " << what << ": " << k->describe() << "\n";
    if (vnniCpu())
      continue;
    // Without VNNI: dense weights split; oneDNN's int8 JIT convolutions pair
    // no two weights of one input channel per group, so those stay whole.
    bool jit = k->describe().rfind("jit", 0) == 0;
    EXPECT_EQ(k->parts(), f == "dense" || !jit ? 2 : 1) << k->describe();
    if (f == "dense") {
      auto direct = IntegerKernel::create(*b->group, err, IntegerKernel::Mode::Direct);
      ASSERT_TRUE(direct->run(x, y, err)) << err;
      EXPECT_GT(compare(y, exact, *b->group).diffs, 0)
          << "unsplit weights are exact without VNNI: " << direct->describe();
    }
  }
}

TEST(IntegerKernel, LongReductionsSplitAlongK) {
  // Weights 110..127 on inputs 254 and 255: oneDNN's sum of every half
  // (~59 * 254.5 * 1500 = 22.5M) passes 2^24, where its float conversion
  // rounds odd sums; the zero point 254 and the bias bring the result back
  // into range. Unsplit along K, 13 of the 2048 outputs change (checked by hand).
  Spec s = conv({1, 1500, 16, 16}, {8, 1500, 1, 1});
  s.wMin = 110;
  s.positive = true;
  s.xLo = 254;
  s.xZero = 254;
  s.biasOffset = -1500 * 118 / 2;
  s.yZero = 128;
  auto b = build(s);
  ASSERT_TRUE(b->group);
  std::string err;
  auto k = IntegerKernel::create(*b->group, err);
  Tensor x = randomInput(s, s.x, 5), y, want;
  ASSERT_TRUE(k->run(x, y, err)) << err;
  EXPECT_GE(k->parts(), 3) << k->describe();
  ASSERT_TRUE(reference(*b->group, x, y.shape(), want));
  Diff d = compare(y, want, *b->group);
  EXPECT_EQ(d.diffs, 0) << k->describe() << ": " << d.diffs << " differ, " << d.first;
  EXPECT_GE(d.inside * 10, d.n * 3);
  Spec g;
  g.op = "Gemm";
  g.transB = 1;
  g.x = {4, 3000};
  g.w = {6, 3000};
  g.wMin = 100;
  g.xLo = 200;
  g.yZero = 128;
  check(g, "Gemm K 3000");
}

TEST(IntegerKernel, GemmAndMatMul) {
  for (int64_t transB : {0, 1})
    for (Spec::Bias bias : {Spec::Int32, Spec::Float, Spec::None}) {
      Spec s;
      s.op = "Gemm";
      s.transB = transB;
      s.x = {5, 40};
      s.w = transB ? Shape{24, 40} : Shape{40, 24};
      s.bias = bias;
      s.xZero = 50;
      s.yZero = 128;
      s.seed = unsigned(transB * 3 + int(bias));
      check(s, "Gemm transB " + std::to_string(transB) + " bias " + std::to_string(int(bias)));
    }
  Spec s8;
  s8.op = "Gemm";
  s8.x = {7, 33};
  s8.w = {33, 10};
  s8.signedX = true;
  s8.xLo = -128;
  s8.xHi = 127;
  s8.xZero = 3;
  s8.signedY = true;
  check(s8, "Gemm s8 in, s8 out");
  for (Shape x : {Shape{6, 48}, Shape{2, 5, 48}, Shape{2, 3, 4, 48}}) {
    Spec m;
    m.op = "MatMul";
    m.x = x;
    m.w = {48, 20};
    m.bias = Spec::None;
    m.xZero = 128;
    m.yZero = 128;
    check(m, "MatMul " + rt::shapeStr(x));
  }
}

TEST(IntegerKernel, MatMulIntegerToFloat) {
  // A MatMul no QuantizeLinear reads: float(int32 sum) * x_scale * w_scale,
  // bit for bit, for u8 and s8 activations, per-tensor and per-channel
  // scales, rows of 2-D to 4-D inputs, output channels not a multiple of 8,
  // and full-range weights split into parts without VNNI.
  for (Shape x : {Shape{6, 48}, Shape{2, 5, 48}, Shape{2, 3, 4, 48}})
    for (bool signedX : {false, true}) {
      Spec m;
      m.op = "MatMul";
      m.x = x;
      m.w = {48, 21};
      m.bias = Spec::None;
      m.floatOut = true;
      m.perChannel = !signedX;
      m.signedX = signedX;
      m.xLo = signedX ? -128 : 0;
      m.xHi = signedX ? 127 : 255;
      m.xZero = signedX ? -3 : 131;
      m.seed = unsigned(x.size()) + (signedX ? 10 : 0);
      auto b = build(m);
      ASSERT_TRUE(b->group);
      EXPECT_TRUE(b->group->floatOutput);
      check(m, "MatMul to float " + rt::shapeStr(x) + (signedX ? ", s8" : ""));
    }
}

TEST(IntegerKernel, BatchesShareTheKernel) {
  Spec s = conv({1, 8, 12, 12}, {16, 8, 3, 3});
  s.pads = {1, 1, 1, 1};
  s.xZero = 33;
  s.yZero = 128;
  auto b = build(s);
  ASSERT_TRUE(b->group);
  std::string err;
  auto k = IntegerKernel::create(*b->group, err);
  ASSERT_TRUE(k) << err;
  for (int64_t batch : {1, 64, 1, 64, 2}) {
    Shape x = s.x;
    x[0] = batch;
    expectExact(*b, randomInput(s, x, unsigned(batch * 5)), IntegerKernel::Mode::Auto,
                "batch " + std::to_string(batch), k.get());
  }
}

TEST(IntegerKernel, BadInputFailsCleanly) {
  Spec s = conv({1, 8, 6, 6}, {4, 8, 3, 3});
  s.yZero = 128;
  auto b = build(s);
  ASSERT_TRUE(b->group);
  std::string err;
  auto k = IntegerKernel::create(*b->group, err);
  ASSERT_TRUE(k) << err;
  Tensor y;
  auto fails = [&](const Tensor &x, const std::string &needle) {
    err.clear();
    EXPECT_FALSE(k->run(x, y, err)) << rt::shapeStr(x.shape());
    EXPECT_NE(err.find(needle), std::string::npos) << err;
  };
  fails(Tensor(ElemType::Int8, {1, 8, 6, 6}), "reads uint8 activations, not int8");
  fails(Tensor(ElemType::Float, {1, 8, 6, 6}), "not element type");
  fails(Tensor(ElemType::UInt8, {1, 7, 6, 6}), "does not fit");
  fails(Tensor(ElemType::UInt8, {1, 8, 6}), "does not fit");
  fails(Tensor(ElemType::UInt8, {1, 8, 2, 2}), "larger than the padded input");
  // Still fine afterwards.
  expectExact(*b, randomInput(s, s.x, 1), IntegerKernel::Mode::Auto, "after errors", k.get());
  EXPECT_TRUE(k->run(Tensor(ElemType::UInt8, {0, 8, 6, 6}), y, err)) << err;
  EXPECT_EQ(y.shape(), (Shape{0, 4, 4, 4}));

  Spec g;
  g.op = "Gemm";
  g.x = {2, 10};
  g.w = {10, 3};
  auto gb = build(g);
  ASSERT_TRUE(gb->group);
  auto gk = IntegerKernel::create(*gb->group, err);
  ASSERT_TRUE(gk) << err;
  EXPECT_FALSE(gk->run(Tensor(ElemType::UInt8, {2, 11}), y, err));
  EXPECT_NE(err.find("of size 10"), std::string::npos) << err;
  EXPECT_FALSE(gk->run(Tensor(ElemType::UInt8, {2, 2, 10}), y, err));
  EXPECT_NE(err.find("2-D"), std::string::npos) << err;

  // Not a group at all.
  rt::IntegerGroup none;
  EXPECT_FALSE(IntegerKernel::create(none, err));
  EXPECT_FALSE(err.empty());
}

TEST(IntegerKernel, EffectiveIsaFollowsTheCap) {
  // The capped runs of IntegerKernelIsa check that oneDNN read the cap.
  int isa = int(dnnl::get_effective_cpu_isa());
  std::cout << "[ ISA      ] oneDNN effective ISA 0x" << std::hex << isa << std::dec << "\n";
  const char *cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (!cap)
    return;
  std::string c = cap;
  int limit = c == "SSE41"  ? int(dnnl::cpu_isa::sse41)
              : c == "AVX2" ? int(dnnl::cpu_isa::avx2)
                            : -1;
  if (limit >= 0) {
    EXPECT_EQ(isa & ~limit, 0) << "oneDNN ignored ONEDNN_MAX_CPU_ISA=" << c;
  }
  EXPECT_FALSE(vnniCpu());
}

//===----------------------------------------------------------------------===//
// The shared models, quantized by tpcc
//===----------------------------------------------------------------------===//

const std::string kModels = TPCC_SOURCE_DIR "/../shared/models/";

/// The QDQ models (fashion_cnn and fashion_mbv2, imx500 and tflite), made
/// once per process by `tpcc quantize` on 16 calibration samples, or taken
/// from $TPCC_INTEGER_KERNEL_MODELS (the capped child runs).
struct QdqModels {
  std::string dir, skip;
  bool owned = false;
  std::vector<std::string> files;
  ~QdqModels() {
    if (owned)
      std::filesystem::remove_all(dir);
  }
};

const QdqModels &qdqModels() {
  static QdqModels q = [] {
    QdqModels q;
    std::vector<std::string> names;
    for (const char *m : {"fashion_cnn", "fashion_mbv2"})
      for (const char *p : {"imx500", "tflite"})
        names.push_back(std::string(m) + "." + p + ".onnx");
    if (const char *d = std::getenv("TPCC_INTEGER_KERNEL_MODELS")) {
      q.dir = d;
    } else {
      std::filesystem::path tpcc =
          std::filesystem::read_symlink("/proc/self/exe").parent_path() / "tpcc";
      if (!std::filesystem::exists(kModels + "fashion_mbv2.onnx")) {
        q.skip = "no " + kModels + "fashion_mbv2.onnx";
        return q;
      }
      if (!std::filesystem::exists(tpcc)) {
        q.skip = "no tpcc binary beside the tests (" + tpcc.string() + ")";
        return q;
      }
      llvm::SmallString<128> dir;
      if (llvm::sys::fs::createUniqueDirectory("integer-kernel", dir)) {
        q.skip = "cannot create a temporary directory";
        return q;
      }
      q.dir = std::string(dir);
      q.owned = true;
      Tensor all;
      std::string error;
      if (!rt::readTensorFile(kModels + "fashion_calib_x.npy", all, error) ||
          !rt::writeTensorFile(q.dir + "/calib16.npy", all.rows(0, 16), error)) {
        q.skip = error;
        return q;
      }
      for (const std::string &n : names) {
        std::string model = n.substr(0, n.find('.')), platform = n.substr(n.find('.') + 1);
        platform = platform.substr(0, platform.find('.'));
        std::string cmd = "'" + tpcc.string() + "' quantize --platform " + platform + " --calib '" +
                          q.dir + "/calib16.npy' '" + kModels + model + ".onnx' -o '" + q.dir +
                          "/" + n + "' >'" + q.dir + "/quantize.log' 2>&1";
        if (std::system(cmd.c_str()) != 0) {
          std::ifstream log(q.dir + "/quantize.log");
          q.skip = "";
          ADD_FAILURE() << "tpcc quantize failed: " << cmd << "\n" << log.rdbuf();
          return q;
        }
      }
    }
    for (const std::string &n : names)
      q.files.push_back(q.dir + "/" + n);
    return q;
  }();
  return q;
}

/// One group of a model, with what it read in one run.
struct GroupRun {
  rt::IntegerGroup group;
  Tensor xq;               ///< the quantized activation
  std::vector<Tensor> ins; ///< the float node's inputs (for the float timing)
};

/// Runs `m` on `x` (float run) and records every integer group's inputs.
std::vector<GroupRun> groupRuns(const graph::Model &m, const Tensor &x) {
  std::vector<GroupRun> runs;
  std::map<unsigned, std::vector<std::pair<size_t, int>>> want; // value id -> (run, input)
  for (const auto &n : m.graph.nodes())
    if (auto g = rt::integerGroupOf(*n)) {
      runs.push_back({*g, Tensor(), std::vector<Tensor>(n->inputs.size())});
      want[n->input(0)->producer->input(0)->id].push_back({runs.size() - 1, -1});
      for (size_t i = 0; i < n->inputs.size(); ++i)
        if (n->inputs[i])
          want[n->inputs[i]->id].push_back({runs.size() - 1, int(i)});
    }
  auto observe = [&](const graph::Value &v, const Tensor &t) {
    auto it = want.find(v.id);
    if (it != want.end())
      for (auto [r, i] : it->second)
        (i < 0 ? runs[r].xq : runs[r].ins[size_t(i)]) = t.clone();
  };
  rt::RunOptions opts;
  opts.observe = observe; // a function_ref: the lambda must outlive the run
  test_util::runModel(m, x, opts);
  return runs;
}

/// A QDQ model as ONNX Runtime runs it, after its level-1 rewrites: with the
/// Q/DQ pairs its propagation inserts after MaxPool, Reshape... (tflite, as
/// MCT's, writes none there).
std::unique_ptr<graph::Model> loadQdq(const std::string &file, DiagnosticEngine &diags) {
  auto m = graph::loadModel(file, diags);
  EXPECT_TRUE(m && !diags.hasErrors()) << file;
  if (m && rt::ortLevel1Rewrites(*m))
    EXPECT_TRUE(succeeded(graph::verifyGraph(m->graph, file, diags))) << file;
  return m;
}

Tensor calibration(int64_t batch) {
  Tensor all;
  std::string error;
  EXPECT_TRUE(rt::readTensorFile(kModels + "fashion_calib_x.npy", all, error)) << error;
  return all.rows(0, batch);
}

TEST(IntegerKernelModels, FashionModelsBitExact) {
#if defined(__SANITIZE_ADDRESS__)
  // A minute under ASan; the random groups above exercise the same code.
  GTEST_SKIP() << "numbers, not memory: not again in the sanitizer build";
#endif
  const QdqModels &q = qdqModels();
  if (q.files.empty())
    GTEST_SKIP() << q.skip;
  for (const std::string &file : q.files) {
    SourceManager sm;
    DiagnosticEngine diags(sm);
    auto m = loadQdq(file, diags);
    ASSERT_TRUE(m);
    std::string name = std::filesystem::path(file).filename().string();
    // One kernel per group for both batches (plans per input shape).
    std::map<const graph::Node *, std::unique_ptr<IntegerKernel>> kernels;
    int64_t groups = 0, outputs = 0, split = 0;
    for (int64_t batch : {1, 64}) {
      for (GroupRun &r : groupRuns(*m, calibration(batch))) {
        std::string err, what = name + " " + r.group.node->name + " batch " + std::to_string(batch);
        auto &k = kernels[r.group.node];
        if (!k)
          k = IntegerKernel::create(r.group, err);
        ASSERT_TRUE(k) << what << ": " << err;
        ASSERT_TRUE(r.xq.defined()) << what;
        Tensor got, want, gotFloat, wantFloat;
        ASSERT_TRUE(k->run(r.xq, got, err)) << what << ": " << err;
        ASSERT_TRUE(
            reference(r.group, r.xq, got.shape(), want, rt::IntegerArithmetic::Exact, &wantFloat))
            << what;
        Diff d = compare(got, want, r.group);
        EXPECT_EQ(d.diffs, 0) << what << " (" << k->describe() << "): " << d.diffs << " of " << d.n
                              << " differ, " << d.first;
        ASSERT_TRUE(k->runDequantized(r.xq, gotFloat, err)) << what << ": " << err;
        EXPECT_EQ(std::memcmp(gotFloat.raw(), wantFloat.raw(), wantFloat.bytes()), 0) << what;
        groups += batch == 1;
        outputs += d.n;
        split += batch == 1 && k->parts() > 1;
      }
    }
    EXPECT_GE(groups, 3) << name;
    std::cout << "[ MODEL    ] " << name << ": " << groups << " integer groups (" << split
              << " with split weights), " << outputs << " outputs bit-exact at batch 1 and 64\n";
  }
}

/// Best wall time of `f` over `reps` runs, in microseconds.
template <typename F> double bestMicros(int reps, F f) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(
        best,
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

TEST(IntegerKernelModels, QuantizedShortcutsChangeNoBit) {
  // Integer runs compute a group's QuantizeLinear inside its kernel, skip a
  // DequantizeLinear only kernels read, and look 8-bit element-wise chains
  // up in tables: the outputs equal a run that observes the values these
  // shortcuts leave out (and so takes none of them), bit for bit. (Not every
  // value: that would also unfuse the float convolutions' post-ops, which
  // round differently.)
  const QdqModels &q = qdqModels();
  if (q.files.empty())
    GTEST_SKIP() << q.skip;
  for (const std::string &file : q.files) {
    SourceManager sm;
    DiagnosticEngine diags(sm);
    auto m = loadQdq(file, diags);
    ASSERT_TRUE(m);
    auto ex = rt::Executor::create(*m, diags);
    ASSERT_TRUE(ex);
    rt::RunOptions direct, observed;
    direct.mode = observed.mode = rt::ortMode(rt::IntegerArithmetic::Exact);
    auto observe = [](const graph::Value &, const Tensor &) {};
    observed.observe = observe;
    std::vector<bool> watched(m->graph.values().size(), false);
    for (const auto &n : m->graph.nodes()) {
      if (n->opType == "DequantizeLinear")
        watched[n->outputs[0]->id] = true;
      bool beforeQ = false;
      for (const graph::Value *out : n->outputs)
        for (const graph::Use &u : out ? out->uses : std::vector<graph::Use>())
          beforeQ |= u.node->opType == "QuantizeLinear";
      if (n->opType == "QuantizeLinear" ||
          ((n->opType == "Relu" || n->opType == "Clip") && beforeQ))
        watched[n->input(0)->id] = true;
      if (beforeQ) // a table's element-wise node
        watched[n->outputs[0]->id] = true;
    }
    observed.watched = &watched;
    std::map<std::string, Tensor> feed{{m->graph.inputs()[0]->name, calibration(16)}};
    std::vector<Tensor> a, b;
    ASSERT_TRUE(succeeded(ex->run(feed, a, diags, direct)));
    ASSERT_TRUE(succeeded(ex->run(feed, b, diags, observed)));
    // tpcc eval splits batches of these models (MicroBatch.h): every
    // shortcut computes a sample as in the whole batch.
    auto split = rt::Executor::create(*m, diags);
    ASSERT_TRUE(split);
    rt::MicroBatchRunner runner(*split);
    std::vector<Tensor> c;
    {
      rt::ThreadScope two(2);
      ASSERT_TRUE(succeeded(runner.run(feed, c, diags, direct)));
    }
    EXPECT_GT(runner.lastMicroBatches(), 1) << file << ": " << runner.unsplitReason();
    ASSERT_EQ(a.size(), b.size());
    ASSERT_EQ(a.size(), c.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(0, std::memcmp(a[i].raw(), b[i].raw(), size_t(a[i].numel()) * 4)) << file;
      EXPECT_EQ(0, std::memcmp(a[i].raw(), c[i].raw(), a[i].bytes())) << file << ", split";
    }
    EXPECT_GT(rt::quantizedShortcuts(*ex).quantizeSkipped, 0u) << file;
    // MaxPool, Flatten between equal grids; on tflite (as in MCT 2.4.1) Flatten is
    // no preserving set of its own: it takes the default config and its own grid,
    // and the MaxPools' grids are the ones ORT's propagation carries across them.
    if (file.find("fashion_cnn.imx500") != std::string::npos)
      EXPECT_EQ(rt::quantizedShortcuts(*ex).onCodes, 3u) << file;
    if (file.find("fashion_cnn.tflite") != std::string::npos)
      EXPECT_EQ(rt::quantizedShortcuts(*ex).onCodes, 2u) << file;
    if (file.find("fashion_mbv2.tflite") != std::string::npos) { // its Sigmoids, Muls, Adds
      EXPECT_GT(rt::quantizedShortcuts(*ex).channelsLast, 0u) << file;
      EXPECT_GT(rt::quantizedShortcuts(*ex).tables, rt::quantizedShortcuts(*ex).pairTables) << file;
      EXPECT_GT(rt::quantizedShortcuts(*ex).pairTables, 0u) << file;
    }
  }
}

TEST(IntegerKernelModels, DISABLED_Speed) {
  // The Conv groups of the QDQ fashion_mbv2 models: the kernel against the
  // executor's float Conv and the emulation after it (computeIntegerGroup).
  const QdqModels &q = qdqModels();
  if (q.files.empty())
    GTEST_SKIP() << q.skip;
  rt::KernelFn floatConv = rt::KernelRegistry::get().find("", "Conv");
  for (const std::string &file : q.files) {
    if (file.find("mbv2") == std::string::npos)
      continue;
    SourceManager sm;
    DiagnosticEngine diags(sm);
    auto m = loadQdq(file, diags);
    ASSERT_TRUE(m);
    for (int64_t batch : {1, 64}) {
      double tk = 0, te = 0, tf = 0;
      int convs = 0;
      int reps = batch == 1 ? 50 : 5;
      for (GroupRun &r : groupRuns(*m, calibration(batch))) {
        if (r.group.node->opType != "Conv")
          continue;
        ++convs;
        std::string err;
        auto k = IntegerKernel::create(r.group, err);
        ASSERT_TRUE(k) << err;
        Tensor y;
        ASSERT_TRUE(k->run(r.xq, y, err)) << err;
        double before = tk, beforeF = tf;
        tk += bestMicros(reps, [&] { k->run(r.xq, y, err); });
        std::unique_ptr<rt::NodeState> state;
        auto makeCtx = [&]() {
          auto ctx = std::make_unique<rt::KernelContext>(*r.group.node, 13, state);
          for (Tensor &t : r.ins)
            ctx->inputs.push_back(t.defined() ? &t : nullptr);
          ctx->outputs.resize(1);
          return ctx;
        };
        ASSERT_TRUE(floatConv(*makeCtx()));
        tf += bestMicros(reps, [&] { floatConv(*makeCtx()); });
        auto ctx = makeCtx();
        floatConv(*ctx);
        double e = bestMicros(
            reps, [&] { rt::computeIntegerGroup(r.group, rt::IntegerArithmetic::Exact, *ctx); });
        te += e;
        std::cout << "[ SPEED    ]   " << r.group.node->name << " " << rt::shapeStr(r.xq.shape())
                  << " -> " << rt::shapeStr(y.shape()) << ": " << k->describe() << ": kernel "
                  << (tk - before) << " us, float Conv " << (tf - beforeF) << " us, emulation " << e
                  << " us\n";
      }
      std::cout << "[ SPEED    ] " << std::filesystem::path(file).filename().string() << " batch "
                << batch << ", " << convs << " Conv groups: integer kernel " << tk / 1000
                << " ms, float Conv " << tf / 1000 << " ms, emulation after it " << te / 1000
                << " ms (float + emulation " << (tf + te) / 1000 << " ms: " << (tf + te) / tk
                << "x the kernel)\n";
    }
  }
}

//===----------------------------------------------------------------------===//
// Without VNNI, on any machine
//===----------------------------------------------------------------------===//

TEST(IntegerKernelIsa, ExactWithOneDnnCappedBelowVnni) {
  // The tests above again in child processes with oneDNN capped at AVX2 and
  // at SSE4.1 (it reads the cap at first use): VPMADDUBSW everywhere.
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "numbers, not memory: not again in the sanitizer build";
#endif
  if (std::getenv("ONEDNN_MAX_CPU_ISA") || std::getenv("DNNL_MAX_CPU_ISA"))
    GTEST_SKIP() << "this process is already capped (ctest's unit_isa_avx2 runs the others)";
  const QdqModels &q = qdqModels();
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  llvm::SmallString<128> log;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("integer-kernel-isa", "log", log));
  for (const char *isa : {"AVX2", "SSE41"}) {
    std::string cmd = std::string("ONEDNN_MAX_CPU_ISA=") + isa + " DNNL_MAX_CPU_ISA=" + isa +
                      (q.files.empty() ? "" : " TPCC_INTEGER_KERNEL_MODELS='" + q.dir + "'") +
                      " '" + self + "' --gtest_filter='IntegerKernel.*:IntegerKernelModels.*' >'" +
                      std::string(log) + "' 2>&1";
    int rc = std::system(cmd.c_str());
    std::ifstream in{std::string(log)};
    std::stringstream buf;
    buf << in.rdbuf();
    std::string text = buf.str();
    EXPECT_EQ(rc, 0) << "capped at " << isa << ":\n" << text;
    EXPECT_NE(text.find("[  PASSED  ]"), std::string::npos) << text;
    EXPECT_EQ(text.find("[  FAILED  ]"), std::string::npos) << text;
    std::cout << "[ CAPPED   ] " << isa << ": child run passed\n";
  }
  llvm::sys::fs::remove(log);
}

} // namespace

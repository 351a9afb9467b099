//===- LookupTableTest.cpp - 8-bit element-wise chains as lookups ----------===//
#include "runtime/ort/LookupTable.h"
#include "ir/graph/OnnxIO.h"
#include "runtime/Executor.h"
#include "runtime/Simd.h"
#include "runtime/ort/OrtMode.h"
#include "test/unit/GraphBuilder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace tpcc;
using tpcc::test::GraphBuilder;

namespace {

/// x -> Q -> DQ -> a;  `other` -> Q -> DQ -> b;  Add(a, b) -> Q -> DQ -> y,
/// with `other` Relu(x) (the same shape) or ReduceMean(x) over H, W (a
/// [1,4,1,1] tensor: broadcast). Also Sigmoid(a) -> Q -> DQ -> z. Codes
/// uint8, or int8 when `isSigned`.
std::unique_ptr<graph::Model> model(bool broadcast, bool isSigned, DiagnosticEngine &diags) {
  GraphBuilder b;
  b.input("x");
  b.output("y");
  b.output("z");
  b.constant("s1", {}, 0.05f);
  b.constant("s2", {}, 0.03f);
  b.constant("s3", {}, 0.07f);
  b.constant("s4", {}, 1.f / 256);
  int off = isSigned ? -128 : 0;
  b.zeroPoint("z1", 128 + off, isSigned);
  b.zeroPoint("z2", 10 + off, isSigned);
  b.zeroPoint("z3", 100 + off, isSigned);
  b.zeroPoint("z4", 0 + off, isSigned);
  b.node("QuantizeLinear", "qx", {"x", "s1", "z1"}, {"xq"});
  b.node("DequantizeLinear", "dqx", {"xq", "s1", "z1"}, {"a"});
  if (broadcast) {
    auto *r = b.node("ReduceMean", "mean", {"x"}, {"o"});
    auto *axes = r->add_attribute();
    axes->set_name("axes");
    axes->set_type(onnx::AttributeProto::INTS);
    axes->add_ints(2);
    axes->add_ints(3);
  } else {
    b.node("Relu", "relu", {"x"}, {"o"});
  }
  b.node("QuantizeLinear", "qo", {"o", "s2", "z2"}, {"oq"});
  b.node("DequantizeLinear", "dqo", {"oq", "s2", "z2"}, {"bv"});
  b.node("Add", "add", {"a", "bv"}, {"sum"});
  b.node("QuantizeLinear", "qs", {"sum", "s3", "z3"}, {"sq"});
  b.node("DequantizeLinear", "dqs", {"sq", "s3", "z3"}, {"y"});
  b.node("Sigmoid", "sig", {"a"}, {"g"});
  b.node("QuantizeLinear", "qg", {"g", "s4", "z4"}, {"gq"});
  b.node("DequantizeLinear", "dqg", {"gq", "s4", "z4"}, {"z"});
  return graph::loadModelFromBuffer(b.bytes(), "m.onnx", ".", diags);
}

/// A [1, 4, 4, 4] input, normal around 0.
rt::Tensor randomX(unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 2.f);
  rt::Tensor x(graph::ElemType::Float, {1, 4, 4, 4});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = dist(rng);
  return x;
}

/// Runs `m` on `x` with integer kernels and as the float model its QDQ graph
/// defines, and expects the same bits from both (and some spread in the
/// first output: the graph computes something). The executor, for its
/// counters.
std::unique_ptr<rt::Executor> expectSameBits(const graph::Model &m, const rt::Tensor &x,
                                             size_t outputs, const std::string &what) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto ex = rt::Executor::create(m, diags);
  if (!ex) {
    ADD_FAILURE() << what << ": no executor";
    return nullptr;
  }
  rt::RunOptions integer, emulated;
  integer.mode = rt::ortMode(rt::IntegerArithmetic::Exact);
  emulated.mode = rt::ortMode(rt::IntegerArithmetic::Float);
  std::vector<rt::Tensor> a, b;
  EXPECT_TRUE(succeeded(ex->run({{"x", x}}, a, diags, integer))) << what;
  EXPECT_TRUE(succeeded(ex->run({{"x", x}}, b, diags, emulated))) << what;
  EXPECT_EQ(a.size(), outputs) << what;
  if (a.size() != outputs || b.size() != outputs)
    return ex;
  for (size_t k = 0; k < outputs; ++k) {
    EXPECT_EQ(a[k].shape(), b[k].shape()) << what;
    if (a[k].shape() == b[k].shape()) {
      EXPECT_EQ(0, std::memcmp(a[k].raw(), b[k].raw(), size_t(a[k].numel()) * 4))
          << what << ", output " << k;
    }
  }
  const float *y = a[0].data<float>();
  EXPECT_NE(*std::min_element(y, y + a[0].numel()), *std::max_element(y, y + a[0].numel())) << what;
  return ex;
}

} // namespace

TEST(LookupTable, ChainsGiveTheFloatRunsBits) {
  // An integer run computes the Add and the Sigmoid chains as table lookups
  // (a broadcast Add as the model says: its shapes differ) and gives the
  // same bits as the float run of the QDQ model.
  rt::Tensor x = randomX(7);
  for (int variant = 0; variant < 4; ++variant) {
    bool broadcast = variant & 1, isSigned = variant & 2;
    SourceManager sm;
    DiagnosticEngine diags(sm);
    auto m = model(broadcast, isSigned, diags);
    ASSERT_TRUE(m) << "the test graph does not load";
    auto ex = expectSameBits(
        *m, x, 2, std::string(broadcast ? "broadcast " : "") + (isSigned ? "int8" : "uint8"));
    ASSERT_TRUE(ex);
    EXPECT_EQ(rt::quantizedShortcuts(*ex).tables, 2u);
    EXPECT_EQ(rt::quantizedShortcuts(*ex).pairTables, 1u);
  }
}

TEST(LookupTable, EveryVectorPathLooksUpTheSameBytes) {
  // applyTable's SSE2, AVX2 and AVX-512 VBMI loops (those the CPU has), on
  // lengths around their widths, against the definition.
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> unary(256), pair(65536 + rt::kPairTablePadding);
  for (uint8_t &v : unary)
    v = uint8_t(byte(rng));
  for (uint8_t &v : pair)
    v = uint8_t(byte(rng));
  for (int64_t n : {0, 1, 7, 8, 31, 32, 33, 63, 64, 65, 200, 4099}) {
    rt::Tensor x(graph::ElemType::UInt8, {n}), x2(graph::ElemType::UInt8, {n});
    for (int64_t i = 0; i < n; ++i) {
      x.data<uint8_t>()[i] = uint8_t(byte(rng));
      x2.data<uint8_t>()[i] = uint8_t(byte(rng));
    }
    for (rt::SimdLevel level :
         {rt::SimdLevel::Sse2, rt::SimdLevel::Avx2, rt::SimdLevel::Avx512Vbmi}) {
      rt::SimdLevel was = rt::limitSimd(level);
      rt::Tensor y, y2;
      rt::applyTable(x, nullptr, unary, graph::ElemType::UInt8, y);
      rt::applyTable(x, &x2, pair, graph::ElemType::Int8, y2);
      rt::limitSimd(was);
      ASSERT_EQ(y.numel(), n);
      ASSERT_EQ(y2.elem(), graph::ElemType::Int8);
      for (int64_t i = 0; i < n; ++i) {
        uint8_t a = x.data<uint8_t>()[i], b = x2.data<uint8_t>()[i];
        ASSERT_EQ(y.data<uint8_t>()[i], unary[a])
            << "unary, " << n << " bytes, element " << i << ", level " << int(level);
        ASSERT_EQ(y2.data<uint8_t>()[i], pair[size_t(a) | size_t(b) << 8])
            << "pair, " << n << " bytes, element " << i << ", level " << int(level);
      }
    }
  }
}

TEST(LookupTable, MaxPoolRunsOnTheCodesOfOneGrid) {
  // DequantizeLinear -> MaxPool (3x3, pads 1) -> QuantizeLinear on the same
  // grid runs on the 8-bit codes; on another scale it does not. Either way
  // the integer run gives the float run's bits.
  rt::Tensor x = randomX(5);
  for (bool isSigned : {false, true}) {
    GraphBuilder b;
    b.input("x");
    b.output("y");
    b.output("z");
    b.constant("s1", {}, 0.05f);
    b.constant("s2", {}, 0.06f);
    b.zeroPoint("z1", isSigned ? -20 : 100, isSigned);
    b.node("QuantizeLinear", "qx", {"x", "s1", "z1"}, {"xq"});
    b.node("DequantizeLinear", "dqx", {"xq", "s1", "z1"}, {"a"});
    for (const char *branch : {"y", "z"}) {
      std::string p = branch;
      auto *pool = b.node("MaxPool", "pool" + p, {"a"}, {"m" + p});
      for (const char *attr : {"kernel_shape", "pads"}) {
        auto *a = pool->add_attribute();
        a->set_name(attr);
        a->set_type(onnx::AttributeProto::INTS);
        for (int k = 0; k < (attr[0] == 'k' ? 2 : 4); ++k)
          a->add_ints(attr[0] == 'k' ? 3 : 1);
      }
      std::string scale = p == "y" ? "s1" : "s2";
      b.node("QuantizeLinear", "q" + p, {"m" + p, scale, "z1"}, {"mq" + p});
      b.node("DequantizeLinear", "dq" + p, {"mq" + p, scale, "z1"}, {p});
    }
    SourceManager sm;
    DiagnosticEngine diags(sm);
    auto m = graph::loadModelFromBuffer(b.bytes(), "m.onnx", ".", diags);
    ASSERT_TRUE(m) << "the test graph does not load";
    auto ex = expectSameBits(*m, x, 2, isSigned ? "int8" : "uint8");
    ASSERT_TRUE(ex);
    EXPECT_EQ(rt::quantizedShortcuts(*ex).onCodes, 1u) << (isSigned ? "int8" : "uint8");
  }
}

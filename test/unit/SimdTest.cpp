//===- SimdTest.cpp - Every vector loop gives the SSE2 loop's bytes --------===//
#include "runtime/Simd.h"
#include "ir/graph/OnnxIO.h"
#include "runtime/Executor.h"
#include "test/unit/GraphBuilder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>

using namespace tpcc;
using tpcc::test::GraphBuilder;

TEST(Simd, QuantizeLinearLoopsAgree) {
  // QuantizeLinear's float loop at every level the CPU has: the same codes
  // for values on and between half steps and out of range both ways (the
  // executor refuses NaN inputs).
  GraphBuilder b;
  b.input("x", 64);
  b.output("y", 64);
  b.constant("s", {}, 0.25f);
  b.zeroPoint("z", 7, true);
  b.node("QuantizeLinear", "q", {"x", "s", "z"}, {"y"});
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto m = graph::loadModelFromBuffer(b.bytes(), "m.onnx", ".", diags);
  ASSERT_TRUE(m);
  auto ex = rt::Executor::create(*m, diags);
  ASSERT_TRUE(ex);
  rt::Tensor x(graph::ElemType::Float, {1, 64, 4, 4});
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> halfSteps(-1200, 1200);
  float *p = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i)
    p[i] = float(halfSteps(rng)) * 0.125f + (i % 3 == 0 ? 0.01f : 0.f);
  p[6] = 1e30f;
  p[7] = -1e30f;
  std::vector<rt::Tensor> want, got;
  rt::SimdLevel was = rt::limitSimd(rt::SimdLevel::Sse2);
  ASSERT_TRUE(succeeded(ex->run({{"x", x}}, want, diags)));
  rt::limitSimd(was);
  ASSERT_TRUE(succeeded(ex->run({{"x", x}}, got, diags)));
  ASSERT_EQ(want.size(), 1u);
  ASSERT_EQ(got[0].bytes(), want[0].bytes());
  EXPECT_EQ(0, std::memcmp(got[0].raw(), want[0].raw(), want[0].bytes()));
  const int8_t *q = want[0].data<int8_t>();
  EXPECT_EQ(q[6], 127); // saturated
  EXPECT_EQ(q[7], -128);
}

//===- ResizeSimdTest.cpp - Resize's AVX2 passes keep the scalar bits -------===//
//
// Linear and cubic Resize run their passes with AVX2 (gathers along the last
// axis, rows combined eight lanes at a time) where the CPU has it. The
// arithmetic must be the scalar loop's, operation for operation: up and
// down, by whole and fractional factors, with and without AVX2, the bytes
// agree (the scalar loop itself is checked against the ONNX backend data).
//
//===----------------------------------------------------------------------===//
#include "ir/graph/OnnxIO.h"
#include "runtime/Executor.h"
#include "runtime/Simd.h"
#include "test/unit/GraphBuilder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace tpcc;

namespace {

/// x[1,3,13,21] -> Resize(mode, sizes) -> y.
std::string resizeGraph(const char *mode, std::vector<int64_t> sizes) {
  onnx::ModelProto m = test::emptyModel();
  auto *g = m.mutable_graph();
  test::typedValue(g->add_input(), "x", {1, 3, 13, 21});
  test::typedValue(g->add_output(), "y", sizes);
  test::int64Initializer(*g, "sizes", sizes);
  auto *n = g->add_node();
  n->set_op_type("Resize");
  n->add_input("x");
  n->add_input("");
  n->add_input("");
  n->add_input("sizes");
  n->add_output("y");
  auto *a = n->add_attribute();
  a->set_name("mode");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(mode);
  return m.SerializeAsString();
}

std::vector<uint8_t> run(const std::string &bytes, const rt::Tensor &x) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto m = graph::loadModelFromBuffer(bytes, "r.onnx", ".", diags);
  EXPECT_TRUE(m);
  if (!m)
    return {};
  auto ex = rt::Executor::create(*m, diags);
  EXPECT_TRUE(ex);
  std::vector<rt::Tensor> out;
  if (!ex || failed(ex->run({{"x", x}}, out, diags)))
    return {};
  auto *p = static_cast<const uint8_t *>(out[0].raw());
  return std::vector<uint8_t>(p, p + out[0].bytes());
}

} // namespace

TEST(ResizeSimd, AvxPassesGiveTheScalarBits) {
  rt::Tensor x(graph::ElemType::Float, {1, 3, 13, 21});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] =
        std::sin(0.37f * float(i)) * float(1 + i % 11) - (i % 17 == 0 ? 0.f : 0.3f);
  x.data<float>()[5] = -0.f;
  for (const char *mode : {"linear", "cubic"})
    for (std::vector<int64_t> sizes : {std::vector<int64_t>{1, 3, 26, 42},
                                       {1, 3, 40, 67},
                                       {1, 3, 7, 9},
                                       {1, 3, 13, 5},
                                       {1, 3, 31, 21}}) {
      rt::SimdLevel before = rt::limitSimd(rt::SimdLevel::Sse2);
      std::vector<uint8_t> scalar = run(resizeGraph(mode, sizes), x);
      rt::limitSimd(before);
      std::vector<uint8_t> simd = run(resizeGraph(mode, sizes), x);
      ASSERT_FALSE(scalar.empty());
      EXPECT_EQ(scalar, simd) << mode << " to " << sizes[2] << " x " << sizes[3];
    }
}

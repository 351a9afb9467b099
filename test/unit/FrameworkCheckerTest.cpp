//===- FrameworkCheckerTest.cpp - Tests of framework checking -------------===//
//
// Weight slots, op lists and ranges of `framework` declarations: the IR they
// produce and Rule 12 (op names, input indices, predicates) with the exact
// location of every diagnostic.
//
//===----------------------------------------------------------------------===//
#include "passes/Internal.h"
#include "test/unit/TestUtil.h"

#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

using namespace tpcc;

namespace {

using Diags = std::vector<std::string>;

class FrameworkCheckerTest : public ::testing::Test {
protected:
  /// Parses `text` and checks its frameworks; returns the diagnostics as
  /// "LINE:COL: severity: message" (notes indented).
  Diags check(llvm::StringRef text) {
    ast::File *file = parseBuffer(c, "test.tpc", text);
    EXPECT_FALSE(c.diags.hasErrors()) << "the test input does not parse";
    for (ast::TopDecl *d : file->decls)
      if (auto *f = llvm::dyn_cast<ast::FrameworkDecl>(d))
        frameworks.push_back(passes::checkFramework(c, *f));
    return test_util::renderDiagnostics(c);
  }

  /// On failure, shows the diagnostics with their source lines and carets.
  void TearDown() override {
    if (HasFailure())
      test_util::printDiagnostics(c);
  }

  Compilation c;
  std::vector<ir::Framework> frameworks;
};

TEST_F(FrameworkCheckerTest, StandardLibraryFramework) {
  std::string path = std::string(TPCC_STDLIB_SOURCE_DIR) + "/onnx.tpc";
  auto buf = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(bool(buf)) << path;
  EXPECT_EQ(check((*buf)->getBuffer()), Diags{});
  ASSERT_EQ(frameworks.size(), 1u);
  const ir::Framework &fw = frameworks[0];
  EXPECT_EQ(fw.name, "onnx");

  ASSERT_EQ(fw.weights.size(), 8u);
  const ir::WeightSlot &conv = fw.weights[0];
  EXPECT_EQ(conv.slot, "kernel");
  EXPECT_EQ(conv.op, "Conv");
  EXPECT_EQ(conv.input, 1);
  EXPECT_EQ(conv.outAxis, std::optional<int64_t>(0));
  EXPECT_EQ(conv.inAxis, std::optional<int64_t>(1));
  EXPECT_FALSE(conv.where);

  const ir::WeightSlot &gemm = fw.weights[2];
  EXPECT_EQ(gemm.op, "Gemm");
  ASSERT_TRUE(gemm.where);
  EXPECT_EQ(gemm.where->kind, ir::Predicate::Kind::Cmp);
  EXPECT_EQ(gemm.where->lhs.attr, "transB");
  EXPECT_EQ(gemm.where->rhs.literal.i, 1);
  EXPECT_EQ(gemm.outAxis, std::optional<int64_t>(0));

  const ir::WeightSlot &matmul = fw.weights[4];
  EXPECT_EQ(matmul.op, "MatMul");
  EXPECT_EQ(matmul.outAxis, std::optional<int64_t>(-1));
  EXPECT_EQ(matmul.inAxis, std::optional<int64_t>(-2));

  const ir::WeightSlot &bias = fw.weights[5];
  EXPECT_EQ(bias.slot, "bias");
  EXPECT_EQ(bias.op, "Conv");
  EXPECT_EQ(bias.input, 2);
  EXPECT_FALSE(bias.outAxis);
  EXPECT_FALSE(bias.inAxis);

  EXPECT_EQ(fw.activationOps.size(), 20u);
  EXPECT_EQ(fw.activationOps.front(), "Relu");
  EXPECT_EQ(fw.noQuantizeOps.size(), 19u);
  EXPECT_EQ(fw.noQuantizeOps.front(), "Shape");

  ASSERT_EQ(fw.ranges.size(), 8u);
  EXPECT_EQ(fw.ranges[4].op, "Tanh");
  EXPECT_EQ(fw.ranges[4].lo, -1);
  EXPECT_EQ(fw.ranges[4].hi, 1);
  EXPECT_EQ(fw.ranges[6].op, "Relu");
  EXPECT_TRUE(std::isinf(fw.ranges[6].hi) && fw.ranges[6].hi > 0);
}

TEST_F(FrameworkCheckerTest, WeightSlotErrors) {
  Diags d = check(R"(framework onnx {
  weight kernel: Cnv.input[1], Conv.input[3], Conv.input[-1] axes(out: 0, inn: 1),
                 Gemm.input[1] where transb == 1 axes(out: 0, out: 1),
                 MatMul.input[1] where input[5] == 0
})");
  EXPECT_EQ(d, (Diags{
                   "2:18: error: no ONNX operator is named `Cnv`; did you "
                   "mean `Conv`?",
                   "2:43: error: `input[3]` is out of range: ONNX operator "
                   "`Conv` takes at most 3 inputs",
                   "2:58: error: input index must not be negative, found -1",
                   "2:75: error: unknown axis `inn`; expected `out` or `in`",
                   "3:38: error: ONNX operator `Gemm` has no attribute "
                   "`transb`; did you mean `transB`?",
                   "3:63: error: axis `out` is given twice",
                   "  3:55: note: previous definition is here",
                   "4:46: error: `input[5]` is out of range: ONNX operator "
                   "`MatMul` takes at most 2 inputs",
               }));
}

TEST_F(FrameworkCheckerTest, DuplicateSlotsAndBindings) {
  Diags d = check(R"(framework onnx {
  weight kernel: Conv.input[1], Gemm.input[1] where transB == 1, Gemm.input[1] where transB == 0
  weight bias: Conv.input[2], Conv.input[1]
  weight kernel: MatMul.input[1]
})");
  EXPECT_EQ(d, (Diags{
                   "3:31: error: `Conv.input[1]` is listed twice",
                   "  2:18: note: `Conv.input[1]` is listed here",
                   "4:10: error: redefinition of `kernel`",
                   "  2:10: note: previous definition is here",
               }));
  // Bindings distinguished by predicates are fine; the IR keeps every binding.
  ASSERT_EQ(frameworks.size(), 1u);
  EXPECT_EQ(frameworks[0].weights.size(), 6u);
}

TEST_F(FrameworkCheckerTest, OpLists) {
  Diags d = check(R"(framework onnx {
  activation Relu, Clip, Relu, Sigmod
  no_quantize Shape, Clip
  activation Tanh, Shape, Tanh
})");
  EXPECT_EQ(d, (Diags{
                   "2:26: error: `Relu` is listed twice",
                   "  2:14: note: `Relu` is listed here",
                   "2:32: error: no ONNX operator is named `Sigmod`; did you "
                   "mean `Sigmoid`?",
                   "3:22: error: `Clip` is listed both in `activation` and in "
                   "`no_quantize`",
                   "  2:20: note: `Clip` is listed here",
                   "4:20: error: `Shape` is listed both in `activation` and in "
                   "`no_quantize`",
                   "  3:15: note: `Shape` is listed here",
                   "4:27: error: `Tanh` is listed twice",
                   "  4:14: note: `Tanh` is listed here",
               }));
  ASSERT_EQ(frameworks.size(), 1u);
  EXPECT_EQ(frameworks[0].activationOps, (std::vector<std::string>{"Relu", "Clip", "Tanh"}));
  EXPECT_EQ(frameworks[0].noQuantizeOps, (std::vector<std::string>{"Shape"}));
}

TEST_F(FrameworkCheckerTest, Ranges) {
  Diags d = check(R"(framework onnx {
  range Sigmoid [0, 1]
  range Relu [0, inf]
  range Elu [-inf, inf]
  range Tanh [1, -1]
  range Softmax ["0", 1]
  range HardSigmoid [0, 2^-1]
  range Sigmoid [0, 0.5]
  range Sigmoidd [0, 1]
  range Softsign [-1.5, none]
  range Exp [0.5, 0.5]
})");
  EXPECT_EQ(d, (Diags{
                   "5:15: error: range [1, -1] is empty",
                   "6:18: error: a range bound is a number, `inf` or `-inf`; "
                   "found a string",
                   "8:9: error: the output range of `Sigmoid` is given twice",
                   "  2:9: note: previous definition is here",
                   "9:9: error: no ONNX operator is named `Sigmoidd`; did you "
                   "mean `Sigmoid`?",
                   "10:25: error: a range bound is a number, `inf` or `-inf`; "
                   "found `none`",
               }));
  ASSERT_EQ(frameworks.size(), 1u);
  const std::vector<ir::OpRange> &ranges = frameworks[0].ranges;
  ASSERT_EQ(ranges.size(), 5u);
  EXPECT_EQ(ranges[2].op, "Elu");
  EXPECT_TRUE(std::isinf(ranges[2].lo) && ranges[2].lo < 0);
  EXPECT_EQ(ranges[3].op, "HardSigmoid");
  EXPECT_EQ(ranges[3].hi, 0.5);
  EXPECT_EQ(ranges[4].op, "Exp");
  EXPECT_EQ(ranges[4].lo, ranges[4].hi);
}

} // namespace

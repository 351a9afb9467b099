//===- CapabilitiesCheckerTest.cpp - Tests of capabilities checking -------===//
//
// Rules 2, 12 and 14 on `capabilities` declarations, and the predicate IR
// they produce. The platforms these tests bind are made into IR by a small
// stand-in below (only opset names and whether they have options matter
// here); platform resolution itself is tested elsewhere.
//
//===----------------------------------------------------------------------===//
#include "passes/Internal.h"
#include "test/unit/TestUtil.h"

#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <iostream>

using namespace tpcc;

namespace {

class CapabilitiesCheckerTest : public ::testing::Test {
protected:
  /// Parses `text`, resolves its platforms' opsets and checks every
  /// framework and capabilities declaration (and Rule 14 when `rule14`);
  /// returns the diagnostics as "LINE:COL: severity: message" (notes
  /// indented).
  std::vector<std::string> check(llvm::StringRef text, bool rule14 = false) {
    ast::File *file = parseBuffer(c, "test.tpc", text);
    EXPECT_FALSE(c.diags.hasErrors()) << "the test input does not parse";
    for (ast::TopDecl *d : file->decls)
      names.decls.emplace(d->name.name, d);
    for (ast::TopDecl *d : file->decls)
      if (auto *p = llvm::dyn_cast<ast::PlatformDecl>(d))
        module.platforms.push_back(opsetsOf(*p));
    for (ast::TopDecl *d : file->decls)
      if (auto *f = llvm::dyn_cast<ast::FrameworkDecl>(d))
        module.frameworks.push_back(passes::checkFramework(c, *f));
    for (ast::TopDecl *d : file->decls)
      if (auto *caps = llvm::dyn_cast<ast::CapabilitiesDecl>(d)) {
        // A parent is declared before its children in these inputs.
        const ir::Capabilities *parent = nullptr;
        for (const ir::Capabilities &m : module.capabilities)
          if (caps->parent && m.name == caps->parent->name)
            parent = &m;
        module.capabilities.push_back(passes::checkCapabilities(c, *caps, names, module, parent));
      }
    if (rule14)
      passes::checkNeverMatches(c, module);
    return render();
  }

  /// The capabilities binding of `opset` to `op` (the first one).
  const ir::OpBinding *binding(llvm::StringRef opset, llvm::StringRef op) {
    for (const ir::Capabilities &caps : module.capabilities)
      for (const ir::OpBinding &b : caps.bindings)
        if (b.opset == opset && b.op == op)
          return &b;
    return nullptr;
  }

  /// On failure, shows the diagnostics with their source lines and carets.
  void TearDown() override {
    if (HasFailure())
      test_util::printDiagnostics(c);
  }

  Compilation c;
  passes::TopLevelNames names;
  ir::Module module;

private:
  /// Stand-in for platform resolution: the opsets of `p` (and its parents),
  /// each with a one-config options when it has options.
  ir::Platform opsetsOf(const ast::PlatformDecl &p) {
    ir::Platform platform;
    platform.name = p.name.name;
    platform.loc = p.name.range;
    if (p.parent)
      if (auto *parent = llvm::dyn_cast_or_null<ast::PlatformDecl>(names.lookup(p.parent->name)))
        platform.opsets = opsetsOf(*parent).opsets;
    for (ast::PlatformItem *item : p.items)
      if (auto *o = llvm::dyn_cast<ast::OpsetDecl>(item))
        for (const ast::Ident &name : o->names) {
          ir::Opset opset;
          opset.name = name.name;
          opset.loc = name.range;
          if (o->options) {
            opset.options.emplace();
            opset.options->configs.emplace_back();
          }
          platform.opsets.push_back(std::move(opset));
        }
    return platform;
  }

  std::vector<std::string> render() { return test_util::renderDiagnostics(c); }
};

using Diags = std::vector<std::string>;

// A platform and a framework most tests bind.
const char *const prelude = R"(platform chip {
  config a8 = { activation: { bits: 8 } }
  default [a8]
  opset Conv, FullyConnected : [a8]
  opset AnyReLU, Add, Misc
  group Acts = AnyReLU | Add
}
framework onnx { activation Relu }
)";

std::string withPrelude(llvm::StringRef caps) { return std::string(prelude) + caps.str(); }

//===----------------------------------------------------------------------===//
// Valid input and the IR
//===----------------------------------------------------------------------===//

TEST_F(CapabilitiesCheckerTest, ValidCapabilities) {
  Diags d = check(withPrelude(R"(capabilities caps = chip on onnx {
  Conv <- Conv, ConvTranspose
  FullyConnected <- Gemm where transB == 1, MatMul where const(input[1])
  AnyReLU <- Relu, Clip where input[1] == 0 and input[2] != none
  Add <- Add
})"));
  EXPECT_EQ(d, Diags{});
  ASSERT_EQ(module.capabilities.size(), 1u);
  const ir::Capabilities &caps = module.capabilities[0];
  EXPECT_EQ(caps.name, "caps");
  EXPECT_EQ(caps.platform, "chip");
  EXPECT_EQ(caps.framework, "onnx");
  ASSERT_EQ(caps.bindings.size(), 7u);
  EXPECT_EQ(caps.bindings[0].opset, "Conv");
  EXPECT_EQ(caps.bindings[0].op, "Conv");
  EXPECT_FALSE(caps.bindings[0].where);
  EXPECT_EQ(caps.bindings[1].op, "ConvTranspose");

  const ir::OpBinding *gemm = binding("FullyConnected", "Gemm");
  ASSERT_NE(gemm, nullptr);
  ASSERT_TRUE(gemm->where);
  EXPECT_EQ(gemm->where->kind, ir::Predicate::Kind::Cmp);
  EXPECT_EQ(gemm->where->op, ir::CmpOp::Eq);
  EXPECT_EQ(gemm->where->lhs.kind, ir::Operand::Kind::Attr);
  EXPECT_EQ(gemm->where->lhs.attr, "transB");
  EXPECT_EQ(gemm->where->rhs.kind, ir::Operand::Kind::Literal);
  EXPECT_EQ(gemm->where->rhs.literal.kind, ir::Literal::Kind::Int);
  EXPECT_EQ(gemm->where->rhs.literal.i, 1);

  const ir::OpBinding *matmul = binding("FullyConnected", "MatMul");
  ASSERT_NE(matmul, nullptr);
  ASSERT_TRUE(matmul->where);
  EXPECT_EQ(matmul->where->kind, ir::Predicate::Kind::Const);
  EXPECT_EQ(matmul->where->index, 1);

  const ir::OpBinding *clip = binding("AnyReLU", "Clip");
  ASSERT_NE(clip, nullptr);
  ASSERT_TRUE(clip->where);
  EXPECT_EQ(clip->where->kind, ir::Predicate::Kind::And);
  ASSERT_EQ(clip->where->children.size(), 2u);
  const ir::Predicate &second = clip->where->children[1];
  EXPECT_EQ(second.op, ir::CmpOp::Ne);
  EXPECT_EQ(second.lhs.kind, ir::Operand::Kind::Input);
  EXPECT_EQ(second.lhs.index, 2);
  EXPECT_EQ(second.rhs.literal.kind, ir::Literal::Kind::None);

  // The binding's location is the op reference, `where` included.
  LineCol lc = c.sources.getLineCol(gemm->loc.begin);
  EXPECT_EQ(lc.line, 11u);
  EXPECT_EQ(lc.col, 21u);
}

TEST_F(CapabilitiesCheckerTest, SameOpInTwoOpsetsIsNotAnError) {
  // Rule 13 is decided per node at plan time.
  Diags d = check(withPrelude(R"(capabilities caps = chip on onnx {
  Conv <- Conv
  FullyConnected <- Conv, Gemm
  AnyReLU <- LeakyRelu where alpha == 1, LeakyRelu
})"));
  EXPECT_EQ(d, Diags{});
  EXPECT_EQ(module.capabilities[0].bindings.size(), 5u);
}

TEST_F(CapabilitiesCheckerTest, PredicateStructure) {
  Diags d = check(withPrelude(R"(capabilities caps = chip on onnx {
  Conv <- Conv where not not group == 1, ConvTranspose where not group == 1
  FullyConnected <- Gemm where transA == 0 or transB == 1 or has(alpha)
  Misc <- Pad where mode in ["constant", "reflect"],
          Resize where rank(input[0]) == 4 and shape(input[0])[-1] >= 2,
          Gather where (axis == 0 or axis == 1) and not (axis == 2),
          Relu where 2^4 > 2^-2
})"));
  EXPECT_EQ(d, Diags{});

  // An even number of `not`s cancels out; an odd number is one `Not`.
  const ir::OpBinding *conv = binding("Conv", "Conv");
  ASSERT_TRUE(conv && conv->where);
  EXPECT_EQ(conv->where->kind, ir::Predicate::Kind::Cmp);
  const ir::OpBinding *convT = binding("Conv", "ConvTranspose");
  ASSERT_TRUE(convT && convT->where);
  EXPECT_EQ(convT->where->kind, ir::Predicate::Kind::Not);
  ASSERT_EQ(convT->where->children.size(), 1u);
  EXPECT_EQ(convT->where->children[0].kind, ir::Predicate::Kind::Cmp);

  // `or` chains stay flat.
  const ir::OpBinding *gemm = binding("FullyConnected", "Gemm");
  ASSERT_TRUE(gemm && gemm->where);
  EXPECT_EQ(gemm->where->kind, ir::Predicate::Kind::Or);
  ASSERT_EQ(gemm->where->children.size(), 3u);
  EXPECT_EQ(gemm->where->children[2].kind, ir::Predicate::Kind::Has);
  EXPECT_EQ(gemm->where->children[2].attr, "alpha");

  const ir::OpBinding *pad = binding("Misc", "Pad");
  ASSERT_TRUE(pad && pad->where);
  EXPECT_EQ(pad->where->kind, ir::Predicate::Kind::In);
  EXPECT_EQ(pad->where->lhs.attr, "mode");
  ASSERT_EQ(pad->where->list.size(), 2u);
  EXPECT_EQ(pad->where->list[1].kind, ir::Literal::Kind::String);
  EXPECT_EQ(pad->where->list[1].s, "reflect");

  const ir::OpBinding *resize = binding("Misc", "Resize");
  ASSERT_TRUE(resize && resize->where);
  ASSERT_EQ(resize->where->children.size(), 2u);
  EXPECT_EQ(resize->where->children[0].lhs.kind, ir::Operand::Kind::Rank);
  const ir::Operand &shape = resize->where->children[1].lhs;
  EXPECT_EQ(shape.kind, ir::Operand::Kind::Shape);
  EXPECT_EQ(shape.index, 0);
  EXPECT_EQ(shape.dim, -1);
  EXPECT_EQ(resize->where->children[1].op, ir::CmpOp::Ge);

  const ir::OpBinding *gather = binding("Misc", "Gather");
  ASSERT_TRUE(gather && gather->where);
  EXPECT_EQ(gather->where->kind, ir::Predicate::Kind::And);
  ASSERT_EQ(gather->where->children.size(), 2u);
  EXPECT_EQ(gather->where->children[0].kind, ir::Predicate::Kind::Or);
  EXPECT_EQ(gather->where->children[1].kind, ir::Predicate::Kind::Not);

  // Whole powers of two are integers; negative ones are not.
  const ir::OpBinding *relu = binding("Misc", "Relu");
  ASSERT_TRUE(relu && relu->where);
  EXPECT_EQ(relu->where->lhs.literal.kind, ir::Literal::Kind::Int);
  EXPECT_EQ(relu->where->lhs.literal.i, 16);
  EXPECT_EQ(relu->where->rhs.literal.kind, ir::Literal::Kind::Float);
  EXPECT_DOUBLE_EQ(relu->where->rhs.literal.f, 0.25);
}

//===----------------------------------------------------------------------===//
// Rule 2: the platform and the framework
//===----------------------------------------------------------------------===//

TEST_F(CapabilitiesCheckerTest, UndefinedPlatformAndFramework) {
  Diags d = check(withPrelude(R"(capabilities caps = chp on onx {
  Conv <- Cnv
})"));
  EXPECT_EQ(d, (Diags{
                   "9:21: error: use of undefined platform `chp`; did you "
                   "mean `chip`?",
                   "9:28: error: use of undefined framework `onx`; did you "
                   "mean `onnx`?",
                   // The ops are still checked.
                   "10:11: error: no ONNX operator is named `Cnv`; did you "
                   "mean `Conv`?",
               }));
}

TEST_F(CapabilitiesCheckerTest, NameOfAnotherKind) {
  Diags d = check(withPrelude(R"(capabilities caps = onnx on chip {
  Conv <- Conv
})"));
  EXPECT_EQ(d, (Diags{
                   "9:21: error: `onnx` is a framework, but a platform is "
                   "expected here",
                   "  8:11: note: `onnx` is declared here",
                   "9:29: error: `chip` is a platform, but a framework is "
                   "expected here",
                   "  1:10: note: `chip` is declared here",
               }));
}

//===----------------------------------------------------------------------===//
// Rule 12
//===----------------------------------------------------------------------===//

TEST_F(CapabilitiesCheckerTest, UnknownOpset) {
  Diags d = check(withPrelude(R"(capabilities caps = chip on onnx {
  Conv <- Conv
  FullyConected <- Gemm
  Nothing <- Relu
  Acts <- Relu
})"),
                  /*rule14=*/true);
  EXPECT_EQ(d, (Diags{
                   "11:3: error: platform `chip` has no opset `FullyConected`; "
                   "did you mean `FullyConnected`?",
                   "12:3: error: platform `chip` has no opset `Nothing`",
                   "13:3: error: `Acts` is a group, but an opset is expected "
                   "here",
                   "  6:9: note: `Acts` is declared here",
                   // FullyConnected is not bound (its binding is misspelt).
                   "4:15: warning: opset `FullyConnected` has options but no "
                   "binding of capabilities `caps` covers it; it never matches",
                   "  9:14: note: `caps` is declared here",
               }));
}

TEST_F(CapabilitiesCheckerTest, InheritedOpsetsAndGroups) {
  Diags d = check(withPrelude(R"(platform child extends chip {
  opset Extra
}
capabilities caps = child on onnx {
  Conv <- Conv
  FullyConnected <- Gemm
  Extra <- Relu
  Acts <- Add
})"));
  EXPECT_EQ(d, (Diags{
                   "16:3: error: `Acts` is a group, but an opset is expected "
                   "here",
                   "  6:9: note: `Acts` is declared here",
               }));
}

TEST_F(CapabilitiesCheckerTest, UnknownOp) {
  Diags d = check(withPrelude(R"(capabilities caps = chip on onnx {
  Conv <- Conv, conv, Convolution, HardSwsh
  FullyConnected <- Gemm
})"));
  EXPECT_EQ(d, (Diags{
                   "10:17: error: no ONNX operator is named `conv`; did you "
                   "mean `Conv`?",
                   "10:23: error: no ONNX operator is named `Convolution`",
                   "10:36: error: no ONNX operator is named `HardSwsh`; did "
                   "you mean `HardSwish`?",
               }));
}

TEST_F(CapabilitiesCheckerTest, UnknownAttribute) {
  Diags d = check(withPrelude(R"(capabilities caps = chip on onnx {
  Conv <- Conv where grop == 1 or has(kernel_shap), Relu where has(alpha)
  FullyConnected <- Gemm where transb == 1
})"));
  EXPECT_EQ(d, (Diags{
                   "10:22: error: ONNX operator `Conv` has no attribute "
                   "`grop`; did you mean `group`?",
                   "10:39: error: ONNX operator `Conv` has no attribute "
                   "`kernel_shap`; did you mean `kernel_shape`?",
                   "10:68: error: ONNX operator `Relu` has no attribute "
                   "`alpha`",
                   "11:32: error: ONNX operator `Gemm` has no attribute "
                   "`transb`; did you mean `transB`?",
               }));
}

TEST_F(CapabilitiesCheckerTest, InputIndices) {
  Diags d = check(withPrelude(R"(capabilities caps = chip on onnx {
  Conv <- Conv where const(input[3]), Conv where rank(input[-1]) == 4
  FullyConnected <- Gemm where shape(input[7])[0] == 1, MatMul where input[2] == 0
  Misc <- Clip where input[2] == 6 and input[3] == 0, Concat where input[40] == 0
})"));
  EXPECT_EQ(d, (Diags{
                   "10:34: error: `input[3]` is out of range: ONNX operator "
                   "`Conv` takes at most 3 inputs",
                   "10:61: error: input index must not be negative, found -1",
                   "11:44: error: `input[7]` is out of range: ONNX operator "
                   "`Gemm` takes at most 3 inputs",
                   "11:76: error: `input[2]` is out of range: ONNX operator "
                   "`MatMul` takes at most 2 inputs",
                   "12:46: error: `input[3]` is out of range: ONNX operator "
                   "`Clip` takes at most 3 inputs",
               }));
}

TEST_F(CapabilitiesCheckerTest, LiteralTypes) {
  Diags d = check(withPrelude(R"(capabilities caps = chip on onnx {
  Conv <- Conv where group == "1", Conv where auto_pad == 1, Conv where group == 1.5
  FullyConnected <- Gemm where alpha == 1 and beta != 0.5 and transB == true
  Misc <- Conv where kernel_shape == 3, Conv where kernel_shape == [1.5, 1],
          Conv where kernel_shape == [1, 1] or kernel_shape != [] or auto_pad == "SAME_UPPER",
          Constant where value == none or value != 0,
          Cast where to == 1 or to == "FLOAT"
})"));
  EXPECT_EQ(d, (Diags{
                   "10:31: error: attribute `group` of `Conv` is an integer; "
                   "it cannot be compared with a string",
                   "10:59: error: attribute `auto_pad` of `Conv` is a string; "
                   "it cannot be compared with an integer",
                   "10:82: error: attribute `group` of `Conv` is an integer; "
                   "it cannot be compared with a decimal number",
                   "11:73: error: attribute `transB` of `Gemm` is an integer; "
                   "it cannot be compared with a boolean",
                   "12:38: error: attribute `kernel_shape` of `Conv` is a list "
                   "of integers; it cannot be compared with an integer",
                   "12:68: error: attribute `kernel_shape` of `Conv` is a list "
                   "of integers; it cannot be compared with a list of numbers",
                   "14:52: error: attribute `value` of `Constant` is a tensor; "
                   "it cannot be compared with an integer",
               }));
}

TEST_F(CapabilitiesCheckerTest, LiteralOnTheLeft) {
  Diags d = check(withPrelude(R"(capabilities caps = chip on onnx {
  Conv <- Conv where 1 == group, Conv where "x" == group
})"));
  EXPECT_EQ(d, (Diags{
                   "10:45: error: attribute `group` of `Conv` is an integer; "
                   "it cannot be compared with a string",
               }));
}

TEST_F(CapabilitiesCheckerTest, OperandTypes) {
  Diags d = check(withPrelude(R"(capabilities caps = chip on onnx {
  Conv <- Conv where rank(input[0]) == "4", Conv where shape(input[1])[0] == group,
          Conv where rank(input[1]) == auto_pad, Conv where input[1] == [1, 2],
          Conv where input[1] == "x" or input[2] == 0.5 or input[1] == true
})"));
  EXPECT_EQ(d, (Diags{
                   "10:40: error: `rank(input[0])` is an integer; it cannot be "
                   "compared with a string",
                   "11:40: error: `rank(input[1])` is an integer; it cannot be "
                   "compared with a string",
                   "11:73: error: `input[1]` is a scalar input value; it "
                   "cannot be compared with a list of integers",
               }));
}

TEST_F(CapabilitiesCheckerTest, OrderedComparisons) {
  Diags d = check(withPrelude(R"(capabilities caps = chip on onnx {
  Conv <- Conv where group > 1 and auto_pad < "x", Conv where kernel_shape >= [1, 1]
  FullyConnected <- Gemm where alpha <= 1 and transB > 0.5, MatMul where input[1] < "a"
})"));
  EXPECT_EQ(d, (Diags{
                   "10:36: error: `<` compares numbers, but `auto_pad` is a "
                   "string",
                   "10:47: error: `<` compares numbers, but `\"x\"` is a string",
                   "10:63: error: `>=` compares numbers, but `kernel_shape` is "
                   "a list of integers",
                   "10:79: error: `>=` compares numbers, but `[1, 1]` is a "
                   "list of integers",
                   "11:56: error: attribute `transB` of `Gemm` is an integer; "
                   "it cannot be compared with a decimal number",
                   "11:85: error: `<` compares numbers, but `\"a\"` is a string",
               }));
}

TEST_F(CapabilitiesCheckerTest, NoneComparisons) {
  Diags d = check(withPrelude(R"(capabilities caps = chip on onnx {
  Conv <- Conv where group == none or none != auto_pad or kernel_shape == none
  FullyConnected <- Gemm where alpha < none, Gemm where none >= input[2],
                    MatMul where none in [1]
})"));
  EXPECT_EQ(d, (Diags{
                   "11:40: error: only `==` and `!=` compare with `none`",
                   "11:57: error: only `==` and `!=` compare with `none`",
                   "12:34: error: only `==` and `!=` compare with `none`",
               }));
}

TEST_F(CapabilitiesCheckerTest, InLists) {
  Diags d = check(withPrelude(R"(capabilities caps = chip on onnx {
  Conv <- Conv where auto_pad in ["VALID", 1], Conv where group in [1, 2.5, none],
          Conv where kernel_shape in [1], Conv where [1] in [1],
          Conv where input[1] in [1, "a", true] or rank(input[0]) in [3, "4"]
})"));
  EXPECT_EQ(d, (Diags{
                   "10:44: error: attribute `auto_pad` of `Conv` is a string; "
                   "it cannot be compared with an integer",
                   "10:72: error: attribute `group` of `Conv` is an integer; "
                   "it cannot be compared with a decimal number",
                   "11:22: error: `in` tests a single value, but "
                   "`kernel_shape` is a list of integers",
                   "11:54: error: `in` tests a single value, but `[1]` is a "
                   "list",
                   "12:74: error: `rank(input[0])` is an integer; it cannot be "
                   "compared with a string",
               }));
}

TEST_F(CapabilitiesCheckerTest, ListLiterals) {
  Diags d = check(withPrelude(R"(capabilities caps = chip on onnx {
  Conv <- Conv where kernel_shape == [1, "a"], Conv where kernel_shape == [1, none]
  Misc <- Upsample where scales == [1, 2.5], Pad where pads != [], RNN where activations == ["Tanh"],
          RNN where activations == [1]
})"));
  EXPECT_EQ(d, (Diags{
                   "10:42: error: a list literal cannot mix numbers and strings",
                   "10:79: error: `none` cannot be an element of a list; "
                   "compare the whole operand with `none`",
                   "12:36: error: attribute `activations` of `RNN` is a list "
                   "of strings; it cannot be compared with a list of integers",
               }));
}

TEST_F(CapabilitiesCheckerTest, AttributeWithSeveralTypes) {
  // Cast's `to` was a STRING in Cast-1 and is an INT since.
  Diags d = check(withPrelude(R"(capabilities caps = chip on onnx {
  Misc <- Cast where to == 1, Cast where to == "FLOAT", Cast where to == [1]
})"));
  EXPECT_EQ(d, (Diags{
                   "10:74: error: attribute `to` of `Cast` is an integer or a "
                   "string; it cannot be compared with a list of integers",
               }));
}

TEST_F(CapabilitiesCheckerTest, UnknownOpSkipsSchemaChecks) {
  // Only the sign of an index can be checked without a schema.
  Diags d = check(withPrelude(R"(capabilities caps = chip on onnx {
  Conv <- Cnv where grop == "x" and input[9] == 1 and rank(input[-2]) == 4
})"));
  EXPECT_EQ(d, (Diags{
                   "10:11: error: no ONNX operator is named `Cnv`; did you "
                   "mean `Conv`?",
                   "10:66: error: input index must not be negative, found -2",
               }));
}

//===----------------------------------------------------------------------===//
// Rule 14
//===----------------------------------------------------------------------===//

TEST_F(CapabilitiesCheckerTest, NeverMatches) {
  Diags d = check(withPrelude(R"(capabilities caps = chip on onnx {
  AnyReLU <- Relu
}
capabilities other = chip on onnx {
  Conv <- Conv
  FullyConnected <- Gemm
})"),
                  /*rule14=*/true);
  // Config-less opsets (AnyReLU, Add, Misc) never warn; each capabilities is
  // checked on its own.
  EXPECT_EQ(d, (Diags{
                   "4:9: warning: opset `Conv` has options but no binding of "
                   "capabilities `caps` covers it; it never matches",
                   "  9:14: note: `caps` is declared here",
                   "4:15: warning: opset `FullyConnected` has options but no "
                   "binding of capabilities `caps` covers it; it never matches",
                   "  9:14: note: `caps` is declared here",
               }));
}

TEST_F(CapabilitiesCheckerTest, UnboundPlatformNeverWarns) {
  Diags d = check(prelude, /*rule14=*/true);
  EXPECT_EQ(d, Diags{});
}

TEST_F(CapabilitiesCheckerTest, StandardLibrary) {
  // The bundled framework and platform bind cleanly.
  auto read = [](const char *name) {
    std::string path = std::string(TPCC_STDLIB_SOURCE_DIR) + "/" + name;
    auto buf = llvm::MemoryBuffer::getFile(path);
    EXPECT_TRUE(bool(buf)) << path;
    return buf ? (*buf)->getBuffer().str() : std::string();
  };
  // stdlib/imx500.tpc declares imx500_onnx (and the variants' capabilities), which
  // bind every opset of the platform.
  std::string text = read("imx500.tpc") + read("onnx.tpc");
  Diags d = check(text, /*rule14=*/true);
  EXPECT_EQ(d, Diags{});
  ASSERT_EQ(module.capabilities.size(), 3u);
  EXPECT_EQ(module.capabilities.at(0).name, "imx500_onnx");
  EXPECT_EQ(module.capabilities.at(0).bindings.size(), 47u);
  // The variants' capabilities extend imx500_onnx: the same bindings.
  EXPECT_EQ(module.capabilities.at(1).bindings.size(), 47u);
  EXPECT_EQ(module.capabilities.at(2).platform, "imx500_pot");
}

} // namespace

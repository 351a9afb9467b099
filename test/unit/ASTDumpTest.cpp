//===- ASTDumpTest.cpp - The textual AST dump (`--emit=ast`) --------------===//
//
// Builds ASTs by hand over a source buffer (ranges located by searching the
// text) and compares the whole dump: tree lines, kinds, inclusive end
// positions in code points, payloads, source order, and null children.
//
//===----------------------------------------------------------------------===//
#include "frontend/AST.h"
#include "frontend/Frontend.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace tpcc;
using namespace tpcc::ast;

namespace {

class ASTDump : public ::testing::Test {
protected:
  void load(std::string text) {
    source = text;
    file.bufferId = sm.addBuffer("test.tpc", std::move(text));
  }

  /// The range of the `nth` occurrence of `needle` in the source.
  SourceRange r(llvm::StringRef needle, unsigned nth = 0) {
    size_t at = 0;
    for (unsigned i = 0;; ++i) {
      at = source.find(needle.str(), at);
      EXPECT_NE(at, std::string::npos) << needle.str();
      if (at == std::string::npos)
        return {};
      if (i == nth)
        break;
      at += 1;
    }
    return {SourceLoc{file.bufferId, static_cast<uint32_t>(at)},
            SourceLoc{file.bufferId, static_cast<uint32_t>(at + needle.size())}};
  }
  /// The range of `needle` inside the first occurrence of `outer`.
  SourceRange in(llvm::StringRef outer, llvm::StringRef needle) {
    SourceRange o = r(outer);
    size_t at = source.find(needle.str(), o.begin.offset);
    EXPECT_NE(at, std::string::npos) << needle.str();
    return {SourceLoc{file.bufferId, static_cast<uint32_t>(at)},
            SourceLoc{file.bufferId, static_cast<uint32_t>(at + needle.size())}};
  }
  /// From the start of the source to its last `}`.
  SourceRange toLastBrace(llvm::StringRef start) {
    return {r(start).begin, SourceLoc{file.bufferId, static_cast<uint32_t>(source.rfind('}') + 1)}};
  }
  /// From the start of `a` to the end of `b`.
  SourceRange span(llvm::StringRef a, llvm::StringRef b, unsigned nthA = 0, unsigned nthB = 0) {
    return {r(a, nthA).begin, r(b, nthB).end};
  }
  Ident id(llvm::StringRef name, unsigned nth = 0) { return {name.str(), r(name, nth)}; }

  std::string dump() {
    std::string s;
    llvm::raw_string_ostream os(s);
    dumpAST(sm, file, os);
    return os.str();
  }

  SourceManager sm;
  ASTContext ctx;
  File file;
  std::string source;
};

TEST_F(ASTDump, PlatformItems) {
  load("import \"imx500\"\n"
       "platform my_chip extends imx500 {\n"
       "  version 0.1\n"
       "  type \"chip\"\n"
       "  simd_padding true\n"
       "  attr k4 = { bits: 4, method: symmetric }\n"
       "  config c16 = a8 with { activation.bits: 16 }\n"
       "  override opset FullyConnected, Gemm2 : [linear8, c16] base linear8\n"
       "  opset Resize\n"
       "  default lin\n"
       "  group G = A | (B | C)\n"
       "  remove fuse Conv -> G as cg\n"
       "}\n");
  file.imports.push_back(ctx.create<ImportDecl>(r("import \"imx500\""), "imx500", r("\"imx500\"")));

  std::vector<PlatformItem *> items;
  items.push_back(ctx.create<VersionItem>(r("version 0.1"), 0, 1));
  items.push_back(ctx.create<TypeItem>(r("type \"chip\""), "chip"));
  items.push_back(ctx.create<SimdPaddingItem>(r("simd_padding true"), true));

  Field bits{{id("bits")}, ctx.create<IntLit>(in("bits: 4", "4"), 4), r("bits: 4")};
  Field method{{id("method")},
               ctx.create<NameValue>(r("symmetric"), id("symmetric"), std::vector<BlockValue *>{}),
               r("method: symmetric")};
  items.push_back(ctx.create<AttrDecl>(span("attr k4", "symmetric }"), id("k4"),
                                       ctx.create<BlockValue>(r("{ bits: 4, method: symmetric }"),
                                                              std::vector<Field>{bits, method})));

  Field abits{{id("activation", 0), id("bits", 1)},
              ctx.create<IntLit>(in(": 16", "16"), 16),
              r("activation.bits: 16")};
  auto *with = ctx.create<BlockValue>(r("{ activation.bits: 16 }"), std::vector<Field>{abits});
  items.push_back(ctx.create<ConfigDecl>(
      span("config c16", "16 }"), id("c16"),
      ctx.create<NameValue>(span("a8 with", "16 }"), id("a8"), std::vector<BlockValue *>{with})));

  auto *opts = ctx.create<ListOptions>(
      span("[linear8", "base linear8"),
      std::vector<Value *>{
          ctx.create<NameValue>(r("linear8"), id("linear8"), std::vector<BlockValue *>{}),
          ctx.create<NameValue>(r("c16", 1), id("c16", 1), std::vector<BlockValue *>{})},
      id("linear8", 1));
  auto *fc = ctx.create<OpsetDecl>(span("override opset", "base linear8"),
                                   std::vector<Ident>{id("FullyConnected"), id("Gemm2")}, opts);
  fc->isOverride = true;
  items.push_back(fc);
  items.push_back(
      ctx.create<OpsetDecl>(r("opset Resize"), std::vector<Ident>{id("Resize")}, nullptr));
  items.push_back(ctx.create<DefaultDecl>(
      r("default lin"),
      ctx.create<NamedOptions>(in("default lin", "lin"), Ident{"lin", in("default lin", "lin")})));
  items.push_back(ctx.create<GroupDecl>(
      r("group G = A | (B | C)"), id("G"),
      std::vector<SetExpr *>{
          ctx.create<SetName>(r("A"), id("A")),
          ctx.create<SetUnion>(
              r("(B | C)"),
              std::vector<SetExpr *>{
                  ctx.create<SetName>(r("B"), id("B")),
                  ctx.create<SetName>(in("| C", "C"), Ident{"C", in("| C", "C")})})}));
  items.push_back(
      ctx.create<FuseDecl>(r("remove fuse Conv -> G as cg"),
                           std::vector<SetExpr *>{ctx.create<SetName>(r("Conv"), id("Conv")),
                                                  ctx.create<SetName>(r("G", 2), id("G", 2))},
                           nullptr, id("cg"), true));
  file.decls.push_back(
      ctx.create<PlatformDecl>(toLastBrace("platform"), id("my_chip"), id("imx500", 1), items));

  EXPECT_EQ(dump(),
            R"(File "test.tpc"
|-ImportDecl <1:1, 1:15> "imx500"
`-PlatformDecl <2:1, 13:1> my_chip extends imx500
  |-VersionItem <3:3, 3:13> 0.1
  |-TypeItem <4:3, 4:13> "chip"
  |-SimdPaddingItem <5:3, 5:19> true
  |-AttrDecl <6:3, 6:42> k4
  | `-BlockValue <6:13, 6:42>
  |   |-Field <6:15, 6:21> bits
  |   | `-IntLit <6:21, 6:21> 4
  |   `-Field <6:24, 6:40> method
  |     `-NameValue <6:32, 6:40> symmetric
  |-ConfigDecl <7:3, 7:46> c16
  | `-NameValue <7:16, 7:46> a8
  |   `-BlockValue <7:24, 7:46>
  |     `-Field <7:26, 7:44> activation.bits
  |       `-IntLit <7:43, 7:44> 16
  |-OpsetDecl <8:3, 8:68> override FullyConnected, Gemm2
  | `-ListOptions <8:42, 8:68> base linear8
  |   |-NameValue <8:43, 8:49> linear8
  |   `-NameValue <8:52, 8:54> c16
  |-OpsetDecl <9:3, 9:14> Resize
  |-DefaultDecl <10:3, 10:13>
  | `-NamedOptions <10:11, 10:13> lin
  |-GroupDecl <11:3, 11:23> G
  | |-SetName <11:13, 11:13> A
  | `-SetUnion <11:17, 11:23>
  |   |-SetName <11:18, 11:18> B
  |   `-SetName <11:22, 11:22> C
  `-FuseDecl <12:3, 12:29> remove as cg
    |-SetName <12:15, 12:18> Conv
    `-SetName <12:23, 12:23> G
)");
}

TEST_F(ASTDump, Framework) {
  load("framework onnx {\n"
       "  weight kernel: Gemm.input[1] where transB == 1 axes(out: 0, in: 1),\n"
       "                 Conv.input[1]\n"
       "  activation Relu, Clip\n"
       "  no_quantize Shape\n"
       "  range Relu [0, inf]\n"
       "}\n");
  SlotBinding gemm;
  gemm.op = id("Gemm");
  gemm.input = 1;
  gemm.inputRange = r("1", 0);
  gemm.where = ctx.create<CmpPred>(
      r("transB == 1"), ctx.create<AttrOperand>(r("transB"), id("transB")), CmpOp::Eq, r("=="),
      ctx.create<LiteralOperand>(r("1", 1), ctx.create<IntLit>(r("1", 1), 1)));
  gemm.axes = {{id("out"), 0, r("out: 0")}, {id("in"), 1, r("in: 1")}};
  gemm.axesRange = r("axes(out: 0, in: 1)");
  gemm.range = span("Gemm.input", "in: 1)");
  SlotBinding conv;
  conv.op = id("Conv");
  conv.input = 1;
  conv.range = r("Conv.input[1]");
  std::vector<Node *> items = {
      ctx.create<WeightDecl>(span("weight", "Conv.input[1]"), id("kernel"),
                             std::vector<SlotBinding>{gemm, conv}),
      ctx.create<OpListDecl>(r("activation Relu, Clip"), OpListDecl::Activation,
                             std::vector<Ident>{id("Relu"), id("Clip")}),
      ctx.create<OpListDecl>(r("no_quantize Shape"), OpListDecl::NoQuantize,
                             std::vector<Ident>{id("Shape")}),
      ctx.create<RangeDecl>(r("range Relu [0, inf]"), id("Relu", 1),
                            ctx.create<IntLit>(in("[0", "0"), 0),
                            ctx.create<InfLit>(r("inf"), false))};
  file.decls.push_back(ctx.create<FrameworkDecl>(span("framework", "}"), id("onnx"), items));

  EXPECT_EQ(dump(), R"(File "test.tpc"
`-FrameworkDecl <1:1, 7:1> onnx
  |-WeightDecl <2:3, 3:30> kernel
  | |-SlotBinding <2:18, 2:68> Gemm.input[1]
  | | |-CmpPred <2:38, 2:48> '=='
  | | | |-AttrOperand <2:38, 2:43> transB
  | | | `-LiteralOperand <2:48, 2:48>
  | | |   `-IntLit <2:48, 2:48> 1
  | | `-Axes <2:50, 2:68> out: 0, in: 1
  | `-SlotBinding <3:18, 3:30> Conv.input[1]
  |-OpListDecl <4:3, 4:23> activation Relu, Clip
  |-OpListDecl <5:3, 5:19> no_quantize Shape
  `-RangeDecl <6:3, 6:21> Relu
    |-IntLit <6:15, 6:15> 0
    `-InfLit <6:18, 6:20> inf
)");
}

TEST_F(ASTDump, CapabilitiesPredicates) {
  load("capabilities c = p on onnx {\n"
       "  FC <- Gemm, MatMul where not not const(input[1]) and\n"
       "    (rank(input[0]) in [2, 3] or shape(input[0])[1] != -1.5 or\n"
       "     has(alpha) or mode == \"a\\\"b\" or k == [1, 1] or z < 2^-4)\n"
       "}\n");
  auto operand = [&](llvm::StringRef text, Value *v) {
    return ctx.create<LiteralOperand>(r(text), v);
  };
  auto attrOp = [&](llvm::StringRef name) {
    SourceRange at = in(" " + name.str() + " ", name);
    return ctx.create<AttrOperand>(at, Ident{name.str(), at});
  };
  auto *notConst = ctx.create<NotPred>(r("not not const(input[1])"), 2,
                                       ctx.create<ConstPred>(r("const(input[1])"), 1, r("1]")));
  auto *inP = ctx.create<InPred>(
      r("rank(input[0]) in [2, 3]"), ctx.create<RankOperand>(r("rank(input[0])"), 0, r("0]")),
      std::vector<Value *>{ctx.create<IntLit>(r("2"), 2), ctx.create<IntLit>(r("3"), 3)});
  auto *shapeCmp = ctx.create<CmpPred>(
      r("shape(input[0])[1] != -1.5"),
      ctx.create<ShapeOperand>(r("shape(input[0])[1]"), 0, 1, r("0]", 1)), CmpOp::Ne, r("!="),
      operand("-1.5", ctx.create<FloatLit>(r("-1.5"), -1.5, "-1.5")));
  auto *has = ctx.create<HasPred>(r("has(alpha)"), id("alpha"));
  auto *strCmp =
      ctx.create<CmpPred>(r("mode == \"a\\\"b\""), attrOp("mode"), CmpOp::Eq, r("=="),
                          operand("\"a\\\"b\"", ctx.create<StringLit>(r("\"a\\\"b\""), "a\"b")));
  auto *listCmp = ctx.create<CmpPred>(
      r("k == [1, 1]"), attrOp("k"), CmpOp::Eq, r("==", 1),
      ctx.create<ListOperand>(
          r("[1, 1]"), std::vector<Value *>{ctx.create<IntLit>(in("[1, 1]", "1"), 1), nullptr}));
  auto *pow2 = ctx.create<CmpPred>(r("z < 2^-4"), attrOp("z"), CmpOp::Lt, r("<"),
                                   operand("2^-4", ctx.create<Pow2Lit>(r("2^-4"), -4)));
  auto *orP = ctx.create<OrPred>(span("(rank", "2^-4)"),
                                 std::vector<Pred *>{inP, shapeCmp, has, strCmp, listCmp, pow2});
  auto *andP = ctx.create<AndPred>(span("not not", "2^-4)"), std::vector<Pred *>{notConst, orP});
  Binding fc{
      id("FC"),
      {OpRef{id("Gemm"), nullptr, r("Gemm")}, OpRef{id("MatMul"), andP, span("MatMul", "2^-4)")}},
      span("FC <-", "2^-4)")};
  file.decls.push_back(ctx.create<CapabilitiesDecl>(span("capabilities", "}"), id("c"), id("p"),
                                                    id("onnx"), std::nullopt,
                                                    std::vector<Binding>{fc}));

  EXPECT_EQ(dump(), R"(File "test.tpc"
`-CapabilitiesDecl <1:1, 5:1> c = p on onnx
  `-Binding <2:3, 4:61> FC
    |-OpRef <2:9, 2:12> Gemm
    `-OpRef <2:15, 4:61> MatMul
      `-AndPred <2:28, 4:61>
        |-NotPred <2:28, 2:50> not x2
        | `-ConstPred <2:36, 2:50> input[1]
        `-OrPred <3:5, 4:61>
          |-InPred <3:6, 3:29>
          | |-RankOperand <3:6, 3:19> rank(input[0])
          | |-IntLit <3:25, 3:25> 2
          | `-IntLit <3:28, 3:28> 3
          |-CmpPred <3:34, 3:59> '!='
          | |-ShapeOperand <3:34, 3:51> shape(input[0])[1]
          | `-LiteralOperand <3:56, 3:59>
          |   `-FloatLit <3:56, 3:59> -1.5
          |-HasPred <4:6, 4:15> alpha
          |-CmpPred <4:20, 4:33> '=='
          | |-AttrOperand <4:20, 4:23> mode
          | `-LiteralOperand <4:28, 4:33>
          |   `-StringLit <4:28, 4:33> "a\"b"
          |-CmpPred <4:38, 4:48> '=='
          | |-AttrOperand <4:38, 4:38> k
          | `-ListOperand <4:43, 4:48>
          |   |-IntLit <4:44, 4:44> 1
          |   `-<<<NULL>>>
          `-CmpPred <4:53, 4:60> '<'
            |-AttrOperand <4:53, 4:53> z
            `-LiteralOperand <4:57, 4:60>
              `-Pow2Lit <4:57, 4:60> 2^-4
)");
}

TEST_F(ASTDump, RecipeAndSourceOrder) {
  // Imports and declarations are kept apart in ast::File but print in source
  // order.
  load("recipe r extends base { z_threshold: -inf, x: none, y: false, l: [] }\n"
       "import \"onnx\"\n"
       "recipe s { }\n");
  Field zt{{id("z_threshold")}, ctx.create<InfLit>(r("-inf"), true), r("z_threshold: -inf")};
  Field x{{id("x")}, ctx.create<NoneLit>(r("none")), r("x: none")};
  Field y{{id("y")}, ctx.create<BoolLit>(r("false"), false), r("y: false")};
  Field l{{id("l")}, ctx.create<ListValue>(r("[]"), std::vector<Value *>{}), r("l: []")};
  file.decls.push_back(ctx.create<RecipeDecl>(
      span("recipe r", "[] }"), id("r"), id("base"),
      ctx.create<BlockValue>(span("{ z_threshold", "[] }"), std::vector<Field>{zt, x, y, l})));
  file.decls.push_back(
      ctx.create<RecipeDecl>(r("recipe s { }"), id("s"), std::nullopt,
                             ctx.create<BlockValue>(r("{ }"), std::vector<Field>{})));
  file.imports.push_back(ctx.create<ImportDecl>(r("import \"onnx\""), "onnx", r("\"onnx\"")));

  EXPECT_EQ(dump(), R"(File "test.tpc"
|-RecipeDecl <1:1, 1:69> r extends base
| `-BlockValue <1:23, 1:69>
|   |-Field <1:25, 1:41> z_threshold
|   | `-InfLit <1:38, 1:41> -inf
|   |-Field <1:44, 1:50> x
|   | `-NoneLit <1:47, 1:50>
|   |-Field <1:53, 1:60> y
|   | `-BoolLit <1:56, 1:60> false
|   `-Field <1:63, 1:67> l
|     `-ListValue <1:66, 1:67>
|-ImportDecl <2:1, 2:13> "onnx"
`-RecipeDecl <3:1, 3:12> s
  `-BlockValue <3:10, 3:12>
)");
}

TEST_F(ASTDump, RangesCountCodePointsAndEndInclusive) {
  // `é` is two bytes, one column; the end is the last character's column.
  load("platform p {\n  type \"é€\"\n}\n");
  auto *type = ctx.create<TypeItem>(r("type \"é€\""), "é€");
  auto *empty = ctx.create<MetadataItem>(SourceRange(r("type").begin), false);
  auto *invalid = ctx.create<SimdPaddingItem>(SourceRange(), true);
  file.decls.push_back(ctx.create<PlatformDecl>(span("platform", "}"), id("p"), std::nullopt,
                                                std::vector<PlatformItem *>{type, empty, invalid}));
  EXPECT_EQ(dump(), R"(File "test.tpc"
`-PlatformDecl <1:1, 3:1> p
  |-TypeItem <2:3, 2:11> "é€"
  |-MetadataItem <2:3, 2:3> false
  `-SimdPaddingItem <invalid> true
)");
}

TEST_F(ASTDump, NullChildrenAndEmptyFile) {
  load("");
  EXPECT_EQ(dump(), "File \"test.tpc\"\n");
  file.decls.push_back(
      ctx.create<RecipeDecl>(SourceRange(), Ident{"r", {}}, std::nullopt, nullptr));
  EXPECT_EQ(dump(), "File \"test.tpc\"\n"
                    "`-RecipeDecl <invalid> r\n"
                    "  `-<<<NULL>>>\n");
}

TEST_F(ASTDump, Deterministic) {
  load("platform p { }\n");
  file.decls.push_back(ctx.create<PlatformDecl>(r("platform p { }"), id("p"), std::nullopt,
                                                std::vector<PlatformItem *>{}));
  EXPECT_EQ(dump(), dump());
}

} // namespace

//===- ParserTest.cpp - .tpc text to AST ------------------------------------===//
#include "frontend/Frontend.h"

#include <gtest/gtest.h>

using namespace tpcc;
using namespace tpcc::ast;
using llvm::cast;
using llvm::dyn_cast;
using llvm::isa;

namespace {

struct Parsed {
  Compilation c;
  File *file = nullptr;
  explicit Parsed(llvm::StringRef text) { file = parseBuffer(c, "t.tpc", text); }
  std::string text(SourceRange r) {
    return c.sources.getBuffer(r.begin.file).slice(r.begin.offset, r.end.offset).str();
  }
};

TEST(Parser, PlatformItemsAndRanges) {
  Parsed p(R"(platform p extends q {
  version 1.2
  override config c = base with { activation.bits: 16 } with { simd: 64 }
  opset A, B : [c, d with { simd: 32 }] base c
  group G = A | (B | C)
  remove fuse A -> G as pat
})");
  ASSERT_FALSE(p.c.diags.hasErrors());
  ASSERT_EQ(p.file->decls.size(), 1u);
  auto *plat = cast<PlatformDecl>(p.file->decls[0]);
  EXPECT_EQ(plat->name.name, "p");
  ASSERT_TRUE(plat->parent);
  EXPECT_EQ(plat->parent->name, "q");
  ASSERT_EQ(plat->items.size(), 5u);

  auto *v = cast<VersionItem>(plat->items[0]);
  EXPECT_EQ(v->minor, 1);
  EXPECT_EQ(v->patch, 2);

  auto *cfg = cast<ConfigDecl>(plat->items[1]);
  EXPECT_TRUE(cfg->isOverride);
  auto *nv = cast<NameValue>(cfg->value);
  EXPECT_EQ(nv->name.name, "base");
  ASSERT_EQ(nv->withs.size(), 2u);
  EXPECT_EQ(nv->withs[0]->fields[0].keyString(), "activation.bits");
  EXPECT_EQ(p.text(nv->withs[0]->fields[0].range), "activation.bits: 16");
  EXPECT_EQ(cast<IntLit>(nv->withs[1]->fields[0].value)->value, 64);

  auto *op = cast<OpsetDecl>(plat->items[2]);
  ASSERT_EQ(op->names.size(), 2u);
  EXPECT_EQ(p.text(op->names[1].range), "B");
  auto *opts = cast<ListOptions>(op->options);
  ASSERT_EQ(opts->elements.size(), 2u);
  EXPECT_EQ(cast<NameValue>(opts->elements[1])->withs.size(), 1u);
  ASSERT_TRUE(opts->base);
  EXPECT_EQ(opts->base->name, "c");

  auto *g = cast<GroupDecl>(plat->items[3]);
  ASSERT_EQ(g->members.size(), 2u);
  EXPECT_TRUE(isa<SetName>(g->members[0]));
  EXPECT_EQ(cast<SetUnion>(g->members[1])->members.size(), 2u);

  auto *f = cast<FuseDecl>(plat->items[4]);
  EXPECT_TRUE(f->isRemove);
  EXPECT_EQ(f->elements.size(), 2u);
  ASSERT_TRUE(f->asName);
  EXPECT_EQ(f->asName->name, "pat");
}

TEST(Parser, PredicatesAreFlat) {
  Parsed p(R"(capabilities c = p on onnx {
  A <- Conv where group > 1 and a == 1 and b != 2 or not not not has(x),
       Clip where input[1] == 0 and rank(input[0]) >= 3 and shape(input[0])[1] in [1, 2]
  B <- MatMul where const(input[1]) and kernel_shape == [1, 1] and t == none
})");
  ASSERT_FALSE(p.c.diags.hasErrors());
  auto *caps = cast<CapabilitiesDecl>(p.file->decls[0]);
  ASSERT_EQ(caps->bindings.size(), 2u);
  const Binding &a = caps->bindings[0];
  ASSERT_EQ(a.ops.size(), 2u);
  auto *orP = cast<OrPred>(a.ops[0].where);
  ASSERT_EQ(orP->operands.size(), 2u);
  EXPECT_EQ(cast<AndPred>(orP->operands[0])->operands.size(), 3u);
  auto *notP = cast<NotPred>(orP->operands[1]);
  EXPECT_EQ(notP->count, 3u);
  EXPECT_TRUE(isa<HasPred>(notP->operand));

  auto *clip = cast<AndPred>(a.ops[1].where);
  auto *c0 = cast<CmpPred>(clip->operands[0]);
  EXPECT_EQ(cast<InputOperand>(c0->lhs)->index, 1);
  EXPECT_EQ(c0->op, CmpOp::Eq);
  EXPECT_EQ(cast<RankOperand>(cast<CmpPred>(clip->operands[1])->lhs)->index, 0);
  auto *in = cast<InPred>(clip->operands[2]);
  EXPECT_EQ(cast<ShapeOperand>(in->lhs)->dim, 1);
  EXPECT_EQ(in->list.size(), 2u);

  auto *b = cast<AndPred>(caps->bindings[1].ops[0].where);
  EXPECT_EQ(cast<ConstPred>(b->operands[0])->index, 1);
  EXPECT_EQ(cast<ListOperand>(cast<CmpPred>(b->operands[1])->rhs)->elements.size(), 2u);
  auto *none = cast<CmpPred>(b->operands[2]);
  EXPECT_TRUE(isa<NoneLit>(cast<LiteralOperand>(none->rhs)->literal));
}

TEST(Parser, Literals) {
  Parsed p(R"(recipe r { a: -3, b: 0.25, c: 1e-5, d: 2^-16, e: inf, f: -inf,
  g: "x\"y\\z", h: true, i: none, j: [1, 2,], k: { l: 1 } })");
  ASSERT_FALSE(p.c.diags.hasErrors());
  auto &fields = cast<RecipeDecl>(p.file->decls[0])->body->fields;
  ASSERT_EQ(fields.size(), 11u);
  EXPECT_EQ(cast<IntLit>(fields[0].value)->value, -3);
  EXPECT_DOUBLE_EQ(cast<FloatLit>(fields[1].value)->value, 0.25);
  EXPECT_DOUBLE_EQ(cast<FloatLit>(fields[2].value)->value, 1e-5);
  EXPECT_EQ(cast<Pow2Lit>(fields[3].value)->exponent, -16);
  EXPECT_FALSE(cast<InfLit>(fields[4].value)->negative);
  EXPECT_TRUE(cast<InfLit>(fields[5].value)->negative);
  EXPECT_EQ(cast<StringLit>(fields[6].value)->value, "x\"y\\z");
  EXPECT_TRUE(cast<BoolLit>(fields[7].value)->value);
  EXPECT_TRUE(isa<NoneLit>(fields[8].value));
  EXPECT_EQ(cast<ListValue>(fields[9].value)->elements.size(), 2u);
  EXPECT_EQ(cast<BlockValue>(fields[10].value)->fields.size(), 1u);
}

TEST(Parser, FrameworkItems) {
  Parsed p(R"(framework f {
  weight kernel: Conv.input[1] axes(out: 0, in: 1),
                 Gemm.input[1] where transB == 1 axes(out: 0, in: 1)
  weight bias: Conv.input[2]
  activation Relu, Clip
  no_quantize Shape
  range Relu [0, inf]
})");
  ASSERT_FALSE(p.c.diags.hasErrors());
  auto *fw = cast<FrameworkDecl>(p.file->decls[0]);
  ASSERT_EQ(fw->items.size(), 5u);
  auto *w = cast<WeightDecl>(fw->items[0]);
  EXPECT_EQ(w->slot.name, "kernel");
  ASSERT_EQ(w->bindings.size(), 2u);
  EXPECT_EQ(w->bindings[1].input, 1);
  EXPECT_NE(w->bindings[1].where, nullptr);
  EXPECT_EQ(w->bindings[1].axes.size(), 2u);
  EXPECT_EQ(cast<OpListDecl>(fw->items[2])->listKind, OpListDecl::Activation);
  EXPECT_EQ(cast<OpListDecl>(fw->items[3])->listKind, OpListDecl::NoQuantize);
  auto *r = cast<RangeDecl>(fw->items[4]);
  EXPECT_TRUE(isa<InfLit>(r->hi));
}

TEST(Parser, SyntaxErrorsBuildNoAST) {
  Parsed p("platform p { opset }\nplatform q { fuse A -> }\n");
  EXPECT_EQ(p.c.diags.getNumErrors(), 2u);
  EXPECT_TRUE(p.file->decls.empty());
}

TEST(Parser, NestingLimit) {
  std::string deep = "capabilities c = p on onnx { A <- Conv where " + std::string(300, '(') +
                     "a == 1" + std::string(300, ')') + " }";
  Parsed p(deep);
  ASSERT_EQ(p.c.diags.getNumErrors(), 1u);
  EXPECT_NE(p.c.diags.getDiagnostics()[0].message.find("nesting is too deep"), std::string::npos);
}

TEST(Parser, ImportsListedInOrder) {
  Parsed p("import \"a\"\nimport \"./b.tpc\"\nrecipe r {}\n");
  ASSERT_EQ(p.file->imports.size(), 2u);
  EXPECT_EQ(p.file->imports[1]->path, "./b.tpc");
  EXPECT_EQ(p.text(p.file->imports[1]->pathRange), "\"./b.tpc\"");
}

} // namespace

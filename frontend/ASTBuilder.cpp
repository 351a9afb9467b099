//===- ASTBuilder.cpp - Parse tree to AST -----------------------------------===//
//
// Turns a parse tree with no syntax errors into the AST: one method per
// grammar rule, each returning an owned AST node with its source range.
// Literal values are decoded here (integers, decimals, powers of two, string
// escapes), with an error for values out of range.
//
//===----------------------------------------------------------------------===//
#include "frontend/AntlrSupport.h"
#include "frontend/Literals.h"

#include "TpcBaseVisitor.h"
#include "TpcLexer.h"

using namespace tpcc;
using namespace tpcc::ast;
using tpcc::frontend_detail::Locator;
using tpcc_antlr::TpcLexer;
using tpcc_antlr::TpcParser;

namespace {

//===----------------------------------------------------------------------===//
// Parse tree -> AST
//===----------------------------------------------------------------------===//

/// Labeled alternatives are dispatched through the generated visitor (one
/// virtual call) rather than trying dynamic_casts one after another: the
/// visit methods leave their node in `result`.
class ASTBuilder : public tpcc_antlr::TpcBaseVisitor {
public:
  ASTBuilder(Compilation &c, const Locator &loc) : c(c), L(loc) {}

  void buildFile(TpcParser::FileContext *ctx, File &file) {
    for (auto *child : ctx->children) {
      if (auto *imp = dynamic_cast<TpcParser::ImportDeclContext *>(child)) {
        auto *s = imp->STRING();
        file.imports.push_back(
            create<ImportDecl>(L.range(imp), unescape(s->getSymbol()), L.range(s)));
      } else if (auto *top = dynamic_cast<TpcParser::TopDeclContext *>(child)) {
        if (TopDecl *d = buildTop(top))
          file.decls.push_back(d);
      }
    }
  }

private:
  template <typename T, typename... Args> T *create(Args &&...args) {
    return c.astContext.create<T>(std::forward<Args>(args)...);
  }

  Ident ident(TpcParser::NameContext *n) {
    // `name` is always one token; RuleContext::getText() would rebuild it.
    return {n->getStart()->getText(), L.range(n)};
  }
  std::optional<Ident> optIdent(TpcParser::NameContext *n) {
    if (!n)
      return std::nullopt;
    return ident(n);
  }

  std::string unescape(antlr4::Token *t) {
    std::string raw = t->getText();
    std::string out;
    for (size_t i = 1; i + 1 < raw.size(); ++i) {
      if (raw[i] == '\\' && i + 2 < raw.size())
        ++i;
      out += raw[i];
    }
    return out;
  }

  // Literal tokens were validated before parsing (Parser.cpp checkTokens).
  int64_t parseInt(antlr4::Token *t) {
    int64_t v = 0;
    literals::decodeInt(t->getText(), v);
    return v;
  }

  //---- top level ------------------------------------------------------------

  TopDecl *buildTop(TpcParser::TopDeclContext *ctx) {
    if (auto *p = ctx->platformDecl())
      return buildPlatform(p);
    if (auto *f = ctx->frameworkDecl())
      return buildFramework(f);
    if (auto *cap = ctx->capabilitiesDecl())
      return buildCapabilities(cap);
    if (auto *r = ctx->recipeDecl())
      return create<RecipeDecl>(L.range(r), ident(r->name(0)),
                                r->name().size() > 1 ? optIdent(r->name(1)) : std::nullopt,
                                buildBlock(r->block()));
    return nullptr;
  }

  PlatformDecl *buildPlatform(TpcParser::PlatformDeclContext *ctx) {
    std::vector<PlatformItem *> items;
    for (auto *item : ctx->platformItem())
      if (PlatformItem *i = buildPlatformItem(item))
        items.push_back(i);
    return create<PlatformDecl>(L.range(ctx), ident(ctx->name(0)),
                                ctx->name().size() > 1 ? optIdent(ctx->name(1)) : std::nullopt,
                                std::move(items));
  }

  PlatformItem *buildPlatformItem(TpcParser::PlatformItemContext *ctx) {
    result = nullptr;
    ctx->accept(this);
    return static_cast<PlatformItem *>(result);
  }

  template <typename T> PlatformItem *withOverride(T *ctx, PlatformItem *item) {
    item->isOverride = ctx->OVERRIDE() != nullptr;
    return item;
  }

  antlrcpp::Any visitVersionItem(TpcParser::VersionItemContext *v) override {
    result = buildVersion(v);
    return {};
  }
  antlrcpp::Any visitTypeItem(TpcParser::TypeItemContext *t) override {
    result = create<TypeItem>(L.range(t), unescape(t->STRING()->getSymbol()));
    return {};
  }
  antlrcpp::Any visitSimdPaddingItem(TpcParser::SimdPaddingItemContext *s) override {
    result = create<SimdPaddingItem>(L.range(s), s->boolValue()->TRUE() != nullptr);
    return {};
  }
  antlrcpp::Any
  visitPreservingQuantizersItem(TpcParser::PreservingQuantizersItemContext *m) override {
    result = create<PreservingQuantizersItem>(L.range(m), m->boolValue()->TRUE() != nullptr);
    return {};
  }

  antlrcpp::Any visitMetadataItem(TpcParser::MetadataItemContext *m) override {
    result = create<MetadataItem>(L.range(m), m->boolValue()->TRUE() != nullptr);
    return {};
  }
  antlrcpp::Any visitRecipeItem(TpcParser::RecipeItemContext *r) override {
    result = create<RecipeItem>(L.range(r), ident(r->name()));
    return {};
  }
  antlrcpp::Any visitResourcesItem(TpcParser::ResourcesItemContext *r) override {
    result = create<ResourcesItem>(L.range(r), buildBlock(r->block()));
    return {};
  }
  antlrcpp::Any visitAttrItem(TpcParser::AttrItemContext *a) override {
    result = withOverride(
        a, create<AttrDecl>(L.range(a), ident(a->name()), buildValueExpr(a->valueExpr())));
    return {};
  }
  antlrcpp::Any visitConfigItem(TpcParser::ConfigItemContext *cf) override {
    result = withOverride(
        cf, create<ConfigDecl>(L.range(cf), ident(cf->name()), buildValueExpr(cf->valueExpr())));
    return {};
  }
  antlrcpp::Any visitOptionsItem(TpcParser::OptionsItemContext *o) override {
    result = withOverride(
        o, create<OptionsDecl>(L.range(o), ident(o->name()), buildOptions(o->optionsExpr())));
    return {};
  }
  antlrcpp::Any visitDefaultItem(TpcParser::DefaultItemContext *d) override {
    result = withOverride(d, create<DefaultDecl>(L.range(d), buildOptions(d->optionsExpr())));
    return {};
  }
  antlrcpp::Any visitOpsetItem(TpcParser::OpsetItemContext *op) override {
    std::vector<Ident> names;
    for (auto *n : op->name())
      names.push_back(ident(n));
    result = withOverride(
        op, create<OpsetDecl>(L.range(op), std::move(names),
                              op->optionsExpr() ? buildOptions(op->optionsExpr()) : nullptr));
    return {};
  }
  antlrcpp::Any visitGroupItem(TpcParser::GroupItemContext *g) override {
    std::vector<SetExpr *> members;
    for (auto *s : g->setExpr())
      members.push_back(buildSet(s));
    result = withOverride(g, create<GroupDecl>(L.range(g), ident(g->name()), std::move(members)));
    return {};
  }
  antlrcpp::Any visitFuseItem(TpcParser::FuseItemContext *f) override {
    std::vector<SetExpr *> elems;
    for (auto *e : f->fuseElem())
      elems.push_back(buildSet(e->setExpr()));
    Value *config = f->valueExpr() ? buildValueExpr(f->valueExpr()) : nullptr;
    result = create<FuseDecl>(L.range(f), std::move(elems), config, optIdent(f->name()),
                              f->REMOVE() != nullptr);
    return {};
  }

  PlatformItem *buildVersion(TpcParser::VersionItemContext *v) {
    int64_t mi = 0, pa = 0;
    literals::decodeVersion(v->versionValue()->getStart()->getText(), mi, pa);
    return create<VersionItem>(L.range(v), mi, pa);
  }

  //---- values -----------------------------------------------------------------

  Value *buildValueExpr(TpcParser::ValueExprContext *ctx) {
    if (ctx->block().size() && !ctx->name())
      return buildBlock(ctx->block(0));
    std::vector<BlockValue *> withs;
    for (auto *b : ctx->block())
      withs.push_back(buildBlock(b));
    return create<NameValue>(L.range(ctx), ident(ctx->name()), std::move(withs));
  }

  BlockValue *buildBlock(TpcParser::BlockContext *ctx) {
    std::vector<Field> fields;
    for (auto *f : ctx->field()) {
      Field field;
      for (auto *n : f->key()->name())
        field.key.push_back(ident(n));
      field.value = buildValue(f->value());
      field.range = L.range(f);
      fields.push_back(std::move(field));
    }
    return create<BlockValue>(L.range(ctx), std::move(fields));
  }

  Value *buildValue(TpcParser::ValueContext *ctx) {
    result = nullptr;
    ctx->accept(this);
    return static_cast<Value *>(result);
  }
  antlrcpp::Any visitQuantityValue(TpcParser::QuantityValueContext *q) override {
    antlr4::Token *number = q->getStart();
    SourceRange unitRange = q->PERCENT() ? L.range(q->PERCENT()) : L.range(q->name());
    std::string unit = q->PERCENT() ? "%" : ident(q->name()).name;
    result = create<Quantity>(L.range(q), number->getText(), L.range(number), std::move(unit),
                              unitRange);
    return {};
  }
  antlrcpp::Any visitLiteralValue(TpcParser::LiteralValueContext *l) override {
    result = buildLiteral(l->literal());
    return {};
  }
  antlrcpp::Any visitNameValue(TpcParser::NameValueContext *n) override {
    std::vector<BlockValue *> withs;
    for (auto *b : n->block())
      withs.push_back(buildBlock(b));
    result = create<NameValue>(L.range(n), ident(n->name()), std::move(withs));
    return {};
  }
  antlrcpp::Any visitBlockValue(TpcParser::BlockValueContext *b) override {
    result = buildBlock(b->block());
    return {};
  }
  antlrcpp::Any visitListValue(TpcParser::ListValueContext *l) override {
    std::vector<Value *> elems;
    for (auto *v : l->value())
      elems.push_back(buildValue(v));
    result = create<ListValue>(L.range(l), std::move(elems));
    return {};
  }

  Value *buildLiteral(TpcParser::LiteralContext *ctx) {
    antlr4::Token *t = ctx->getStart();
    SourceRange r = L.range(t);
    switch (t->getType()) {
    case TpcLexer::INT:
      return create<IntLit>(r, parseInt(t));
    case TpcLexer::FLOAT: {
      double v = 0;
      literals::decodeFloat(t->getText(), v);
      return create<FloatLit>(r, v, t->getText());
    }
    case TpcLexer::POW2: {
      int exp = 0;
      literals::decodePow2(t->getText(), exp);
      return create<Pow2Lit>(r, exp);
    }
    case TpcLexer::STRING:
      return create<StringLit>(r, unescape(t));
    case TpcLexer::TRUE:
      return create<BoolLit>(r, true);
    case TpcLexer::FALSE:
      return create<BoolLit>(r, false);
    case TpcLexer::NONE:
      return create<NoneLit>(r);
    case TpcLexer::INF:
      return create<InfLit>(r, false);
    default:
      return create<InfLit>(r, true);
    }
  }

  OptionsExpr *buildOptions(TpcParser::OptionsExprContext *ctx) {
    if (ctx->optionsTerm().size() == 1)
      return buildOptionsTerm(ctx->optionsTerm(0));
    std::vector<OptionsExpr *> parts;
    for (auto *t : ctx->optionsTerm())
      parts.push_back(buildOptionsTerm(t));
    return create<ConcatOptions>(L.range(ctx), std::move(parts));
  }

  OptionsExpr *buildOptionsTerm(TpcParser::OptionsTermContext *ctx) {
    if (auto *n = dynamic_cast<TpcParser::NamedOptionsContext *>(ctx)) {
      std::vector<BlockValue *> withs;
      for (auto *b : n->block())
        withs.push_back(buildBlock(b));
      return create<NamedOptions>(L.range(ctx), ident(n->name()), std::move(withs));
    }
    auto *l = dynamic_cast<TpcParser::ListOptionsContext *>(ctx);
    std::vector<Value *> elems;
    for (auto *e : l->optionElem()) {
      if (!e->name()) {
        elems.push_back(buildBlock(e->block(0)));
        continue;
      }
      std::vector<BlockValue *> withs;
      for (auto *b : e->block())
        withs.push_back(buildBlock(b));
      elems.push_back(create<NameValue>(L.range(e), ident(e->name()), std::move(withs)));
    }
    return create<ListOptions>(L.range(ctx), std::move(elems), optIdent(l->name()));
  }

  SetExpr *buildSet(TpcParser::SetExprContext *ctx) {
    if (ctx->name())
      return create<SetName>(L.range(ctx), ident(ctx->name()));
    std::vector<SetExpr *> members;
    for (auto *s : ctx->setExpr())
      members.push_back(buildSet(s));
    return create<SetUnion>(L.range(ctx), std::move(members));
  }

  //---- framework ----------------------------------------------------------------

  FrameworkDecl *buildFramework(TpcParser::FrameworkDeclContext *ctx) {
    std::vector<Node *> items;
    for (auto *item : ctx->frameworkItem()) {
      SourceRange r = L.range(item);
      if (auto *w = dynamic_cast<TpcParser::WeightItemContext *>(item)) {
        std::vector<SlotBinding> bindings;
        for (auto *s : w->slotBinding())
          bindings.push_back(buildSlot(s));
        items.push_back(create<WeightDecl>(r, ident(w->name()), std::move(bindings)));
      } else if (auto *a = dynamic_cast<TpcParser::ActivationItemContext *>(item)) {
        std::vector<Ident> ops;
        for (auto *n : a->name())
          ops.push_back(ident(n));
        items.push_back(create<OpListDecl>(r, OpListDecl::Activation, std::move(ops)));
      } else if (auto *nq = dynamic_cast<TpcParser::NoQuantizeItemContext *>(item)) {
        std::vector<Ident> ops;
        for (auto *n : nq->name())
          ops.push_back(ident(n));
        items.push_back(create<OpListDecl>(r, OpListDecl::NoQuantize, std::move(ops)));
      } else if (auto *rg = dynamic_cast<TpcParser::RangeItemContext *>(item)) {
        items.push_back(create<RangeDecl>(r, ident(rg->name()), buildLiteral(rg->literal(0)),
                                          buildLiteral(rg->literal(1))));
      } else if (auto *cp = dynamic_cast<TpcParser::CompositeItemContext *>(item)) {
        std::vector<Ident> params;
        // With `is OP`, the last name is the operator's.
        size_t end = cp->name().size() - (cp->IS() ? 1 : 0);
        for (size_t i = 1; i < end; ++i)
          params.push_back(ident(cp->name(i)));
        std::optional<Ident> is;
        if (cp->IS())
          is = ident(cp->name(end));
        items.push_back(create<CompositeDecl>(r, ident(cp->name(0)), std::move(params),
                                              buildPattern(cp->pattern()), std::move(is)));
      }
    }
    return create<FrameworkDecl>(L.range(ctx), ident(ctx->name()), std::move(items));
  }

  PatternTerm buildPattern(TpcParser::PatternContext *ctx) {
    PatternTerm t;
    t.termKind = PatternTerm::Op;
    t.name = ident(ctx->name());
    t.range = L.range(ctx);
    for (auto *a : ctx->patternArg()) {
      if (a->pattern()) {
        t.args.push_back(buildPattern(a->pattern()));
        continue;
      }
      PatternTerm arg;
      arg.range = L.range(a);
      if (a->name()) {
        arg.termKind = PatternTerm::Param;
        arg.name = ident(a->name());
      } else {
        arg.termKind = PatternTerm::Number;
        antlr4::Token *tok = a->getStart();
        arg.text = tok->getText();
        if (tok->getType() == TpcLexer::INT)
          arg.number = double(parseInt(tok));
        else
          literals::decodeFloat(tok->getText(), arg.number);
      }
      t.args.push_back(std::move(arg));
    }
    if (ctx->pred())
      t.where = buildPred(ctx->pred());
    return t;
  }

  SlotBinding buildSlot(TpcParser::SlotBindingContext *ctx) {
    SlotBinding s;
    s.op = ident(ctx->name());
    s.input = parseInt(ctx->INT()->getSymbol());
    s.inputRange = L.range(ctx->INT());
    if (ctx->pred())
      s.where = buildPred(ctx->pred());
    if (auto *axes = ctx->axesSpec()) {
      for (auto *a : axes->axisArg())
        s.axes.push_back({ident(a->name()), parseInt(a->INT()->getSymbol()), L.range(a)});
      s.axesRange = L.range(axes);
    }
    s.range = L.range(ctx);
    return s;
  }

  //---- capabilities -------------------------------------------------------------

  CapabilitiesDecl *buildCapabilities(TpcParser::CapabilitiesDeclContext *ctx) {
    std::vector<Binding> bindings;
    for (auto *b : ctx->binding()) {
      Binding binding;
      binding.opset = ident(b->name());
      if (b->OVERRIDE())
        binding.overrideRange = L.range(b->OVERRIDE());
      SourceRange none; // the first `none`
      for (auto *item : b->bindItem()) {
        if (item->NONE()) {
          if (!none.isValid())
            none = L.range(item);
          continue;
        }
        auto *o = item->opRef();
        OpRef ref;
        ref.op = ident(o->name());
        if (o->pred())
          ref.where = buildPred(o->pred());
        ref.range = L.range(o);
        binding.ops.push_back(ref);
      }
      // `none` with ops is the checker's error; the binding is then its ops.
      binding.noneRange = none;
      binding.none = none.isValid() && binding.ops.empty();
      binding.range = L.range(b);
      bindings.push_back(std::move(binding));
    }
    return create<CapabilitiesDecl>(
        L.range(ctx), ident(ctx->name(0)), ident(ctx->name(1)), ident(ctx->name(2)),
        ctx->EXTENDS() ? optIdent(ctx->name(3)) : std::nullopt, std::move(bindings));
  }

  //---- predicates -----------------------------------------------------------------

  Pred *buildPred(TpcParser::PredContext *ctx) {
    std::vector<Pred *> ops;
    for (auto *a : ctx->andPred())
      ops.push_back(buildAnd(a));
    if (ops.size() == 1)
      return ops[0];
    return create<OrPred>(L.range(ctx), std::move(ops));
  }

  Pred *buildAnd(TpcParser::AndPredContext *ctx) {
    std::vector<Pred *> ops;
    for (auto *n : ctx->notPred())
      ops.push_back(buildNot(n));
    if (ops.size() == 1)
      return ops[0];
    return create<AndPred>(L.range(ctx), std::move(ops));
  }

  Pred *buildNot(TpcParser::NotPredContext *ctx) {
    Pred *atom = buildAtom(ctx->atomPred());
    if (ctx->NOT().empty())
      return atom;
    return create<NotPred>(L.range(ctx), ctx->NOT().size(), atom);
  }

  std::pair<int64_t, SourceRange> index(antlr4::tree::TerminalNode *n) {
    return {parseInt(n->getSymbol()), L.range(n)};
  }

  Pred *buildAtom(TpcParser::AtomPredContext *ctx) {
    SourceRange r = L.range(ctx);
    if (auto *p = dynamic_cast<TpcParser::ParenPredContext *>(ctx))
      return buildPred(p->pred());
    if (auto *cp = dynamic_cast<TpcParser::ConstPredContext *>(ctx)) {
      auto [i, ir] = index(cp->INT());
      return create<ConstPred>(r, i, ir);
    }
    if (auto *h = dynamic_cast<TpcParser::HasPredContext *>(ctx))
      return create<HasPred>(r, ident(h->name()));
    if (auto *in = dynamic_cast<TpcParser::InPredContext *>(ctx)) {
      std::vector<Value *> list;
      for (auto *l : in->literal())
        list.push_back(buildLiteral(l));
      return create<InPred>(r, buildOperand(in->operand()), std::move(list));
    }
    auto *cmp = dynamic_cast<TpcParser::CmpPredContext *>(ctx);
    if (cmp->cmpOp().size() > 1)
      c.diags.emit(L.range(cmp->cmpOp(1)), diag::err_comparison_chain);
    auto *opCtx = cmp->cmpOp(0);
    static const std::pair<size_t, CmpOp> ops[] = {
        {TpcLexer::EQ, CmpOp::Eq}, {TpcLexer::NE, CmpOp::Ne}, {TpcLexer::LT, CmpOp::Lt},
        {TpcLexer::LE, CmpOp::Le}, {TpcLexer::GT, CmpOp::Gt}, {TpcLexer::GE, CmpOp::Ge}};
    CmpOp op = CmpOp::Eq;
    for (auto &[tok, o] : ops)
      if (opCtx->getStart()->getType() == tok)
        op = o;
    return create<CmpPred>(r, buildOperand(cmp->operand(0)), op, L.range(opCtx),
                           buildOperand(cmp->operand(1)));
  }

  Operand *buildOperand(TpcParser::OperandContext *ctx) {
    SourceRange r = L.range(ctx);
    if (auto *i = dynamic_cast<TpcParser::InputOperandContext *>(ctx)) {
      auto [idx, ir] = index(i->INT());
      return create<InputOperand>(r, idx, ir);
    }
    if (auto *rk = dynamic_cast<TpcParser::RankOperandContext *>(ctx)) {
      auto [idx, ir] = index(rk->INT());
      return create<RankOperand>(r, idx, ir);
    }
    if (auto *s = dynamic_cast<TpcParser::ShapeOperandContext *>(ctx)) {
      auto [idx, ir] = index(s->INT(0));
      return create<ShapeOperand>(r, idx, parseInt(s->INT(1)->getSymbol()), ir);
    }
    if (auto *l = dynamic_cast<TpcParser::LiteralOperandContext *>(ctx))
      return create<LiteralOperand>(r, buildLiteral(l->literal()));
    if (auto *l = dynamic_cast<TpcParser::ListOperandContext *>(ctx)) {
      std::vector<Value *> elems;
      for (auto *e : l->literal())
        elems.push_back(buildLiteral(e));
      return create<ListOperand>(r, std::move(elems));
    }
    auto *a = dynamic_cast<TpcParser::AttrOperandContext *>(ctx);
    return create<AttrOperand>(r, ident(a->name()));
  }

  Compilation &c;
  const Locator &L;
  Node *result = nullptr;
};

} // namespace

void tpcc::frontend_detail::buildAST(Compilation &c, const Locator &locator,
                                     TpcParser::FileContext *tree, File &file) {
  ASTBuilder(c, locator).buildFile(tree, file);
}

//===- Parser.cpp - .tpc text to AST -------------------------------------===//
//
// Runs the ANTLR-generated lexer and parser over one buffer and turns the
// parse tree into the AST (ASTBuilder below). ANTLR types stay in this file:
// its default error listeners are replaced by ones that forward to our
// diagnostics engine, with our own wording ("expected `}`, found `opset`").
//
// Before parsing, the token stream is checked for lexical errors (bad
// characters, unterminated strings and comments, bad escapes) and for nesting
// deeper than the limit, so that hostile input cannot overflow the stack of
// the recursive-descent parser.
//
//===----------------------------------------------------------------------===//
#include "frontend/Frontend.h"

#include "TpcLexer.h"
#include "TpcBaseVisitor.h"
#include "TpcParser.h"
#include "antlr4-runtime.h"

#include "llvm/ADT/StringExtras.h"

#include <cerrno>
#include <set>
#include <cmath>
#include <cstdlib>

using namespace tpcc;
using namespace tpcc::ast;
using tpcc_antlr::TpcLexer;
using tpcc_antlr::TpcParser;

namespace {

/// Thrown to abandon a parse after too many syntax errors.
struct TooManyErrors {};

/// Maps ANTLR token positions (code points) to our byte locations.
class Locator {
public:
  Locator(const SourceManager &sm, uint32_t file) : sm(sm), file(file) {}
  SourceLoc loc(size_t codePoint) const {
    return sm.getLocForCodePoint(file, codePoint);
  }
  SourceRange range(antlr4::Token *t) const {
    if (t->getType() == antlr4::Token::EOF)
      return SourceRange(loc(t->getStartIndex()));
    return {loc(t->getStartIndex()), loc(t->getStopIndex() + 1)};
  }
  SourceRange range(antlr4::ParserRuleContext *ctx) const {
    antlr4::Token *stop = ctx->getStop() ? ctx->getStop() : ctx->getStart();
    SourceLoc end = stop->getType() == antlr4::Token::EOF
                        ? loc(stop->getStartIndex())
                        : loc(stop->getStopIndex() + 1);
    // An empty rule's stop token precedes its start token.
    if (end < loc(ctx->getStart()->getStartIndex()))
      end = loc(ctx->getStart()->getStartIndex());
    return {loc(ctx->getStart()->getStartIndex()), end};
  }
  SourceRange range(antlr4::tree::TerminalNode *n) const {
    return range(n->getSymbol());
  }

private:
  const SourceManager &sm;
  uint32_t file;
};

/// "`{`", "a name", "end of file" — how the user sees a token type.
std::string describeTokenType(size_t type, const antlr4::dfa::Vocabulary &v) {
  switch (type) {
  case antlr4::Token::EOF:
    return "end of file";
  case TpcLexer::IDENT:
    return "a name";
  case TpcLexer::INT:
    return "an integer";
  case TpcLexer::FLOAT:
    return "a decimal number";
  case TpcLexer::POW2:
    return "a power of two";
  case TpcLexer::STRING:
    return "a string";
  default:
    break;
  }
  std::string lit = v.getLiteralName(type);
  if (lit.size() >= 2 && lit.front() == '\'' && lit.back() == '\'')
    return "`" + lit.substr(1, lit.size() - 2) + "`";
  return v.getDisplayName(type);
}

std::string describeToken(antlr4::Token *t) {
  if (t->getType() == antlr4::Token::EOF)
    return "end of file";
  std::string text = t->getText();
  if (text.size() > 24)
    text = text.substr(0, 21) + "...";
  return "`" + text + "`";
}

bool isNameToken(size_t type) {
  return type == TpcLexer::IDENT ||
         (type >= TpcLexer::IMPORT && type <= TpcLexer::HAS);
}

/// Reports syntax errors through our engine, in our words.
class ErrorStrategy : public antlr4::DefaultErrorStrategy {
public:
  ErrorStrategy(DiagnosticEngine &diags, const Locator &locator,
                unsigned limit)
      : diags(diags), locator(locator), limit(limit) {}
  unsigned numErrors = 0;

protected:
  /// Never recover by deleting a closing bracket: with contextual keywords the
  /// next token often "fits" (`opset }` + `platform q` would read as
  /// `opset platform`), and the errors would cascade.
  antlr4::Token *singleTokenDeletion(antlr4::Parser *p) override {
    size_t t = p->getCurrentToken()->getType();
    if (t == TpcLexer::RBRACE || t == TpcLexer::RPAREN || t == TpcLexer::RBRACK)
      return nullptr;
    return DefaultErrorStrategy::singleTokenDeletion(p);
  }

  void reportNoViableAlternative(antlr4::Parser *p,
                                 const antlr4::NoViableAltException &e) override {
    emit(p, e.getOffendingToken(), e.getExpectedTokens());
  }
  void reportInputMismatch(antlr4::Parser *p,
                           const antlr4::InputMismatchException &e) override {
    emit(p, e.getOffendingToken(), e.getExpectedTokens());
  }
  void reportFailedPredicate(antlr4::Parser *p,
                             const antlr4::FailedPredicateException &e) override {
    emit(p, e.getOffendingToken(), getExpectedTokens(p));
  }
  void reportUnwantedToken(antlr4::Parser *p) override {
    if (inErrorRecoveryMode(p))
      return;
    beginErrorCondition(p);
    emit(p, p->getCurrentToken(), getExpectedTokens(p), /*begun=*/true);
  }
  void reportMissingToken(antlr4::Parser *p) override {
    if (inErrorRecoveryMode(p))
      return;
    beginErrorCondition(p);
    emit(p, p->getCurrentToken(), getExpectedTokens(p), /*begun=*/true);
  }

private:
  void emit(antlr4::Parser *p, antlr4::Token *found,
            const antlr4::misc::IntervalSet &expected, bool begun = false) {
    if (!found)
      found = p->getCurrentToken();
    const antlr4::dfa::Vocabulary &v = p->getVocabulary();
    std::vector<std::string> names;
    std::set<size_t> pending;
    for (ssize_t t : expected.toList())
      pending.insert(static_cast<size_t>(t));
    // Whole families of keywords read better as one phrase.
    auto family = [&](std::initializer_list<size_t> members, size_t need,
                      const char *phrase) {
      size_t have = 0;
      for (size_t m : members)
        have += pending.count(m);
      if (have < need)
        return;
      for (size_t m : members)
        pending.erase(m);
      names.push_back(phrase);
    };
    if (pending.count(TpcLexer::IDENT)) {
      for (size_t t = TpcLexer::IMPORT; t <= TpcLexer::HAS; ++t)
        pending.erase(t);
    }
    family({TpcLexer::VERSION, TpcLexer::TYPE, TpcLexer::SIMD_PADDING,
            TpcLexer::METADATA, TpcLexer::ATTR, TpcLexer::CONFIG,
            TpcLexer::OPTIONS, TpcLexer::DEFAULT, TpcLexer::OPSET,
            TpcLexer::GROUP, TpcLexer::FUSE, TpcLexer::OVERRIDE,
            TpcLexer::REMOVE},
           4, "a platform item (`config`, `opset`, `fuse`, ...)");
    family({TpcLexer::WEIGHT, TpcLexer::ACTIVATION, TpcLexer::NO_QUANTIZE,
            TpcLexer::RANGE},
           3, "a framework item (`weight`, `activation`, `no_quantize`, `range`)");
    family({TpcLexer::IMPORT, TpcLexer::PLATFORM, TpcLexer::FRAMEWORK,
            TpcLexer::CAPABILITIES, TpcLexer::RECIPE},
           3, "a declaration (`import`, `platform`, `framework`, `capabilities`, `recipe`)");
    family({TpcLexer::INT, TpcLexer::FLOAT, TpcLexer::POW2, TpcLexer::STRING,
            TpcLexer::TRUE, TpcLexer::FALSE, TpcLexer::NONE, TpcLexer::INF,
            TpcLexer::NEG_INF},
           6, "a literal");
    // Punctuation first: it is usually what is missing.
    std::vector<std::string> punct, rest;
    for (size_t t : pending) {
      std::string d = describeTokenType(t, v);
      (t >= TpcLexer::ARROW && t <= TpcLexer::BAR ? punct : rest).push_back(d);
    }
    names.insert(names.begin(), punct.begin(), punct.end());
    names.insert(names.end(), rest.begin(), rest.end());
    std::string list;
    const size_t shown = 6;
    for (size_t i = 0; i < names.size() && i < shown; ++i) {
      if (i)
        list += (i + 1 == names.size() || i + 1 == shown) ? " or " : ", ";
      list += names[i];
    }
    if (names.size() > shown)
      list += " (or one of " + std::to_string(names.size() - shown) +
              " more)";
    std::string msg = list.empty()
                          ? "unexpected " + describeToken(found)
                          : "expected " + list + ", found " +
                                describeToken(found);
    diags.emit(locator.range(found), diag::err_syntax, msg);
    if (++numErrors >= limit)
      throw TooManyErrors();
    (void)begun;
  }

  DiagnosticEngine &diags;
  const Locator &locator;
  unsigned limit;
};

/// Forwards anything ANTLR reports outside the strategy (should be nothing).
class ErrorListener : public antlr4::BaseErrorListener {
public:
  ErrorListener(DiagnosticEngine &diags, const Locator &locator)
      : diags(diags), locator(locator) {}
  void syntaxError(antlr4::Recognizer *, antlr4::Token *tok, size_t line,
                   size_t col, const std::string &msg,
                   std::exception_ptr) override {
    if (tok)
      diags.emit(locator.range(tok), diag::err_syntax, msg);
    else
      diags.emit(SourceRange(), diag::err_syntax, msg);
  }

private:
  DiagnosticEngine &diags;
  const Locator &locator;
};

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
        file.imports.push_back(create<ImportDecl>(
            L.range(imp), unescape(s->getSymbol()), L.range(s)));
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

  int64_t parseInt(antlr4::Token *t) {
    std::string text = t->getText();
    errno = 0;
    char *end = nullptr;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (errno == ERANGE || *end) {
      c.diags.emit(L.range(t), diag::err_int_out_of_range, text);
      return 0;
    }
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
      return create<RecipeDecl>(
          L.range(r), ident(r->name(0)),
          r->name().size() > 1 ? optIdent(r->name(1)) : std::nullopt,
          buildBlock(r->block()));
    return nullptr;
  }

  PlatformDecl *buildPlatform(TpcParser::PlatformDeclContext *ctx) {
    std::vector<PlatformItem *> items;
    for (auto *item : ctx->platformItem())
      if (PlatformItem *i = buildPlatformItem(item))
        items.push_back(i);
    return create<PlatformDecl>(
        L.range(ctx), ident(ctx->name(0)),
        ctx->name().size() > 1 ? optIdent(ctx->name(1)) : std::nullopt,
        std::move(items));
  }

  PlatformItem *buildPlatformItem(TpcParser::PlatformItemContext *ctx) {
    result = nullptr;
    ctx->accept(this);
    return static_cast<PlatformItem *>(result);
  }

  template <typename T>
  PlatformItem *withOverride(T *ctx, PlatformItem *item) {
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
  antlrcpp::Any visitMetadataItem(TpcParser::MetadataItemContext *m) override {
    result = create<MetadataItem>(L.range(m), m->boolValue()->TRUE() != nullptr);
    return {};
  }
  antlrcpp::Any visitAttrItem(TpcParser::AttrItemContext *a) override {
    result = withOverride(a, create<AttrDecl>(L.range(a), ident(a->name()),
                                              buildValueExpr(a->valueExpr())));
    return {};
  }
  antlrcpp::Any visitConfigItem(TpcParser::ConfigItemContext *cf) override {
    result = withOverride(cf, create<ConfigDecl>(L.range(cf), ident(cf->name()),
                                                 buildValueExpr(cf->valueExpr())));
    return {};
  }
  antlrcpp::Any visitOptionsItem(TpcParser::OptionsItemContext *o) override {
    result = withOverride(o, create<OptionsDecl>(L.range(o), ident(o->name()),
                                                 buildOptions(o->optionsExpr())));
    return {};
  }
  antlrcpp::Any visitDefaultItem(TpcParser::DefaultItemContext *d) override {
    result = withOverride(
        d, create<DefaultDecl>(L.range(d), buildOptions(d->optionsExpr())));
    return {};
  }
  antlrcpp::Any visitOpsetItem(TpcParser::OpsetItemContext *op) override {
    std::vector<Ident> names;
    for (auto *n : op->name())
      names.push_back(ident(n));
    result = withOverride(
        op, create<OpsetDecl>(L.range(op), std::move(names),
                              op->optionsExpr() ? buildOptions(op->optionsExpr())
                                                : nullptr));
    return {};
  }
  antlrcpp::Any visitGroupItem(TpcParser::GroupItemContext *g) override {
    std::vector<SetExpr *> members;
    for (auto *s : g->setExpr())
      members.push_back(buildSet(s));
    result = withOverride(
        g, create<GroupDecl>(L.range(g), ident(g->name()), std::move(members)));
    return {};
  }
  antlrcpp::Any visitFuseItem(TpcParser::FuseItemContext *f) override {
    std::vector<SetExpr *> elems;
    for (auto *e : f->fuseElem())
      elems.push_back(buildSet(e->setExpr()));
    result = create<FuseDecl>(L.range(f), std::move(elems), optIdent(f->name()),
                              f->REMOVE() != nullptr);
    return {};
  }

  PlatformItem *buildVersion(TpcParser::VersionItemContext *v) {
    antlr4::Token *tok = v->versionValue()->getStart();
    std::string text = tok->getText();
    llvm::StringRef minor, patch;
    std::tie(minor, patch) = llvm::StringRef(text).split('.');
    int64_t mi = 0, pa = 0;
    if (tok->getType() != TpcLexer::FLOAT || minor.getAsInteger(10, mi) ||
        patch.getAsInteger(10, pa) || mi < 0) {
      c.diags.emit(L.range(tok), diag::err_bad_version, text);
      return nullptr;
    }
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
      double v = std::strtod(t->getText().c_str(), nullptr);
      if (!std::isfinite(v)) {
        c.diags.emit(r, diag::err_float_out_of_range, t->getText());
        v = 0;
      }
      return create<FloatLit>(r, v, t->getText());
    }
    case TpcLexer::POW2: {
      std::string text = t->getText();
      auto caret = text.find('^');
      std::string base = text.substr(0, caret);
      int exp = 0;
      if (base != "2") {
        c.diags.emit(r, diag::err_pow2_base, text);
      } else if (llvm::StringRef(text).substr(caret + 1).getAsInteger(10, exp) ||
                 exp < -1074 || exp > 1023) {
        c.diags.emit(r, diag::err_float_out_of_range, text);
        exp = 0;
      }
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
    if (auto *n = dynamic_cast<TpcParser::NamedOptionsContext *>(ctx))
      return create<NamedOptions>(L.range(ctx), ident(n->name()));
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
      elems.push_back(
          create<NameValue>(L.range(e), ident(e->name()), std::move(withs)));
    }
    return create<ListOptions>(L.range(ctx), std::move(elems),
                               optIdent(l->name()));
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
        items.push_back(create<RangeDecl>(r, ident(rg->name()),
                                          buildLiteral(rg->literal(0)),
                                          buildLiteral(rg->literal(1))));
      }
    }
    return create<FrameworkDecl>(L.range(ctx), ident(ctx->name()), std::move(items));
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
        s.axes.push_back(
            {ident(a->name()), parseInt(a->INT()->getSymbol()), L.range(a)});
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
      for (auto *o : b->opRef()) {
        OpRef ref;
        ref.op = ident(o->name());
        if (o->pred())
          ref.where = buildPred(o->pred());
        ref.range = L.range(o);
        binding.ops.push_back(ref);
      }
      binding.range = L.range(b);
      bindings.push_back(std::move(binding));
    }
    return create<CapabilitiesDecl>(L.range(ctx), ident(ctx->name(0)),
                                    ident(ctx->name(1)), ident(ctx->name(2)),
                                    std::move(bindings));
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
        {TpcLexer::EQ, CmpOp::Eq}, {TpcLexer::NE, CmpOp::Ne},
        {TpcLexer::LT, CmpOp::Lt}, {TpcLexer::LE, CmpOp::Le},
        {TpcLexer::GT, CmpOp::Gt}, {TpcLexer::GE, CmpOp::Ge}};
    CmpOp op = CmpOp::Eq;
    for (auto &[tok, o] : ops)
      if (opCtx->getStart()->getType() == tok)
        op = o;
    return create<CmpPred>(r, buildOperand(cmp->operand(0)), op,
                           L.range(opCtx), buildOperand(cmp->operand(1)));
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

//===----------------------------------------------------------------------===//
// Lexical checks
//===----------------------------------------------------------------------===//

/// Reports lexical error tokens and rewrites them so that parsing can go on:
/// unterminated and badly escaped strings become strings, bad characters and
/// unterminated comments disappear. Returns false when nesting is too deep
/// (the file is then not parsed at all).
bool checkTokens(Compilation &c, const Locator &L,
                 std::vector<std::unique_ptr<antlr4::Token>> &tokens) {
  std::vector<std::unique_ptr<antlr4::Token>> kept;
  kept.reserve(tokens.size());
  unsigned depth = 0, notRun = 0, lexErrors = 0;
  const unsigned lexLimit = 50;
  for (auto &tok : tokens) {
    auto *t = static_cast<antlr4::CommonToken *>(tok.get());
    switch (t->getType()) {
    case TpcLexer::BAD_CHAR: {
      std::string text = t->getText();
      uint32_t cp = 0;
      for (unsigned char ch : text)
        cp = (ch & 0xC0) == 0x80 ? (cp << 6) | (ch & 0x3F)
             : ch >= 0xF0        ? ch & 0x07
             : ch >= 0xE0        ? ch & 0x0F
             : ch >= 0xC0        ? ch & 0x1F
                                 : ch;
      std::string shown = cp >= 0x20 && cp < 0x7F
                              ? "`" + text + "`"
                              : fmt::format("U+{:04X}", cp);
      if (lexErrors++ < lexLimit)
        c.diags.emit(L.range(t), diag::err_invalid_character, shown);
      continue;
    }
    case TpcLexer::UNTERMINATED_COMMENT:
      if (lexErrors++ < lexLimit)
        c.diags.emit(SourceRange(L.loc(t->getStartIndex()),
                                 L.loc(t->getStartIndex() + 2)),
                     diag::err_unterminated_comment);
      continue;
    case TpcLexer::UNTERMINATED_STRING:
      if (lexErrors++ < lexLimit)
        c.diags.emit(SourceRange(L.loc(t->getStartIndex())),
                     diag::err_unterminated_string);
      t->setText(t->getText() + "\"");
      t->setType(TpcLexer::STRING);
      break;
    case TpcLexer::BAD_ESCAPE_STRING: {
      std::string text = t->getText();
      for (size_t i = 1; i + 1 < text.size(); ++i) {
        if (text[i] != '\\')
          continue;
        if (text[i + 1] != '"' && text[i + 1] != '\\') {
          if (lexErrors++ < lexLimit)
            c.diags.emit(SourceRange(L.loc(t->getStartIndex() + i),
                                     L.loc(t->getStartIndex() + i + 2)),
                         diag::err_invalid_escape);
        }
        ++i;
      }
      t->setType(TpcLexer::STRING);
      break;
    }
    case TpcLexer::LPAREN:
    case TpcLexer::LBRACK:
    case TpcLexer::LBRACE:
      ++depth;
      break;
    case TpcLexer::RPAREN:
    case TpcLexer::RBRACK:
    case TpcLexer::RBRACE:
      if (depth)
        --depth;
      break;
    default:
      break;
    }
    notRun = t->getType() == TpcLexer::NOT ? notRun + 1 : 0;
    if (depth + notRun > c.options.maxNesting) {
      c.diags.emit(L.range(t), diag::err_nesting_too_deep,
                   c.options.maxNesting);
      return false;
    }
    kept.push_back(std::move(tok));
  }
  tokens = std::move(kept);
  return true;
}

} // namespace

File *tpcc::parseBuffer(Compilation &c, llvm::StringRef name,
                        llvm::StringRef text) {
  uint32_t id = c.sources.addBuffer(name.str(), text.str());
  auto file = std::make_unique<File>();
  file->bufferId = id;
  File *raw = file.get();
  c.ownedFiles.push_back(std::move(file));

  size_t bad = findInvalidUTF8(text);
  if (bad != llvm::StringRef::npos) {
    c.diags.emit(SourceLoc{id, static_cast<uint32_t>(bad)},
                 diag::err_invalid_utf8);
    return raw;
  }

  Locator L(c.sources, id);
  antlr4::ANTLRInputStream input(text.str());
  TpcLexer lexer(&input);
  lexer.removeErrorListeners();
  ErrorListener listener(c.diags, L);
  lexer.addErrorListener(&listener);
  std::vector<std::unique_ptr<antlr4::Token>> tokens = lexer.getAllTokens();
  {
    // getAllTokens() stops before EOF; the parser needs it.
    auto eof = std::make_unique<antlr4::CommonToken>(antlr4::Token::EOF);
    eof->setStartIndex(input.size());
    eof->setStopIndex(input.size() - 1);
    eof->setLine(lexer.getLine());
    eof->setCharPositionInLine(lexer.getCharPositionInLine());
    tokens.push_back(std::move(eof));
  }
  unsigned errorsBefore = c.diags.getNumErrors();
  if (!checkTokens(c, L, tokens))
    return raw;

  antlr4::ListTokenSource source(std::move(tokens));
  antlr4::CommonTokenStream stream(&source);
  TpcParser parser(&stream);
  // Stage 1 reports nothing: BailErrorStrategy still calls reportError (and
  // so the listeners) before it bails out.
  parser.removeErrorListeners();

  // Stage 1: fast SLL prediction, bail at the first error. Stage 2 (only on
  // error): full LL with error recovery and our messages.
  TpcParser::FileContext *tree = nullptr;
  auto bail = std::make_shared<antlr4::BailErrorStrategy>();
  parser.setErrorHandler(bail);
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
      antlr4::atn::PredictionMode::SLL);
  try {
    tree = parser.file();
  } catch (antlr4::ParseCancellationException &) {
    tree = nullptr;
  }
  if (!tree) {
    stream.seek(0);
    parser.reset();
    parser.addErrorListener(&listener);
    auto strategy = std::make_shared<ErrorStrategy>(c.diags, L, 50);
    parser.setErrorHandler(strategy);
    parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
        antlr4::atn::PredictionMode::LL);
    try {
      tree = parser.file();
    } catch (TooManyErrors &) {
      return raw;
    }
    if (strategy->numErrors)
      return raw;
  }
  // Build the AST only from a clean tree (lexical errors were recovered).
  if (c.diags.getNumErrors() != errorsBefore)
    return raw;
  ASTBuilder(c, L).buildFile(tree, *raw);
  return raw;
}

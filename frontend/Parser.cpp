//===- Parser.cpp - .tpc text to AST -------------------------------------===//
//
// Runs the ANTLR-generated lexer and parser over one buffer and hands a clean
// parse tree to ASTBuilder.cpp. ANTLR's default error listeners are replaced by
// ones that forward to our diagnostics engine, with our own wording
// ("expected `}`, found `opset`").
//
// Before parsing, the token stream is checked for lexical errors (bad
// characters, unterminated strings and comments, bad escapes) and for nesting
// deeper than the limit, so that hostile input cannot overflow the stack of
// the recursive-descent parser.
//
//===----------------------------------------------------------------------===//
#include "frontend/AntlrSupport.h"
#include "frontend/Literals.h"

#include "TpcLexer.h"

#include <set>

using namespace tpcc;
using namespace tpcc::ast;
using tpcc::frontend_detail::Locator;
using tpcc_antlr::TpcLexer;
using tpcc_antlr::TpcParser;

namespace {

/// Thrown to abandon a parse after too many syntax errors.
struct TooManyErrors {};

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

/// Reports syntax errors through our engine, in our words.
class ErrorStrategy : public antlr4::DefaultErrorStrategy {
public:
  ErrorStrategy(DiagnosticEngine &diags, const Locator &locator, unsigned limit)
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
  void reportInputMismatch(antlr4::Parser *p, const antlr4::InputMismatchException &e) override {
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
  void emit(antlr4::Parser *p, antlr4::Token *found, const antlr4::misc::IntervalSet &expected,
            bool begun = false) {
    if (!found)
      found = p->getCurrentToken();
    if (sameLineAsLast(found))
      return;
    const antlr4::dfa::Vocabulary &v = p->getVocabulary();
    std::vector<std::string> names;
    std::set<size_t> pending;
    for (ssize_t t : expected.toList())
      pending.insert(static_cast<size_t>(t));
    // Whole families of keywords read better as one phrase.
    auto family = [&](std::initializer_list<size_t> members, size_t need, const char *phrase) {
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
      for (size_t t = TpcLexer::IMPORT; t <= TpcLexer::IS; ++t)
        pending.erase(t);
    }
    family({TpcLexer::VERSION, TpcLexer::TYPE, TpcLexer::SIMD_PADDING, TpcLexer::METADATA,
            TpcLexer::INSERT_PRESERVING_QUANTIZERS, TpcLexer::ATTR, TpcLexer::CONFIG,
            TpcLexer::OPTIONS, TpcLexer::DEFAULT, TpcLexer::OPSET, TpcLexer::GROUP, TpcLexer::FUSE,
            TpcLexer::OVERRIDE, TpcLexer::REMOVE, TpcLexer::RESOURCES, TpcLexer::RECIPE},
           4, "a platform item (`config`, `opset`, `fuse`, ...)");
    family({TpcLexer::WEIGHT, TpcLexer::ACTIVATION, TpcLexer::NO_QUANTIZE, TpcLexer::RANGE}, 3,
           "a framework item (`weight`, `activation`, `no_quantize`, `range`)");
    family({TpcLexer::IMPORT, TpcLexer::PLATFORM, TpcLexer::FRAMEWORK, TpcLexer::CAPABILITIES,
            TpcLexer::RECIPE},
           3, "a declaration (`import`, `platform`, `framework`, `capabilities`, `recipe`)");
    family({TpcLexer::INT, TpcLexer::FLOAT, TpcLexer::POW2, TpcLexer::STRING, TpcLexer::TRUE,
            TpcLexer::FALSE, TpcLexer::NONE, TpcLexer::INF, TpcLexer::NEG_INF},
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
      list += " (or one of " + std::to_string(names.size() - shown) + " more)";
    std::string msg = list.empty() ? "unexpected " + describeToken(found)
                                   : "expected " + list + ", found " + describeToken(found);
    {
      auto d = diags.emit(locator.range(found), diag::err_syntax, msg);
      if (inPredicate(p))
        d.note(locator.range(found), diag::note_predicate_forms);
    }
    if (++numErrors >= limit)
      throw TooManyErrors();
    (void)begun;
  }

  /// One syntax error a line: recovery resumes inside the same construct,
  /// and what it then finds follows from the first mistake (`where
  /// attr.group == 1` is one mistake, not three).
  bool sameLineAsLast(antlr4::Token *found) {
    if (found->getType() != antlr4::Token::EOF && found->getLine() == lastLine)
      return true;
    lastLine = found->getLine();
    return false;
  }

  /// Whether the parser is inside a `where` predicate.
  static bool inPredicate(antlr4::Parser *p) {
    for (antlr4::RuleContext *c = p->getContext(); c;
         c = dynamic_cast<antlr4::RuleContext *>(c->parent))
      if (c->getRuleIndex() == TpcParser::RulePred)
        return true;
    return false;
  }

  size_t lastLine = 0;

  DiagnosticEngine &diags;
  const Locator &locator;
  unsigned limit;
};

/// Forwards anything ANTLR reports outside the strategy (should be nothing).
class ErrorListener : public antlr4::BaseErrorListener {
public:
  ErrorListener(DiagnosticEngine &diags, const Locator &locator) : diags(diags), locator(locator) {}
  void syntaxError(antlr4::Recognizer *, antlr4::Token *tok, size_t line, size_t col,
                   const std::string &msg, std::exception_ptr) override {
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
// Lexical checks
//===----------------------------------------------------------------------===//

/// Reports number tokens whose value cannot be represented, and malformed
/// versions (a number right after `version` can only be the version item).
void checkNumber(Compilation &c, const Locator &L, antlr4::Token *t, size_t prevType,
                 unsigned &lexErrors, unsigned lexLimit) {
  std::string text = t->getText();
  int64_t i, mi, pa;
  double f;
  int e;
  if (prevType == TpcLexer::VERSION) {
    if ((t->getType() != TpcLexer::FLOAT || !literals::decodeVersion(text, mi, pa)) &&
        lexErrors++ < lexLimit)
      c.diags.emit(L.range(t), diag::err_bad_version, text);
    return;
  }
  switch (t->getType()) {
  case TpcLexer::INT:
    if (!literals::decodeInt(text, i) && lexErrors++ < lexLimit)
      c.diags.emit(L.range(t), diag::err_int_out_of_range, text);
    break;
  case TpcLexer::FLOAT:
    if (!literals::decodeFloat(text, f) && lexErrors++ < lexLimit)
      c.diags.emit(L.range(t), diag::err_float_out_of_range, text);
    break;
  default:
    switch (literals::decodePow2(text, e)) {
    case literals::Pow2Status::OK:
      break;
    case literals::Pow2Status::NotBase2:
      if (lexErrors++ < lexLimit)
        c.diags.emit(L.range(t), diag::err_pow2_base, text);
      break;
    case literals::Pow2Status::OutOfRange:
      if (lexErrors++ < lexLimit)
        c.diags.emit(L.range(t), diag::err_float_out_of_range, text);
      break;
    }
  }
}

/// Reports lexical error tokens and rewrites them so that parsing can go on:
/// unterminated and badly escaped strings become strings, bad characters and
/// unterminated comments disappear. Returns false when nesting is too deep
/// (the file is then not parsed at all).
bool checkTokens(Compilation &c, const Locator &L,
                 std::vector<std::unique_ptr<antlr4::Token>> &tokens) {
  std::vector<std::unique_ptr<antlr4::Token>> kept;
  kept.reserve(tokens.size());
  unsigned depth = 0, notRun = 0, lexErrors = 0;
  size_t prevType = antlr4::Token::INVALID_TYPE;
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
      std::string shown = cp >= 0x20 && cp < 0x7F ? "`" + text + "`" : fmt::format("U+{:04X}", cp);
      if (lexErrors++ < lexLimit)
        c.diags.emit(L.range(t), diag::err_invalid_character, shown);
      continue;
    }
    case TpcLexer::UNTERMINATED_COMMENT:
      if (lexErrors++ < lexLimit)
        c.diags.emit(SourceRange(L.loc(t->getStartIndex()), L.loc(t->getStartIndex() + 2)),
                     diag::err_unterminated_comment);
      continue;
    case TpcLexer::UNTERMINATED_STRING:
      if (lexErrors++ < lexLimit)
        c.diags.emit(SourceRange(L.loc(t->getStartIndex())), diag::err_unterminated_string);
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
            c.diags.emit(
                SourceRange(L.loc(t->getStartIndex() + i), L.loc(t->getStartIndex() + i + 2)),
                diag::err_invalid_escape);
        }
        ++i;
      }
      t->setType(TpcLexer::STRING);
      break;
    }
    case TpcLexer::INT:
    case TpcLexer::FLOAT:
    case TpcLexer::POW2:
      checkNumber(c, L, t, prevType, lexErrors, lexLimit);
      break;
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
    if (t->getChannel() == antlr4::Token::DEFAULT_CHANNEL)
      prevType = t->getType();
    if (depth + notRun > c.options.maxNesting) {
      c.diags.emit(L.range(t), diag::err_nesting_too_deep, c.options.maxNesting);
      return false;
    }
    kept.push_back(std::move(tok));
  }
  tokens = std::move(kept);
  return true;
}

} // namespace

File *tpcc::parseBuffer(Compilation &c, llvm::StringRef name, llvm::StringRef text) {
  uint32_t id = c.sources.addBuffer(name.str(), text.str());
  auto file = std::make_unique<File>();
  file->bufferId = id;
  File *raw = file.get();
  c.ownedFiles.push_back(std::move(file));

  size_t bad = findInvalidUTF8(text);
  if (bad != llvm::StringRef::npos) {
    c.diags.emit(SourceLoc{id, static_cast<uint32_t>(bad)}, diag::err_invalid_utf8);
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
  frontend_detail::buildAST(c, L, tree, *raw);
  return raw;
}

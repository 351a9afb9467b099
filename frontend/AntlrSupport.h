//===- AntlrSupport.h - Shared by the ANTLR-facing frontend files -*- C++ -*-===//
//
// Private to frontend/*.cpp: ANTLR types appear here and in those files only,
// never in a header another library includes.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_FRONTEND_ANTLRSUPPORT_H
#define TPCC_FRONTEND_ANTLRSUPPORT_H

#include "frontend/Frontend.h"

#include "TpcParser.h"
#include "antlr4-runtime.h"

namespace tpcc::frontend_detail {

/// Maps ANTLR token positions (code points) to our byte locations.
class Locator {
public:
  Locator(const SourceManager &sm, uint32_t file) : sm(sm), file(file) {}
  SourceLoc loc(size_t codePoint) const { return sm.getLocForCodePoint(file, codePoint); }
  SourceRange range(antlr4::Token *t) const {
    if (t->getType() == antlr4::Token::EOF)
      return SourceRange(loc(t->getStartIndex()));
    return {loc(t->getStartIndex()), loc(t->getStopIndex() + 1)};
  }
  SourceRange range(antlr4::ParserRuleContext *ctx) const {
    antlr4::Token *stop = ctx->getStop() ? ctx->getStop() : ctx->getStart();
    SourceLoc end = stop->getType() == antlr4::Token::EOF ? loc(stop->getStartIndex())
                                                          : loc(stop->getStopIndex() + 1);
    // An empty rule's stop token precedes its start token.
    if (end < loc(ctx->getStart()->getStartIndex()))
      end = loc(ctx->getStart()->getStartIndex());
    return {loc(ctx->getStart()->getStartIndex()), end};
  }
  SourceRange range(antlr4::tree::TerminalNode *n) const { return range(n->getSymbol()); }

private:
  const SourceManager &sm;
  uint32_t file;
};

/// Builds the AST of `tree` (a parse with no syntax errors) into `file`.
void buildAST(Compilation &c, const Locator &locator, tpcc_antlr::TpcParser::FileContext *tree,
              ast::File &file);

} // namespace tpcc::frontend_detail

#endif

//===- Diagnostics.cpp - The diagnostics engine ---------------------------===//
#include "support/Diagnostics.h"

#include <algorithm>

using namespace tpcc;

namespace {
struct KindInfo {
  const char *name;
  Severity severity;
  const char *format;
};
const KindInfo kinds[] = {
#define DIAG(NAME, SEVERITY, FORMAT) {#NAME, Severity::SEVERITY, FORMAT},
#include "support/Diagnostics.def"
#undef DIAG
};
} // namespace

Severity tpcc::getSeverity(diag::Kind k) { return kinds[k].severity; }
llvm::StringRef tpcc::getFormat(diag::Kind k) { return kinds[k].format; }
llvm::StringRef tpcc::getKindName(diag::Kind k) { return kinds[k].name; }

void InFlightDiagnostic::report() {
  if (!engine)
    return;
  DiagnosticEngine *e = engine;
  engine = nullptr;
  e->report(std::move(diag));
}

void DiagnosticEngine::report(Diagnostic d) {
  if (warningsAsErrors && d.severity == Severity::Warning)
    d.severity = Severity::Error;
  // The same definition may be checked in several contexts (a parent platform
  // and each platform that extends it); report each problem once.
  auto key = std::make_tuple(d.range.begin.file, d.range.begin.offset,
                             static_cast<unsigned>(d.kind), d.where + '\0' + d.message);
  if (!seen.insert(key).second)
    return;
  if (d.severity == Severity::Error)
    ++numErrors;
  else if (d.severity == Severity::Warning)
    ++numWarnings;
  if (errorLimit && numErrors > errorLimit)
    return;
  diags.push_back(std::move(d));
}

static const char *severityName(Severity s) {
  switch (s) {
  case Severity::Error:
    return "error";
  case Severity::Warning:
    return "warning";
  case Severity::Note:
    return "note";
  }
  return "error";
}

void DiagnosticEngine::printOne(llvm::raw_ostream &os, const Diagnostic &d, bool color) const {
  if (color)
    os.changeColor(llvm::raw_ostream::SAVEDCOLOR, true);
  if (d.range.isValid()) {
    LineCol lc = sm.getLineCol(d.range.begin);
    os << sm.getName(d.range.begin.file) << ':' << lc.line << ':' << lc.col << ": ";
  } else if (!d.where.empty()) {
    os << d.where << ": ";
  } else {
    os << "tpcc: ";
  }
  if (color) {
    auto c = d.severity == Severity::Error     ? llvm::raw_ostream::RED
             : d.severity == Severity::Warning ? llvm::raw_ostream::MAGENTA
                                               : llvm::raw_ostream::BLACK;
    os.changeColor(c, true);
  }
  os << severityName(d.severity) << ": ";
  if (color)
    os.changeColor(llvm::raw_ostream::SAVEDCOLOR, true);
  os << d.message << '\n';
  if (color)
    os.resetColor();
  if (d.range.isValid()) {
    llvm::StringRef line = sm.getLineText(d.range.begin);
    // Keep snippets readable for minified or huge lines.
    if (line.size() <= 512) {
      // Control characters would garble the terminal; show them as `?`
      // (one column each, so the caret still lines up).
      std::string shown = line.str();
      for (char &ch : shown)
        if ((static_cast<unsigned char>(ch) < 0x20 && ch != '\t') || ch == 0x7F)
          ch = '?';
      os << shown << '\n';
      LineCol lc = sm.getLineCol(d.range.begin);
      std::string caret;
      unsigned col = 1;
      for (size_t i = 0; i < line.size() && col < lc.col; ++i) {
        unsigned char c = line[i];
        if ((c & 0xC0) == 0x80)
          continue;
        caret += c == '\t' ? '\t' : ' ';
        ++col;
      }
      caret += '^';
      // Underline the rest of the range when it stays on this line.
      if (d.range.end.isValid() && d.range.end.file == d.range.begin.file &&
          d.range.end.offset > d.range.begin.offset) {
        LineCol end = sm.getLineCol(d.range.end);
        if (end.line == lc.line && end.col > lc.col + 1)
          caret.append(end.col - lc.col - 1, '~');
      }
      if (color)
        os.changeColor(llvm::raw_ostream::GREEN, true);
      os << caret << '\n';
      if (color)
        os.resetColor();
    }
  }
  for (const Diagnostic &n : d.notes)
    printOne(os, n, color);
}

void DiagnosticEngine::print(llvm::raw_ostream &os, bool color) {
  if (color)
    os.enable_colors(true);
  for (const Diagnostic &d : diags)
    printOne(os, d, color);
  if (errorLimit && numErrors > errorLimit)
    os << "tpcc: note: " << (numErrors - errorLimit) << " more errors not shown\n";
  diags.clear();
}

std::string tpcc::findClosest(llvm::StringRef name, const std::vector<std::string> &candidates) {
  // Rank by the distance ignoring case, then by the exact distance, then by
  // name (for determinism): `trans_b` suggests `transB`, not `transA`.
  std::string best;
  std::pair<unsigned, unsigned> bestDist(~0u, ~0u);
  unsigned limit = std::max<unsigned>(1, name.size() / 3);
  std::string lower = name.lower();
  for (const std::string &c : candidates) {
    if (c == name)
      continue;
    unsigned folded = llvm::StringRef(lower).edit_distance(llvm::StringRef(c).lower(),
                                                           /*AllowReplacements=*/true, limit + 1);
    if (folded > limit)
      continue;
    std::pair<unsigned, unsigned> d(folded, name.edit_distance(c, /*AllowReplacements=*/true));
    if (d < bestDist || (d == bestDist && c < best)) {
      bestDist = d;
      best = c;
    }
  }
  return best;
}

std::string tpcc::didYouMean(llvm::StringRef name, const std::vector<std::string> &candidates) {
  std::string best = findClosest(name, candidates);
  return best.empty() ? std::string() : "; did you mean `" + best + "`?";
}

LogicalResult tpcc::lookUpName(DiagnosticEngine &diags, llvm::StringRef what,
                               llvm::StringRef plural, llvm::StringRef name,
                               const std::vector<std::string> &names) {
  if (std::find(names.begin(), names.end(), name) != names.end())
    return success();
  std::string quoted;
  for (const std::string &n : names)
    quoted += (quoted.empty() ? "`" : ", `") + n + "`";
  if (quoted.empty())
    quoted = "none";
  if (name.empty()) { // only what there is to choose from
    Diagnostic note{diag::note_available,
                    Severity::Note,
                    {},
                    DiagnosticEngine::format(diag::note_available, plural.str(), quoted),
                    {},
                    {}};
    diags.report(std::move(note));
    return failure();
  }
  diags.emitAt("", diag::err_no_entity, what.str(), name.str(), didYouMean(name, names))
      .note(SourceRange(), diag::note_available, plural.str(), quoted);
  return failure();
}

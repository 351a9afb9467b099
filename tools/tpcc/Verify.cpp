//===- Verify.cpp - `tpcc check --verify` -----------------------------------===//
//
// Checks the diagnostics of a compilation against annotations in the sources,
// as clang's -verify does:
//
//   // expected-error {{text}}        on this line
//   // expected-warning@+1 {{text}}   on the next line (@-N: N lines above,
//   // expected-note@7 {{text}}       @N: on line N)
//   // expected-no-diagnostics        the file produces none
//
// A diagnostic matches an annotation with the same file, line and severity
// whose text is a substring of its message. Every diagnostic must be expected
// and every annotation must match; mismatches are printed, one per line.
//
//===----------------------------------------------------------------------===//
#include "tools/tpcc/Verify.h"

#include "llvm/ADT/StringExtras.h"

#include <regex>

using namespace tpcc;

namespace {

struct Expectation {
  uint32_t file;
  unsigned line;   ///< the line the diagnostic must be on
  unsigned atLine; ///< the line of the annotation itself
  Severity severity;
  std::string text;
  bool matched = false;
};

const char *name(Severity s) {
  return s == Severity::Error ? "error" : s == Severity::Warning ? "warning" : "note";
}

} // namespace

bool tpcc::verifyDiagnostics(const SourceManager &sm, const std::vector<Diagnostic> &diags,
                             llvm::raw_ostream &os) {
  std::vector<Expectation> expected;
  std::vector<std::string> problems;
  static const std::regex re(R"(expected-(error|warning|note)(@([+-]?)([0-9]+))?\s*\{\{(.*?)\}\})");
  for (uint32_t id = 1; id <= sm.getNumBuffers(); ++id) {
    llvm::StringRef buf = sm.getBuffer(id);
    unsigned line = 0;
    for (llvm::StringRef rest = buf; !rest.empty();) {
      llvm::StringRef text;
      std::tie(text, rest) = rest.split('\n');
      ++line;
      if (!text.contains("expected-"))
        continue;
      std::string s = text.str();
      for (std::sregex_iterator it(s.begin(), s.end(), re), end; it != end; ++it) {
        const std::smatch &m = *it;
        Expectation e;
        e.file = id;
        e.atLine = line;
        e.severity = m[1] == "error"     ? Severity::Error
                     : m[1] == "warning" ? Severity::Warning
                                         : Severity::Note;
        e.line = line;
        if (m[2].matched) {
          unsigned n = std::stoul(m[4]);
          if (m[3] == "+")
            e.line = line + n;
          else if (m[3] == "-")
            e.line = n < line ? line - n : 0;
          else
            e.line = n;
        }
        e.text = m[5];
        expected.push_back(e);
      }
    }
  }

  auto match = [&](const Diagnostic &d) {
    LineCol lc = sm.getLineCol(d.range.begin);
    for (Expectation &e : expected) {
      if (!e.matched && e.file == d.range.begin.file && e.line == lc.line &&
          e.severity == d.severity && llvm::StringRef(d.message).contains(e.text)) {
        e.matched = true;
        return;
      }
    }
    std::string where = d.range.isValid() ? (sm.getName(d.range.begin.file) + ":" +
                                             llvm::Twine(lc.line) + ":" + llvm::Twine(lc.col))
                                                .str()
                                          : std::string("<no location>");
    problems.push_back(where + ": unexpected " + name(d.severity) + ": " + d.message);
  };
  for (const Diagnostic &d : diags) {
    match(d);
    for (const Diagnostic &n : d.notes)
      match(n);
  }
  for (const Expectation &e : expected)
    if (!e.matched)
      problems.push_back((sm.getName(e.file) + ":" + llvm::Twine(e.atLine) + ": expected " +
                          name(e.severity) + " on line " + llvm::Twine(e.line) +
                          " not produced: {{" + e.text + "}}")
                             .str());
  for (const std::string &p : problems)
    os << p << '\n';
  if (problems.empty())
    os << "verify: " << expected.size() << " expected diagnostics matched\n";
  return problems.empty();
}

//===- Diagnostics.h - The diagnostics engine --------------------*- C++ -*-===//
//
// One engine per compilation (no globals). Every diagnostic kind is listed once
// in Diagnostics.def with its severity and message format ({0}, {1}... are its
// arguments, formatted with fmt). Emitting returns an in-flight diagnostic that
// takes notes and converts to `failure()`:
//
//   return diags.emit(loc, diag::redefinition, name)
//              .note(prevLoc, diag::note_previous_definition);
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_SUPPORT_DIAGNOSTICS_H
#define TPCC_SUPPORT_DIAGNOSTICS_H

#include "support/LogicalResult.h"
#include "support/SourceManager.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace tpcc {

enum class Severity { Error, Warning, Note };

namespace diag {
enum Kind : unsigned {
#define DIAG(NAME, SEVERITY, FORMAT) NAME,
#include "support/Diagnostics.def"
#undef DIAG
  NUM_KINDS
};
} // namespace diag

Severity getSeverity(diag::Kind kind);
llvm::StringRef getFormat(diag::Kind kind);
llvm::StringRef getKindName(diag::Kind kind);

struct Diagnostic {
  diag::Kind kind;
  Severity severity;
  SourceRange range;
  std::string message;
  std::vector<Diagnostic> notes;
  /// Where, for a diagnostic about something with no source text (a model
  /// file, a node of it): printed in place of `file:line:col`.
  std::string where;
};

class DiagnosticEngine;

/// A diagnostic being built; reported when it goes out of scope.
class InFlightDiagnostic {
public:
  InFlightDiagnostic(DiagnosticEngine *engine, Diagnostic diag)
      : engine(engine), diag(std::move(diag)) {}
  InFlightDiagnostic(InFlightDiagnostic &&other)
      : engine(other.engine), diag(std::move(other.diag)) {
    other.engine = nullptr;
  }
  InFlightDiagnostic(const InFlightDiagnostic &) = delete;
  ~InFlightDiagnostic() { report(); }

  template <typename... Args>
  InFlightDiagnostic &note(SourceRange range, diag::Kind kind, const Args &...args);
  template <typename... Args>
  InFlightDiagnostic &note(SourceLoc loc, diag::Kind kind, const Args &...args) {
    return note(SourceRange(loc), kind, args...);
  }

  /// Reports now; the diagnostic is an error unless its kind says otherwise.
  void report();
  operator LogicalResult() { return failure(); }
  operator bool() = delete;

private:
  DiagnosticEngine *engine;
  Diagnostic diag;
};

class DiagnosticEngine {
public:
  explicit DiagnosticEngine(const SourceManager &sm) : sm(sm) {}

  template <typename... Args>
  InFlightDiagnostic emit(SourceRange range, diag::Kind kind, const Args &...args) {
    return InFlightDiagnostic(
        this, Diagnostic{kind, getSeverity(kind), range, format(kind, args...), {}, {}});
  }
  template <typename... Args>
  InFlightDiagnostic emit(SourceLoc loc, diag::Kind kind, const Args &...args) {
    return emit(SourceRange(loc), kind, args...);
  }

  /// A diagnostic about something that has no source range (`where` says
  /// what: `model.onnx`, `model.onnx: node 'conv1' (Conv)`).
  template <typename... Args>
  InFlightDiagnostic emitAt(std::string where, diag::Kind kind, const Args &...args) {
    return InFlightDiagnostic(
        this, Diagnostic{kind, getSeverity(kind), {}, format(kind, args...), {}, std::move(where)});
  }

  template <typename... Args> static std::string format(diag::Kind kind, const Args &...args) {
    return fmt::format(
        fmt::runtime(std::string_view(getFormat(kind).data(), getFormat(kind).size())), args...);
  }

  void report(Diagnostic diag);

  /// Prints every collected diagnostic (clang style, with source line and
  /// caret) and clears the list. `color` adds ANSI colours.
  void print(llvm::raw_ostream &os, bool color = false);
  /// Prints one diagnostic.
  void printOne(llvm::raw_ostream &os, const Diagnostic &d, bool color) const;

  const std::vector<Diagnostic> &getDiagnostics() const { return diags; }
  /// Adds note `kind` at `range` to every error collected from index `first`
  /// of getDiagnostics() on that `accept` takes (for context only a caller
  /// knows once the errors are out: a child's override behind a parent's text).
  template <typename Accept, typename... Args>
  void noteErrorsSince(size_t first, Accept accept, SourceRange range, diag::Kind kind,
                       const Args &...args) {
    for (size_t i = first; i < diags.size(); ++i)
      if (diags[i].severity == Severity::Error && accept(diags[i]))
        diags[i].notes.push_back(
            Diagnostic{kind, Severity::Note, range, format(kind, args...), {}, {}});
  }
  unsigned getNumErrors() const { return numErrors; }
  unsigned getNumWarnings() const { return numWarnings; }
  bool hasErrors() const { return numErrors != 0; }
  const SourceManager &getSourceManager() const { return sm; }

  /// Turns every warning into an error (-Werror).
  void setWarningsAsErrors(bool v) { warningsAsErrors = v; }
  /// Stop collecting (but keep counting) after this many errors; 0 = no limit.
  void setErrorLimit(unsigned n) { errorLimit = n; }

private:
  const SourceManager &sm;
  std::vector<Diagnostic> diags;
  std::set<std::tuple<uint32_t, uint32_t, unsigned, std::string>> seen;
  unsigned numErrors = 0, numWarnings = 0;
  bool warningsAsErrors = false;
  unsigned errorLimit = 0;
};

template <typename... Args>
InFlightDiagnostic &InFlightDiagnostic::note(SourceRange range, diag::Kind kind,
                                             const Args &...args) {
  diag.notes.push_back(
      Diagnostic{kind, Severity::Note, range, DiagnosticEngine::format(kind, args...), {}, {}});
  return *this;
}

/// Returns the candidate closest to `name` by edit distance when it is close
/// enough to suggest ("did you mean"), or an empty string.
std::string findClosest(llvm::StringRef name, const std::vector<std::string> &candidates);

/// ", did you mean `X`?" or "" — for appending to a message.
std::string didYouMean(llvm::StringRef name, const std::vector<std::string> &candidates);

/// Succeeds when `name` is one of `names`; otherwise reports "no WHAT named
/// NAME" (with a did-you-mean) and notes the available PLURAL (only the note
/// when `name` is empty).
LogicalResult lookUpName(DiagnosticEngine &diags, llvm::StringRef what, llvm::StringRef plural,
                         llvm::StringRef name, const std::vector<std::string> &names);

} // namespace tpcc

#endif

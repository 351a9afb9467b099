//===- Driver.h - Shared pieces of the tpcc driver --------------*- C++ -*-===//
#ifndef TPCC_TOOLS_TPCC_DRIVER_H
#define TPCC_TOOLS_TPCC_DRIVER_H

#include "frontend/Frontend.h"
#include "ir/TpcIR.h"
#include "tools/tpcc/Options.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace tpcc::quant {
struct QuantizeRequest;
enum class RecipeOrigin;
} // namespace tpcc::quant

namespace tpcc::driver {

/// Prints how long each phase took (`--time`).
class PhaseTimer {
public:
  explicit PhaseTimer(bool enabled) : enabled(enabled) {}
  void done(const char *phase) {
    auto now = std::chrono::steady_clock::now();
    if (enabled)
      llvm::errs() << llvm::format("tpcc: time: %-8s %8.3f s\n", phase,
                                   std::chrono::duration<double>(now - last).count());
    last = now;
  }

private:
  bool enabled;
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
};

/// A progress bar on stderr, redrawn at most ten times a second; `total` 0:
/// unknown (a counter only).
class Progress {
public:
  Progress(bool enabled, int64_t total, std::string label = "samples")
      : enabled(enabled), total(total), label(std::move(label)) {}
  /// Draws the bar at `done` (at most every 100 ms), with `detail` after it.
  void update(int64_t done, llvm::StringRef detail = "");
  void finish();

private:
  bool enabled;
  int64_t total;
  std::string label;
  std::chrono::steady_clock::time_point last;
};

/// The exit code for what `diags` holds (call before printing, which clears
/// it): 0 without errors; 2 when a file could not be read or written or a
/// request did not fit (err_usage); else 1.
int exitCode(const DiagnosticEngine &diags);
/// Prints the diagnostics and returns exitCode().
int finish(DiagnosticEngine &diags, const Options &o);

/// Every `.tpc` file directly in `dirs` (each directory sorted by name).
std::vector<std::string> libraryFiles(const std::vector<std::string> &dirs);
/// The entity of `all` named `name` (the only one, when `name` is empty and
/// there is one); null after "no WHAT named NAME" with the available PLURAL,
/// and `usage` when no name was given.
template <typename T>
const T *pickByName(DiagnosticEngine &diags, const std::vector<T> &all, llvm::StringRef what,
                    llvm::StringRef plural, std::string name, const std::string &usage) {
  std::vector<std::string> names;
  for (const T &x : all)
    names.push_back(x.name);
  if (name.empty() && names.size() == 1)
    name = names.front();
  if (failed(lookUpName(diags, what, plural, name, names))) {
    if (name.empty())
      diags.emitAt("", diag::err_usage, usage);
    return nullptr;
  }
  for (const T &x : all)
    if (x.name == name)
      return &x;
  return nullptr;
}

/// The one entity of `all` that the file `path` defines; null after saying
/// that it defines none or several.
template <typename T>
const T *definedIn(Compilation &c, const std::vector<T> &all, const std::string &path,
                   const std::string &what) {
  std::vector<const T *> here;
  for (const T &x : all)
    if (x.loc.isValid() && c.sources.getName(x.loc.begin.file) == path)
      here.push_back(&x);
  if (here.size() == 1)
    return here.front();
  c.diags.emitAt("", diag::err_file_defines, path,
                 (here.empty() ? "no " : "several ") + what + (here.empty() ? "" : "s"), what);
  return nullptr;
}

/// The platform a plan or quantize command is about (by name, the one a
/// .tpc file defines, or the only one); null after a diagnostic.
const ir::Platform *pickPlatform(Compilation &c, const ir::Module &m, const Options &o);

/// The recipe of `--recipe` (a name, or the one a .tpc file defines) into
/// `recipe`; without one, the recipe `platform` names (`recipe NAME`), if
/// any; `--recipe none`: the language's defaults. Where it came from goes to
/// `origin` (quant::RecipeOrigin).
LogicalResult pickRecipe(Compilation &c, const ir::Module &m, const Options &o,
                         const ir::Platform *platform, ir::Recipe &recipe,
                         quant::RecipeOrigin &origin);

/// quantize's and finetune's common checks: a platform or recipe given as a
/// .tpc file is compiled with the inputs; no --calib data for a --fix-input
/// input. Failure after a usage error.
LogicalResult completeQuantizeArgs(Options &o);
/// `tpcc quantize` with `extend` completing the request (failure after
/// diagnostics): `tpcc finetune` adds its stage.
int quantizeWith(Compilation &c, const ir::Module &m, const Options &o,
                 const std::function<LogicalResult(quant::QuantizeRequest &)> &extend);

} // namespace tpcc::driver

#endif

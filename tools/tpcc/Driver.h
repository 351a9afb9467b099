//===- Driver.h - Shared pieces of the tpcc driver --------------*- C++ -*-===//
#ifndef TPCC_TOOLS_TPCC_DRIVER_H
#define TPCC_TOOLS_TPCC_DRIVER_H

#include "frontend/Frontend.h"
#include "ir/TpcIR.h"
#include "ir/graph/Graph.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace tpcc::driver {

enum ExitCode { ExitOK = 0, ExitInputErrors = 1, ExitUsage = 2 };

struct Options {
  std::string command;
  std::string emit;
  std::string name; ///< doc: the platform
  std::string platform, capabilities;
  std::string format;
  std::string model;   ///< plan: the .onnx input
  std::string explain; ///< plan: --explain NODE
  /// plan, quantize: --choose NODE=CONFIG (repeatable), in order.
  std::vector<std::pair<std::string, std::string>> choose;
  // quantize
  std::string recipe;             ///< --recipe NAME|FILE.tpc
  std::vector<std::string> calib; ///< --calib [NAME=]FILE|DIR (repeatable)
  std::string planOut, report;    ///< --plan-out, --report
  int64_t batch = 32;             ///< --batch
  std::string progress = "auto"; ///< --progress
  bool aimetComment = false;
  std::string output;
  std::vector<std::string> inputs;
  std::vector<std::string> includeDirs;
  std::string stdlibDir;
  bool verify = false;
  bool werror = false;
  bool time = false;
  unsigned errorLimit = 100;
  std::string color = "auto";
};

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
  void update(int64_t done) {
    if (!enabled)
      return;
    auto now = std::chrono::steady_clock::now();
    if ((!total || done < total) && now - last < std::chrono::milliseconds(100))
      return;
    last = now;
    int width = 30, filled = total ? int(width * std::min(done, total) / total) : 0;
    llvm::errs() << "\r  [" << std::string(size_t(filled), '#')
                 << std::string(size_t(width - filled), total ? ' ' : '.') << "] " << done;
    if (total)
      llvm::errs() << "/" << total;
    llvm::errs() << " " << label;
    if (total && done >= total)
      finish();
    llvm::errs().flush();
  }
  void finish() {
    if (enabled)
      llvm::errs() << "\r" << std::string(70, ' ') << "\r";
  }

private:
  bool enabled;
  int64_t total;
  std::string label;
  std::chrono::steady_clock::time_point last;
};

/// Prints `msg` as a usage error and returns ExitUsage.
int usageError(const std::string &msg);
/// Checks the arguments of `tpcc plan`; -1 when they are fine.
int checkPlanArgs(Options &o);
/// Checks the arguments of `tpcc quantize`; -1 when they are fine.
int checkQuantizeArgs(Options &o);
/// Every `.tpc` file directly in `dirs` (each directory sorted by name).
std::vector<std::string> libraryFiles(const std::vector<std::string> &dirs);
/// Finds `name` among `names`, or reports the available ones (with a
/// did-you-mean) and returns false.
bool lookUp(llvm::StringRef what, llvm::StringRef plural, const std::string &name,
            const std::vector<std::string> &names);
/// Writes `text` to -o (atomically) or stdout.
int writeOutput(const Options &o, const std::string &text);
/// `tpcc apply` (`args` starts with the command).
int runApplyCommand(const std::vector<std::string> &args);
/// `tpcc run` and `tpcc eval` (`args` starts with the command).
int runModelCommand(const std::vector<std::string> &args);

/// Says once, when `g` is a QDQ model whose u8 x s8 integer groups ONNX Runtime
/// computes with int16 saturation on x86-64 CPUs without VNNI (full-range int8
/// weights), that such a CPU gives other numbers, and what to do about it.
void noteSaturatingGroups(const graph::Graph &g, llvm::raw_ostream &os);
/// `tpcc plan`, after the specs compiled without errors.
int runPlan(Compilation &c, const ir::Module &m, const Options &o, bool color);
/// `tpcc quantize`, after the specs compiled without errors.
int runQuantize(Compilation &c, const ir::Module &m, const Options &o, bool color);
/// The platform a plan or quantize command is about, or null after
/// reporting why.
const ir::Platform *pickPlatform(const Compilation &c, const ir::Module &m, const Options &o);
/// The capabilities for `p`: the one named, or the one of `p` or of its
/// nearest parent; null after reporting why.
const ir::Capabilities *pickCapabilities(const ir::Module &m, const ir::Platform &p,
                                         const Options &o);

} // namespace tpcc::driver

#endif

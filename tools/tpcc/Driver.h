//===- Driver.h - Shared pieces of the tpcc driver --------------*- C++ -*-===//
#ifndef TPCC_TOOLS_TPCC_DRIVER_H
#define TPCC_TOOLS_TPCC_DRIVER_H

#include "frontend/Frontend.h"
#include "ir/TpcIR.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <string>
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

/// Prints `msg` as a usage error and returns ExitUsage.
int usageError(const std::string &msg);
/// Checks the arguments of `tpcc plan`; -1 when they are fine.
int checkPlanArgs(Options &o);
/// Every `.tpc` file directly in `dirs` (each directory sorted by name).
std::vector<std::string> libraryFiles(const std::vector<std::string> &dirs);
/// Finds `name` among `names`, or reports the available ones (with a
/// did-you-mean) and returns false.
bool lookUp(llvm::StringRef what, llvm::StringRef plural, const std::string &name,
            const std::vector<std::string> &names);
/// Writes `text` to -o (atomically) or stdout.
int writeOutput(const Options &o, const std::string &text);
/// `tpcc run` and `tpcc eval` (`args` starts with the command).
int runModelCommand(const std::vector<std::string> &args);
/// `tpcc plan`, after the specs compiled without errors.
int runPlan(Compilation &c, const ir::Module &m, const Options &o, bool color);

} // namespace tpcc::driver

#endif

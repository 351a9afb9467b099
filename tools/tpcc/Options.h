//===- Options.h - The tpcc command line -------------------------*- C++ -*-===//
//
// One parser for every command: a table of flags (Flags.cpp) says which
// commands take each flag, whether it takes a value and how the value is
// checked; `--flag=VALUE` and `--flag VALUE` are the same, `-IDIR` too.
// Positional arguments are the command, then what its row of the command
// table says it takes (Commands.h). Errors are usage errors (exit 2), each
// with one line saying what is wrong.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_TOOLS_TPCC_OPTIONS_H
#define TPCC_TOOLS_TPCC_OPTIONS_H

#include "ir/TpcIR.h"
#include "ir/graph/OnnxIO.h"
#include "runtime/ort/IntegerPairs.h"
#include "support/LogicalResult.h"
#include "tools/tpcc/Commands.h"

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tpcc::driver {

enum ExitCode { ExitOK = 0, ExitInputErrors = 1, ExitUsage = 2 };

using NamedFile = std::pair<std::string, std::string>; ///< NAME ("" if none), FILE

struct Options {
  Command command = Check;
  std::string commandName;
  std::vector<std::string> inputs; ///< .tpc files
  std::string model;               ///< for the commands that take one
  std::string name;                ///< doc: the platform
  std::string output;              ///< -o (not run: see runOutputs)
  std::string emit, platform, capabilities, format, explain;
  std::vector<std::pair<std::string, std::string>> choose; ///< NODE, CONFIG
  std::string recipe, planOut, report, planFile;           ///< quantize; apply --plan
  std::vector<std::string> calib;
  /// --fix-input NAME=VALUE (quantize, finetune).
  std::vector<std::pair<std::string, double>> fixedInputs;
  /// --dim NAME=VALUE: values for symbolic dimensions of the model's inputs.
  graph::DimValues dims;
  /// --weights-memory, --activation-memory, --total-memory, --bops.
  ir::MixedPrecision budgets;
  /// Why a setter refused its value, when it says more than the flag's error.
  std::string flagError;
  int64_t batch = 0;                   ///< 0: the command's default (quantize 32, eval 64)
  int64_t sqnrSamples = 64;            ///< quantize: the samples the SQNR report runs
  std::optional<double> minSqnr;       ///< quantize --min-sqnr DB (quant/pipeline/QualityTarget.h)
  std::vector<std::string> minSqnrAt;  ///< quantize --min-sqnr-at TENSOR, each
  std::string data, labels, reference; ///< eval; finetune --data, --labels
  /// finetune --epochs, --lr, --quantizer (ste or lsq); unset (and --batch
  /// 0): the recipe's `finetune` fields.
  /// quantize --gptq: soft_rounding, ste or second_order (empty: the
  /// recipe's); --gptq-epochs (unset: the recipe's).
  std::string gptq;
  std::optional<int64_t> gptqEpochs;
  std::optional<int64_t> epochs;
  std::optional<double> lr;
  std::string quantizer;
  std::string validateData, validateLabels;     ///< finetune --validate X Y
  std::vector<NamedFile> runInputs, runOutputs; ///< run --input, --output / -o
  std::vector<NamedFile> evalData;              ///< eval --data [NAME=]FILE, each
  /// --qdq, --ort-cpu: QDQ groups on integer kernels by default.
  rt::IntegerArithmetic arithmetic = rt::IntegerArithmetic::Exact;
  bool matmulNBits = false; ///< quantize, apply: --matmul-nbits
  bool ortCpu = false;      ///< --ort-cpu: float Convs summed as ORT's MLAS sums them too
  std::vector<std::string> includeDirs;
  std::string stdlibDir, progress = "auto", color = "auto";
  bool aimetComment = false, verify = false, werror = false, time = false;
  unsigned errorLimit = 100;

  /// Whether diagnostics are coloured (--color, or a terminal on stderr).
  bool useColor() const;
  /// Whether a progress bar is drawn (--progress, or a terminal on stderr).
  bool showProgress() const;
};

/// One row of the flag table (Flags.cpp).
struct Flag {
  const char *name;
  unsigned commands; ///< the Command bits that take it
  bool takesValue;
  const char *error; ///< when the value is missing or the setter refuses it
  std::function<bool(Options &, const std::string &)> set;
  /// Values after the first (`--validate X Y`: 1); the setter gets them
  /// joined by newlines.
  unsigned moreValues = 0;
};
const std::vector<Flag> &flagTable();
bool oneOf(const std::string &v, std::initializer_list<const char *> allowed);

/// Parses `args` (without the program name). Returns nothing when the
/// command should run, else the exit code (after printing usage or an error).
std::optional<int> parseCommandLine(const std::vector<std::string> &args, Options &o);

/// Prints `msg` as a usage error (exit code ExitUsage).
LogicalResult usageError(const std::string &msg);

} // namespace tpcc::driver

#endif

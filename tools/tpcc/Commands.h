//===- Commands.h - The table of tpcc's commands ----------------*- C++ -*-===//
//
// Each command is one row of one table (Commands.cpp): its name, its bit,
// what it takes after its name, whether it runs a model, the functions that
// check its arguments and run it, and its lines of `tpcc --help`. Whatever
// else names the commands reads the table: the usage text, the error for an
// unknown command, "--X works with `tpcc A` and `tpcc B`", the dispatch and
// the OpenMP wait in main.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_TOOLS_TPCC_COMMANDS_H
#define TPCC_TOOLS_TPCC_COMMANDS_H

#include "support/LogicalResult.h"

#include <string>
#include <vector>

namespace tpcc {
class Compilation;
namespace ir {
struct Module;
} // namespace ir
} // namespace tpcc

namespace tpcc::driver {

struct Options;

/// The commands, as bits so that a flag can name the ones that take it
/// (Flags.cpp). A new command takes the next free bit.
enum Command : unsigned {
  Check = 1 << 0,
  Emit = 1 << 1,
  Doc = 1 << 2,
  Plan = 1 << 3,
  Quantize = 1 << 4,
  Apply = 1 << 5,
  Run = 1 << 6,
  Eval = 1 << 7,
  Finetune = 1 << 8,
};

/// What a command takes after its name, besides flags.
enum class Inputs {
  Specs,         ///< .tpc files
  NameAndSpecs,  ///< a platform name, then .tpc files
  SpecsAndModel, ///< .tpc files and one MODEL.onnx; a platform given by
                 ///< name is also looked up in the library
  Model,         ///< one model and no specs
};

/// Whether a command runs a model, which makes the driver shorten OpenMP's
/// spin-wait (main.cpp).
enum class RunsModel { Never, Always, WithCalib };

/// One command.
struct CommandInfo {
  const char *name;
  Command command;
  Inputs inputs;
  RunsModel runsModel;
  /// Checks (and completes) the arguments after parsing; failure after a
  /// usage error.
  LogicalResult (*check)(Options &);
  /// Runs a command whose inputs are specs, once they compiled without
  /// errors; null for Inputs::Model.
  int (*runCompiled)(Compilation &, const ir::Module &, const Options &);
  /// Runs a command that takes no specs (Inputs::Model); null otherwise.
  int (*run)(const Options &);
  /// Its lines of `tpcc --help`, as printed.
  const char *usage;
  /// What `tpcc NAME --help` prints; null: all of `tpcc --help`.
  const char *help = nullptr;

  bool compilesSpecs() const { return inputs != Inputs::Model; }
};

/// Every command, in the order of `tpcc --help`.
const std::vector<CommandInfo> &commandTable();
/// The command called `name`; null when there is none.
const CommandInfo *findCommand(const std::string &name);
/// The row of `command`.
const CommandInfo &commandInfo(Command command);
/// The bits of every command, and of those that compile specs.
unsigned allCommands();
unsigned specCommands();
/// "`tpcc plan` and `tpcc quantize`": the commands among `commands`, in the
/// order of their bits (the order in which the commands were added).
std::string commandList(unsigned commands);
/// "`check`, `emit`, ... or `eval`": every command, in the table's order.
std::string commandChoices();

/// The usage texts (Usage.cpp): all of `tpcc --help`, and the texts the
/// rows name for `tpcc NAME --help`.
const std::string &mainUsage();
extern const char *const runUsage, *const applyUsage;

/// The functions the rows name, each in its command's file.
LogicalResult checkSpecArgs(Options &o);
int runSpecCommand(Compilation &c, const ir::Module &m, const Options &o);
LogicalResult checkPlanArgs(Options &o);
int runPlan(Compilation &c, const ir::Module &m, const Options &o);
LogicalResult checkQuantizeArgs(Options &o);
int runQuantize(Compilation &c, const ir::Module &m, const Options &o);
LogicalResult checkFinetuneArgs(Options &o);
int runFinetune(Compilation &c, const ir::Module &m, const Options &o);
LogicalResult checkApplyArgs(Options &o);
int runApply(const Options &o);
LogicalResult checkModelArgs(Options &o);
int runModel(const Options &o);

} // namespace tpcc::driver

#endif

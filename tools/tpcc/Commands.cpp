//===- Commands.cpp - The table of tpcc's commands --------------------------===//
#include "tools/tpcc/Commands.h"

#include <cassert>

using namespace tpcc;
using namespace tpcc::driver;

const std::vector<CommandInfo> &driver::commandTable() {
  // Each row: name, bit, what it takes, whether it runs a model, the check of
  // its arguments, how it runs (after its specs compiled, or without specs),
  // its lines of `tpcc --help` as printed and, unless it is all of
  // `tpcc --help`, what `tpcc NAME --help` prints.
  static const std::vector<CommandInfo> table = {
      {"check", Check, Inputs::Specs, RunsModel::Never, checkSpecArgs, runSpecCommand, nullptr,
       R"(  tpcc check [options] FILE...         check FILEs and everything they import
)"},
      {"emit", Emit, Inputs::Specs, RunsModel::Never, checkSpecArgs, runSpecCommand, nullptr,
       R"(  tpcc emit --emit=KIND [options] FILE...
                                       compile and write KIND to stdout (or -o)
  tpcc emit --emit=mct-json --platform NAME [FILE...]
  tpcc emit --emit=aimet --capabilities NAME [FILE...]
)"},
      {"doc", Doc, Inputs::NameAndSpecs, RunsModel::Never, checkSpecArgs, runSpecCommand, nullptr,
       R"(  tpcc doc NAME [FILE...] [--format=markdown|html]
                                       a readable table of platform NAME
)"},
      {"plan", Plan, Inputs::SpecsAndModel, RunsModel::WithCalib, checkPlanArgs, runPlan, nullptr,
       R"(  tpcc plan --platform NAME|FILE.tpc [--capabilities NAME] [FILE...] MODEL.onnx
            [-o plan.json] [--emit=plan|ort-overrides] [--explain NODE]
            [--choose NODE=CONFIG]... [--dim NAME=VALUE]...
            [--calib DATA [--recipe R] BUDGET...]
                                       match MODEL's nodes to the platform's
                                       opsets, options and fusing patterns;
                                       with a budget, search the bit widths
)"},
      {"quantize", Quantize, Inputs::SpecsAndModel, RunsModel::Always, checkQuantizeArgs,
       runQuantize, nullptr,
       R"(  tpcc quantize --platform NAME|FILE.tpc [--recipe NAME|FILE.tpc]
            --calib [NAME=]FILE|DIR... MODEL.onnx -o OUT.onnx
            [--plan-out plan.json] [--report report.json] [--batch N]
            [--sqnr-samples N] [--choose NODE=CONFIG]... [BUDGET...]
            [--min-sqnr DB [--min-sqnr-at T]...] [--gptq soft_rounding|ste|second_order]
            [--gptq-epochs N] [--fix-input NAME=VALUE]... [--dim NAME=VALUE]...
            [--matmul-nbits]
                                       calibrate MODEL and write it in QDQ
                                       form for the platform (--gptq: train
                                       the kernels' rounding against MODEL
                                       for N epochs, or round them with
                                       second-order error compensation)
)"},
      {"finetune", Finetune, Inputs::SpecsAndModel, RunsModel::Always, checkFinetuneArgs,
       runFinetune, nullptr,
       R"(  tpcc finetune --platform NAME|FILE.tpc [--recipe NAME|FILE.tpc]
            --data X.npy [--labels Y.npy] [--calib DATA...] MODEL.onnx
            -o OUT.onnx [--epochs N] [--batch B] [--lr LR] [--quantizer ste|lsq]
            [--validate X.npy Y.npy] [--plan-out plan.json] [--report report.json]
            [--fix-input NAME=VALUE]... [--dim NAME=VALUE]...
                                       quantize MODEL as `quantize` does, then
                                       train its weights, biases and quantizers
                                       on X (cross-entropy with Y, or
                                       distillation from MODEL) before writing
                                       it in QDQ form (docs/finetune.md)
)"},
      {"apply", Apply, Inputs::Model, RunsModel::Never, checkApplyArgs, nullptr, runApply,
       R"(  tpcc apply --plan PLAN.json MODEL.onnx -o OUT.onnx [--matmul-nbits]
                                       rewrite MODEL as a (calibrated, maybe
                                       edited) plan says
)",
       applyUsage},
      {"run", Run, Inputs::Model, RunsModel::Always, checkModelArgs, nullptr, runModel,
       R"(  tpcc run MODEL.onnx [--input [NAME=]FILE]... [--output [NAME=]FILE]...
            [--dim NAME=VALUE]...
                                       run MODEL on .npy or .pb tensors
)",
       runUsage},
      {"eval", Eval, Inputs::Model, RunsModel::Always, checkModelArgs, nullptr, runModel,
       R"(  tpcc eval MODEL.onnx --data [NAME=]FILE... [--labels FILE]
            [--reference OTHER.onnx] [--batch N] [--dim NAME=VALUE]...
                                       accuracy, agreement, SQNR, throughput
                                       (`tpcc run --help` for details)
)",
       runUsage},
  };
  return table;
}

const CommandInfo *driver::findCommand(const std::string &name) {
  for (const CommandInfo &c : commandTable())
    if (name == c.name)
      return &c;
  return nullptr;
}

const CommandInfo &driver::commandInfo(Command command) {
  for (const CommandInfo &c : commandTable())
    if (c.command == command)
      return c;
  assert(false && "a Command bit without a row in the table");
  return commandTable().front();
}

unsigned driver::allCommands() {
  unsigned bits = 0;
  for (const CommandInfo &c : commandTable())
    bits |= c.command;
  return bits;
}

unsigned driver::specCommands() {
  unsigned bits = 0;
  for (const CommandInfo &c : commandTable())
    if (c.compilesSpecs())
      bits |= c.command;
  return bits;
}

/// "a, b and c" (`last` "and") or "a, b or c" (`last` "or").
static std::string join(const std::vector<std::string> &items, const char *last) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i)
    s += (i == 0 ? "" : i + 1 == items.size() ? std::string(" ") + last + " " : ", ") + items[i];
  return s;
}

std::string driver::commandList(unsigned commands) {
  std::vector<std::string> names;
  for (unsigned bit = 1; bit; bit <<= 1)
    for (const CommandInfo &c : commandTable())
      if (commands & bit & c.command)
        names.push_back(std::string("`tpcc ") + c.name + "`");
  return join(names, "and");
}

std::string driver::commandChoices() {
  std::vector<std::string> names;
  for (const CommandInfo &c : commandTable())
    names.push_back(std::string("`") + c.name + "`");
  return join(names, "or");
}

//===- Options.cpp - The tpcc command line ----------------------------------===//
#include "tools/tpcc/Options.h"

#include "support/Diagnostics.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

using namespace tpcc;
using namespace tpcc::driver;

namespace {
struct CommandName {
  const char *name;
  Command command;
};
const CommandName commandNames[] = {
    {"check", Check}, {"emit", Emit}, {"doc", Doc},   {"plan", Plan},        {"quantize", Quantize},
    {"apply", Apply}, {"run", Run},   {"eval", Eval}, {"finetune", Finetune}};

/// "`tpcc plan` and `tpcc quantize`" for a set of commands.
std::string commandList(unsigned commands) {
  std::vector<std::string> names;
  for (const CommandName &c : commandNames)
    if (commands & c.command)
      names.push_back(std::string("`tpcc ") + c.name + "`");
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return s;
}

} // namespace

LogicalResult driver::usageError(const std::string &msg) {
  // Before any compilation: a diagnostics engine of its own.
  SourceManager sm;
  DiagnosticEngine diags(sm);
  diags.emitAt("", diag::err_usage, msg);
  diags.print(llvm::errs());
  llvm::errs() << "run `tpcc --help` for usage\n";
  return failure();
}

/// A usage error as parseCommandLine's exit code.
static std::optional<int> usage(const std::string &msg) {
  (void)usageError(msg);
  return ExitUsage;
}

std::optional<int> driver::parseCommandLine(const std::vector<std::string> &args, Options &o) {
  if (args.empty()) {
    llvm::errs() << mainUsage;
    return ExitUsage;
  }
  std::vector<const Flag *> seen;
  std::vector<std::string> positional;
  bool help = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (a == "--help" || a == "-h" || (a == "help" && positional.empty())) {
      help = true;
      continue;
    }
    if (a == "--version") {
      llvm::outs() << "tpcc " << TPCC_VERSION << " (tpcc_ir_version 1)\n";
      return ExitOK;
    }
    if (a.size() < 2 || a[0] != '-') {
      positional.push_back(a);
      continue;
    }
    const Flag *flag = nullptr;
    std::string value;
    bool hasValue = false;
    for (const Flag &f : flagTable()) {
      llvm::StringRef arg(a), name(f.name);
      if (arg == name) {
        flag = &f;
      } else if (f.takesValue && arg.startswith(name) &&
                 (arg[name.size()] == '=' || name == "-I")) {
        flag = &f;
        value = arg.drop_front(name.size() + (arg[name.size()] == '=')).str();
        hasValue = true;
      }
      if (flag)
        break;
    }
    if (!flag)
      return usage("unknown option `" + a + "`" +
                   (positional.empty() ? "" : " for " + positional.front()));
    if (flag->takesValue && !hasValue) {
      if (i + 1 >= args.size())
        return usage(flag->error);
      value = args[++i];
    }
    for (unsigned k = 0; k < flag->moreValues; ++k) {
      if (i + 1 >= args.size() || llvm::StringRef(args[i + 1]).startswith("-"))
        return usage(flag->error);
      value += "\n" + args[++i];
    }
    if (!flag->set(o, value))
      return usage(o.flagError.empty() ? std::string(flag->error) : o.flagError);
    seen.push_back(flag);
  }
  if (positional.empty()) {
    if (help) {
      llvm::outs() << mainUsage;
      return ExitOK;
    }
    return usage("unknown command ``; expected `check`, `emit`, `doc`, `plan`, "
                 "`quantize`, `finetune`, `apply`, `run` or `eval`");
  }
  o.commandName = positional.front();
  bool known = false;
  for (const CommandName &c : commandNames)
    if (o.commandName == c.name)
      o.command = c.command, known = true;
  if (help) {
    llvm::outs() << (o.command & (Run | Eval) && known ? runUsage
                     : o.command == Apply && known     ? applyUsage
                                                       : mainUsage);
    return ExitOK;
  }
  if (!known)
    return usage("unknown command `" + o.commandName +
                 "`; expected `check`, `emit`, `doc`, `plan`, `quantize`, `finetune`, `apply`, "
                 "`run` or `eval`");
  for (const Flag *f : seen)
    if (!(f->commands & o.command))
      return usage(std::string(f->name) + " works with " + commandList(f->commands));
  // Positional arguments after the command.
  for (size_t i = 1; i < positional.size(); ++i) {
    const std::string &p = positional[i];
    bool takesModel = o.command & (Plan | Quantize | Finetune | Apply | Run | Eval);
    if (o.command == Doc && o.name.empty()) {
      o.name = p;
    } else if (takesModel && (!(o.command & (Plan | Quantize | Finetune)) ||
                              llvm::StringRef(p).endswith(".onnx"))) {
      if (!o.model.empty())
        return usage(o.commandName + " takes one model; found `" + o.model + "` and `" + p + "`");
      o.model = p;
    } else if (o.command & SpecCommands) {
      o.inputs.push_back(p);
    }
  }
  LogicalResult checked = success();
  switch (o.command) {
  case Check:
  case Emit:
  case Doc:
    checked = checkSpecArgs(o);
    break;
  case Plan:
    checked = checkPlanArgs(o);
    break;
  case Quantize:
    checked = checkQuantizeArgs(o);
    break;
  case Finetune:
    checked = checkFinetuneArgs(o);
    break;
  case Apply:
    checked = checkApplyArgs(o);
    break;
  case Run:
  case Eval:
    checked = checkModelArgs(o);
    break;
  }
  return failed(checked) ? std::optional<int>(ExitUsage) : std::nullopt;
}

//===- Options.cpp - The tpcc command line ----------------------------------===//
#include "tools/tpcc/Options.h"

#include "support/Diagnostics.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

using namespace tpcc;
using namespace tpcc::driver;

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

/// An argument after the command, as its row's inputs say; failure after a
/// usage error.
static LogicalResult takePositional(const CommandInfo &command, const std::string &p, Options &o) {
  bool isModel = command.inputs == Inputs::Model ||
                 (command.inputs == Inputs::SpecsAndModel && llvm::StringRef(p).endswith(".onnx"));
  if (command.inputs == Inputs::NameAndSpecs && o.name.empty()) {
    o.name = p;
  } else if (isModel) {
    if (!o.model.empty())
      return usageError(o.commandName + " takes one model; found `" + o.model + "` and `" + p +
                        "`");
    o.model = p;
  } else {
    o.inputs.push_back(p);
  }
  return success();
}

std::optional<int> driver::parseCommandLine(const std::vector<std::string> &args, Options &o) {
  if (args.empty()) {
    llvm::errs() << mainUsage();
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
  if (positional.empty() && help) {
    llvm::outs() << mainUsage();
    return ExitOK;
  }
  o.commandName = positional.empty() ? "" : positional.front();
  const CommandInfo *command = findCommand(o.commandName);
  if (command)
    o.command = command->command;
  if (help) {
    llvm::outs() << (command && command->help ? command->help : mainUsage());
    return ExitOK;
  }
  if (!command)
    return usage("unknown command `" + o.commandName + "`; expected " + commandChoices());
  for (const Flag *f : seen)
    if (!(f->commands & o.command))
      return usage(std::string(f->name) + " works with " + commandList(f->commands));
  for (size_t i = 1; i < positional.size(); ++i)
    if (failed(takePositional(*command, positional[i], o)))
      return ExitUsage;
  return failed(command->check(o)) ? std::optional<int>(ExitUsage) : std::nullopt;
}

//===- Options.cpp - The tpcc command line ----------------------------------===//
#include "tools/tpcc/Options.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>

using namespace tpcc;
using namespace tpcc::driver;

namespace {
constexpr unsigned SpecCommands = Check | Emit | Doc | Plan | Quantize;
constexpr unsigned AllCommands = SpecCommands | Apply | Run | Eval;

struct Flag {
  const char *name;
  unsigned commands;  ///< the commands that take it
  bool takesValue;
  const char *error;  ///< when the value is missing or the setter refuses it
  std::function<bool(Options &, const std::string &)> set;
};

bool oneOf(const std::string &v, std::initializer_list<const char *> allowed) {
  for (const char *a : allowed)
    if (v == a)
      return true;
  return false;
}

bool positive(const std::string &v, int64_t &out) {
  if (v.empty() || v.size() > 6 || v.find_first_not_of("0123456789") != std::string::npos ||
      std::stoll(v) == 0)
    return false;
  out = std::stoll(v);
  return true;
}

NamedFile named(const std::string &v) {
  size_t eq = v.find('=');
  return eq == std::string::npos ? NamedFile("", v) : NamedFile(v.substr(0, eq), v.substr(eq + 1));
}

/// A setter storing a non-empty value into a string field.
template <std::string Options::*F> bool text(Options &o, const std::string &v) {
  o.*F = v;
  return !v.empty();
}

const std::vector<Flag> &flags() {
  static const std::vector<Flag> table = {
      {"--platform", Plan | Quantize | Emit, true, "--platform needs a platform name",
       text<&Options::platform>},
      {"--capabilities", Plan | Quantize | Emit, true,
       "--capabilities needs a capabilities name", text<&Options::capabilities>},
      {"--recipe", Quantize, true, "--recipe needs a recipe name or .tpc file",
       text<&Options::recipe>},
      {"--calib", Quantize, true, "--calib needs a file or folder of calibration data",
       [](Options &o, const std::string &v) {
         o.calib.push_back(v);
         return !v.empty();
       }},
      {"--plan-out", Quantize, true, "--plan-out needs a file name", text<&Options::planOut>},
      {"--report", Quantize, true, "--report needs a file name", text<&Options::report>},
      {"--plan", Apply, true, "--plan needs a file", text<&Options::planFile>},
      {"--batch", Quantize | Eval, true, "--batch takes a positive number",
       [](Options &o, const std::string &v) { return positive(v, o.batch); }},
      {"--progress", Quantize | Run | Eval, true, "--progress takes auto, always or never",
       [](Options &o, const std::string &v) {
         o.progress = v;
         return oneOf(v, {"auto", "always", "never"});
       }},
      {"--explain", Plan, true, "--explain needs a node name", text<&Options::explain>},
      {"--choose", Plan | Quantize, true,
       "--choose takes NODE=CONFIG, a node name and one of its candidate config ids (e.g. "
       "/f/f.11/Gemm=FullyConnected.3)",
       [](Options &o, const std::string &v) {
         // Node names may hold `=`; config ids (`Conv.1`) never do.
         size_t eq = v.rfind('=');
         if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
           return false;
         o.choose.emplace_back(v.substr(0, eq), v.substr(eq + 1));
         return true;
       }},
      {"--format", Doc, true, "--format takes markdown or html",
       [](Options &o, const std::string &v) {
         o.format = v;
         return oneOf(v, {"markdown", "html"});
       }},
      {"--emit", Emit | Plan, true, "--emit needs a kind (json, ast, mct-json or aimet)",
       [](Options &o, const std::string &v) { return o.emit = v, true; }},
      {"--aimet-comment", Emit, false, "", [](Options &o, auto &) { return o.aimetComment = true; }},
      {"--verify", Check, false, "", [](Options &o, auto &) { return o.verify = true; }},
      {"--input", Run, true, "--input needs a file: --input [NAME=]FILE",
       [](Options &o, const std::string &v) {
         o.runInputs.push_back(named(v));
         return !v.empty();
       }},
      {"-i", Run, true, "--input needs a file: --input [NAME=]FILE",
       [](Options &o, const std::string &v) {
         o.runInputs.push_back(named(v));
         return !v.empty();
       }},
      {"--output", Run, true, "--output needs a file: --output [NAME=]FILE",
       [](Options &o, const std::string &v) {
         o.runOutputs.push_back(named(v));
         return !v.empty();
       }},
      {"-o", AllCommands & ~(Check | Eval), true, "-o needs a file name",
       [](Options &o, const std::string &v) {
         o.output = v;
         o.runOutputs.push_back(named(v));
         return true;
       }},
      {"--data", Eval, true, "--data needs a file", text<&Options::data>},
      {"--labels", Eval, true, "--labels needs a file", text<&Options::labels>},
      {"--reference", Eval, true, "--reference needs a model", text<&Options::reference>},
      {"--ort-cpu", Run | Eval, true, "--ort-cpu takes vnni or no-vnni",
       [](Options &o, const std::string &v) {
         o.arithmetic = v == "vnni" ? rt::IntegerArithmetic::Exact
                                    : rt::IntegerArithmetic::SaturatingPairs;
         return oneOf(v, {"vnni", "no-vnni"});
       }},
      {"-I", SpecCommands, true, "-I needs a directory",
       [](Options &o, const std::string &v) { return o.includeDirs.push_back(v), true; }},
      {"--stdlib", SpecCommands, true, "--stdlib needs a directory",
       [](Options &o, const std::string &v) { return o.stdlibDir = v, true; }},
      {"--error-limit", SpecCommands, true, "--error-limit takes a number",
       [](Options &o, const std::string &v) {
         if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos)
           return false;
         o.errorLimit = unsigned(std::stoul(v));
         return true;
       }},
      {"-Werror", SpecCommands, false, "", [](Options &o, auto &) { return o.werror = true; }},
      {"--time", AllCommands & ~Apply, false, "", [](Options &o, auto &) { return o.time = true; }},
      {"--color", AllCommands, true, "--color takes auto, always or never",
       [](Options &o, const std::string &v) {
         o.color = v;
         return oneOf(v, {"auto", "always", "never"});
       }},
  };
  return table;
}

struct CommandName {
  const char *name;
  Command command;
};
const CommandName commandNames[] = {{"check", Check}, {"emit", Emit},   {"doc", Doc},
                                    {"plan", Plan},   {"quantize", Quantize}, {"apply", Apply},
                                    {"run", Run},     {"eval", Eval}};

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

int checkCommand(Options &o); // Commands.cpp-like per-command rules, below
} // namespace

int driver::usageError(const std::string &msg) {
  llvm::errs() << "tpcc: error: " << msg << "\n"
               << "run `tpcc --help` for usage\n";
  return ExitUsage;
}

bool Options::useColor() const {
  return color == "always" || (color == "auto" && llvm::sys::Process::StandardErrHasColors());
}

bool Options::showProgress() const {
  return progress == "always" ||
         (progress == "auto" && llvm::sys::Process::StandardErrIsDisplayed());
}

int driver::parseCommandLine(const std::vector<std::string> &args, Options &o) {
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
    for (const Flag &f : flags()) {
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
      return usageError("unknown option `" + a + "`" +
                        (positional.empty() ? "" : " for " + positional.front()));
    if (flag->takesValue && !hasValue) {
      if (i + 1 >= args.size())
        return usageError(flag->error);
      value = args[++i];
    }
    if (!flag->set(o, value))
      return usageError(flag->error);
    seen.push_back(flag);
  }
  if (positional.empty()) {
    if (help) {
      llvm::outs() << mainUsage;
      return ExitOK;
    }
    return usageError("unknown command ``; expected `check`, `emit`, `doc`, `plan`, "
                      "`quantize`, `run` or `eval`");
  }
  o.commandName = positional.front();
  bool known = false;
  for (const CommandName &c : commandNames)
    if (o.commandName == c.name)
      o.command = c.command, known = true;
  if (help) {
    llvm::outs() << (o.command & (Run | Eval) && known ? runUsage
                     : o.command == Apply && known    ? applyUsage
                                                      : mainUsage);
    return ExitOK;
  }
  if (!known)
    return usageError("unknown command `" + o.commandName +
                      "`; expected `check`, `emit`, `doc`, `plan`, `quantize`, `run` or `eval`");
  for (const Flag *f : seen)
    if (!(f->commands & o.command))
      return usageError(std::string(f->name) + " works with " + commandList(f->commands));
  // Positional arguments after the command.
  for (size_t i = 1; i < positional.size(); ++i) {
    const std::string &p = positional[i];
    bool takesModel = o.command & (Plan | Quantize | Apply | Run | Eval);
    if (o.command == Doc && o.name.empty()) {
      o.name = p;
    } else if (takesModel && (!(o.command & (Plan | Quantize)) ||
                              llvm::StringRef(p).endswith(".onnx"))) {
      if (!o.model.empty())
        return usageError(o.commandName + " takes one model; found `" + o.model + "` and `" +
                          p + "`");
      o.model = p;
    } else if (o.command & SpecCommands) {
      o.inputs.push_back(p);
    }
  }
  return checkCommand(o);
}

namespace {
int checkCommand(Options &o) {
  switch (o.command) {
  case Check:
  case Emit:
  case Doc:
    if (o.command == Doc && o.name.empty())
      return usageError("doc needs a platform name: `tpcc doc NAME [FILE...]`");
    if (o.command == Emit && !oneOf(o.emit, {"json", "ast", "mct-json", "aimet"}))
      return usageError(o.emit.empty() ? "emit needs --emit=json or --emit=ast"
                                       : "unknown --emit kind `" + o.emit +
                                             "`; expected json, ast, mct-json or aimet");
    if (!o.platform.empty() && o.emit != "mct-json")
      return usageError("--platform works with --emit=mct-json (for `doc`, give the name as "
                        "`tpcc doc NAME`)");
    if (!o.capabilities.empty() && o.emit != "aimet")
      return usageError("--capabilities works with --emit=aimet");
    if (o.aimetComment && o.emit != "aimet")
      return usageError("--aimet-comment works with --emit=aimet");
    if (o.inputs.empty() && o.command != Doc && o.platform.empty() && o.capabilities.empty())
      return usageError("no input files");
    return -1;
  case Plan:
    if (o.model.empty())
      return usageError("plan needs a model: `tpcc plan --platform NAME MODEL.onnx`");
    if (o.emit.empty())
      o.emit = "plan";
    if (o.emit != "plan" && o.emit != "ort-overrides")
      return usageError("unknown --emit kind `" + o.emit +
                        "` for plan; expected plan or ort-overrides");
    break;
  case Quantize:
    if (o.model.empty())
      return usageError("quantize needs a model: `tpcc quantize --platform NAME --calib DATA "
                        "MODEL.onnx -o OUT.onnx`");
    if (o.output.empty() || o.output == "-")
      return usageError("quantize needs an output model: -o OUT.onnx");
    if (o.calib.empty())
      return usageError("quantize needs calibration data: --calib FILE|DIR");
    if (llvm::StringRef(o.recipe).endswith(".tpc"))
      o.inputs.push_back(o.recipe);
    if (!o.batch)
      o.batch = 32;
    break;
  case Apply:
    if (o.planFile.empty() || o.model.empty() || o.output.empty() || o.output == "-")
      return usageError("apply needs --plan PLAN.json, a model and -o OUT.onnx");
    return -1;
  case Run:
  case Eval:
    if (o.model.empty())
      return usageError(o.commandName + " needs a model: `tpcc " + o.commandName +
                        " MODEL.onnx ...`");
    if (o.command == Eval && o.data.empty())
      return usageError("eval needs data: --data FILE");
    return -1;
  }
  // plan, quantize: a platform given as a file is compiled with the inputs.
  if (llvm::StringRef(o.platform).endswith(".tpc"))
    o.inputs.push_back(o.platform);
  return -1;
}
} // namespace

//===- main.cpp - The tpcc driver -------------------------------------------===//
//
// A thin driver: parses the command line, runs the frontend and the passes,
// and hands the IR to the backend the command selects.
//
// Exit codes: 0 success (warnings allowed), 1 errors in the input,
// 2 usage or I/O errors.
//
//===----------------------------------------------------------------------===//
#include "backends/Backends.h"
#include "passes/Passes.h"
#include "support/AtomicFile.h"
#include "tools/tpcc/Driver.h"
#include "tools/tpcc/Verify.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

using namespace tpcc;
using namespace tpcc::driver;

namespace tpcc::driver {

static const char *usage = R"(tpcc — compiler for hardware target-platform specs (.tpc)

usage:
  tpcc check [options] FILE...         check FILEs and everything they import
  tpcc emit --emit=KIND [options] FILE...
                                       compile and write KIND to stdout (or -o)
  tpcc emit --emit=mct-json --platform NAME [FILE...]
  tpcc emit --emit=aimet --capabilities NAME [FILE...]
  tpcc doc NAME [FILE...] [--format=markdown|html]
                                       a readable table of platform NAME
  tpcc plan --platform NAME|FILE.tpc [--capabilities NAME] [FILE...] MODEL.onnx
            [-o plan.json] [--emit=plan|ort-overrides] [--explain NODE]
            [--choose NODE=CONFIG]...
                                       match MODEL's nodes to the platform's
                                       opsets, options and fusing patterns
  tpcc quantize --platform NAME|FILE.tpc [--recipe NAME|FILE.tpc]
            --calib [NAME=]FILE|DIR... MODEL.onnx -o OUT.onnx
            [--plan-out plan.json] [--report report.json] [--batch N]
            [--choose NODE=CONFIG]...
                                       calibrate MODEL and write it in QDQ
                                       form for the platform
  tpcc apply --plan PLAN.json MODEL.onnx -o OUT.onnx
                                       rewrite MODEL as a (calibrated, maybe
                                       edited) plan says
  tpcc run MODEL.onnx [--input [NAME=]FILE]... [--output [NAME=]FILE]...
                                       run MODEL on .npy or .pb tensors
  tpcc eval MODEL.onnx --data FILE [--labels FILE] [--reference OTHER.onnx]
            [--batch N]                accuracy, agreement, SQNR, throughput
                                       (`tpcc run --help` for details)
  tpcc --help | --version

kinds for --emit:
  json      canonical JSON of the resolved IR (every config inlined, keys sorted)
  ast       the syntax tree of each FILE, with source ranges
  mct-json  one platform as MCT's serialized TPC (schema version 2)
  aimet     an AIMET quantsim config from one capabilities (warns about what
            AIMET cannot express)
  plan      (plan) the plan JSON (the default)
  ort-overrides
            (plan) ONNX Runtime TensorQuantOverrides for the model

`tpcc plan` prints a summary; with -o FILE it also writes the plan (or the
overrides) to FILE; with -o - it writes them to stdout instead of the summary.

Without FILEs, `doc`, `--emit=mct-json` and `--emit=aimet` load every .tpc file
in the -I directories and the standard library and look NAME up there.

options:
  -I DIR              add DIR to the import search path (before the stdlib)
  -o FILE             write output to FILE (atomically) instead of stdout
  --platform NAME     (mct-json, plan) the platform; may be left out when the
                      compilation has exactly one (plan: or a .tpc file that
                      defines one)
  --capabilities NAME (aimet, plan) the capabilities to use; may be left out
                      when there is one for the platform (or for a parent)
  --explain NODE      (plan) print every binding tried on NODE with each
                      predicate's value, its options, weights and fusing
  --choose NODE=CONFIG
                      (plan, quantize) NODE takes candidate CONFIG (a config
                      id from the plan, e.g. FullyConnected.3) instead of its
                      options' base; repeat per node
  --recipe NAME|FILE  (quantize) the recipe (threshold methods, corrections,
                      overrides); default: MSE thresholds, bias correction
  --calib [NAME=]FILE|DIR
                      (quantize) calibration data: .npy/.pb files or folders of
                      them (one sample or a batch each); repeat per input
  --plan-out FILE     (quantize) the plan with the chosen scales and zero points
  --report FILE       (quantize) per-tensor bits, methods, thresholds, SQNR (JSON)
  --batch N           (quantize) calibration batch size (default 32)
  --progress=auto|always|never
                      (quantize) progress bar on stderr (auto: on a terminal)
  --ort-cpu=vnni|no-vnni
                      (run, eval) compute QDQ integer groups as ONNX Runtime's
                      kernels on x86-64 with VNNI (exact) or without (int16
                      pairs that saturate); default: the float QDQ model
  --format=markdown|html
                      (doc) Markdown (default) or a standalone HTML page
  --aimet-comment     (aimet) also list the warnings in a top-level "comment"
                      field (AIMET's own schema rejects extra fields)
  --verify            (check) compare diagnostics with `// expected-error@+N {{text}}`
                      annotations in the sources; exit 0 when they all match
  -Werror             treat warnings as errors
  --error-limit=N     show at most N errors (default 100; 0 = no limit)
  --color=auto|always|never
                      colour diagnostics (default: auto, when stderr is a terminal)
  --stdlib=DIR        use DIR as the standard library
  --time              print the time each phase took to stderr

exit status: 0 success (warnings allowed), 1 errors in the input,
             2 usage or I/O errors
)";


int usageError(const std::string &msg) {
  llvm::errs() << "tpcc: error: " << msg << "\n"
               << "run `tpcc --help` for usage\n";
  return ExitUsage;
}

/// Returns -1 when parsing succeeded, else an exit code.
static int parseArgs(int argc, char **argv, Options &o) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    llvm::errs() << usage;
    return ExitUsage;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    auto value = [&](const std::string &flag, std::string &out) {
      if (a.size() > flag.size() && a.compare(0, flag.size() + 1, flag + "=") == 0) {
        out = a.substr(flag.size() + 1);
        return 1;
      }
      if (a == flag) {
        if (i + 1 >= args.size())
          return -1;
        out = args[++i];
        return 1;
      }
      return 0;
    };
    std::string v;
    int r;
    if (a == "--help" || a == "-h" || a == "help") {
      llvm::outs() << usage;
      return ExitOK;
    }
    if (a == "--version") {
      llvm::outs() << "tpcc " << TPCC_VERSION << " (tpcc_ir_version 1)\n";
      return ExitOK;
    }
    if (a == "--verify") {
      o.verify = true;
    } else if (a == "--aimet-comment") {
      o.aimetComment = true;
    } else if ((r = value("--platform", v))) {
      if (r < 0 || v.empty())
        return usageError("--platform needs a platform name");
      o.platform = v;
    } else if ((r = value("--capabilities", v))) {
      if (r < 0 || v.empty())
        return usageError("--capabilities needs a capabilities name");
      o.capabilities = v;
    } else if ((r = value("--recipe", v))) {
      if (r < 0 || v.empty())
        return usageError("--recipe needs a recipe name or .tpc file");
      o.recipe = v;
    } else if ((r = value("--calib", v))) {
      if (r < 0 || v.empty())
        return usageError("--calib needs a file or folder of calibration data");
      o.calib.push_back(v);
    } else if ((r = value("--plan-out", v))) {
      if (r < 0 || v.empty())
        return usageError("--plan-out needs a file name");
      o.planOut = v;
    } else if ((r = value("--report", v))) {
      if (r < 0 || v.empty())
        return usageError("--report needs a file name");
      o.report = v;
    } else if ((r = value("--batch", v))) {
      if (r < 0 || v.empty() || v.find_first_not_of("0123456789") != std::string::npos ||
          v.size() > 6 || std::stoll(v) == 0)
        return usageError("--batch takes a positive number");
      o.batch = std::stoll(v);
    } else if ((r = value("--progress", v))) {
      if (r < 0 || (v != "auto" && v != "always" && v != "never"))
        return usageError("--progress takes auto, always or never");
      o.progress = v;
    } else if ((r = value("--explain", v))) {
      if (r < 0 || v.empty())
        return usageError("--explain needs a node name");
      o.explain = v;
    } else if ((r = value("--choose", v))) {
      // Node names may hold `=`; config ids (`Conv.1`) never do.
      size_t eq = v.rfind('=');
      if (r < 0 || eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        return usageError("--choose takes NODE=CONFIG, a node name and one of its candidate "
                          "config ids (e.g. /f/f.11/Gemm=FullyConnected.3)");
      o.choose.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if ((r = value("--format", v))) {
      if (r < 0 || (v != "markdown" && v != "html"))
        return usageError("--format takes markdown or html");
      o.format = v;
    } else if (a == "--time") {
      o.time = true;
    } else if (a == "-Werror") {
      o.werror = true;
    } else if (a.size() > 2 && a.compare(0, 2, "-I") == 0) {
      o.includeDirs.push_back(a.substr(2));
    } else if ((r = value("-I", v))) {
      if (r < 0)
        return usageError("-I needs a directory");
      o.includeDirs.push_back(v);
    } else if ((r = value("-o", v))) {
      if (r < 0)
        return usageError("-o needs a file name");
      o.output = v;
    } else if ((r = value("--emit", v))) {
      if (r < 0)
        return usageError("--emit needs a kind (json, ast, mct-json or aimet)");
      o.emit = v;
    } else if ((r = value("--color", v))) {
      if (r < 0 || (v != "auto" && v != "always" && v != "never"))
        return usageError("--color takes auto, always or never");
      o.color = v;
    } else if ((r = value("--stdlib", v))) {
      if (r < 0)
        return usageError("--stdlib needs a directory");
      o.stdlibDir = v;
    } else if ((r = value("--error-limit", v))) {
      if (r < 0 || v.empty() || v.find_first_not_of("0123456789") != std::string::npos ||
          v.size() > 9)
        return usageError("--error-limit takes a number");
      o.errorLimit = std::stoul(v);
    } else if (a.size() > 1 && a[0] == '-') {
      return usageError("unknown option `" + a + "`");
    } else if (o.command.empty()) {
      o.command = a;
    } else if (o.command == "doc" && o.name.empty()) {
      o.name = a;
    } else if ((o.command == "plan" || o.command == "quantize") &&
               llvm::StringRef(a).endswith(".onnx")) {
      if (!o.model.empty())
        return usageError(o.command + " takes one model; found `" + o.model + "` and `" + a +
                          "`");
      o.model = a;
    } else {
      o.inputs.push_back(a);
    }
  }
  if (o.command != "check" && o.command != "emit" && o.command != "doc" &&
      o.command != "plan" && o.command != "quantize")
    return usageError("unknown command `" + o.command +
                      "`; expected `check`, `emit`, `doc`, `plan`, `quantize`, `run` or `eval`");
  if (o.command == "quantize")
    return checkQuantizeArgs(o);
  if (!o.recipe.empty() || !o.calib.empty() || !o.planOut.empty() || !o.report.empty())
    return usageError("--recipe, --calib, --plan-out and --report work with `tpcc quantize`");
  if (o.command == "plan")
    return checkPlanArgs(o);
  if (!o.explain.empty())
    return usageError("--explain works with `tpcc plan`");
  if (!o.choose.empty())
    return usageError("--choose works with `tpcc plan` and `tpcc quantize`");
  if (o.command == "doc" && o.name.empty())
    return usageError("doc needs a platform name: `tpcc doc NAME [FILE...]`");
  if (o.command == "emit" && o.emit != "json" && o.emit != "ast" &&
      o.emit != "mct-json" && o.emit != "aimet")
    return usageError(o.emit.empty()
                          ? "emit needs --emit=json or --emit=ast"
                          : "unknown --emit kind `" + o.emit +
                                "`; expected json, ast, mct-json or aimet");
  if (o.command == "doc" && !o.emit.empty())
    return usageError("doc writes documentation; --emit works with `tpcc emit`");
  if (!o.platform.empty() && o.emit != "mct-json")
    return usageError("--platform works with --emit=mct-json (for `doc`, "
                      "give the name as `tpcc doc NAME`)");
  if (!o.capabilities.empty() && o.emit != "aimet")
    return usageError("--capabilities works with --emit=aimet");
  if (!o.format.empty() && o.command != "doc")
    return usageError("--format works with `tpcc doc`");
  if (o.aimetComment && o.emit != "aimet")
    return usageError("--aimet-comment works with --emit=aimet");
  // Commands that look a name up may search the library instead of FILEs.
  bool searches = o.command == "doc" ||
                  (o.emit == "mct-json" && !o.platform.empty()) ||
                  (o.emit == "aimet" && !o.capabilities.empty());
  if (o.inputs.empty() && !searches)
    return usageError("no input files");
  if (o.command == "check" && (!o.emit.empty() || !o.output.empty()))
    return usageError("check writes no output; use `tpcc emit`");
  if (o.verify && o.command != "check")
    return usageError("--verify works with `tpcc check`");
  return -1;
}

/// Every `.tpc` file directly in `dirs` (each directory sorted by name), for
/// commands that look a name up without input files.
std::vector<std::string> libraryFiles(const std::vector<std::string> &dirs) {
  std::vector<std::string> files;
  for (const std::string &dir : dirs) {
    std::vector<std::string> here;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(dir, ec), e; it != e && !ec;
         it.increment(ec))
      if (llvm::sys::path::extension(it->path()) == ".tpc")
        here.push_back(it->path());
    std::sort(here.begin(), here.end());
    files.insert(files.end(), here.begin(), here.end());
  }
  return files;
}

/// Finds entity `name` of kind `what` among `names`, or reports the
/// available ones (with a did-you-mean) and returns false.
bool lookUp(llvm::StringRef what, llvm::StringRef plural, const std::string &name,
            const std::vector<std::string> &names) {
  if (std::find(names.begin(), names.end(), name) != names.end())
    return true;
  if (!name.empty())
    llvm::errs() << "tpcc: error: no " << what << " named `" << name << "`"
                 << didYouMean(name, names) << "\n";
  std::vector<std::string> quoted;
  for (const std::string &n : names)
    quoted.push_back("`" + n + "`");
  llvm::errs() << "tpcc: note: available " << plural << ": "
               << (quoted.empty() ? "none" : llvm::join(quoted, ", ")) << "\n";
  return false;
}

int writeOutput(const Options &o, const std::string &text) {
  if (o.output.empty() || o.output == "-") {
    llvm::outs() << text;
    llvm::outs().flush();
    return ExitOK;
  }
  std::string error;
  if (!writeFileAtomically(o.output, text, error)) {
    llvm::errs() << "tpcc: error: cannot write `" << o.output << "`: " << error
                 << "\n";
    return ExitUsage;
  }
  return ExitOK;
}

} // namespace tpcc::driver


int run(int argc, char **argv) {
  // The model commands take no specs.
  if (argc > 1 && (llvm::StringRef(argv[1]) == "run" || llvm::StringRef(argv[1]) == "eval"))
    return runModelCommand(std::vector<std::string>(argv + 1, argv + argc));
  if (argc > 1 && llvm::StringRef(argv[1]) == "apply")
    return runApplyCommand(std::vector<std::string>(argv + 1, argv + argc));
  Options o;
  if (int r = parseArgs(argc, argv, o); r >= 0)
    return r;

  FrontendOptions fo;
  fo.includeDirs = o.includeDirs;
  fo.stdlibDir = o.stdlibDir.empty() ? findStdlibDir(argv[0]) : o.stdlibDir;
  // The compilation is deliberately not freed (see main): tearing down a
  // large AST costs as much as building it, and the process ends anyway.
  static Compilation *kept = new Compilation(fo);
  Compilation &c = *kept;
  c.diags.setWarningsAsErrors(o.werror);
  if (!o.verify)
    c.diags.setErrorLimit(o.errorLimit);
  bool color = o.color == "always" ||
               (o.color == "auto" && llvm::sys::Process::StandardErrHasColors());

  PhaseTimer timer(o.time);
  std::vector<std::string> inputs = o.inputs;
  // plan / quantize with a platform by name: the library is searched too.
  bool platformByName = (o.command == "plan" || o.command == "quantize") && !o.platform.empty() &&
                        !llvm::StringRef(o.platform).endswith(".tpc");
  if (inputs.empty() || platformByName) { // doc / mct-json / aimet with a name: the library
    std::vector<std::string> dirs = o.includeDirs;
    dirs.push_back(fo.stdlibDir);
    for (const std::string &f : libraryFiles(dirs))
      inputs.push_back(f);
  }
  bool ioError = failed(loadFiles(c, inputs));
  timer.done("parse");
  bool syntaxOK = !c.diags.hasErrors();
  ir::Module module;
  // Semantic checks run only on files that parsed cleanly: a syntax error
  // would otherwise cascade into errors about names it hid.
  if (syntaxOK && !ioError && o.emit != "ast")
    module = buildModule(c);
  timer.done("passes");

  if (o.verify) {
    bool ok = verifyDiagnostics(c.sources, c.diags.getDiagnostics(), llvm::outs());
    return ioError ? ExitUsage : ok ? ExitOK : ExitInputErrors;
  }
  c.diags.print(llvm::errs(), color);
  if (ioError)
    return ExitUsage;
  if (c.diags.hasErrors())
    return ExitInputErrors;

  if (o.command == "check")
    return ExitOK;
  if (o.command == "plan")
    return runPlan(c, module, o, color);
  if (o.command == "quantize")
    return runQuantize(c, module, o, color);

  // Name lookups for the single-entity outputs.
  const ir::Platform *platform = nullptr;
  const ir::Capabilities *caps = nullptr;
  if (o.command == "doc" || o.emit == "mct-json") {
    std::vector<std::string> names;
    for (const ir::Platform &p : module.platforms)
      names.push_back(p.name);
    std::string name = o.command == "doc" ? o.name : o.platform;
    if (name.empty()) {
      if (names.size() != 1) {
        lookUp("platform", "platforms", "", names);
        return usageError("--emit=mct-json writes one platform; choose it "
                          "with --platform NAME");
      }
      name = names.front();
    }
    if (!lookUp("platform", "platforms", name, names))
      return ExitUsage;
    platform = module.findPlatform(name);
  }
  if (o.emit == "aimet") {
    std::vector<std::string> names;
    for (const ir::Capabilities &cap : module.capabilities)
      names.push_back(cap.name);
    std::string name = o.capabilities;
    if (name.empty()) {
      if (names.size() != 1) {
        lookUp("capabilities", "capabilities", "", names);
        return usageError("--emit=aimet derives one config; choose the "
                          "capabilities with --capabilities NAME");
      }
      name = names.front();
    }
    if (!lookUp("capabilities", "capabilities", name, names))
      return ExitUsage;
    caps = module.findCapabilities(name);
  }

  std::string text;
  llvm::raw_string_ostream os(text);
  if (o.command == "doc") {
    emitDoc(module, *platform,
            o.format == "html" ? DocFormat::HTML : DocFormat::Markdown, os);
  } else if (o.emit == "json") {
    emitJSON(module, os);
  } else if (o.emit == "mct-json") {
    emitMctJSON(*platform, os);
  } else if (o.emit == "aimet") {
    emitAimet(module, *caps, c.diags, os, o.aimetComment);
    c.diags.print(llvm::errs(), color); // what AIMET cannot express
    if (c.diags.hasErrors())            // -Werror
      return ExitInputErrors;
  } else {
    for (ast::File *f : c.inputs)
      dumpAST(c.sources, *f, os);
  }
  os.flush();
  timer.done("emit");
  int status = writeOutput(o, text);
  timer.done("write");
  return status;
}

int main(int argc, char **argv) {
  int status = run(argc, argv);
  llvm::outs().flush();
  llvm::errs().flush();
#if defined(__SANITIZE_ADDRESS__)
  // Sanitizer builds exit normally so that LeakSanitizer runs (the kept
  // compilation stays reachable through a static, so it is not a leak).
  return status;
#else
  // Skip global destructors (ANTLR's DFA caches) as compilers commonly do.
  std::_Exit(status);
#endif
}

//===- main.cpp - The tpcc driver -------------------------------------------===//
//
// A thin driver: parses the command line (Options.h), compiles the specs the
// command needs (frontend, passes) and runs the command through its row of
// the command table (Commands.h); every file it names is written atomically.
//
// Exit codes: 0 success (warnings allowed), 1 errors in the input,
// 2 usage or I/O errors.
//
// OpenMP's wait policy: libgomp's threads spin for about 300,000 iterations
// after each parallel region, which on a machine whose cores are busy with
// other work takes the core from the thread that has work and multiplies a
// run's time (measured 4-10x on 2 cores; docs/runtime.md, "Threads"). libgomp
// reads the policy when it loads, before main, so the driver re-executes
// itself once with a short spin (GOMP_SPINCOUNT) when the command runs a
// model, unless the user chose a policy.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "tools/tpcc/Commands.h"
#include "tools/tpcc/Driver.h"
#include "tools/tpcc/Verify.h"

#include <cstdlib>
#include <unistd.h>

using namespace tpcc;
using namespace tpcc::driver;

static int run(int argc, char **argv) {
  Options o;
  if (std::optional<int> exit =
          parseCommandLine(std::vector<std::string>(argv + 1, argv + argc), o))
    return *exit;
  const CommandInfo &command = commandInfo(o.command);
  if (!command.compilesSpecs())
    return command.run(o);

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

  PhaseTimer timer(o.time);
  std::vector<std::string> inputs = o.inputs;
  // A platform by name for a model (Inputs::SpecsAndModel) or an entity by
  // name without files (doc, mct-json, aimet): the library is searched too.
  bool platformByName = command.inputs == Inputs::SpecsAndModel && !o.platform.empty() &&
                        !llvm::StringRef(o.platform).endswith(".tpc");
  if (inputs.empty() || platformByName) {
    std::vector<std::string> dirs = o.includeDirs;
    dirs.push_back(fo.stdlibDir);
    for (const std::string &f : libraryFiles(dirs))
      inputs.push_back(f);
  }
  bool ioError = failed(loadFiles(c, inputs));
  timer.done("parse");
  ir::Module module;
  // Semantic checks run only on files that parsed cleanly: a syntax error
  // would otherwise cascade into errors about names it hid.
  if (!c.diags.hasErrors() && !ioError && o.emit != "ast")
    module = buildModule(c);
  timer.done("passes");

  if (o.verify) {
    bool ok = verifyDiagnostics(c.sources, c.diags.getDiagnostics(), llvm::outs());
    return ioError ? ExitUsage : ok ? ExitOK : ExitInputErrors;
  }
  bool errors = c.diags.hasErrors();
  c.diags.print(llvm::errs(), o.useColor());
  if (ioError)
    return ExitUsage;
  if (errors)
    return ExitInputErrors;
  return command.runCompiled(c, module, o);
}

/// Re-executes the binary with a short OpenMP spin, once, when the command
/// runs a model and the environment does not say how OpenMP threads wait;
/// returns when it does not.
static void chooseOpenMPWait(int argc, char **argv) {
  if (argc < 2 || std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT"))
    return;
  const CommandInfo *command = findCommand(argv[1]);
  RunsModel runsModel = command ? command->runsModel : RunsModel::Never;
  bool runs = runsModel == RunsModel::Always;
  for (int i = 2; i < argc && runsModel == RunsModel::WithCalib; ++i)
    runs |= llvm::StringRef(argv[i]).startswith("--calib");
  if (!runs)
    return;
  if (setenv("GOMP_SPINCOUNT", "10000", 1) != 0)
    return;
  execv("/proc/self/exe", argv); // only returns on failure: run as we are
}

int main(int argc, char **argv) {
  chooseOpenMPWait(argc, argv);
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

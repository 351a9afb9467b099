//===- PlanCommand.cpp - `tpcc plan` ----------------------------------------===//
//
// Picks the platform (a name, or the one platform a .tpc file defines), its
// capabilities (given, or the one for the platform or its nearest parent
// that has one) and their framework; loads the model; builds the plan; then
// prints the summary or an explanation and writes the plan or the ORT
// overrides. Nothing is written when there are errors.
//
//===----------------------------------------------------------------------===//
#include "backends/plan/Plan.h"
#include "ir/graph/OnnxIO.h"
#include "support/AtomicFile.h"
#include "tools/tpcc/Driver.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace tpcc;
using namespace tpcc::driver;

int driver::checkPlanArgs(Options &o) {
  if (o.model.empty())
    return usageError("plan needs a model: `tpcc plan --platform NAME MODEL.onnx`");
  if (o.emit.empty())
    o.emit = "plan";
  if (o.emit != "plan" && o.emit != "ort-overrides")
    return usageError("unknown --emit kind `" + o.emit +
                      "` for plan; expected plan or ort-overrides");
  if (!o.format.empty() || o.verify || o.aimetComment)
    return usageError("plan takes none of --format, --verify, --aimet-comment");
  // A platform given as a file is compiled with the inputs.
  if (llvm::StringRef(o.platform).endswith(".tpc"))
    o.inputs.push_back(o.platform);
  return -1;
}

const ir::Platform *driver::pickPlatform(const Compilation &c, const ir::Module &m,
                                        const Options &o) {
  std::vector<std::string> names;
  for (const ir::Platform &p : m.platforms)
    names.push_back(p.name);
  if (llvm::StringRef(o.platform).endswith(".tpc")) {
    // The platforms defined in that file.
    std::vector<const ir::Platform *> here;
    for (const ir::Platform &p : m.platforms)
      if (p.loc.isValid() && c.sources.getName(p.loc.begin.file) == o.platform)
        here.push_back(&p);
    if (here.size() == 1)
      return here.front();
    llvm::errs() << "tpcc: error: `" << o.platform << "` defines "
                 << (here.empty() ? "no platform" : "several platforms")
                 << "; name one with --platform NAME and give the file as an input\n";
    return nullptr;
  }
  std::string name = o.platform;
  if (name.empty()) {
    if (names.size() != 1) {
      lookUp("platform", "platforms", "", names);
      usageError("plan needs a platform: --platform NAME");
      return nullptr;
    }
    name = names.front();
  }
  if (!lookUp("platform", "platforms", name, names))
    return nullptr;
  return m.findPlatform(name);
}

const ir::Capabilities *driver::pickCapabilities(const ir::Module &m,
                                                const ir::Platform &p,
                                                const Options &o) {
  std::vector<std::string> all;
  for (const ir::Capabilities &cap : m.capabilities)
    all.push_back(cap.name);
  if (!o.capabilities.empty()) {
    if (!lookUp("capabilities", "capabilities", o.capabilities, all))
      return nullptr;
    const ir::Capabilities *cap = m.findCapabilities(o.capabilities);
    for (const ir::Platform *q = &p; q; q = q->parent ? m.findPlatform(*q->parent) : nullptr)
      if (q->name == cap->platform)
        return cap;
    llvm::errs() << "tpcc: error: capabilities `" << cap->name << "` bind platform `"
                 << cap->platform << "`, which is neither `" << p.name
                 << "` nor one of its parents\n";
    return nullptr;
  }
  for (const ir::Platform *q = &p; q; q = q->parent ? m.findPlatform(*q->parent) : nullptr) {
    std::vector<std::string> here;
    for (const ir::Capabilities &cap : m.capabilities)
      if (cap.platform == q->name)
        here.push_back("`" + cap.name + "`");
    if (here.size() == 1)
      return m.findCapabilities(llvm::StringRef(here[0]).drop_front().drop_back());
    if (here.size() > 1) {
      llvm::errs() << "tpcc: error: platform `" << q->name << "` has several capabilities ("
                   << llvm::join(here, ", ") << "); choose one with --capabilities NAME\n";
      return nullptr;
    }
  }
  llvm::errs() << "tpcc: error: no capabilities bind platform `" << p.name
               << "` (or a parent) to a framework; write `capabilities NAME = " << p.name
               << " on onnx { ... }`\n";
  return nullptr;
}

int driver::runPlan(Compilation &c, const ir::Module &m, const Options &o, bool color) {
  const ir::Platform *platform = pickPlatform(c, m, o);
  if (!platform)
    return ExitUsage;
  const ir::Capabilities *caps = pickCapabilities(m, *platform, o);
  if (!caps)
    return ExitUsage;
  const ir::Framework *fw = m.findFramework(caps->framework);

  PhaseTimer timer(o.time);
  // Kept until the process ends, like the compilation (see main): freeing a
  // large model costs as much as loading it.
  static std::unique_ptr<graph::Model> model;
  model = graph::loadModel(o.model, c.diags);
  timer.done("load");
  if (!model || c.diags.hasErrors()) {
    // A file that cannot be read is an I/O error; a bad file is an input error.
    bool io = !c.diags.getDiagnostics().empty() &&
              c.diags.getDiagnostics().back().kind == diag::err_cannot_open_file;
    c.diags.print(llvm::errs(), color);
    return io ? ExitUsage : ExitInputErrors;
  }
  static plan::Plan p;
  p = plan::buildPlan(m, *platform, *caps, fw, *model, c.diags, o.choose);
  timer.done("plan");

  const plan::PlanNode *explained = nullptr;
  if (!o.explain.empty()) {
    for (const plan::PlanNode &n : p.nodes)
      if (n.node->displayName() == o.explain) {
        explained = &n;
        break;
      }
    if (!explained) {
      std::vector<std::string> names;
      for (const plan::PlanNode &n : p.nodes)
        names.push_back(n.node->displayName());
      c.diags.print(llvm::errs(), color);
      llvm::errs() << "tpcc: error: the model has no node named `" << o.explain << "`"
                   << didYouMean(o.explain, names) << "\n";
      return ExitUsage;
    }
  }

  // The plan lists every diagnostic: the ORT overrides add their warnings
  // while they are written, the plan has them all before.
  std::string overrides;
  if (o.emit == "ort-overrides") {
    llvm::raw_string_ostream os(overrides);
    plan::emitOrtOverrides(p, c.diags, os);
  }
  bool errors = c.diags.hasErrors();
  // Printing clears the engine; the plan JSON needs its diagnostics.
  std::vector<Diagnostic> kept = c.diags.getDiagnostics();
  c.diags.print(llvm::errs(), color);
  if (errors)
    return ExitInputErrors;

  auto write = [&](llvm::raw_ostream &os) {
    if (o.emit == "ort-overrides")
      os << overrides;
    else
      plan::emitPlanJSON(p, kept, c.sources, os);
  };
  int status = ExitOK;
  if (o.output == "-") {
    write(llvm::outs());
  } else {
    if (explained)
      plan::printExplanation(p, *explained, c.sources, llvm::outs());
    else
      plan::printSummary(p, llvm::outs());
    llvm::outs().flush();
    std::string error;
    if (!o.output.empty() && !writeFileAtomically(o.output, write, error)) {
      llvm::errs() << "tpcc: error: cannot write `" << o.output << "`: " << error << "\n";
      status = ExitUsage;
    }
  }
  timer.done("write");
  return status;
}

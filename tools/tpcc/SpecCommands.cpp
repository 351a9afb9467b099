//===- SpecCommands.cpp - `tpcc check`, `emit` and `doc` ---------------------===//
#include "backends/Backends.h"
#include "support/AtomicFile.h"
#include "tools/tpcc/Driver.h"

using namespace tpcc;
using namespace tpcc::driver;

LogicalResult driver::checkSpecArgs(Options &o) {
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
  // Without files, a name is looked up in the library.
  if (o.inputs.empty() && o.command != Doc && o.platform.empty() && o.capabilities.empty())
    return usageError("no input files");
  return success();
}

int driver::runSpecCommand(Compilation &c, const ir::Module &m, const Options &o) {
  if (o.command == Check)
    return ExitOK;
  PhaseTimer timer(o.time);
  std::string text;
  llvm::raw_string_ostream os(text);
  if (o.command == Doc || o.emit == "mct-json") {
    const ir::Platform *p = pickByName(
        c.diags, m.platforms, "platform", "platforms", o.command == Doc ? o.name : o.platform,
        "--emit=mct-json writes one platform; choose it with --platform NAME");
    if (!p)
      return finish(c.diags, o);
    if (o.command == Doc) {
      emitDoc(m, *p, o.format == "html" ? DocFormat::HTML : DocFormat::Markdown, os);
    } else {
      emitMctJSON(*p, os, &c.diags);
      if (int status = finish(c.diags, o)) // what MCT's TPC cannot hold; -Werror
        return status;
    }
  } else if (o.emit == "aimet") {
    const ir::Capabilities *caps =
        pickByName(c.diags, m.capabilities, "capabilities", "capabilities", o.capabilities,
                   "--emit=aimet derives one config; choose the capabilities with "
                   "--capabilities NAME");
    if (!caps)
      return finish(c.diags, o);
    emitAimet(m, *caps, c.diags, os, o.aimetComment);
    if (int status = finish(c.diags, o)) // what AIMET cannot express; -Werror
      return status;
  } else if (o.emit == "json") {
    emitJSON(m, os);
  } else {
    for (ast::File *f : c.inputs)
      dumpAST(c.sources, *f, os);
  }
  os.flush();
  timer.done("emit");
  if (o.output.empty() || o.output == "-") {
    llvm::outs() << text;
  } else {
    std::string error;
    if (!writeFileAtomically(o.output, text, error)) {
      c.diags.emitAt("", diag::err_cannot_write_file, o.output, error);
      return finish(c.diags, o);
    }
  }
  timer.done("write");
  return ExitOK;
}

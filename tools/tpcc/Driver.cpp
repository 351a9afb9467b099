//===- Driver.cpp - Shared pieces of the tpcc driver ------------------------===//
#include "tools/tpcc/Driver.h"

#include "quant/pipeline/Pipeline.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

using namespace tpcc;
using namespace tpcc::driver;

bool Options::useColor() const {
  return color == "always" || (color == "auto" && llvm::sys::Process::StandardErrHasColors());
}

bool Options::showProgress() const {
  return progress == "always" ||
         (progress == "auto" && llvm::sys::Process::StandardErrIsDisplayed());
}

void Progress::update(int64_t done, llvm::StringRef detail) {
  if (!enabled)
    return;
  auto now = std::chrono::steady_clock::now();
  if ((!total || done < total) && now - last < std::chrono::milliseconds(100))
    return;
  last = now;
  int width = 30, filled = total ? int(width * std::min(done, total) / total) : 0;
  llvm::errs() << "\r  [" << std::string(size_t(filled), '#')
               << std::string(size_t(width - filled), total ? ' ' : '.') << "] " << done;
  if (total)
    llvm::errs() << "/" << total;
  llvm::errs() << " " << label;
  if (!detail.empty())
    llvm::errs() << ": " << detail;
  if (total && done >= total)
    finish();
  llvm::errs().flush();
}

void Progress::finish() {
  if (enabled)
    llvm::errs() << "\r" << std::string(100, ' ') << "\r";
}

int driver::exitCode(const DiagnosticEngine &diags) {
  if (!diags.hasErrors())
    return ExitOK;
  // What the command line named: files, entities, nodes.
  static const diag::Kind usage[] = {diag::err_cannot_open_file,
                                     diag::err_cannot_write_file,
                                     diag::err_usage,
                                     diag::err_no_entity,
                                     diag::err_file_defines,
                                     diag::err_capabilities_not_for_platform,
                                     diag::err_platform_several_capabilities,
                                     diag::err_platform_no_capabilities,
                                     diag::err_no_node_named};
  for (const Diagnostic &d : diags.getDiagnostics())
    if (std::find(std::begin(usage), std::end(usage), d.kind) != std::end(usage))
      return ExitUsage;
  return ExitInputErrors;
}

int driver::finish(DiagnosticEngine &diags, const Options &o) {
  int code = exitCode(diags);
  bool usage = false;
  for (const Diagnostic &d : diags.getDiagnostics())
    usage |= d.kind == diag::err_usage;
  diags.print(llvm::errs(), o.useColor());
  if (usage)
    llvm::errs() << "run `tpcc --help` for usage\n";
  return code;
}

std::vector<std::string> driver::libraryFiles(const std::vector<std::string> &dirs) {
  std::vector<std::string> files;
  for (const std::string &dir : dirs) {
    std::vector<std::string> here;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(dir, ec), e; it != e && !ec; it.increment(ec))
      if (llvm::sys::path::extension(it->path()) == ".tpc")
        here.push_back(it->path());
    std::sort(here.begin(), here.end());
    files.insert(files.end(), here.begin(), here.end());
  }
  return files;
}

const ir::Platform *driver::pickPlatform(Compilation &c, const ir::Module &m, const Options &o) {
  if (llvm::StringRef(o.platform).endswith(".tpc"))
    return definedIn(c, m.platforms, o.platform, "platform");
  return pickByName(c.diags, m.platforms, "platform", "platforms", o.platform,
                    o.commandName + " needs a platform: --platform NAME");
}

/// The recipe: the one named, the one a .tpc file defines, or the defaults.
LogicalResult driver::pickRecipe(Compilation &c, const ir::Module &m, const Options &o,
                                 const ir::Platform *platform, ir::Recipe &recipe,
                                 quant::RecipeOrigin &origin) {
  origin = quant::RecipeOrigin::None;
  if (o.recipe == "none") // a recipe cannot be named `none`: the word is reserved
    return success();
  if (o.recipe.empty()) {
    if (platform && platform->recipe)
      for (const ir::Recipe &r : m.recipes)
        if (r.name == *platform->recipe) {
          recipe = r;
          origin = quant::RecipeOrigin::Platform;
        }
    return success();
  }
  origin = quant::RecipeOrigin::Flag;
  const ir::Recipe *r = llvm::StringRef(o.recipe).endswith(".tpc")
                            ? definedIn(c, m.recipes, o.recipe, "recipe")
                            : pickByName(c.diags, m.recipes, "recipe", "recipes", o.recipe, "");
  if (!r)
    return failure();
  recipe = *r;
  return success();
}

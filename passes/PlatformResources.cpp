//===- PlatformResources.cpp - A platform's `resources` block -------------===//
//
// `resources { weights_memory: 8 MiB, activation_memory: 2 MiB,
// total_memory: 10 MiB }` declares the memory the platform has: absolute
// amounts only (FieldBlock readBudget; a percentage is an error, since there
// is nothing it could be a percentage of). A child starts from its parent's
// resolved resources and replaces the fields its own block names, so a
// problem in a parent's block is reported once, with the parent.
//
//===----------------------------------------------------------------------===//
#include "passes/FieldBlock.h"
#include "passes/PlatformResolverImpl.h"

using namespace tpcc;
using namespace tpcc::passes;

namespace {
using Slot = std::optional<ir::Budget> ir::PlatformResources::*;
struct ResourceField {
  const char *name;
  ir::Resource resource;
  Slot slot;
};
const ResourceField fields[] = {
    {"weights_memory", ir::Resource::WeightsMemory, &ir::PlatformResources::weightsMemory},
    {"activation_memory", ir::Resource::ActivationMemory, &ir::PlatformResources::activationMemory},
    {"total_memory", ir::Resource::TotalMemory, &ir::PlatformResources::totalMemory}};
const char *const fieldNames[] = {"weights_memory", "activation_memory", "total_memory"};
} // namespace

void PlatformResolver::resolveResources(ir::Platform &p) {
  if (parent)
    p.resources = parent->platform.resources;
  const unsigned own = static_cast<unsigned>(scope.chain.size() - 1);
  for (const AtLevel<ast::ResourcesItem> &item : scope.resources) {
    if (item.level != own || !item.decl->body)
      continue;
    ir::PlatformResources res = p.resources.value_or(ir::PlatformResources());
    for (const FlatField &f : flattenBlock(c, *item.decl->body)) {
      const ResourceField *field = nullptr;
      for (const ResourceField &candidate : fields)
        if (f.name(0) == candidate.name)
          field = &candidate;
      if (!field) {
        reportUnknownField(c, f, 0, "a platform's `resources`", fieldNames);
        continue;
      }
      if (f.path.size() > 1) {
        reportUnknownField(c, f, 1, "", {});
        continue;
      }
      std::optional<ir::Budget> b = readBudget(c, f, field->resource);
      if (b && b->relative)
        c.diags.emit(f.value->getRange(), diag::err_platform_memory_relative, b->text);
      else if (b)
        res.*field->slot = std::move(b);
    }
    // At the keyword (diagnostics of later stages point there).
    SourceLoc end = item.decl->getLoc();
    end.offset += sizeof("resources") - 1;
    res.loc = SourceRange(item.decl->getLoc(), end);
    p.resources = res.empty() ? std::nullopt : std::optional<ir::PlatformResources>(res);
  }
}

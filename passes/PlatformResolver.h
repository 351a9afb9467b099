//===- PlatformResolver.h - Platform declarations to IR ---------*- C++ -*-===//
//
// Resolves one platform (docs/language.md §4 and §5):
// every `with` chain, option list, opset, group and fusing pattern of the
// platform and its parents is evaluated in the platform's own scope (late
// binding), defaults are filled in, and Rules 3-11 and 15 are checked.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_PASSES_PLATFORMRESOLVER_H
#define TPCC_PASSES_PLATFORMRESOLVER_H

#include "frontend/Frontend.h"
#include "ir/TpcIR.h"

#include <set>
#include <utility>
#include <vector>

namespace tpcc::passes {

struct PlatformResult {
  ir::Platform platform;
  /// Rule 11 `input_bits` warnings given for this platform or its parents
  /// (location of the bit width, the bit width): a child does not repeat a
  /// warning about an inherited config that its parent already gave.
  std::set<std::pair<SourceLoc, int64_t>> inputBitsWarnings;
};

/// Resolves `chain.back()`, which extends `chain[size - 2]`, ... (root
/// first). `parent` is the result for `chain[size - 2]`, or null for a root.
/// Always returns a platform; what could not be resolved is left out.
PlatformResult resolvePlatform(Compilation &c, std::vector<const ast::PlatformDecl *> chain,
                               const PlatformResult *parent);

} // namespace tpcc::passes

#endif

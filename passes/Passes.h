//===- Passes.h - From AST to the typed, validated IR ------------*- C++ -*-===//
//
// `buildModule` runs every compile-time pass over a loaded compilation:
// name resolution across files, platform resolution (`with`, `extends`,
// `override`, `remove fuse`, options, groups, defaults) and the Rules of the
// language (see docs/language.md), framework / capabilities / recipe checking
// against the ONNX operator schemas. Diagnostics go to the compilation's
// engine; the IR is returned even when errors were reported (holding whatever
// could be resolved), so callers check `c.diags.hasErrors()`.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_PASSES_PASSES_H
#define TPCC_PASSES_PASSES_H

#include "frontend/Frontend.h"
#include "ir/TpcIR.h"

namespace tpcc {

ir::Module buildModule(Compilation &c);

} // namespace tpcc

#endif

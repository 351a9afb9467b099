//===- Backends.h - Output formats of the typed IR ---------------*- C++ -*-===//
//
// One backend = one function writing one format. Selected by `--emit=` in the
// driver.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_BACKENDS_BACKENDS_H
#define TPCC_BACKENDS_BACKENDS_H

#include "ir/TpcIR.h"
#include "llvm/Support/raw_ostream.h"

namespace tpcc {

/// The canonical JSON of the typed IR (`tpcc emit --emit=json`): every field
/// explicit, keys sorted, deterministic. Version field `tpcc_ir_version`: 1.
void emitJSON(const ir::Module &m, llvm::raw_ostream &os);

} // namespace tpcc

#endif

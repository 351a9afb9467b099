//===- Verify.h - `tpcc check --verify` -------------------------*- C++ -*-===//
#ifndef TPCC_TOOLS_TPCC_VERIFY_H
#define TPCC_TOOLS_TPCC_VERIFY_H

#include "support/Diagnostics.h"

namespace tpcc {

/// Compares `diags` with the `expected-*` annotations in every buffer of `sm`;
/// prints each mismatch to `os` and returns true when there are none.
bool verifyDiagnostics(const SourceManager &sm, const std::vector<Diagnostic> &diags,
                       llvm::raw_ostream &os);

} // namespace tpcc

#endif

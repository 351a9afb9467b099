//===- RunUtil.h - Running a model in the unit tests -------------*- C++ -*-===//
#ifndef TPCC_TEST_UNIT_RUNUTIL_H
#define TPCC_TEST_UNIT_RUNUTIL_H

#include "runtime/Executor.h"

#include <gtest/gtest.h>

#include <vector>

namespace tpcc::test_util {

/// The outputs of `m` run on `x` (its first input) with `opts`; every
/// diagnostic is a test failure.
inline std::vector<rt::Tensor> runModel(const graph::Model &m, const rt::Tensor &x,
                                        const rt::RunOptions &opts = {}) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto ex = rt::Executor::create(m, diags);
  std::vector<rt::Tensor> out;
  EXPECT_TRUE(ex);
  if (ex) {
    EXPECT_TRUE(succeeded(ex->run({{m.graph.inputs()[0]->name, x}}, out, diags, opts)));
  }
  for (const Diagnostic &d : diags.getDiagnostics())
    ADD_FAILURE() << d.message;
  return out;
}

} // namespace tpcc::test_util

#endif

//===- QDQTestUtil.h - Helpers of the QDQ rewrite tests -----------*- C++ -*-===//
//
// The float models of test/unit/Inputs/qdq (test/tools/make_qdq_models.py), loaded,
// run through the executor (recording each value's range), given simple grids
// (min/max activations, symmetric per-channel weights) and rewritten into QDQ form:
// shared by QDQTest.cpp (the rewrite against the executor) and QDQOrtTest.cpp (the
// same models through ONNX Runtime).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_TEST_UNIT_QDQTESTUTIL_H
#define TPCC_TEST_UNIT_QDQTESTUTIL_H

#include "ir/graph/OnnxIO.h"
#include "quant/ptq/qdq/QDQ.h"
#include "runtime/DataIO.h"
#include "runtime/Executor.h"
#include "test/unit/RunUtil.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tpcc::qdq_test {

using quant::QuantGrid;

inline const std::string kDir = TPCC_SOURCE_DIR "/test/unit/Inputs/qdq/";
inline const std::string kNodeModules = TPCC_SOURCE_DIR "/.deps/node_modules";
using Ranges = std::map<std::string, std::pair<double, double>>;

struct Loaded {
  SourceManager sm;
  DiagnosticEngine diags{sm};
  std::unique_ptr<graph::Model> m;
};

inline std::unique_ptr<Loaded> load(const std::string &file) {
  auto l = std::make_unique<Loaded>();
  l->m = graph::loadModel(kDir + file, l->diags);
  EXPECT_TRUE(l->m && !l->diags.hasErrors()) << file;
  return l;
}

inline rt::Tensor input(const std::string &file) {
  rt::Tensor t;
  std::string error;
  EXPECT_TRUE(rt::readTensorFile(kDir + file, t, error)) << error;
  return t;
}

/// Output 0 of `m` on `x`; with `ranges`, the min/max of every value.
inline std::vector<float> run(const graph::Model &m, const rt::Tensor &x, Ranges *ranges = nullptr,
                              size_t output = 0,
                              rt::IntegerArithmetic arith = rt::IntegerArithmetic::Float) {
  rt::RunOptions opts;
  opts.arithmetic = arith;
  auto observe = [&](const graph::Value &v, const rt::Tensor &t) {
    if (t.elem() != graph::ElemType::Float || !t.numel())
      return;
    auto [lo, hi] = std::minmax_element(t.data<float>(), t.data<float>() + t.numel());
    (*ranges)[v.name] = {*lo, *hi};
  };
  if (ranges)
    opts.observe = observe;
  std::vector<rt::Tensor> out = test_util::runModel(m, x, opts);
  if (out.size() <= output)
    return {};
  const float *p = out[output].data<float>();
  return std::vector<float>(p, p + out[output].numel());
}

inline QuantGrid actGrid(const Ranges &r, const std::string &v, bool isSigned = false,
                         int bits = 8) {
  auto [lo, hi] = r.at(v);
  return isSigned ? quant::symmetricGrid(std::max(-lo, hi), bits, true)
                  : quant::uniformGrid(lo, hi, bits);
}

/// Symmetric signed grids of the weight at input `index` of `node`: one per
/// channel along `axis`, or one (axis -1).
inline quant::WeightQDQ weightGrids(const graph::Model &m, const std::string &node, unsigned index,
                                    int64_t axis, int bits = 8) {
  auto n = std::find_if(m.graph.nodes().begin(), m.graph.nodes().end(),
                        [&](const auto &k) { return k->name == node; });
  const graph::Tensor &t = *(*n)->inputs[index]->constant;
  int64_t channels = axis < 0 ? 1 : t.dims[size_t(axis)], inner = 1;
  for (size_t d = size_t(axis + 1); d < t.dims.size(); ++d)
    inner *= t.dims[d];
  std::vector<double> maxAbs(size_t(channels), 0);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    double &a = maxAbs[size_t(axis < 0 ? 0 : (i / inner) % channels)];
    a = std::max(a, std::fabs(t.at(i)));
  }
  quant::WeightQDQ w{node, index, axis, {}};
  for (double a : maxAbs)
    w.grids.push_back(quant::symmetricGrid(a, bits, true));
  return w;
}

/// Conv or Gemm `node` fully quantized: input, weights per channel (axis 0,
/// `weightBits` wide), int32 bias, output.
inline quant::QDQSpec linearSpec(const graph::Model &m, const Ranges &r, const std::string &node,
                                 bool signedActs, bool bias = true, int weightBits = 8) {
  quant::QDQSpec s;
  s.activations = {{"x", actGrid(r, "x", signedActs)}, {"y", actGrid(r, "y", signedActs)}};
  s.weights = {weightGrids(m, node, 1, 0, weightBits)};
  if (bias)
    s.biases = {{node, 2, "x", node, 1}};
  return s;
}

inline bool rewrite(Loaded &l, const quant::QDQSpec &s) {
  bool ok = succeeded(quant::rewriteToQDQ(*l.m, s, l.diags));
  for (const Diagnostic &d : l.diags.getDiagnostics())
    ADD_FAILURE() << d.message;
  return ok;
}

inline unsigned count(const graph::Model &m, const std::string &op) {
  auto &ns = m.graph.nodes();
  return unsigned(std::count_if(ns.begin(), ns.end(), [&](auto &n) { return n->opType == op; }));
}

inline const graph::Tensor *init(const graph::Model &m, const std::string &name) {
  const graph::Value *v = m.graph.findValue(name);
  return v && v->isInitializer ? v->constant : nullptr;
}

inline std::string tempFile(const char *suffix) {
  llvm::SmallString<64> path;
  EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("qdq", suffix, path));
  return std::string(path);
}

/// Writes the model and loads it again with the ONNX checker and shape
/// inference on: no diagnostics.
inline void expectValidOnnx(const graph::Model &m) {
  std::string path = tempFile("onnx"), error;
  ASSERT_TRUE(graph::writeModel(m, path, error)) << error;
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto again = graph::loadModel(path, diags);
  llvm::sys::fs::remove(path);
  EXPECT_TRUE(again);
  for (const Diagnostic &d : diags.getDiagnostics())
    ADD_FAILURE() << d.message;
}

inline double maxDiff(const std::vector<float> &a, const std::vector<float> &b) {
  EXPECT_EQ(a.size(), b.size());
  double d = a.empty() || a.size() != b.size() ? INFINITY : 0;
  for (size_t i = 0; i < a.size() && a.size() == b.size(); ++i)
    d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

/// Overwrites float initializer `name` of `m` with `f(i, value)`.
template <typename F> void mapInit(graph::Model &m, const std::string &name, F f) {
  for (const auto &t : m.graph.initializers())
    if (t->name == name)
      for (int64_t i = 0; i < t->numElements(); ++i) {
        float v = float(f(i, t->at(i)));
        std::memcpy(t->raw.data() + 4 * i, &v, 4);
      }
}

} // namespace tpcc::qdq_test

#endif

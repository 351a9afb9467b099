//===- Conformance.cpp - The ONNX node test suite through the executor ------===//
//
// Runs every case of the ONNX backend node test suite (Debian's
// libonnx-testdata: <dir>/<case>/model.onnx with test_data_set_*/input_*.pb
// and output_*.pb) whose operators the executor implements, and compares the
// outputs with the expected ones at the suite's tolerances (numpy's
// assert_allclose with rtol 1e-3, atol 1e-7; NaN equals NaN; integers, bools
// and strings exactly). Cases with an operator the executor lacks are listed
// as skipped with that operator.
//
// usage: tpcc_conformance [--filter SUBSTRING] [--verbose] DIR
// Exit status 0 when no case failed.
//
//===----------------------------------------------------------------------===//
#include "ir/graph/OnnxIO.h"
#include "runtime/Executor.h"
#include "support/SourceManager.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace tpcc;

static std::vector<std::string> listDir(const std::string &dir, llvm::StringRef prefix, bool dirs) {
  std::vector<std::string> out;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    bool isDir = llvm::sys::fs::is_directory(it->path());
    if (name.startswith(prefix) && isDir == dirs)
      out.push_back(it->path());
  }
  std::sort(out.begin(), out.end(), [](const std::string &a, const std::string &b) {
    // input_10.pb after input_9.pb
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return out;
}

/// The errors `diags` collected, on one line.
static std::string errors(const DiagnosticEngine &diags) {
  std::string s;
  for (const Diagnostic &d : diags.getDiagnostics())
    if (d.severity == Severity::Error)
      s += (d.where.empty() ? "" : d.where + ": ") + d.message + "; ";
  return s;
}

static bool readTensor(const std::string &path, rt::Tensor &t, std::string &error) {
  auto buf = llvm::MemoryBuffer::getFile(path, false, false);
  if (!buf) {
    error = path + ": " + buf.getError().message();
    return false;
  }
  SourceManager sm;
  DiagnosticEngine diags(sm);
  graph::Tensor g;
  if (!graph::loadTensorFromBuffer((*buf)->getBuffer(), path, llvm::sys::path::parent_path(path), g,
                                   diags)) {
    error = path + ": " + errors(diags);
    return false;
  }
  t = rt::Tensor::fromGraph(g);
  return true;
}

/// Why `got` differs from `want`, or "" when they agree.
static std::string compare(const rt::Tensor &got, const rt::Tensor &want) {
  if (got.elem() != want.elem())
    return fmt::format("type {} instead of {}", graph::toString(got.elem()),
                       graph::toString(want.elem()));
  if (got.shape() != want.shape())
    return fmt::format("shape {} instead of {}", rt::shapeStr(got.shape()),
                       rt::shapeStr(want.shape()));
  if (got.elem() == graph::ElemType::String)
    return got.strings() == want.strings() ? "" : "different strings";
  bool isFloat = graph::isFloatingPoint(got.elem());
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    bool ok;
    if (!isFloat) {
      ok = got.intAt(i) == want.intAt(i);
    } else {
      double a = got.at(i), b = want.at(i);
      if (std::isnan(a) || std::isnan(b))
        ok = std::isnan(a) && std::isnan(b);
      else if (std::isinf(a) || std::isinf(b))
        ok = a == b;
      else {
        double err = std::fabs(a - b), tol = 1e-7 + 1e-3 * std::fabs(b);
        ok = err <= tol;
        worst = std::max(worst, err);
      }
    }
    if (!ok && bad++ == 0)
      first = i;
  }
  if (!bad)
    return "";
  return fmt::format(
      "{} of {} elements differ; element {} is {} instead of {} (max abs error {:g})", bad,
      got.numel(), first, got.at(first), want.at(first), worst);
}

/// The suite stores bfloat16 data as uint16 (numpy has no bfloat16): the same
/// bits, seen as the type the model declares.
static rt::Tensor asBfloat16(const rt::Tensor &t, graph::ElemType want) {
  if (t.elem() != graph::ElemType::UInt16 || want != graph::ElemType::BFloat16)
    return t;
  rt::Tensor b(graph::ElemType::BFloat16, t.shape());
  std::memcpy(b.raw(), t.raw(), t.bytes());
  return b;
}

enum class Outcome { Pass, Fail, Skip };

/// Cases no executor can reproduce, with the reason.
static const std::map<std::string, std::string> kUnreproducible = {
    {"test_training_dropout",
     "training-mode Dropout: its mask comes from numpy's random generator"},
    {"test_training_dropout_mask",
     "training-mode Dropout: its mask comes from numpy's random generator"},
    {"test_training_dropout_default",
     "training-mode Dropout: its mask comes from numpy's random generator"},
    {"test_training_dropout_default_mask",
     "training-mode Dropout: its mask comes from numpy's random generator"},
};

static Outcome runCase(const std::string &dir, std::string &why) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  std::unique_ptr<graph::Model> m = graph::loadModel(dir + "/model.onnx", diags);
  if (!m) {
    why = "load: " + errors(diags);
    return Outcome::Fail;
  }
  // The executor runs tensors; sequences, maps and optionals are other types.
  for (const auto &v : m->graph.values())
    if (!v->opaqueType.empty() && (v->isGraphInput || v->isGraphOutput)) {
      why = "non-tensor inputs or outputs (sequence, map or optional)";
      return Outcome::Skip;
    }
  auto missing = rt::Executor::unsupportedOperators(*m);
  if (!missing.empty()) {
    std::vector<std::string> ops;
    for (auto &e : missing)
      ops.push_back(e.op);
    why = "not implemented: " + fmt::format("{}", fmt::join(ops, ", "));
    return Outcome::Skip;
  }
  std::unique_ptr<rt::Executor> ex = rt::Executor::create(*m, diags);
  if (!ex) {
    why = errors(diags);
    return Outcome::Fail;
  }
  for (const std::string &set : listDir(dir, "test_data_set_", true)) {
    std::map<std::string, rt::Tensor> inputs;
    std::vector<std::string> inFiles;
    for (const std::string &f : listDir(set, "input_", false))
      inFiles.push_back(f);
    const auto &gin = m->graph.inputs();
    for (size_t i = 0; i < inFiles.size() && i < gin.size(); ++i) {
      rt::Tensor t;
      if (!readTensor(inFiles[i], t, why))
        return Outcome::Fail;
      inputs[gin[i]->name] = asBfloat16(t, gin[i]->type.elem);
    }
    std::vector<rt::Tensor> outputs;
    rt::RunOptions opts;
    opts.allowNonFinite = true;
    opts.checkShapes = false; // test_castlike_*: `like` is [1] where [3,4] is declared
    if (failed(ex->run(inputs, outputs, diags, opts))) {
      why = errors(diags);
      return Outcome::Fail;
    }
    std::vector<std::string> outFiles = listDir(set, "output_", false);
    for (size_t i = 0; i < outFiles.size(); ++i) {
      rt::Tensor want;
      if (!readTensor(outFiles[i], want, why))
        return Outcome::Fail;
      if (i >= outputs.size()) {
        why = fmt::format("output {} missing", i);
        return Outcome::Fail;
      }
      std::string diff = compare(outputs[i], asBfloat16(want, outputs[i].elem()));
      if (!diff.empty()) {
        why = fmt::format("{}: output {} `{}`: {}", llvm::sys::path::filename(set).str(), i,
                          m->graph.outputs()[i]->name, diff);
        return Outcome::Fail;
      }
    }
  }
  return Outcome::Pass;
}

int main(int argc, char **argv) {
  std::string dir, filter;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--filter" && i + 1 < argc)
      filter = argv[++i];
    else if (a == "--verbose")
      verbose = true;
    else
      dir = a;
  }
  if (dir.empty()) {
    llvm::errs() << "usage: tpcc_conformance [--filter SUBSTRING] [--verbose] DIR\n";
    return 2;
  }
  std::vector<std::string> cases = listDir(dir, "test_", true);
  if (cases.empty()) {
    llvm::errs() << "tpcc_conformance: no test cases in " << dir << "\n";
    return 2;
  }
  unsigned passed = 0, failed = 0, skipped = 0;
  std::map<std::string, std::vector<std::string>> skippedFor;
  for (const std::string &c : cases) {
    std::string name = llvm::sys::path::filename(c).str();
    if (!filter.empty() && name.find(filter) == std::string::npos)
      continue;
    std::string why;
    auto unrepro = kUnreproducible.find(name);
    Outcome o =
        unrepro != kUnreproducible.end() ? (why = unrepro->second, Outcome::Skip) : runCase(c, why);
    switch (o) {
    case Outcome::Pass:
      ++passed;
      if (verbose)
        llvm::outs() << "PASS " << name << "\n";
      break;
    case Outcome::Fail:
      ++failed;
      llvm::outs() << "FAIL " << name << ": " << why << "\n";
      break;
    case Outcome::Skip:
      ++skipped;
      skippedFor[why].push_back(name);
      break;
    }
  }
  llvm::outs() << "skipped cases, by reason:\n";
  for (const auto &[why, names] : skippedFor)
    llvm::outs() << "  " << why << " (" << names.size()
                 << "): " << fmt::format("{}", fmt::join(names, " ")) << "\n";
  llvm::outs() << fmt::format("conformance: {} passed, {} failed, {} skipped of {} cases\n", passed,
                              failed, skipped, passed + failed + skipped);
  return failed ? 1 : 0;
}

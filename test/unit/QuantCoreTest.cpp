//===- QuantCoreTest.cpp - The quantizer core on a model built here ---------===//
//
// quantizePlan, completeSpec, measureLayers, CalibrationData and specFromPlan
// (quant/ptq/Quantizer.h, qdq/Apply.h) on a one-Gemm model built with
// the ONNX protobuf classes and a small platform: grids, bias correction and
// SQNR are checked against values computed here from their definitions
// (docs/algorithms.md §1, §2; docs/quantize.md, "Corrections"), not against
// what the code printed once.
//
//===----------------------------------------------------------------------===//
#include "ir/graph/OnnxIO.h"
#include "passes/Passes.h"
#include "plan/Plan.h"
#include "quant/ptq/Measure.h"
#include "quant/ptq/Quantizer.h"
#include "quant/ptq/qdq/Apply.h"
#include "quant/ptq/qdq/Finish.h"
#include "runtime/DataIO.h"
#include "test/unit/TestUtil.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <limits>

using namespace tpcc;
using namespace tpcc::quant;

namespace {

const char *kSpec = R"(
framework fw {
  weight kernel: Gemm.input[1] where transB == 1 axes(out: 0, in: 1),
                 Gemm.input[1] where transB == 0 axes(out: 1, in: 0)
  weight bias: Gemm.input[2]
}
platform chip {
  attr k8 = { method: symmetric, bits: 8, per_channel: true }
  attr f32 = { quantize: false, bits: 32 }
  config a8 = {
    activation: { method: power_of_two, bits: 8, signedness: auto }
    weights: f32
  }
  config fc8 = a8 with { weights.kernel: k8 }
  default [a8]
  opset Fc : [fc8]
}
capabilities chip_fw = chip on fw {
  Fc <- Gemm
}
)";

constexpr int64_t kRows = 10, kIn = 4, kOut = 3;
const float kW[kOut][kIn] = {
    {0.5f, -0.25f, 0.1f, 0.3f}, {-0.7f, 0.2f, 0.05f, 0.6f}, {0.011f, -0.013f, 0.017f, -0.019f}};
const float kC[kOut] = {0.1f, -0.2f, 0.3f};

/// x[r][k] in [0, 0.9]: 0.09 * ((3r + 7k) mod 11).
float xAt(int64_t r, int64_t k) { return 0.09f * float((3 * r + 7 * k) % 11); }

void setDims(onnx::ValueInfoProto *v, const std::string &name, std::vector<int64_t> dims) {
  v->set_name(name);
  auto *t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  t->mutable_shape()->add_dim()->set_dim_param("N");
  for (int64_t d : dims)
    t->mutable_shape()->add_dim()->set_dim_value(d);
}

void floatInit(onnx::GraphProto *g, const std::string &name, std::vector<int64_t> dims,
               const float *values) {
  auto *t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    n *= d;
  }
  for (int64_t i = 0; i < n; ++i)
    t->add_float_data(values[i]);
}

/// A model of opset 13 whose graph has input x[N,4].
onnx::GraphProto *startModel(onnx::ModelProto &m) {
  m.set_ir_version(7);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto *g = m.mutable_graph();
  g->set_name("g");
  setDims(g->add_input(), "x", {kIn});
  return g;
}

/// x[N,4] -> [Flatten ->] Gemm fc (W[3,4], transB 1, C[3], alpha) -> y[N,3];
/// `scale` multiplies W and C (a model whose output is `scale` times y).
std::string gemmModel(float scale = 1, float alpha = 1, bool flatten = false) {
  onnx::ModelProto m;
  onnx::GraphProto *g = startModel(m);
  setDims(g->add_output(), "y", {kOut});
  float w[kOut * kIn], c[kOut];
  for (int64_t j = 0; j < kOut; ++j) {
    c[j] = kC[j] * scale;
    for (int64_t k = 0; k < kIn; ++k)
      w[j * kIn + k] = kW[j][k] * scale;
  }
  floatInit(g, "W", {kOut, kIn}, w);
  floatInit(g, "C", {kOut}, c);
  std::string in = "x";
  if (flatten) {
    auto *f = g->add_node();
    f->set_op_type("Flatten");
    f->set_name("flat");
    f->add_input("x");
    f->add_output("f");
    in = "f";
  }
  auto *n = g->add_node();
  n->set_op_type("Gemm");
  n->set_name("fc");
  for (const char *i : {in.c_str(), "W", "C"})
    n->add_input(i);
  n->add_output("y");
  auto *t = n->add_attribute();
  t->set_name("transB");
  t->set_type(onnx::AttributeProto::INT);
  t->set_i(1);
  if (alpha != 1) {
    auto *a = n->add_attribute();
    a->set_name("alpha");
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(alpha);
  }
  return m.SerializeAsString();
}

/// A temporary folder, removed with its files.
struct TempDir {
  llvm::SmallString<128> path;
  std::vector<std::string> files;
  TempDir() { EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("quantcore", path)); }
  ~TempDir() {
    for (const std::string &f : files)
      llvm::sys::fs::remove(f);
    llvm::sys::fs::remove(path);
  }
  /// Writes rows [begin, end) of x (or `width` columns of it) as NAME.
  std::string npy(const std::string &name, int64_t begin, int64_t end, int64_t width = kIn) {
    rt::Tensor t(graph::ElemType::Float, {end - begin, width});
    for (int64_t r = begin; r < end; ++r)
      for (int64_t k = 0; k < width; ++k)
        t.data<float>()[(r - begin) * width + k] = xAt(r, k % kIn);
    llvm::SmallString<128> p(path);
    llvm::sys::path::append(p, name);
    std::string error;
    EXPECT_TRUE(rt::writeTensorFile(p, t, error)) << error;
    files.push_back(std::string(p));
    return std::string(p);
  }
};

/// The symmetric signed 8-bit grid value of w with scale s.
double fakeQuant(double w, double s) {
  return s * std::clamp(std::nearbyint(w / s), -128.0, 127.0);
}

class QuantCore : public ::testing::Test {
protected:
  void SetUp() override {
    c.files.push_back(parseBuffer(c, "chip.tpc", kSpec));
    module = buildModule(c);
    ASSERT_FALSE(c.diags.hasErrors());
  }
  void TearDown() override {
    if (HasFailure())
      test_util::printDiagnostics(c);
  }
  std::unique_ptr<graph::Model> load(const std::string &bytes) {
    auto m = graph::loadModelFromBuffer(bytes, "m.onnx", ".", c.diags);
    EXPECT_TRUE(m);
    return m;
  }
  plan::Plan planOf(graph::Model &m) {
    return plan::buildPlan(module, *module.findPlatform("chip"),
                           *module.findCapabilities("chip_fw"), module.findFramework("fw"), m,
                           c.diags);
  }
  std::unique_ptr<rt::Executor> executor(const graph::Model &m) {
    auto ex = rt::Executor::create(m, c.diags);
    EXPECT_TRUE(ex);
    return ex;
  }
  std::unique_ptr<CalibrationData> open(const std::vector<std::string> &specs,
                                        const rt::Executor &ex, int64_t batch = 4) {
    return CalibrationData::open(specs, ex, batch, c.diags);
  }
  /// A diagnostics engine of its own, for a test that expects errors.
  struct Diags {
    SourceManager sm;
    DiagnosticEngine diags{sm};
    std::string last() const {
      return diags.getDiagnostics().empty() ? "" : diags.getDiagnostics().back().message;
    }
  };
  /// quantizePlan of the Gemm model over all 10 rows, no clipping.
  bool quantize(graph::Model &m, TempDir &dir, QuantizeResult &r, bool biasCorrection = true) {
    plan::Plan p = planOf(m);
    auto ex = executor(m);
    auto data = open({dir.npy("x.npy", 0, kRows)}, *ex);
    if (!ex || !data)
      return false;
    QuantizeOptions o;
    o.recipe.activationThreshold = ir::ThresholdMethod::NoClipping;
    o.recipe.weightsThreshold = ir::ThresholdMethod::NoClipping;
    o.recipe.biasCorrection = biasCorrection;
    return succeeded(quantizePlan(p, *ex, *data, o, r, c.diags));
  }
  const TensorReport *row(const QuantizeResult &r, const std::string &name) {
    for (const TensorReport &t : r.tensors)
      if (t.tensor == name)
        return &t;
    ADD_FAILURE() << "no report row " << name;
    return nullptr;
  }
  const QuantGrid *activation(const QuantizeResult &r, const std::string &name) {
    for (const ActivationQDQ &a : r.spec.activations)
      if (a.value == name)
        return &a.grid;
    return nullptr;
  }

  Compilation c;
  ir::Module module;
};

} // namespace

TEST_F(QuantCore, QuantizePlanChoosesGridsAsDefined) {
  auto m = load(gemmModel());
  TempDir dir;
  QuantizeResult r;
  ASSERT_TRUE(quantize(*m, dir, r));
  EXPECT_EQ(r.samples, kRows);
  // x in [0, 0.9]: unsigned, power-of-two threshold 1, scale 2^-8.
  const QuantGrid *x = activation(r, "x");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->method, ir::QuantMethod::PowerOfTwo);
  EXPECT_FALSE(x->isSigned);
  EXPECT_EQ(x->threshold, 1.0);
  EXPECT_EQ(x->scale, 1.0 / 256);
  // y: a power-of-two threshold covering max |y| without doubling it.
  const QuantGrid *y = activation(r, "y");
  ASSERT_TRUE(y);
  double maxAbs = 0, minY = 0;
  for (int64_t row = 0; row < kRows; ++row)
    for (int64_t j = 0; j < kOut; ++j) {
      double v = kC[j];
      for (int64_t k = 0; k < kIn; ++k)
        v += double(kW[j][k]) * xAt(row, k);
      maxAbs = std::max(maxAbs, std::abs(v));
      minY = std::min(minY, v);
    }
  EXPECT_EQ(y->isSigned, minY < 0);
  EXPECT_EQ(std::exp2(std::round(std::log2(y->threshold))), y->threshold);
  EXPECT_GE(y->threshold, maxAbs * (1 - 1e-6));
  EXPECT_LT(y->threshold, 2 * maxAbs);
  // W: one symmetric grid per output channel (transB: axis 0), no clipping:
  // t = max(-min, max * 128/127), scale t / 128.
  ASSERT_EQ(r.spec.weights.size(), 1u);
  const WeightQDQ &w = r.spec.weights[0];
  EXPECT_EQ(w.node, "fc");
  EXPECT_EQ(w.inputIndex, 1u);
  EXPECT_EQ(w.axis, 0);
  ASSERT_EQ(w.grids.size(), size_t(kOut));
  for (int64_t j = 0; j < kOut; ++j) {
    double lo = *std::min_element(kW[j], kW[j] + kIn), hi = *std::max_element(kW[j], kW[j] + kIn);
    double t = std::max(-lo, hi * 128.0 / 127.0);
    EXPECT_NEAR(w.grids[size_t(j)].scale, t / 128, 1e-12) << "channel " << j;
    EXPECT_EQ(w.grids[size_t(j)].method, ir::QuantMethod::Symmetric);
  }
  // Report rows: the activations, then the weight with its channels.
  const TensorReport *wr = row(r, "W");
  ASSERT_TRUE(wr);
  EXPECT_TRUE(wr->weight);
  EXPECT_EQ(wr->channels, kOut);
  EXPECT_EQ(wr->node, "fc");
  // completeSpec ran: the bias becomes int32 on x's grid times W's.
  ASSERT_EQ(r.spec.biases.size(), 1u);
  EXPECT_EQ(r.spec.biases[0].node, "fc");
  EXPECT_EQ(r.spec.biases[0].inputIndex, 2u);
  EXPECT_EQ(r.spec.biases[0].inputActivation, "x");
}

TEST_F(QuantCore, BiasCorrectionSubtractsTheKernelErrorTimesTheInputMean) {
  auto m = load(gemmModel());
  TempDir dir;
  QuantizeResult r;
  ASSERT_TRUE(quantize(*m, dir, r));
  ASSERT_EQ(r.biases.size(), 1u);
  EXPECT_EQ(r.biases[0].first, "fc");
  const std::vector<float> &b = r.biases[0].second;
  ASSERT_EQ(b.size(), size_t(kOut));
  // b_j - sum_k (q(W_jk) - W_jk) mu_k (docs/quantize.md, "Corrections";
  // alpha = beta = 1),
  // mu_k the average of the per-batch means of input channel k (as MCT; the
  // batches of 4 are rows 0-3, 4-7 and 8-9).
  for (int64_t j = 0; j < kOut; ++j) {
    double lo = *std::min_element(kW[j], kW[j] + kIn), hi = *std::max_element(kW[j], kW[j] + kIn);
    double s = std::max(-lo, hi * 128.0 / 127.0) / 128;
    double corr = 0;
    for (int64_t k = 0; k < kIn; ++k) {
      double mu = 0;
      for (int64_t begin = 0; begin < kRows; begin += 4) {
        int64_t end = std::min<int64_t>(kRows, begin + 4);
        double batch = 0;
        for (int64_t row = begin; row < end; ++row)
          batch += xAt(row, k);
        mu += batch / double(end - begin) / 3;
      }
      corr += (fakeQuant(kW[j][k], s) - kW[j][k]) * mu;
    }
    EXPECT_NEAR(b[size_t(j)], kC[j] - corr, 1e-7) << "channel " << j;
  }
  // Off: no corrected bias.
  auto m2 = load(gemmModel());
  QuantizeResult off;
  ASSERT_TRUE(quantize(*m2, dir, off, /*biasCorrection=*/false));
  EXPECT_TRUE(off.biases.empty());
}

TEST_F(QuantCore, CompleteSpecGivesValueMovingOpsTheirInputGridAndInt32Biases) {
  auto m = load(gemmModel(1, 1, /*flatten=*/true));
  QuantizeResult r;
  QuantGrid g = powerOfTwoGrid(0.9, 8, false);
  r.spec.activations.push_back({"x", g});
  r.spec.weights.push_back({{0, {symmetricGrid(1, 8, true)}}, "fc", 1});
  completeSpec(*m, r);
  // Flatten moves values: its output takes x's grid.
  ASSERT_EQ(r.spec.activations.size(), 2u);
  EXPECT_EQ(r.spec.activations[1].value, "f");
  EXPECT_EQ(r.spec.activations[1].grid.scale, g.scale);
  ASSERT_EQ(r.spec.biases.size(), 1u);
  EXPECT_EQ(r.spec.biases[0].inputActivation, "f");

  // Gemm with alpha != 1: the accumulator is scaled, the bias stays float.
  auto scaled = load(gemmModel(1, 0.5f));
  QuantizeResult r2;
  r2.spec.activations.push_back({"x", g});
  r2.spec.weights.push_back({{0, {symmetricGrid(1, 8, true)}}, "fc", 1});
  completeSpec(*scaled, r2);
  EXPECT_TRUE(r2.spec.biases.empty());
  EXPECT_EQ(r2.spec.activations.size(), 1u);

  // An unquantized input: no int32 bias.
  auto plain = load(gemmModel());
  QuantizeResult r3;
  r3.spec.weights.push_back({{0, {symmetricGrid(1, 8, true)}}, "fc", 1});
  completeSpec(*plain, r3);
  EXPECT_TRUE(r3.spec.biases.empty());
}

TEST_F(QuantCore, MeasureLayersComputesSqnrPerTensor) {
  // The "quantized" model computes 1.1 y: SQNR = 10 log10(1 / 0.1^2) = 20 dB;
  // x is the same in both (exact: infinite).
  auto ref = load(gemmModel());
  auto other = load(gemmModel(1.1f));
  TempDir dir;
  auto floatEx = executor(*ref), quantEx = executor(*other);
  ASSERT_TRUE(floatEx && quantEx);
  auto data = open({dir.npy("x.npy", 0, kRows)}, *floatEx, 3);
  ASSERT_TRUE(data);
  QuantizeResult r;
  TensorReport x;
  x.tensor = "x";
  r.tensors.push_back(x);
  TensorReport w;
  w.tensor = "W";
  w.weight = true;
  r.tensors.push_back(w);
  ASSERT_TRUE(succeeded(measureLayers(*floatEx, *quantEx, *data, 1024, r, c.diags)));
  // y, a model output nobody listed, gets an unquantized row.
  ASSERT_EQ(r.tensors.size(), 3u);
  const TensorReport *y = row(r, "y");
  ASSERT_TRUE(y);
  EXPECT_FALSE(y->quantized);
  EXPECT_EQ(y->opset, "(output)");
  EXPECT_TRUE(y->measured);
  EXPECT_NEAR(y->sqnr, 20.0, 1e-3); // float rounding of 1.1 W
  EXPECT_TRUE(r.tensors[0].measured);
  EXPECT_EQ(r.tensors[0].sqnr, std::numeric_limits<double>::infinity());
  EXPECT_FALSE(r.tensors[1].measured); // weights are not measured
  // At most `maxSamples`: one batch of 3 rows is enough for the same ratio.
  QuantizeResult few;
  few.tensors.push_back(x);
  ASSERT_TRUE(succeeded(measureLayers(*floatEx, *quantEx, *data, 1, few, c.diags)));
  EXPECT_NEAR(row(few, "y")->sqnr, 20.0, 1e-3);
}

TEST_F(QuantCore, CalibrationDataCutsFilesIntoBatches) {
  auto m = load(gemmModel());
  auto ex = executor(*m);
  TempDir dir;
  std::string file = dir.npy("x.npy", 0, kRows);
  for (const std::string &spec : {file, "x=" + file}) {
    auto data = open({spec}, *ex, 4);
    ASSERT_TRUE(data) << spec;
    EXPECT_EQ(data->total(), 0); // unknown before a full pass
    std::map<std::string, rt::Tensor> feed;
    std::vector<int64_t> sizes;
    while (data->next(feed, c.diags)) {
      ASSERT_EQ(feed.count("x"), 1u);
      sizes.push_back(feed["x"].dim(0));
      EXPECT_EQ(feed["x"].data<float>()[1], xAt(4 * int64_t(sizes.size() - 1), 1));
    }
    EXPECT_FALSE(data->failed());
    EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
    EXPECT_EQ(data->samples(), kRows);
    data->rewind(); // a full pass rewound: the total is known
    EXPECT_EQ(data->total(), kRows);
    EXPECT_EQ(data->samples(), 0);
    ASSERT_TRUE(data->next(feed, c.diags));
    EXPECT_EQ(feed["x"].data<float>()[0], xAt(0, 0));
  }
  EXPECT_FALSE(c.diags.hasErrors());
}

/// x[N,4] + s[2,N,4] -> y[2,N,4]: a second input whose batch is its axis 1
/// (a recurrent state).
std::string stateModel() {
  onnx::ModelProto m;
  onnx::GraphProto *g = startModel(m);
  auto *st = g->add_input();
  st->set_name("s");
  auto *t = st->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  t->mutable_shape()->add_dim()->set_dim_value(2);
  t->mutable_shape()->add_dim()->set_dim_param("N");
  t->mutable_shape()->add_dim()->set_dim_value(kIn);
  auto *y = g->add_output();
  y->CopyFrom(*st);
  y->set_name("y");
  auto *n = g->add_node();
  n->set_op_type("Add");
  n->set_name("add");
  n->add_input("s");
  n->add_input("x");
  n->add_output("y");
  return m.SerializeAsString();
}

TEST_F(QuantCore, CalibrationDataCutsAStateAlongItsBatchAxis) {
  auto m = load(stateModel());
  auto ex = executor(*m);
  TempDir dir;
  std::string x = dir.npy("x.npy", 0, kRows);
  // One state per sample, stacked on axis 1: s[j][r][k] = 100 j + r + k / 10.
  rt::Tensor st(graph::ElemType::Float, {2, kRows, kIn});
  for (int64_t j = 0; j < 2; ++j)
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t k = 0; k < kIn; ++k)
        st.data<float>()[(j * kRows + r) * kIn + k] = float(100 * j + r) + float(k) / 10;
  llvm::SmallString<128> sp(dir.path);
  llvm::sys::path::append(sp, "s.npy");
  std::string error;
  ASSERT_TRUE(rt::writeTensorFile(std::string(sp), st, error)) << error;
  dir.files.push_back(std::string(sp));
  auto data = open({"x=" + x, "s=" + std::string(sp)}, *ex, 4);
  ASSERT_TRUE(data);
  std::map<std::string, rt::Tensor> feed;
  int64_t first = 0;
  while (data->next(feed, c.diags)) {
    int64_t rows = feed["x"].dim(0);
    ASSERT_EQ(feed["s"].shape(), (rt::Shape{2, rows, kIn}));
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t r = 0; r < rows; ++r)
        EXPECT_FLOAT_EQ(feed["s"].data<float>()[(j * rows + r) * kIn + 3],
                        float(100 * j + first + r) + 0.3f)
            << "state " << j << " of sample " << first + r;
    std::vector<rt::Tensor> out;
    EXPECT_TRUE(succeeded(ex->run(feed, out, c.diags)));
    first += rows;
  }
  EXPECT_FALSE(data->failed());
  EXPECT_EQ(first, kRows);
  // The first samples only (what the SQNR is measured on): the state follows.
  std::vector<std::map<std::string, rt::Tensor>> feeds;
  ASSERT_TRUE(succeeded(data->firstSamples(6, feeds, c.diags)));
  ASSERT_EQ(feeds.size(), 2u);
  EXPECT_EQ(feeds[1]["s"].shape(), (rt::Shape{2, 2, kIn}));
  EXPECT_EQ(feeds[1]["x"].shape(), (rt::Shape{2, kIn}));
  EXPECT_FALSE(c.diags.hasErrors());
}

TEST_F(QuantCore, CalibrationDataReadsAFolderInNameOrder) {
  auto m = load(gemmModel());
  auto ex = executor(*m);
  TempDir dir;
  dir.npy("b.npy", 3, 5); // rows 3, 4
  dir.npy("a.npy", 0, 3); // rows 0, 1, 2
  auto data = open({std::string(dir.path)}, *ex, 8);
  ASSERT_TRUE(data);
  std::map<std::string, rt::Tensor> feed;
  std::vector<float> firstColumn;
  while (data->next(feed, c.diags))
    for (int64_t r = 0; r < feed["x"].dim(0); ++r)
      firstColumn.push_back(feed["x"].data<float>()[r * kIn]);
  EXPECT_FALSE(data->failed());
  data->rewind();
  ASSERT_EQ(firstColumn.size(), 5u);
  for (int64_t r = 0; r < 5; ++r)
    EXPECT_EQ(firstColumn[size_t(r)], xAt(r, 0)) << "row " << r;
  EXPECT_EQ(data->total(), 5);
}

TEST_F(QuantCore, CalibrationDataErrors) {
  auto m = load(gemmModel());
  auto ex = executor(*m);
  TempDir dir;
  std::string file = dir.npy("x.npy", 0, kRows);
  auto expectError = [&](const std::vector<std::string> &specs, const char *what) {
    Diags d;
    EXPECT_FALSE(CalibrationData::open(specs, *ex, 4, d.diags)) << what;
    EXPECT_TRUE(d.diags.hasErrors()) << what;
  };
  expectError({"z=" + file}, "an input the model does not have");
  expectError({std::string(dir.path) + "/missing.npy"}, "a missing file");
  TempDir empty;
  expectError({std::string(empty.path)}, "an empty folder");
  // A file whose rows do not fit the input: the first batch fails.
  Diags d;
  auto wide = CalibrationData::open({dir.npy("wide.npy", 0, 2, kIn + 1)}, *ex, 4, d.diags);
  if (wide) {
    std::map<std::string, rt::Tensor> feed;
    EXPECT_FALSE(wide->next(feed, d.diags));
    EXPECT_TRUE(wide->failed());
  }
  EXPECT_TRUE(d.diags.hasErrors());
}

TEST_F(QuantCore, SpecFromPlanReadsGridsAndBiases) {
  auto m = load(gemmModel());
  const char *json = R"({"plan_version": 1,
    "nodes": [{"name": "fc", "op_type": "Gemm",
      "weights": {"kernel": {"quantize": true, "input_index": 1, "method": "symmetric",
                             "bits": 8, "per_channel": true, "axis": 0},
                  "bias": {"quantize": false, "input_index": 2}},
      "weight_grids": {"kernel": {"scales": [0.5, 0.25, 0.125], "zero_points": [0, 0, 0]}},
      "corrected_bias": [1, 2, 3]}],
    "tensors": [{"name": "x", "quantize": true, "method": "power_of_two", "bits": 8,
                 "scale": 0.00390625, "zero_point": 0, "range": [0, 0.99609375]},
                {"name": "y", "quantize": false}]})";
  QuantizeResult r;
  ASSERT_TRUE(succeeded(specFromPlan(json, "plan.json", *m, r, c.diags)));
  ASSERT_EQ(r.spec.activations.size(), 1u);
  const QuantGrid &x = r.spec.activations[0].grid;
  EXPECT_EQ(r.spec.activations[0].value, "x");
  EXPECT_FALSE(x.isSigned);
  EXPECT_EQ(x.qmin, 0);
  EXPECT_EQ(x.qmax, 255);
  EXPECT_EQ(x.hi, 255.0 / 256);
  ASSERT_EQ(r.spec.weights.size(), 1u);
  EXPECT_EQ(r.spec.weights[0].axis, 0);
  ASSERT_EQ(r.spec.weights[0].grids.size(), 3u);
  EXPECT_EQ(r.spec.weights[0].grids[1].scale, 0.25);
  EXPECT_EQ(r.spec.weights[0].grids[1].qmin, -128);
  EXPECT_EQ(r.spec.weights[0].grids[1].lo, -32.0);
  ASSERT_EQ(r.biases.size(), 1u);
  EXPECT_EQ(r.biases[0].second, (std::vector<float>{1, 2, 3}));
  ASSERT_EQ(r.spec.biases.size(), 1u); // completeSpec: input and kernel quantized
}

TEST_F(QuantCore, SpecFromPlanRefusesOtherPlans) {
  auto m = load(gemmModel());
  auto refused = [&](const std::string &json, const char *needle) {
    Diags d;
    QuantizeResult r;
    EXPECT_TRUE(failed(specFromPlan(json, "plan.json", *m, r, d.diags))) << json;
    EXPECT_NE(d.last().find(needle), std::string::npos) << d.last();
  };
  const std::string node = R"({"name": "fc", "op_type": "Gemm"})";
  refused("[1]", "a JSON object expected");
  refused("{", "not JSON");
  refused(R"({"plan_version": 2, "nodes": [], "tensors": []})", "plan_version 1 expected");
  refused(R"({"plan_version": 1, "nodes": [], "tensors": []})", "it has 0 nodes");
  refused(R"({"plan_version": 1, "nodes": [{"name": "g", "op_type": "Gemm"}], "tensors": []})",
          "node 0 is `g`");
  refused(R"({"plan_version": 1, "nodes": [)" + node +
              R"(], "tensors": [], "corrections": ["shift_negative: x"]})",
          "not a correction record");
  refused(R"({"plan_version": 1, "nodes": [)" + node +
              R"(], "tensors": [], "corrections": [{"op": "fold"}]})",
          "unknown correction op `fold`");
  refused(R"({"plan_version": 1, "nodes": [)" + node +
              R"(], "tensors": [{"name": "x", "quantize": true, "method": "symmetric"}]})",
          "has no scale and zero point");
}

//===- QDQOrtTest.cpp - QDQ models through ONNX Runtime, on every x86-64 CPU ===//
//
// The QDQ models of QDQTest.cpp through ONNX Runtime (onnxruntime-node, via
// test/ort/ort_optimized.js at level 'extended'): ORT fuses the Q/DQ groups into
// integer kernels (QLinearConv, QGemm, QLinearMatMul) and must compute our numbers.
//
// How ORT multiplies u8 x s8 depends on the CPU. With VNNI (AVX512-VNNI or AVX-VNNI)
// every product is added in int32: exact. Without it (AVX2, AVX-512 without VNNI)
// VPMADDUBSW first adds two adjacent products in int16 with saturation, so full-range
// int8 weights on large activations give other numbers. So every comparison runs with
// 7-bit weights (|2 * 255 * 64| < 2^15: exact on every CPU), and with full-range 8-bit
// weights where this CPU computes exactly; otherwise that case is skipped with a note.
// QDQOrtNoVnni runs ORT under qemu-user as a Haswell (AVX2, no VNNI) on any machine:
// full-range weights saturate there exactly as tpcc's emulation of the pairing says,
// and 7-bit weights (platform ort_cpu_no_vnni) agree.
//
//===----------------------------------------------------------------------===//
#include "QDQTestUtil.h"
#include "runtime/ort/IntegerPairs.h"
#include "runtime/ort/OrtMode.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>

using namespace tpcc;
using namespace tpcc::qdq_test;

namespace {

const char *const kNoOrt = "Node.js or onnxruntime-node is missing (scripts/setup installs them)";
const char *const kNoQemu = "qemu-x86_64 is missing (scripts/setup installs Debian's qemu-user)";

/// Where ONNX Runtime runs: on this machine's CPU, or under qemu-user as a
/// Haswell (AVX2; no AVX-512, no VNNI).
enum class Cpu { Native, Haswell };

/// TPCC_TEST_HOST_CPU=haswell: run "this CPU"'s cases under qemu's Haswell
/// too, so a VNNI machine runs what a machine without VNNI runs.
bool hostIsHaswell() {
  const char *e = std::getenv("TPCC_TEST_HOST_CPU");
  return e && std::string(e) == "haswell";
}

bool hostHasVnni() {
  __builtin_cpu_init();
  return !hostIsHaswell() &&
         (__builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni"));
}

/// Whether ORT's u8 x s8 kernels add every product exactly on `cpu`.
bool exactOn(Cpu cpu) { return cpu == Cpu::Native && hostHasVnni(); }

std::string describe(Cpu cpu) {
  if (cpu == Cpu::Haswell)
    return "qemu Haswell (AVX2, no VNNI)";
  return hostHasVnni() ? "this CPU (VNNI)" : "this CPU (no VNNI)";
}

bool haveOrt() {
  return std::system("command -v node >/dev/null 2>&1") == 0 &&
         llvm::sys::fs::exists(kNodeModules + "/onnxruntime-node");
}

bool haveQemu() { return std::system("command -v qemu-x86_64 >/dev/null 2>&1") == 0; }

/// The operators in `s`, sorted (ORT writes nodes in an order of its own).
std::multiset<std::string> opsOf(const std::string &s) {
  std::istringstream in(s);
  return {std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
}

/// x_img mapped into [1.5, 2]: every activation near the top of its 8-bit
/// grid, where two products of full-range weights overflow int16.
rt::Tensor hotInput() {
  rt::Tensor x = input("x_img.npy").clone();
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = 1.5f + std::fabs(x.data<float>()[i]) / 6.5f;
  return x;
}

struct OrtRun {
  std::multiset<std::string> ops; ///< ORT's optimized graph
  std::vector<float> ort, tpcc;   ///< output 0; tpcc: the float QDQ model
  std::vector<float> tpccInteger; ///< output 0, tpcc computing as ORT on `cpu`
  double step = 0;                ///< the output grid's scale
};

/// Rewrites `file` with `makeSpec` (grids from the ranges of a run on `x`),
/// runs it on `x` through ORT on `cpu` and through the executor (the float
/// model, and its integer groups as ORT computes them on `cpu`).
template <typename F> OrtRun viaOrt(const char *file, const rt::Tensor &x, F makeSpec, Cpu cpu) {
  OrtRun r;
  auto l = load(file);
  Ranges ranges;
  run(*l->m, x, &ranges);
  quant::QDQSpec s = makeSpec(*l->m, ranges);
  r.step = s.activations.back().grid.scale;
  EXPECT_TRUE(rewrite(*l, s));
  std::string model = tempFile("onnx"), xFile = tempFile("npy"), out = tempFile("out"), error, text;
  EXPECT_TRUE(graph::writeModel(*l->m, model, error)) << error;
  EXPECT_TRUE(rt::writeTensorFile(xFile, x, error)) << error;
  std::string node = cpu == Cpu::Haswell || hostIsHaswell()
                         ? "qemu-x86_64 -cpu Haswell \"$(command -v node)\""
                         : "node";
  std::string cmd = "NODE_PATH='" + kNodeModules + "' " + node +
                    " '" TPCC_SOURCE_DIR "/test/ort/ort_optimized.js' '" + model + "' --out '" +
                    out + "' x='" + xFile + "' 2>/dev/null";
  if (FILE *p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, p))
      text.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << cmd;
  }
  std::string line = text.substr(std::min(text.find("ops: ") + 5, text.size()));
  r.ops = opsOf(line.substr(0, line.find('\n')));
  rt::Tensor y;
  EXPECT_TRUE(rt::readTensorFile(out + "0.npy", y, error)) << error;
  r.ort.assign(y.data<float>(), y.data<float>() + y.numel());
  r.tpcc = run(*l->m, x);
  r.tpccInteger =
      run(*l->m, x, nullptr, 0,
          exactOn(cpu) ? rt::IntegerArithmetic::Exact : rt::IntegerArithmetic::SaturatingPairs);
  for (const std::string &f : {model, xFile, out, out + "0.npy"})
    llvm::sys::fs::remove(f);
  return r;
}

/// `file` rewritten by `makeSpec` through ORT on `cpu`: ORT's optimized graph
/// holds `ops` (`domain:op` outside ai.onnx), its output is within one step of
/// the output grid of the float QDQ model (integer kernels round ties their own
/// way) and 0 steps from tpcc computing the integer groups as ORT does there.
/// Says which case ran. False without ORT.
template <typename F>
bool checkOrt(const char *file, const rt::Tensor &x, const std::string &ops, F makeSpec,
              Cpu cpu = Cpu::Native, const std::string &what = "") {
  if (!haveOrt())
    return false;
  OrtRun r = viaOrt(file, x, makeSpec, cpu);
  EXPECT_EQ(r.ops, opsOf(ops)) << file;
  double steps = maxDiff(r.tpcc, r.ort) / r.step,
         integerSteps = maxDiff(r.tpccInteger, r.ort) / r.step;
  EXPECT_LE(steps, 1.001) << file << " " << what << " on " << describe(cpu);
  EXPECT_LT(integerSteps, 0.5) << file << " " << what << " on " << describe(cpu);
  std::cout << "[   ORT    ] " << file << " " << what << " on " << describe(cpu)
            << ": max |tpcc - ort| = " << steps
            << " steps; integer groups as ORT's: " << integerSteps << " steps\n";
  return true;
}

/// Runs `f(bits)` for the weight widths whose products ORT adds exactly on
/// this CPU: 7 bits everywhere, full-range 8 bits only with VNNI.
template <typename F> void onEveryCpu(F f) {
  f(7);
  if (exactOn(Cpu::Native))
    f(8);
  else
    std::cout << "[   NOTE   ] 8-bit weights not compared: this CPU has no VNNI, so ORT adds "
                 "u8 x s8 pairs with int16 saturation (QDQOrtNoVnni shows the effect)\n";
}

const char *const kFused = "QuantizeLinear QLinearConv DequantizeLinear";
const char *const kFloatConv = "DequantizeLinear DequantizeLinear QuantizeLinear "
                               "DequantizeLinear com.microsoft:FusedConv QuantizeLinear "
                               "DequantizeLinear";

std::string bitsTag(int bits) { return std::to_string(bits) + "-bit weights"; }

/// The step of conv.onnx's output grid for the ranges `r` (uint8, min/max).
double rewriteStep(const Ranges &r) { return actGrid(r, "y").scale; }

} // namespace

TEST(QDQOrt, ConvFusesIntoQLinearConvAndAgrees) {
  // uint8 and int8 activations alike (per-channel int8 weights, int32 bias).
  rt::Tensor x = input("x_img.npy");
  onEveryCpu([&](int bits) {
    for (bool signedActs : {false, true})
      if (!checkOrt(
              "conv.onnx", x, kFused,
              [&](const graph::Model &m, const Ranges &r) {
                return linearSpec(m, r, "conv", signedActs, true, bits);
              },
              Cpu::Native, bitsTag(bits) + (signedActs ? ", int8 activations" : "")))
        GTEST_SKIP() << kNoOrt;
  });
}

TEST(QDQOrt, FloatBiasIsQuantizedByOrtItself) {
  // onnxruntime 1.30 quantizes a float bias between DequantizeLinear'd
  // input and weights to int32 itself: the Conv still becomes QLinearConv.
  rt::Tensor x = input("x_img.npy");
  onEveryCpu([&](int bits) {
    if (!checkOrt(
            "conv.onnx", x, kFused,
            [&](const graph::Model &m, const Ranges &r) {
              return linearSpec(m, r, "conv", false, /*bias=*/false, bits);
            },
            Cpu::Native, bitsTag(bits)))
      GTEST_SKIP() << kNoOrt;
  });
}

TEST(QDQOrt, ReluBeforeTheQuantizerFusesOnlyWhenItsZeroPointIsTheMinimum) {
  // Q/DQ after the Relu only: ORT drops the Relu when the zero point is the
  // grid's minimum (uint8 zero point 0), and fuses Conv into QLinearConv.
  // A signed symmetric grid (int8 zero point 0) keeps the Relu meaningful:
  // Conv+Relu run in float (FusedConv) between the DequantizeLinear nodes.
  rt::Tensor x = input("x_img.npy");
  onEveryCpu([&](int bits) {
    for (bool signedOut : {false, true})
      if (!checkOrt(
              "conv_relu.onnx", x, signedOut ? kFloatConv : kFused,
              [&](const graph::Model &m, const Ranges &r) {
                quant::QDQSpec s = linearSpec(m, r, "conv", false, true, bits);
                s.activations[1].grid = quant::symmetricGrid(r.at("y").second, 8, signedOut);
                return s;
              },
              Cpu::Native, bitsTag(bits) + (signedOut ? ", int8 output" : "")))
        GTEST_SKIP() << kNoOrt;
  });
}

namespace {

/// add_relu.onnx quantized as for ort_cpu: uint8 grids that are not powers of
/// two, 7-bit weights; the output int8 symmetric when `signedOut`.
quant::QDQSpec addReluSpec(const graph::Model &m, const Ranges &r, bool signedOut) {
  quant::QDQSpec s;
  s.activations = {{"x", actGrid(r, "x")},
                   {"a", actGrid(r, "a")},
                   {"b", actGrid(r, "b")},
                   {"y", actGrid(r, "y", signedOut)}};
  s.weights = {weightGrids(m, "c1", 1, 0, 7), weightGrids(m, "c2", 1, 0, 7)};
  s.biases = {{"c1", 2, "x", "c1", 1}, {"c2", 2, "x", "c2", 1}};
  return s;
}

} // namespace

TEST(QDQOrt, AddBeforeADroppedReluIsQLinearAdd) {
  // Two Convs, their Add, a Relu. ORT drops the Relu before the zero-point-0
  // quantizer, so the Add becomes com.microsoft QLinearAdd, whose arithmetic is
  // not the float one (BlazeFace on ort_cpu: a step apart, compounding): tpcc
  // skips the Relu too and computes the Add as a QLinearAdd pair table.
  rt::Tensor x = input("x_img.npy");
  for (bool signedOut : {false, true}) {
    auto l = load("add_relu.onnx");
    Ranges ranges;
    run(*l->m, x, &ranges);
    ASSERT_TRUE(rewrite(*l, addReluSpec(*l->m, ranges, signedOut)));
    auto ex = rt::Executor::create(*l->m, l->diags);
    ASSERT_TRUE(ex);
    rt::RunOptions integer;
    integer.mode = rt::ortMode(rt::IntegerArithmetic::Exact);
    std::vector<rt::Tensor> out;
    ASSERT_TRUE(succeeded(ex->run({{"x", x}}, out, l->diags, integer)));
    // An int8 symmetric output keeps the Relu meaningful: no table there.
    EXPECT_EQ(rt::quantizedShortcuts(*ex).pairTables, signedOut ? 0u : 1u);
  }
  if (!checkOrt("add_relu.onnx", x,
                "QuantizeLinear QLinearConv QLinearConv com.microsoft:QLinearAdd DequantizeLinear",
                [](const graph::Model &m, const Ranges &r) { return addReluSpec(m, r, false); }))
    GTEST_SKIP() << kNoOrt;
}

TEST(QDQOrt, NarrowActivationClipStaysFloat) {
  // The Clip of a 4-bit activation is not redundant with its 8-bit
  // QuantizeLinear: ORT keeps it (folded into a float FusedConv), and the
  // Conv does not become QLinearConv (float arithmetic: any CPU, any width).
  if (!checkOrt("conv.onnx", input("x_img.npy"), kFloatConv,
                [](const graph::Model &m, const Ranges &r) {
                  quant::QDQSpec s = linearSpec(m, r, "conv", false);
                  s.activations[1].grid = actGrid(r, "y", false, 4);
                  return s;
                }))
    GTEST_SKIP() << kNoOrt;
}

TEST(QDQOrt, GemmFusesIntoQGemmAndMatMulIntoQLinearMatMul) {
  // int32 bias with uint8 and int8 activations, and a float bias.
  rt::Tensor x = input("x_vec.npy");
  onEveryCpu([&](int bits) {
    for (auto [bias, signedActs] : {std::pair{true, false}, {true, true}, {false, false}})
      if (!checkOrt(
              "gemm.onnx", x, "QuantizeLinear com.microsoft:QGemm DequantizeLinear",
              [&](const graph::Model &m, const Ranges &r) {
                return linearSpec(m, r, "fc", signedActs, bias, bits);
              },
              Cpu::Native, bitsTag(bits)))
        GTEST_SKIP() << kNoOrt;
    for (bool signedActs : {false, true})
      if (!checkOrt(
              "matmul.onnx", x, "QuantizeLinear QLinearMatMul DequantizeLinear",
              [&](const graph::Model &m, const Ranges &r) {
                quant::QDQSpec s = linearSpec(m, r, "mm", signedActs, false);
                s.weights = {weightGrids(m, "mm", 1, 1, bits)}; // W is [K, N]: per column
                return s;
              },
              Cpu::Native, bitsTag(bits)))
        GTEST_SKIP() << kNoOrt;
  });
}

TEST(QDQOrt, MatMulAndItsBiasAddFuseIntoQGemm) {
  // A linear layer as exporters write it: ORT makes the MatMul and the Add of
  // its constant bias one Gemm (MatMulAddFusion), quantizes the float bias to
  // int32 on the accumulator grid (WeightBiasQuantization) and runs a QGemm;
  // tpcc computes the group with that bias, not the float one.
  rt::Tensor x = input("x_vec.npy");
  onEveryCpu([&](int bits) {
    for (bool signedActs : {false, true})
      if (!checkOrt(
              "matmul_add.onnx", x, "QuantizeLinear com.microsoft:QGemm DequantizeLinear",
              [&](const graph::Model &m, const Ranges &r) {
                quant::QDQSpec s = linearSpec(m, r, "mm", signedActs, false);
                s.weights = {weightGrids(m, "mm", 1, 1, bits)}; // W is [K, N]: per column
                return s;
              },
              Cpu::Native, bitsTag(bits) + (signedActs ? ", int8 activations" : "")))
        GTEST_SKIP() << kNoOrt;
  });
}

TEST(QDQOrt, SixteenBitOutputRunsInOrt) {
  // ORT runs com.microsoft's 16-bit QuantizeLinear/DequantizeLinear; the Conv
  // before a 16-bit output is not an 8-bit integer kernel, so it runs in float.
  const char *ops = "QuantizeLinear DequantizeLinear DequantizeLinear DequantizeLinear Conv "
                    "com.microsoft:QuantizeLinear com.microsoft:DequantizeLinear";
  if (!checkOrt("conv.onnx", input("x_img.npy"), ops, [](const graph::Model &m, const Ranges &r) {
        quant::QDQSpec s = linearSpec(m, r, "conv", false);
        s.activations[1].grid = actGrid(r, "y", true, 16);
        return s;
      }))
    GTEST_SKIP() << kNoOrt;
}

//===----------------------------------------------------------------------===//
// ORT on a CPU without VNNI, on any machine
//===----------------------------------------------------------------------===//

namespace {

/// The CPUs to show ORT without VNNI on: qemu's Haswell, and this one when it
/// has no VNNI.
std::vector<Cpu> noVnniCpus() {
  std::vector<Cpu> cpus;
  if (haveQemu())
    cpus.push_back(Cpu::Haswell);
  if (!hostHasVnni())
    cpus.push_back(Cpu::Native);
  return cpus;
}

} // namespace

TEST(QDQOrtNoVnni, FullRangeWeightsSaturateAsTpccEmulatesThem) {
  // Activations near the top of the grid and full-range 8-bit weights: ORT
  // without VNNI is many steps off exact integer arithmetic, and exactly (0
  // steps) where tpcc's emulation of its int16 pairs (`tpcc eval --ort-cpu
  // no-vnni`) says; int8 activations go through the same u8 kernels (+128).
  if (!haveOrt())
    GTEST_SKIP() << kNoOrt;
  if (noVnniCpus().empty())
    GTEST_SKIP() << kNoQemu;
  rt::Tensor x = hotInput();
  for (Cpu cpu : noVnniCpus())
    for (bool signedActs : {false, true}) {
      OrtRun r = viaOrt(
          "conv.onnx", x,
          [&](const graph::Model &m, const Ranges &rg) {
            return linearSpec(m, rg, "conv", signedActs);
          },
          cpu);
      EXPECT_EQ(r.ops, opsOf(kFused));
      size_t off = 0;
      for (size_t i = 0; i < r.ort.size() && r.ort.size() == r.tpcc.size(); ++i)
        off += std::fabs(r.ort[i] - r.tpcc[i]) > 1.001 * r.step;
      double exactSteps = maxDiff(r.tpcc, r.ort) / r.step,
             emulatedSteps = maxDiff(r.tpccInteger, r.ort) / r.step;
      std::cout << "[   ORT    ] conv.onnx, 8-bit weights, " << (signedActs ? "int8" : "uint8")
                << " activations near the top, on " << describe(cpu) << ": " << off << " of "
                << r.ort.size() << " outputs more than one step off exact arithmetic (max "
                << exactSteps << " steps); emulated: max " << emulatedSteps << " steps\n";
      EXPECT_GT(off, r.ort.size() / 10) << "ORT no longer saturates on " << describe(cpu);
      EXPECT_GT(exactSteps, 4.0);
      EXPECT_LT(emulatedSteps, 0.5);
    }
}

TEST(QDQOrtNoVnni, SevenBitWeightsAreExactWithoutVnni) {
  // The same input with 7-bit weights (what ort_cpu_no_vnni plans): no pair
  // can overflow, ORT agrees with exact arithmetic, and the emulation is the
  // identity.
  if (!haveOrt())
    GTEST_SKIP() << kNoOrt;
  if (noVnniCpus().empty())
    GTEST_SKIP() << kNoQemu;
  rt::Tensor img = hotInput(), vec = input("x_vec.npy");
  for (Cpu cpu : noVnniCpus()) {
    for (bool signedActs : {false, true})
      checkOrt(
          "conv.onnx", img, kFused,
          [&](const graph::Model &m, const Ranges &r) {
            return linearSpec(m, r, "conv", signedActs, true, 7);
          },
          cpu, signedActs ? "7-bit weights, int8 activations" : "7-bit weights");
    checkOrt(
        "gemm.onnx", vec, "QuantizeLinear com.microsoft:QGemm DequantizeLinear",
        [&](const graph::Model &m, const Ranges &r) {
          return linearSpec(m, r, "fc", false, true, 7);
        },
        cpu, "7-bit weights");
  }
}

//===----------------------------------------------------------------------===//
// The integer groups on their own (no ORT needed)
//===----------------------------------------------------------------------===//

TEST(IntegerGroups, FoundWhereOrtFusesAndSaturateOnlyWithFullRangeWeights) {
  rt::Tensor x = hotInput();
  for (int bits : {7, 8}) {
    auto l = load("conv.onnx");
    Ranges r;
    run(*l->m, x, &r);
    ASSERT_TRUE(rewrite(*l, linearSpec(*l->m, r, "conv", false, true, bits)));
    const graph::Node *conv = nullptr;
    for (const auto &n : l->m->graph.nodes())
      if (n->opType == "Conv")
        conv = n.get();
    std::optional<rt::IntegerGroup> g = rt::integerGroupOf(*conv);
    ASSERT_TRUE(g);
    EXPECT_EQ(g->m, 8);
    EXPECT_EQ(g->k, 36);
    EXPECT_EQ(g->canSaturate, bits == 8);
    EXPECT_EQ(rt::saturatingGroups(l->m->graph).size(), bits == 8 ? 1u : 0u);
    std::vector<float> fp = run(*l->m, x),
                       exact = run(*l->m, x, nullptr, 0, rt::IntegerArithmetic::Exact),
                       pairs = run(*l->m, x, nullptr, 0, rt::IntegerArithmetic::SaturatingPairs);
    double step = rewriteStep(r);
    // Exact integer arithmetic is the float model but for ties; the pairs
    // change nothing with 7-bit weights and many outputs with 8-bit ones.
    EXPECT_LE(maxDiff(fp, exact), step * 1.001);
    if (bits == 7)
      EXPECT_EQ(maxDiff(exact, pairs), 0.0);
    else
      EXPECT_GT(maxDiff(exact, pairs), 4 * step);
  }
  // Not a group: the float Conv of a model without Q/DQ.
  auto plain = load("conv.onnx");
  EXPECT_FALSE(rt::integerGroupOf(*plain->m->graph.nodes()[0]));
}

TEST(IntegerGroups, OnlyWhereOrtDropsTheActivationBeforeTheQuantizer) {
  // Relu before a uint8 zero point 0 (dropped: a group), before an int8 zero
  // point 0 (kept: ORT runs Conv + Relu in float); a Clip narrower than the
  // grid it feeds is kept too.
  for (int which : {0, 1, 2}) {
    auto l = load(which == 2 ? "conv.onnx" : "conv_relu.onnx");
    Ranges r;
    run(*l->m, input("x_img.npy"), &r);
    quant::QDQSpec s = linearSpec(*l->m, r, "conv", false);
    if (which < 2)
      s.activations[1].grid = quant::symmetricGrid(r.at("y").second, 8, which == 1);
    else
      s.activations[1].grid = actGrid(r, "y", false, 4);
    ASSERT_TRUE(rewrite(*l, s));
    const graph::Node *conv = nullptr;
    for (const auto &n : l->m->graph.nodes())
      if (n->opType == "Conv")
        conv = n.get();
    EXPECT_EQ(rt::integerGroupOf(*conv).has_value(), which == 0) << which;
  }
}

TEST(IntegerGroups, AMatMulTakesTheBiasAddOrtFusesWithIt) {
  rt::Tensor x = input("x_vec.npy");
  auto l = load("matmul_add.onnx");
  Ranges r;
  run(*l->m, x, &r);
  quant::QDQSpec s = linearSpec(*l->m, r, "mm", false, false);
  s.weights = {weightGrids(*l->m, "mm", 1, 1, 7)}; // no int16 pair saturates
  ASSERT_TRUE(rewrite(*l, s));
  const graph::Node *mm = nullptr;
  for (const auto &n : l->m->graph.nodes())
    if (n->opType == "MatMul")
      mm = n.get();
  std::optional<rt::IntegerGroup> g = rt::integerGroupOf(*mm);
  ASSERT_TRUE(g);
  ASSERT_TRUE(g->biasAdd);
  EXPECT_EQ(g->biasAdd->name, "bias");
  EXPECT_EQ(rt::groupOutput(*g), g->biasAdd->outputs[0]);
  // The int32 bias: B / (x_scale * w_scale), every term a float.
  const graph::Tensor *b = init(*l->m, "B"), *ws = mm->input(1)->producer->input(1)->constant;
  for (int64_t m = 0; m < g->m; ++m)
    EXPECT_EQ(g->bias[size_t(m)],
              int64_t(std::nearbyint(float(b->at(m)) / (g->xScale * float(ws->at(m))))));
  // A run that watches every value computes the MatMul and the Add as the
  // model says, then gives the Add the group's output: the same numbers.
  for (auto arith : {rt::IntegerArithmetic::Exact, rt::IntegerArithmetic::SaturatingPairs}) {
    Ranges watched;
    std::vector<float> direct = run(*l->m, x, nullptr, 0, arith),
                       computed = run(*l->m, x, &watched, 0, arith);
    EXPECT_EQ(maxDiff(direct, computed), 0.0);
    EXPECT_LE(maxDiff(direct, run(*l->m, x)), rewriteStep(r) * 1.001);
    EXPECT_TRUE(watched.count("m")); // the MatMul's own output was computed
  }
  // Without a bias Add the MatMul is a group of its own (QLinearMatMul).
  auto plain = load("matmul.onnx");
  Ranges pr;
  run(*plain->m, x, &pr);
  quant::QDQSpec ps = linearSpec(*plain->m, pr, "mm", false, false);
  ps.weights = {weightGrids(*plain->m, "mm", 1, 1, 8)};
  ASSERT_TRUE(rewrite(*plain, ps));
  for (const auto &n : plain->m->graph.nodes())
    if (n->opType == "MatMul") {
      std::optional<rt::IntegerGroup> pg = rt::integerGroupOf(*n);
      ASSERT_TRUE(pg);
      EXPECT_FALSE(pg->biasAdd);
    }
}

//===- MiniFloatCheck.cpp - support/MiniFloat against ONNX Runtime's Cast -===//
//
// usage: tpcc_minifloat_check e4m3fn|e5m2 X.npy ORT.npy
// X holds float32 inputs, ORT what ONNX Runtime's Cast(float -> FP8,
// saturate=1) -> Cast(-> float) gave for them (test/tools/ort_minifloat.py).
// Each must equal roundToMiniFloat bit for bit (NaN for NaN). Prints the
// count and the first differences; exit 1 on any.
//
//===----------------------------------------------------------------------===//
#include "runtime/DataIO.h"
#include "support/MiniFloat.h"

#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

using namespace tpcc;

static bool load(const char *path, rt::Tensor &t) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  std::string error;
  if (!buf || !rt::parseNpy((*buf)->getBuffer(), t, error) || t.elem() != graph::ElemType::Float) {
    std::fprintf(stderr, "%s: not a float32 .npy file %s\n", path, error.c_str());
    return false;
  }
  return true;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: tpcc_minifloat_check e4m3fn|e5m2 X.npy ORT.npy\n");
    return 2;
  }
  std::string name = argv[1];
  MiniFloat f = name == "e5m2" ? MiniFloat::E5M2 : MiniFloat::E4M3FN;
  rt::Tensor x, ort;
  if (!load(argv[2], x) || !load(argv[3], ort))
    return 2;
  if (x.numel() != ort.numel()) {
    std::fprintf(stderr, "%zu inputs but %zu outputs\n", size_t(x.numel()), size_t(ort.numel()));
    return 1;
  }
  const float *xs = x.data<float>(), *ys = ort.data<float>();
  size_t bad = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    float ours = roundToMiniFloat(f, xs[i]);
    bool same = (std::isnan(ours) && std::isnan(ys[i])) || !std::memcmp(&ours, &ys[i], 4);
    if (!same && bad++ < 10)
      std::printf("%s: x = %.9g: ONNX Runtime %.9g, tpcc %.9g\n", name.c_str(), xs[i], ys[i], ours);
  }
  std::printf("%s: %lld values, %zu differ\n", name.c_str(), (long long)x.numel(), bad);
  return bad ? 1 : 0;
}

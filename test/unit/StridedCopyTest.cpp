//===- StridedCopyTest.cpp - Transposes against index arithmetic ------------===//
//
// rt::stridedCopy (Transpose, Slice, Expand) copies transposes in tiles,
// 8 x 8 blocks of 4-byte elements with AVX2 register shuffles. Every
// permutation of a few shapes with whole and partial tiles, for 1-, 2-, 4-
// and 8-byte elements, with and without AVX2, must match the copy computed
// element by element from the permutation.
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelUtil.h"
#include "runtime/Simd.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

/// `in` transposed by `perm`, element by element.
Tensor reference(const Tensor &in, const std::vector<int64_t> &perm) {
  size_t r = perm.size(), es = graph::elemSize(in.elem());
  Shape out(r);
  for (size_t j = 0; j < r; ++j)
    out[j] = in.dim(perm[j]);
  Tensor t(in.elem(), out);
  std::vector<int64_t> inStride(r, 1);
  for (size_t j = r - 1; j-- > 0;)
    inStride[j] = inStride[j + 1] * in.dim(int64_t(j + 1));
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t rem = i, from = 0;
    for (size_t j = r; j-- > 0;) {
      from += (rem % out[j]) * inStride[size_t(perm[j])];
      rem /= out[j];
    }
    std::memcpy(static_cast<uint8_t *>(t.raw()) + size_t(i) * es,
                static_cast<const uint8_t *>(in.raw()) + size_t(from) * es, es);
  }
  return t;
}

void checkAllPermutations(ElemType elem, const Shape &shape) {
  Tensor in(elem, shape);
  auto *bytes = static_cast<uint8_t *>(in.raw());
  for (size_t i = 0; i < in.bytes(); ++i)
    bytes[i] = uint8_t(i * 131 + i / 7);
  std::vector<int64_t> perm(shape.size());
  std::iota(perm.begin(), perm.end(), 0);
  do {
    Tensor want = reference(in, perm);
    std::vector<int64_t> strides(perm.size());
    for (size_t j = 0; j < perm.size(); ++j) {
      strides[j] = 1;
      for (size_t q = size_t(perm[j]) + 1; q < shape.size(); ++q)
        strides[j] *= shape[q];
    }
    Tensor got(elem, want.shape());
    ASSERT_TRUE(stridedCopy(in, got, 0, strides));
    EXPECT_EQ(0, std::memcmp(got.raw(), want.raw(), want.bytes()))
        << "shape " << shapeStr(shape) << " perm " << shapeStr(perm) << " element "
        << graph::elemSize(elem) << " bytes";
  } while (std::next_permutation(perm.begin(), perm.end()));
}

} // namespace

TEST(StridedCopy, TransposesMatchIndexArithmetic) {
  for (SimdLevel cap : {SimdLevel::Avx2, SimdLevel::Sse2}) {
    SimdLevel before = limitSimd(cap);
    for (ElemType e : {ElemType::UInt8, ElemType::Float16, ElemType::Float, ElemType::Int64}) {
      checkAllPermutations(e, {50, 16, 24}); // whole tiles and a partial one
      checkAllPermutations(e, {3, 17, 13});
      checkAllPermutations(e, {2, 9, 8, 11});
    }
    limitSimd(before);
  }
}

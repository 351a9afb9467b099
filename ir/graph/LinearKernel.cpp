//===- LinearKernel.cpp - A linear op's kernel read as a matrix -------------===//
#include "ir/graph/LinearKernel.h"

using namespace tpcc;
using namespace tpcc::graph;

std::optional<LinearKernel> LinearKernel::convolution(const std::vector<int64_t> &dims,
                                                      int64_t group, bool transposed) {
  if (dims.size() < 3 || group < 1 || dims[0] % group)
    return std::nullopt;
  LinearKernel k;
  k.conv = true;
  k.transposed = transposed;
  k.groups = group;
  for (size_t i = 2; i < dims.size(); ++i)
    k.taps *= dims[i];
  if (transposed) { // [C, O/g, k...]
    k.rowsPerGroup = dims[1];
    k.channelsPerGroup = dims[0] / group;
  } else { // [O, C/g, k...]
    k.rowsPerGroup = dims[0] / group;
    k.channelsPerGroup = dims[1];
  }
  k.rows = k.rowsPerGroup * group;
  k.cols = k.channelsPerGroup * k.taps;
  return k;
}

std::optional<LinearKernel> LinearKernel::matrix(const std::vector<int64_t> &dims,
                                                 int64_t outAxis) {
  int64_t rank = int64_t(dims.size());
  if (rank < 2 || (outAxis != rank - 2 && outAxis != rank - 1))
    return std::nullopt;
  LinearKernel k;
  k.outFirst = outAxis == rank - 2;
  k.rows = dims[size_t(outAxis)];
  k.cols = dims[size_t(k.outFirst ? rank - 1 : rank - 2)];
  for (int64_t i = 0; i + 2 < rank; ++i)
    k.batch *= dims[size_t(i)];
  return k;
}

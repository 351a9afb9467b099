//===- LinearKernel.h - A linear op's kernel read as a matrix ---*- C++ -*-===//
//
// The kernel (input 1) of Conv, ConvTranspose, Gemm and MatMul as one
// matrix: a row per output channel (group by group), a column per input that
// one output reads (the input channels of the row's group times the kernel's
// taps; K for a matrix product). The corrections (bias correction, channel
// equalization), second-order rounding and the resource model all read
// kernels through it, so the layouts are written once:
//
//   Conv           [O, C/g, k...]   row o, column (c, tap)
//   ConvTranspose  [C, O/g, k...]   row o = (group, o'), column (c', tap)
//   Gemm           [N, K] (transB) or [K, N]
//   MatMul         [..., K, N]      (`batch` matrices)
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_IR_GRAPH_LINEARKERNEL_H
#define TPCC_IR_GRAPH_LINEARKERNEL_H

#include <cstdint>
#include <optional>
#include <vector>

namespace tpcc::graph {

struct LinearKernel {
  bool conv = false;       ///< Conv / ConvTranspose (a kernel with taps)
  bool transposed = false; ///< ConvTranspose
  bool outFirst = true;    ///< a matrix stored [N, K] (rows first)
  int64_t groups = 1, rows = 0, cols = 0;
  /// Convolutions: output channels and input channels per group, taps per
  /// (output, input) pair.
  int64_t rowsPerGroup = 0, channelsPerGroup = 0, taps = 1;
  int64_t batch = 1; ///< MatMul: the matrices a kernel of rank > 2 stacks

  /// A Conv (transposed: ConvTranspose) kernel of shape `dims` with `group`
  /// groups; none when its rank is below 3 or the groups do not divide it.
  static std::optional<LinearKernel> convolution(const std::vector<int64_t> &dims, int64_t group,
                                                 bool transposed);
  /// A matrix kernel of shape `dims` (rank 2, or more for MatMul's stacked
  /// matrices) whose output channels run along axis `outAxis` (normalized:
  /// rank - 2 or rank - 1); none otherwise.
  static std::optional<LinearKernel> matrix(const std::vector<int64_t> &dims, int64_t outAxis);

  /// The element of the kernel at (row, column) of matrix 0.
  int64_t at(int64_t row, int64_t col) const {
    if (conv) {
      if (!transposed)
        return row * cols + col;
      int64_t grp = row / rowsPerGroup, o = row % rowsPerGroup;
      int64_t ci = col / taps, tap = col % taps;
      return ((grp * channelsPerGroup + ci) * rowsPerGroup + o) * taps + tap;
    }
    return outFirst ? row * cols + col : col * rows + row;
  }
  /// The channel of the op's input that column `col` of row `row` reads
  /// (convolutions: the row's group's channel; matrices: the column).
  int64_t inputChannel(int64_t row, int64_t col) const {
    return conv ? (row / rowsPerGroup) * channelsPerGroup + col / taps : col;
  }
  /// The kernel axis of the output channels.
  int64_t outAxis(size_t rank) const {
    if (conv)
      return transposed ? 1 : 0;
    return outFirst ? int64_t(rank) - 2 : int64_t(rank) - 1;
  }
};

} // namespace tpcc::graph

#endif

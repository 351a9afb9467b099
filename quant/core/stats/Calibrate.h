//===- Calibrate.h - Calibration data and statistics ------------*- C++ -*-===//
//
// Calibration data (`--calib`): `.npy` / TensorProto `.pb` files, or folders
// of them (sorted by name), each holding one sample (the model input's rank
// minus the batch dimension) or a batch of samples; a file given as
// NAME=FILE feeds input NAME, otherwise the model's single input. Batches of
// `batch` samples are cut from larger files and read one file at a time, so
// memory holds one file and the statistics, not the data set.
//
// collectStatistics runs the float model over every batch and feeds each
// tensor the quantizer asked for into its TensorStats.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_CORE_STATS_CALIBRATE_H
#define TPCC_QUANT_CORE_STATS_CALIBRATE_H

#include "quant/core/stats/Histogram.h"
#include "runtime/Executor.h"
#include "support/Diagnostics.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tpcc::quant {

class CalibrationData {
public:
  /// Resolves `specs` ([NAME=]FILE|DIR) against the inputs of `ex`'s model.
  /// Reports unknown inputs, missing files and empty folders to `diags`.
  static std::unique_ptr<CalibrationData> open(const std::vector<std::string> &specs,
                                               const rt::Executor &ex, int64_t batch,
                                               DiagnosticEngine &diags);
  /// The next batch (every input fed), or false at the end or after an error
  /// (`failed()` tells which; errors go to `diags`). Each input's data
  /// follows its own layout (Layout below); the rows of a batch are the
  /// fewest any Rows input gives, or what its whole-tensor inputs hold.
  bool next(std::map<std::string, rt::Tensor> &feed, DiagnosticEngine &diags);
  bool failed() const { return error; }
  void rewind();
  /// The batches of the first `n` samples (the last one cut to fit), from
  /// the start; rewinds before and after (a full pass makes total() known).
  /// Failure after a read error.
  LogicalResult firstSamples(int64_t n, std::vector<std::map<std::string, rt::Tensor>> &feeds,
                             DiagnosticEngine &diags);
  /// The samples per batch asked for (the last batch may hold fewer).
  int64_t batchSize() const { return batch; }
  /// Samples delivered since the last rewind.
  int64_t samples() const { return delivered; }
  /// All samples: known once a full pass has been rewound (every file read
  /// once); 0 before.
  int64_t total() const { return knownTotal; }

private:
  /// How a file's data feeds its input (each file is read on its own):
  /// - Rows: the input's axis 0 is a batch (not a fixed size above 1): the
  ///   file holds rows of it (or one sample without the axis), cut into
  ///   batches;
  /// - Whole: every feed gets whole input tensors: the file holds one of the
  ///   input's shape, or a stack of them (one more axis in front). A source
  ///   of a single file holding one tensor is constant: it goes with every
  ///   batch (a sample rate, an initial recurrent state).
  enum class Layout { Rows, Whole };
  struct Source {
    const graph::Value *input;
    std::vector<std::string> files;
    size_t file = 0;
    rt::Tensor current; ///< the file: Rows batch-shaped, Whole stacked
    int64_t row = 0;
    Layout layout = Layout::Rows;
    bool constant = false;
    /// Whole: the input's axis that holds the batch (named as another
    /// input's axis 0, or its one dimension of no fixed size), or -1.
    int batchAxis = -1;
    /// Whole and constant, with as many entries on its batch axis as the
    /// Rows files have rows: one per sample (a recurrent state [2, N, 128]
    /// for N windows), cut along that axis with the rows; `batchRow`: the
    /// next entry.
    bool alongBatch = false;
    int64_t batchRow = 0;
  };
  bool fill(Source &s, DiagnosticEngine &diags);
  bool mismatch(const std::string &path, const graph::Value &in, const std::string &why,
                DiagnosticEngine &diags);
  void findBatchAxes();
  std::vector<Source> sources;
  int64_t batch = 32;
  int64_t delivered = 0, knownTotal = 0;
  bool error = false;
  bool constantFed = false; ///< every source constant: their one feed was given
};

/// What to collect for one tensor.
struct StatsRequest {
  const graph::Value *value = nullptr;
  /// Per-channel min/max/mean along this axis; -1: none; TensorStats::kLastAxis:
  /// the last.
  int channelAxis = -1;
};

/// Runs the model over all of `data`; fills `stats` (by value id, only the
/// requested ones are non-null). `progress(samples)` is called after each
/// batch. False after errors.
LogicalResult collectStatistics(rt::Executor &ex, CalibrationData &data,
                                const std::vector<StatsRequest> &requests,
                                std::vector<std::unique_ptr<TensorStats>> &stats,
                                const std::function<void(int64_t)> &progress,
                                DiagnosticEngine &diags);

} // namespace tpcc::quant

#endif

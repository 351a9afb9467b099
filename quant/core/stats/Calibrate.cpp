//===- Calibrate.cpp - Calibration data and statistics ----------------------===//
#include "quant/core/stats/Calibrate.h"

#include "runtime/DataIO.h"
#include "runtime/KernelUtil.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

using namespace tpcc;
using namespace tpcc::quant;

/// The data files of `path`: itself, or the .npy/.pb files of a folder.
static bool listFiles(const std::string &path, std::vector<std::string> &files,
                      std::string &error) {
  if (!llvm::sys::fs::is_directory(path)) {
    if (!llvm::sys::fs::exists(path)) {
      error = "no such file or folder";
      return false;
    }
    files.push_back(path);
    return true;
  }
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(path, ec), e; it != e && !ec; it.increment(ec)) {
    llvm::StringRef ext = llvm::sys::path::extension(it->path());
    if (ext == ".npy" || ext == ".pb")
      files.push_back(it->path());
  }
  if (ec) {
    error = ec.message();
    return false;
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    error = "the folder holds no .npy or .pb files";
    return false;
  }
  return true;
}

std::unique_ptr<CalibrationData> CalibrationData::open(const std::vector<std::string> &specs,
                                                       const rt::Executor &ex, int64_t batch,
                                                       DiagnosticEngine &diags) {
  auto d = std::make_unique<CalibrationData>();
  d->batch = std::max<int64_t>(1, batch);
  const auto &inputs = ex.requiredInputs();
  bool ok = true;
  for (const std::string &spec : specs) {
    std::string name, path = spec;
    size_t eq = spec.find('=');
    if (eq != std::string::npos && !llvm::sys::fs::exists(spec)) {
      name = spec.substr(0, eq);
      path = spec.substr(eq + 1);
    }
    const graph::Value *in = nullptr;
    if (name.empty()) {
      if (inputs.size() != 1) {
        diags.emitAt(spec, diag::err_calib_input, spec,
                     fmt::format("the model has {} inputs; give each as NAME=FILE", inputs.size()));
        ok = false;
        continue;
      }
      in = inputs[0];
    } else {
      for (const graph::Value *v : inputs)
        if (v->name == name)
          in = v;
      if (!in) {
        std::vector<std::string> names;
        for (const graph::Value *v : inputs)
          names.push_back("`" + v->name + "`");
        diags.emitAt(spec, diag::err_calib_input, spec,
                     fmt::format("the model has no input `{}`; its inputs are {}", name,
                                 fmt::join(names, ", ")));
        ok = false;
        continue;
      }
    }
    Source *s = nullptr;
    for (Source &o : d->sources)
      if (o.input == in)
        s = &o;
    if (!s) {
      d->sources.push_back(Source{in, {}, 0, {}, 0});
      s = &d->sources.back();
    }
    std::string error;
    if (!listFiles(path, s->files, error)) {
      diags.emitAt(path, diag::err_calib_input, path, error);
      ok = false;
    }
  }
  if (ok && d->sources.empty()) {
    diags.emitAt("", diag::err_calib_empty, "give --calib FILE|DIR");
    ok = false;
  }
  if (ok && d->sources.size() != inputs.size()) {
    for (const graph::Value *v : inputs) {
      bool fed = false;
      for (const Source &s : d->sources)
        fed |= s.input == v;
      if (!fed)
        diags.emitAt(
            "", diag::err_calib_empty,
            fmt::format("nothing feeds model input `{}`; give {}=FILE|DIR", v->name, v->name));
    }
    ok = false;
  }
  return ok ? std::move(d) : nullptr;
}

/// The size the model fixes for axis `i` of `in`, or -1.
static int64_t fixedDim(const graph::Value &in, size_t i) {
  return in.type.shape && i < in.type.shape->size() && (*in.type.shape)[i].known()
             ? (*in.type.shape)[i].value
             : -1;
}

/// "; --dim NAME=VALUE sets axis `i`" when the user gave axis `i` of `in`
/// its size (graph::bindDims), else "".
static std::string setByDim(const graph::Value &in, size_t i) {
  const graph::Dim &d = (*in.type.shape)[i];
  return d.param.empty() ? "" : fmt::format("; --dim {}={} sets axis {}", d.param, d.value, i);
}

LogicalResult CalibrationData::firstSamples(int64_t n,
                                            std::vector<std::map<std::string, rt::Tensor>> &feeds,
                                            DiagnosticEngine &diags) {
  feeds.clear();
  rewind();
  int64_t have = 0;
  std::map<std::string, rt::Tensor> feed;
  while (have < n && next(feed, diags)) {
    int64_t b = delivered - have;
    if (have + b > n) {
      for (const Source &s : sources)
        if (s.layout == Layout::Rows)
          feed[s.input->name] = feed[s.input->name].rows(0, n - have);
        else if (s.alongBatch)
          feed[s.input->name] = feed[s.input->name].slice(s.batchAxis, 0, n - have);
      b = n - have;
    }
    have += b;
    feeds.push_back(feed);
  }
  if (failed())
    return failure();
  rewind();
  return success();
}

void CalibrationData::rewind() {
  for (Source &s : sources) {
    s.file = 0;
    s.row = 0;
    s.batchRow = 0;
    s.current = rt::Tensor();
  }
  if (!error && delivered > knownTotal)
    knownTotal = delivered;
  delivered = 0;
  constantFed = false;
}

bool CalibrationData::mismatch(const std::string &path, const graph::Value &in,
                               const std::string &why, DiagnosticEngine &diags) {
  diags.emitAt(path, diag::err_calib_mismatch, path, in.name, why);
  error = true;
  return false;
}

/// Loads the next file of `s` that has rows left; false at the end.
bool CalibrationData::fill(Source &s, DiagnosticEngine &diags) {
  while (!s.current.defined() || s.row >= s.current.dim(0)) {
    if (s.file >= s.files.size())
      return false;
    const std::string &path = s.files[s.file++];
    rt::Tensor t;
    std::string err;
    if (!rt::readTensorFile(path, t, err)) {
      diags.emitAt(path, diag::err_calib_input, path, err);
      error = true;
      return false;
    }
    const graph::Value &in = *s.input;
    size_t rank = in.type.shape ? in.type.shape->size() : t.shape().size();
    if (rt::isHalf(t.elem()) && in.type.elem == graph::ElemType::Float)
      t = rt::widenToFloat(t); // float16 data (of a float16 model computed in float32)
    if (t.elem() != in.type.elem && in.type.elem != graph::ElemType::Undefined)
      return mismatch(path, in,
                      fmt::format("its elements are {}, the input's are {}",
                                  graph::toString(t.elem()), graph::toString(in.type.elem)),
                      diags);
    // Axis 0 is a batch unless the model fixes it above 1; then a file of
    // batches of that size (more than one) still holds rows.
    int64_t fixed0 = fixedDim(in, 0);
    size_t r = t.shape().size();
    bool rows = rank >= 1 &&
                (r + 1 == rank ||
                 (r == rank && (fixed0 <= 1 || (t.dim(0) > fixed0 && t.dim(0) % fixed0 == 0))));
    if (rows) {
      if (r + 1 == rank) { // one sample
        rt::Shape one = t.shape();
        one.insert(one.begin(), 1);
        t = t.reshaped(one);
      }
      for (size_t i = 1; i < rank; ++i) // the sample dimensions the model fixes
        if (fixedDim(in, i) >= 0 && fixedDim(in, i) != t.dim(int64_t(i)))
          return mismatch(
              path, in,
              fmt::format("its samples are {}, the input's are {}{}",
                          rt::shapeStr(rt::Shape(t.shape().begin() + 1, t.shape().end())),
                          in.type.str(), setByDim(in, i)),
              diags);
    } else {
      if (r == rank) { // one whole tensor
        rt::Shape one = t.shape();
        one.insert(one.begin(), 1);
        t = t.reshaped(one);
      } else if (r != rank + 1) {
        return mismatch(path, in,
                        fmt::format("shape {} is neither one sample nor a batch of {}",
                                    rt::shapeStr(t.shape()), in.type.str()),
                        diags);
      }
      for (size_t i = 0; i < rank; ++i)
        if (fixedDim(in, i) >= 0 && fixedDim(in, i) != t.dim(int64_t(i) + 1))
          return mismatch(
              path, in,
              fmt::format("it holds {} of {}, the input is {}{}", t.dim(0),
                          rt::shapeStr(rt::Shape(t.shape().begin() + 1, t.shape().end())),
                          in.type.str(), setByDim(in, i)),
              diags);
    }
    if (t.rank() == 0 || t.dim(0) == 0)
      continue;
    s.layout = rows ? Layout::Rows : Layout::Whole;
    s.constant = !rows && s.files.size() == 1 && t.dim(0) == 1;
    s.current = t;
    s.row = 0;
  }
  return true;
}

void CalibrationData::findBatchAxes() {
  std::set<std::string> batchNames;
  for (const Source &s : sources)
    if (s.layout == Layout::Rows && s.input->type.shape && !s.input->type.shape->empty() &&
        !(*s.input->type.shape)[0].param.empty())
      batchNames.insert((*s.input->type.shape)[0].param);
  for (Source &s : sources) {
    s.batchAxis = -1;
    if (s.layout != Layout::Whole || !s.input->type.shape)
      continue;
    const std::vector<graph::Dim> &dims = *s.input->type.shape;
    int open = -1, opens = 0;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (!dims[i].param.empty() && batchNames.count(dims[i].param)) {
        s.batchAxis = int(i);
        break;
      }
      if (!dims[i].known())
        open = int(i), ++opens;
    }
    if (s.batchAxis < 0 && opens == 1)
      s.batchAxis = open;
  }
  // The samples of the Rows files, when each input has one file.
  int64_t samples = -1;
  for (const Source &s : sources)
    if (s.layout == Layout::Rows)
      samples = s.files.size() == 1 && (samples < 0 || samples == s.current.dim(0))
                    ? s.current.dim(0)
                    : 0;
  for (Source &s : sources)
    s.alongBatch = s.layout == Layout::Whole && s.constant && s.batchAxis >= 0 && samples > 1 &&
                   s.current.dim(s.batchAxis + 1) == samples;
}

bool CalibrationData::next(std::map<std::string, rt::Tensor> &feed, DiagnosticEngine &diags) {
  feed.clear();
  if (error)
    return false;
  int64_t rows = -1;
  bool streams = false;
  for (Source &s : sources) {
    if (!fill(s, diags))
      return false;
    if (s.layout == Layout::Rows) {
      int64_t limit = fixedDim(*s.input, 0) > 0 ? fixedDim(*s.input, 0) : batch;
      int64_t e = std::min(s.current.dim(0), s.row + limit);
      rows = rows < 0 ? e - s.row : std::min(rows, e - s.row);
    }
    streams |= s.layout == Layout::Whole && !s.constant;
  }
  if (delivered == 0)
    findBatchAxes();
  // Whole tensors fix the batch they were made for, unless they hold one
  // entry per sample.
  for (const Source &s : sources)
    if (s.layout == Layout::Whole && s.batchAxis >= 0 && rows > 0 && !s.alongBatch)
      rows = std::min(rows, std::max<int64_t>(1, s.current.dim(s.batchAxis + 1)));
  if (rows < 0 && !streams) { // every input constant: one feed
    if (constantFed)
      return false;
    constantFed = true;
  }
  for (Source &s : sources) {
    if (s.layout == Layout::Rows) {
      feed[s.input->name] =
          s.row == 0 && rows == s.current.dim(0) ? s.current : s.current.rows(s.row, s.row + rows);
      s.row += rows;
      continue;
    }
    rt::Tensor one = s.current.dim(0) == 1 ? s.current : s.current.rows(s.row, s.row + 1);
    one = one.reshaped(rt::Shape(s.current.shape().begin() + 1, s.current.shape().end()));
    if (s.alongBatch && rows > 0) {
      one = one.slice(s.batchAxis, s.batchRow, s.batchRow + rows);
      s.batchRow += rows;
    }
    feed[s.input->name] = one;
    s.row += !s.constant;
  }
  delivered += rows > 0 ? rows : 1;
  return true;
}

LogicalResult quant::collectStatistics(rt::Executor &ex, CalibrationData &data,
                                       const std::vector<StatsRequest> &requests,
                                       std::vector<std::unique_ptr<TensorStats>> &stats,
                                       const std::function<void(int64_t)> &progress,
                                       DiagnosticEngine &diags) {
  const graph::Graph &g = ex.model().graph;
  stats.clear();
  stats.resize(g.values().size());
  for (const StatsRequest &r : requests)
    stats[r.value->id] = std::make_unique<TensorStats>(r.channelAxis);
  auto hook = [&](const graph::Value &v, const rt::Tensor &t) {
    TensorStats *s = v.id < stats.size() ? stats[v.id].get() : nullptr;
    if (s && t.elem() == graph::ElemType::Float)
      s->add(t.data<float>(), t.shape());
  };
  // Only the requested values: the others may run fused.
  std::vector<bool> watched(g.values().size(), false);
  for (const StatsRequest &r : requests)
    watched[r.value->id] = true;
  rt::RunOptions options;
  options.observe = hook;
  options.watched = &watched;
  data.rewind();
  std::map<std::string, rt::Tensor> feed;
  std::vector<rt::Tensor> outputs;
  while (data.next(feed, diags)) {
    if (failed(ex.run(feed, outputs, diags, options)))
      return failure();
    if (progress)
      progress(data.samples());
  }
  if (data.failed())
    return failure();
  if (data.samples() == 0) {
    diags.emitAt("", diag::err_calib_empty, "the calibration files hold no samples");
    return failure();
  }
  data.rewind();
  return success();
}

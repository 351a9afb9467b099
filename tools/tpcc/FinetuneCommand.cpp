//===- FinetuneCommand.cpp - `tpcc finetune` --------------------------------===//
//
// `tpcc quantize` with quantization-aware fine-tuning between calibration and
// the QDQ rewrite (quant/learn/finetune/Finetune.h): reads the training
// data and labels, checks them, calibrates on --calib or the first samples
// of --data, trains, and prints quantize's summary and the training's.
//
//===----------------------------------------------------------------------===//
#include "quant/learn/finetune/Finetune.h"
#include "quant/pipeline/Pipeline.h"
#include "runtime/DataIO.h"
#include "tools/tpcc/Driver.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"

#include <fmt/format.h>

using namespace tpcc;
using namespace tpcc::driver;

namespace {
/// Samples of --data that calibrate when there is no --calib.
constexpr int64_t kCalibrationSamples = 512;
} // namespace

LogicalResult driver::checkFinetuneArgs(Options &o) {
  if (o.model.empty())
    return usageError("finetune needs a model: `tpcc finetune --platform NAME --data X.npy "
                      "[--labels Y.npy] MODEL.onnx -o OUT.onnx`");
  if (o.output.empty() || o.output == "-")
    return usageError("finetune needs an output model: -o OUT.onnx");
  if (o.data.empty())
    return usageError("finetune needs training data: --data FILE");
  if (o.evalData.size() > 1 || !o.evalData.front().first.empty())
    return usageError("finetune trains on one --data FILE (of the model's one input)");
  return completeQuantizeArgs(o);
}

int driver::runFinetune(Compilation &c, const ir::Module &m, const Options &o) {
  quant::FinetuneData data;
  std::string error;
  DiagnosticEngine &diags = c.diags;
  if (!rt::readTensorFile(o.data, data.x, error)) {
    diags.emitAt(o.data, diag::err_data_file, error);
    return finish(diags, o);
  }
  int64_t n = data.x.rank() >= 1 ? data.x.dim(0) : 0;
  if (n == 0) {
    diags.emitAt(o.data, diag::err_data_file, "the data holds no samples");
    return finish(diags, o);
  }
  if (!o.labels.empty()) {
    if (!rt::readTensorFile(o.labels, data.labels, error)) {
      diags.emitAt(o.labels, diag::err_data_file, error);
      return finish(diags, o);
    }
    const rt::Tensor &l = data.labels;
    if (l.rank() != 1 || l.dim(0) != n || graph::isFloatingPoint(l.elem())) {
      diags.emitAt(o.labels, diag::err_data_labels, graph::toString(l.elem()),
                   rt::shapeStr(l.shape()), n);
      return finish(diags, o);
    }
  }
  quant::FinetuneOptions fo;
  if (!o.validateData.empty()) {
    if (!rt::readTensorFile(o.validateData, fo.validateX, error)) {
      diags.emitAt(o.validateData, diag::err_data_file, error);
      return finish(diags, o);
    }
    if (!rt::readTensorFile(o.validateLabels, fo.validateLabels, error)) {
      diags.emitAt(o.validateLabels, diag::err_data_file, error);
      return finish(diags, o);
    }
    const rt::Tensor &l = fo.validateLabels;
    int64_t vn = fo.validateX.rank() >= 1 ? fo.validateX.dim(0) : 0;
    if (l.rank() != 1 || l.dim(0) != vn || vn == 0 || graph::isFloatingPoint(l.elem())) {
      diags.emitAt(o.validateLabels, diag::err_data_labels, graph::toString(l.elem()),
                   rt::shapeStr(l.shape()), vn);
      return finish(diags, o);
    }
  }
  // Without --calib, the first samples of --data calibrate.
  Options q = o;
  llvm::SmallString<128> calibFile;
  if (q.calib.empty()) {
    int fd = -1;
    if (llvm::sys::fs::createTemporaryFile("tpcc-finetune-calib", "npy", fd, calibFile)) {
      diags.emitAt("", diag::err_cannot_write_file, "a temporary file", "cannot create it");
      return finish(diags, o);
    }
    llvm::sys::Process::SafelyCloseFileDescriptor(fd);
    if (!rt::writeTensorFile(std::string(calibFile),
                             data.x.rows(0, std::min(n, kCalibrationSamples)), error)) {
      diags.emitAt("", diag::err_cannot_write_file, std::string(calibFile), error);
      return finish(diags, o);
    }
    q.calib = {std::string(calibFile)};
  }
  fo.epochDone = [&](int64_t epoch, double loss, int64_t correct) {
    std::string v = correct < 0 ? std::string()
                                : fmt::format(", validation accuracy {:.2f} % ({} of {})",
                                              100.0 * double(correct) / double(fo.validateX.dim(0)),
                                              correct, fo.validateX.dim(0));
    llvm::outs() << fmt::format("finetune: epoch {} of {}: loss {:.4f}{}\n", epoch, fo.epochs, loss,
                                v);
    llvm::outs().flush();
  };
  auto extend = [&](quant::QuantizeRequest &r) {
    // The recipe's `finetune` fields, and the flags over them.
    const ir::Finetune &ft = r.recipe.finetune;
    fo.epochs = o.epochs.value_or(ft.epochs);
    fo.batch = o.batch ? o.batch : ft.batch;
    fo.lr = o.lr.value_or(ft.lr);
    fo.weightDecay = ft.weightDecay;
    fo.seed = uint32_t(ft.seed);
    fo.quantizer = *quant::parseQuantizerKind(o.quantizer.empty() ? ir::toString(ft.quantizer)
                                                                  : llvm::StringRef(o.quantizer));
    fo.minThreshold = r.recipe.minThreshold;
    r.stages.push_back(std::make_shared<quant::FinetuneStage>(std::move(data), fo));
    return success();
  };
  int status = quantizeWith(c, m, q, extend);
  if (!calibFile.empty())
    llvm::sys::fs::remove(calibFile);
  return status;
}

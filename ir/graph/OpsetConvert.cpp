//===- OpsetConvert.cpp - Moving a model to a newer ai.onnx opset -----------===//
//
// Through libonnx's version converter (the one onnx.version_converter calls):
// the model is serialized, converted as a ModelProto and loaded again, so the
// result is verified and shape-inferred like any file.
//
//===----------------------------------------------------------------------===//
#include "ir/graph/OnnxIO.h"

#include "llvm/Support/Path.h"

#include <onnx/onnx_pb.h>
#include <onnx/version_converter/convert.h>

#include <fmt/format.h>

using namespace tpcc;
using namespace tpcc::graph;

std::unique_ptr<Model> graph::convertOpset(const Model &m, int64_t version,
                                           DiagnosticEngine &diags) {
  std::string bytes, error;
  onnx::ModelProto proto;
  if (!serializeModel(m, bytes, error) || !proto.ParseFromString(bytes)) {
    diags.emitAt(m.path, diag::err_model_tensor, "(model)",
                 fmt::format("cannot convert to ai.onnx opset {}: {}", version,
                             error.empty() ? "the model does not serialize" : error));
    return nullptr;
  }
  try {
    onnx::ModelProto converted = onnx::version_conversion::ConvertVersion(proto, int(version));
    bytes.clear();
    converted.SerializeToString(&bytes);
  } catch (const std::exception &e) {
    diags.emitAt(
        m.path, diag::err_quant_unsupported,
        fmt::format("cannot convert the model to ai.onnx opset {}: {}", version, e.what()));
    return nullptr;
  }
  std::unique_ptr<Model> out =
      loadModelFromBuffer(bytes, m.path, llvm::sys::path::parent_path(m.path), diags);
  if (out)
    out->path = m.path;
  return out;
}

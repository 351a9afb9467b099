//===- Float16.cpp - float16 models computed in float32 -------------------===//

#include "ir/graph/Float16Proto.h"
#include "support/HalfFloat.h"

#include <cstring>
#include <string>
#include <vector>

using namespace tpcc;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT, kHalf = onnx::TensorProto::FLOAT16;

bool widenTensor(onnx::TensorProto &t) {
  if (t.data_type() != kHalf)
    return false;
  std::vector<uint16_t> halves;
  if (t.has_raw_data()) {
    const std::string &raw = t.raw_data();
    if (raw.size() % 2)
      return false;
    halves.resize(raw.size() / 2);
    std::memcpy(halves.data(), raw.data(), raw.size());
  } else {
    for (int32_t v : t.int32_data())
      halves.push_back(uint16_t(v));
  }
  std::string wide(halves.size() * sizeof(float), '\0');
  for (size_t i = 0; i < halves.size(); ++i) {
    float f = halfToFloat(halves[i]);
    std::memcpy(&wide[i * sizeof(float)], &f, sizeof(float));
  }
  t.clear_int32_data();
  t.set_data_type(kFloat);
  t.set_raw_data(std::move(wide));
  return true;
}

bool widenType(onnx::TypeProto &type) {
  if (type.has_tensor_type() && type.tensor_type().elem_type() == kHalf) {
    type.mutable_tensor_type()->set_elem_type(kFloat);
    return true;
  }
  return false;
}

/// Attributes that name an output data type.
bool namesType(const onnx::NodeProto &n, const onnx::AttributeProto &a) {
  return (a.name() == "to" && n.op_type() == "Cast") || a.name() == "dtype";
}

} // namespace

bool graph::proto::widenFloat16(onnx::GraphProto &g) {
  bool changed = false;
  for (auto &t : *g.mutable_initializer())
    changed |= widenTensor(t);
  for (auto *infos : {g.mutable_input(), g.mutable_output(), g.mutable_value_info()})
    for (auto &v : *infos)
      if (v.has_type())
        changed |= widenType(*v.mutable_type());
  for (auto &n : *g.mutable_node())
    for (auto &a : *n.mutable_attribute()) {
      if (a.type() == onnx::AttributeProto::INT && namesType(n, a) && a.i() == kHalf) {
        a.set_i(kFloat);
        changed = true;
      }
      if (a.has_t())
        changed |= widenTensor(*a.mutable_t());
      for (auto &t : *a.mutable_tensors())
        changed |= widenTensor(t);
      if (a.has_g())
        changed |= widenFloat16(*a.mutable_g());
      for (auto &sub : *a.mutable_graphs())
        changed |= widenFloat16(sub);
    }
  return changed;
}

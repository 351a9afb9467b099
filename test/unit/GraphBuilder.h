//===- GraphBuilder.h - Small ONNX graphs for unit tests ----------*- C++ -*-===//
#ifndef TPCC_TEST_UNIT_GRAPHBUILDER_H
#define TPCC_TEST_UNIT_GRAPHBUILDER_H

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tpcc::test {

/// Adds the float initializer `name` of shape `dims` whose element i is f(i).
inline void floatInitializer(onnx::GraphProto &g, const std::string &name,
                             const std::vector<int64_t> &dims,
                             const std::function<float(int64_t)> &f) {
  auto *t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    n *= d;
  }
  for (int64_t i = 0; i < n; ++i)
    t->add_float_data(f(i));
}

/// Builds small ONNX graphs: float tensors [1,C,4,4] (or [N,C,4,4]), opset 13.
class GraphBuilder {
public:
  GraphBuilder() {
    m.set_ir_version(7);
    m.add_opset_import()->set_version(13);
    m.mutable_graph()->set_name("g");
  }
  void input(const std::string &name, int64_t c = 4) {
    typed(m.mutable_graph()->add_input(), name, c);
  }
  void output(const std::string &name, int64_t c = 4) {
    typed(m.mutable_graph()->add_output(), name, c);
  }
  void constant(const std::string &name, std::vector<int64_t> dims, float fill = 0.5f) {
    floatInitializer(*m.mutable_graph(), name, dims, [&](int64_t) { return fill; });
  }
  /// A scalar uint8 (or, `isSigned`, int8) initializer: a zero point.
  void zeroPoint(const std::string &name, int32_t value, bool isSigned = false) {
    auto *t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(isSigned ? onnx::TensorProto::INT8 : onnx::TensorProto::UINT8);
    t->add_int32_data(value);
  }
  onnx::NodeProto *node(const std::string &op, const std::string &name,
                        std::vector<std::string> ins, std::vector<std::string> outs) {
    auto *n = m.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto &i : ins)
      n->add_input(i);
    for (auto &o : outs)
      n->add_output(o);
    return n;
  }
  static void intAttr(onnx::NodeProto *n, const std::string &name, int64_t v) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void floatAttr(onnx::NodeProto *n, const std::string &name, float v) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  /// x -> Conv(W[4,4/group,1,1], group) -> out
  void conv(const std::string &name, const std::string &in, const std::string &out,
            int64_t group = 1) {
    constant(name + "_W", {4, 4 / group, 1, 1});
    auto *n = node("Conv", name, {in, name + "_W"}, {out});
    if (group != 1)
      intAttr(n, "group", group);
  }
  static void intsAttr(onnx::NodeProto *n, const std::string &name, std::vector<int64_t> v) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v)
      a->add_ints(x);
  }
  /// An int64 initializer (a shape, axes).
  void ints(const std::string &name, std::vector<int64_t> v) {
    auto *t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(int64_t(v.size()));
    for (int64_t x : v)
      t->add_int64_data(x);
  }
  /// Imports operator set `domain` at `version` (nodes of other domains).
  void importDomain(const std::string &domain, int64_t version = 1) {
    auto *o = m.add_opset_import();
    o->set_domain(domain);
    o->set_version(version);
  }
  std::string bytes() const { return m.SerializeAsString(); }
  /// Inputs and outputs declared after this call have a symbolic dimension 0
  /// called `name` instead of 1.
  void symbolicBatch(const std::string &name = "N") { batch = name; }

private:
  void typed(onnx::ValueInfoProto *v, const std::string &name, int64_t c) const {
    v->set_name(name);
    auto *t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {int64_t(1), c, int64_t(4), int64_t(4)})
      t->mutable_shape()->add_dim()->set_dim_value(d);
    if (!batch.empty())
      t->mutable_shape()->mutable_dim(0)->set_dim_param(batch);
  }
  onnx::ModelProto m;
  std::string batch;
};

/// Appends node `op` (named `name`, or after its output) reading `in` and
/// writing `out` to `g`.
inline onnx::NodeProto *addNode(onnx::GraphProto &g, const std::string &op,
                                std::vector<std::string> in, const std::string &out,
                                const std::string &name = "") {
  auto *n = g.add_node();
  n->set_op_type(op);
  n->set_name(name.empty() ? out + "_node" : name);
  for (auto &s : in)
    n->add_input(s);
  n->add_output(out);
  return n;
}

/// A model of opset `opset` with an empty graph `g`.
inline onnx::ModelProto emptyModel(int64_t opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

/// Declares `v` a tensor `name` of element type `elem` and shape `dims`.
inline void typedValue(onnx::ValueInfoProto *v, const std::string &name,
                       const std::vector<int64_t> &dims, int elem = onnx::TensorProto::FLOAT) {
  v->set_name(name);
  auto *t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  auto *shape = t->mutable_shape();
  for (int64_t d : dims)
    shape->add_dim()->set_dim_value(d);
}

/// Adds the float initializer `name` of shape `dims` whose element i is
/// sin(step * (i + 1)) * scale: values that differ everywhere.
inline void waveInitializer(onnx::GraphProto &g, const std::string &name,
                            const std::vector<int64_t> &dims, float step, float scale = 1.f) {
  floatInitializer(g, name, dims, [&](int64_t i) { return std::sin(step * float(i + 1)) * scale; });
}

/// Adds the int64 initializer `name` holding `v` (a scalar when `scalar`).
inline void int64Initializer(onnx::GraphProto &g, const std::string &name,
                             const std::vector<int64_t> &v, bool scalar = false) {
  auto *t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  if (!scalar)
    t->add_dims(int64_t(v.size()));
  for (int64_t x : v)
    t->add_int64_data(x);
}

} // namespace tpcc::test

#endif

//===- GradTest.cpp - Backward kernels against finite differences --------===//
//
// Every backward kernel (runtime/grad) on small graphs with random shapes,
// broadcasting, strides, pads, groups and dilations: the gradient of
// L = sum(dY * Y) (dY random) with respect to each float input and weight,
// element by element, against the central difference (L(x + e) -
// L(x - e)) / 2e of the forward executor, summed in double. Inputs stay away
// from the kinks of piecewise-linear ops (and maxima apart), so the
// difference sees one piece. Plus: QDQ pairs pass gradients straight
// through, an operator without a backward is named with its nodes before any
// work, and the shared models' weight gradients agree with finite
// differences along random directions.
//
//===----------------------------------------------------------------------===//
#include "ir/graph/OnnxIO.h"
#include "runtime/DataIO.h"
#include "runtime/grad/Gradient.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>

using namespace tpcc;
using rt::Tensor;

namespace {

/// A small ONNX model under construction.
struct Net {
  onnx::ModelProto m;
  std::vector<std::string> wrt; ///< the inputs and initializers to differentiate
  std::map<std::string, Tensor> feed;
  std::mt19937 rng{7};

  explicit Net(int64_t opset = 13) {
    m.set_ir_version(8);
    m.add_opset_import()->set_version(opset);
    m.mutable_graph()->set_name("g");
  }
  /// Values in ±[lo, hi] (random sign unless `positive`).
  Tensor random(const rt::Shape &s, float lo = 0.1f, float hi = 1.f, bool positive = false) {
    Tensor t(graph::ElemType::Float, s);
    std::uniform_real_distribution<float> mag(lo, hi);
    std::bernoulli_distribution neg(0.5);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<float>()[i] = mag(rng) * (!positive && neg(rng) ? -1.f : 1.f);
    return t;
  }
  /// Distinct values k * step + jitter in random order (maxima apart).
  Tensor distinct(const rt::Shape &s) {
    Tensor t(graph::ElemType::Float, s);
    std::vector<int64_t> idx(size_t(t.numel()));
    for (size_t i = 0; i < idx.size(); ++i)
      idx[i] = int64_t(i);
    std::shuffle(idx.begin(), idx.end(), rng);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<float>()[i] = 0.05f * float(idx[size_t(i)]) - 1.f;
    return t;
  }
  void input(const std::string &name, const Tensor &t, bool differentiate = true) {
    auto *v = m.mutable_graph()->add_input();
    v->set_name(name);
    auto *tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : t.shape())
      tt->mutable_shape()->add_dim()->set_dim_value(d);
    feed[name] = t;
    if (differentiate)
      wrt.push_back(name);
  }
  void weight(const std::string &name, const Tensor &t, bool differentiate = true) {
    auto *p = m.mutable_graph()->add_initializer();
    p->set_name(name);
    p->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : t.shape())
      p->add_dims(d);
    p->set_raw_data(std::string(static_cast<const char *>(t.raw()), t.bytes()));
    if (differentiate)
      wrt.push_back(name);
  }
  void floats(const std::string &name, const std::vector<float> &v) {
    auto *p = m.mutable_graph()->add_initializer();
    p->set_name(name);
    p->set_data_type(onnx::TensorProto::FLOAT);
    p->add_dims(int64_t(v.size()));
    for (float f : v)
      p->add_float_data(f);
  }
  void ints(const std::string &name, std::vector<int64_t> v) {
    auto *p = m.mutable_graph()->add_initializer();
    p->set_name(name);
    p->set_data_type(onnx::TensorProto::INT64);
    p->add_dims(int64_t(v.size()));
    for (int64_t x : v)
      p->add_int64_data(x);
  }
  onnx::NodeProto *node(const std::string &op, std::vector<std::string> ins,
                        std::vector<std::string> outs) {
    auto *n = m.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(m.graph().node_size()));
    for (auto &i : ins)
      n->add_input(i);
    for (auto &o : outs)
      n->add_output(o);
    return n;
  }
  static void attr(onnx::NodeProto *n, const std::string &name, int64_t v) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(onnx::NodeProto *n, const std::string &name, float v) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr(onnx::NodeProto *n, const std::string &name, std::vector<int64_t> v) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v)
      a->add_ints(x);
  }
  void output(const std::string &name) {
    auto *v = m.mutable_graph()->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
};

struct Loaded {
  SourceManager sm;
  DiagnosticEngine diags{sm};
  std::unique_ptr<graph::Model> model;
  std::unique_ptr<rt::Executor> ex;
  std::unique_ptr<rt::grad::Backprop> bp;
  std::vector<const graph::Value *> wrt;
};

/// Outputs are declared without shapes (shape inference gives them), which
/// libonnx's checker refuses.
graph::LoadOptions unchecked() {
  graph::LoadOptions o;
  o.check = false;
  return o;
}

std::string messages(const DiagnosticEngine &d) {
  std::string s;
  for (const Diagnostic &x : d.getDiagnostics())
    s += x.where + ": " + x.message + "\n";
  return s;
}

/// sum(dy * y) over the outputs, in double.
double loss(const std::vector<Tensor> &ys, const std::vector<Tensor> &dys) {
  double l = 0;
  for (size_t k = 0; k < ys.size(); ++k)
    for (int64_t i = 0; i < ys[k].numel(); ++i)
      l += double(dys[k].data<float>()[i]) * ys[k].data<float>()[i];
  return l;
}

/// Checks every backward gradient of `net` against central differences;
/// `eps` is the step, `tol` the relative tolerance.
void checkGradients(Net &net, const std::string &what, float eps = 1e-3f, double tol = 2e-3,
                    int64_t maxChecks = 96) {
  SCOPED_TRACE(what);
  Loaded l;
  l.model = graph::loadModelFromBuffer(net.m.SerializeAsString(), what, ".", l.diags, unchecked());
  ASSERT_TRUE(l.model) << messages(l.diags);
  l.ex = rt::Executor::create(*l.model, l.diags);
  ASSERT_TRUE(l.ex) << messages(l.diags);
  for (const std::string &n : net.wrt)
    l.wrt.push_back(l.model->graph.findValue(n));
  l.bp = rt::grad::Backprop::create(*l.ex, l.wrt, l.diags);
  ASSERT_TRUE(l.bp) << messages(l.diags);
  std::vector<Tensor> ys;
  ASSERT_TRUE(succeeded(l.bp->forward(net.feed, ys, l.diags))) << messages(l.diags);
  std::vector<Tensor> dys;
  for (const Tensor &y : ys)
    dys.push_back(net.random(y.shape(), 0.2f, 1.f));
  std::vector<Tensor> grads;
  ASSERT_TRUE(succeeded(l.bp->backward(dys, grads, l.diags))) << messages(l.diags);
  ASSERT_EQ(grads.size(), l.wrt.size());
  for (size_t w = 0; w < l.wrt.size(); ++w) {
    const graph::Value *v = l.wrt[w];
    bool isInput = net.feed.count(v->name) != 0;
    Tensor base = isInput ? net.feed[v->name] : *l.ex->constant(*v);
    ASSERT_EQ(grads[w].shape(), base.shape()) << v->name;
    int64_t n = base.numel(), step = std::max<int64_t>(1, n / maxChecks);
    for (int64_t i = 0; i < n; i += step) {
      double side[2];
      for (int s = 0; s < 2; ++s) {
        Tensor moved(graph::ElemType::Float, base.shape());
        std::memcpy(moved.raw(), base.raw(), base.bytes());
        moved.data<float>()[i] += s ? -eps : eps;
        std::map<std::string, Tensor> feed = net.feed;
        rt::RunOptions o;
        auto sub = [&](const graph::Value &x) -> const Tensor * {
          return !isInput && &x == v ? &moved : nullptr;
        };
        if (isInput)
          feed[v->name] = moved;
        else
          o.substitute = sub;
        std::vector<Tensor> y2;
        ASSERT_TRUE(succeeded(l.ex->run(feed, y2, l.diags, o))) << messages(l.diags);
        side[s] = loss(y2, dys);
      }
      double numeric = (side[0] - side[1]) / (2.0 * eps);
      double analytic = grads[w].data<float>()[i];
      EXPECT_NEAR(analytic, numeric, tol * std::max(1.0, std::fabs(numeric)))
          << v->name << "[" << i << "]";
    }
  }
}

} // namespace

TEST(Grad, UnaryActivations) {
  for (const char *op :
       {"Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Neg", "Softplus", "HardSwish", "Identity"}) {
    Net net;
    net.input("x", net.random({2, 3, 4}, 0.1f, 2.5f));
    net.node(op, {"x"}, {"y"});
    net.output("y");
    checkGradients(net, op);
  }
  for (const char *op : {"Log", "Sqrt"}) {
    Net net;
    net.input("x", net.random({3, 5}, 0.5f, 2.f, /*positive=*/true));
    net.node(op, {"x"}, {"y"});
    net.output("y");
    checkGradients(net, op);
  }
  Net leaky;
  leaky.input("x", leaky.random({2, 7}));
  Net::attr(leaky.node("LeakyRelu", {"x"}, {"y"}), "alpha", 0.3f);
  leaky.output("y");
  checkGradients(leaky, "LeakyRelu");
  Net hs; // HardSigmoid's corners at ±2.5 stay away from the samples
  hs.input("x", hs.random({4, 6}, 0.1f, 2.4f));
  hs.node("HardSigmoid", {"x"}, {"y"});
  hs.output("y");
  checkGradients(hs, "HardSigmoid");
  Net clip; // bounds as inputs (opset 13)
  clip.input("x", clip.random({3, 8}, 0.1f, 1.f));
  clip.weight("lo", Tensor(graph::ElemType::Float, {}), false);
  clip.m.mutable_graph()->mutable_initializer(0)->set_raw_data(std::string("\x00\x00\x00\xbf", 4));
  clip.weight("hi", Tensor(graph::ElemType::Float, {}), false);
  clip.m.mutable_graph()->mutable_initializer(1)->set_raw_data(std::string("\x00\x00\x00\x3f", 4));
  clip.feed["x"].data<float>()[0] = 0.75f; // above hi: no gradient
  clip.node("Clip", {"x", "lo", "hi"}, {"y"});
  clip.output("y");
  checkGradients(clip, "Clip");
}

TEST(Grad, BroadcastingArithmetic) {
  struct Case {
    rt::Shape a, b;
  };
  for (const char *op : {"Add", "Sub", "Mul", "Div"})
    for (const Case &c : {Case{{2, 3, 4}, {3, 1}}, Case{{1, 4}, {2, 3, 4}}, Case{{5}, {}},
                          Case{{2, 1, 3}, {1, 4, 1}}}) {
      Net net;
      net.input("a", net.random(c.a, 0.3f, 1.5f));
      net.weight("b", net.random(c.b, 0.5f, 1.5f));
      net.node(op, {"a", "b"}, {"y"});
      net.output("y");
      checkGradients(net, std::string(op) + " " + rt::shapeStr(c.a) + " " + rt::shapeStr(c.b));
    }
  // Pow: a cube of a base of either sign (a constant exponent), a fractional
  // power of a positive base with the exponent differentiated too, and an
  // int64 exponent (PaddleOCR's squares).
  Net cube;
  cube.input("a", cube.random({2, 3, 4}, 0.3f, 1.5f));
  Tensor three(graph::ElemType::Float, {});
  three.data<float>()[0] = 3;
  cube.weight("b", three, /*differentiate=*/false);
  cube.node("Pow", {"a", "b"}, {"y"});
  cube.output("y");
  checkGradients(cube, "Pow cube");
  Net power;
  power.input("a", power.random({3, 4}, 0.5f, 1.5f, /*positive=*/true));
  power.weight("b", power.random({4}, 0.5f, 2.f, /*positive=*/true));
  power.node("Pow", {"a", "b"}, {"y"});
  power.output("y");
  checkGradients(power, "Pow [3,4] [4]");
  Net square;
  square.input("a", square.random({2, 5}));
  auto *two = square.m.mutable_graph()->add_initializer();
  two->set_name("two");
  two->set_data_type(onnx::TensorProto::INT64);
  two->add_int64_data(2);
  square.node("Pow", {"a", "two"}, {"y"});
  square.output("y");
  checkGradients(square, "Pow int64 exponent");
  Net prelu;
  prelu.input("x", prelu.random({2, 3, 4, 4}));
  prelu.weight("slope", prelu.random({3, 1, 1}, 0.1f, 0.5f));
  prelu.node("PRelu", {"x", "slope"}, {"y"});
  prelu.output("y");
  checkGradients(prelu, "PRelu");
}

TEST(Grad, Convolutions) {
  struct Case {
    rt::Shape x, w;
    int64_t group, stride, pad, dilation;
  };
  for (const Case &c :
       {Case{{2, 4, 7, 7}, {6, 4, 3, 3}, 1, 2, 1, 1}, Case{{1, 4, 6, 5}, {6, 2, 3, 3}, 2, 1, 1, 1},
        Case{{2, 4, 6, 6}, {4, 1, 3, 3}, 4, 1, 1, 2}, Case{{1, 3, 5, 5}, {2, 3, 1, 1}, 1, 1, 0, 1},
        Case{{2, 2, 9}, {3, 2, 3}, 1, 2, 1, 1},
        // depthwise 5x5, strided, odd sizes (the weight gradient is ours)
        Case{{2, 3, 9, 8}, {3, 1, 5, 5}, 3, 2, 2, 1},
        Case{{1, 2, 7, 6}, {2, 1, 3, 3}, 2, 3, 0, 1}}) {
    Net net;
    net.input("x", net.random(c.x));
    net.weight("w", net.random(c.w));
    net.weight("b", net.random({c.w[0]}));
    size_t nsp = c.x.size() - 2;
    auto *n = net.node("Conv", {"x", "w", "b"}, {"y"});
    Net::attr(n, "group", c.group);
    Net::attr(n, "strides", std::vector<int64_t>(nsp, c.stride));
    Net::attr(n, "pads", std::vector<int64_t>(2 * nsp, c.pad));
    Net::attr(n, "dilations", std::vector<int64_t>(nsp, c.dilation));
    net.output("y");
    checkGradients(net, "Conv x" + rt::shapeStr(c.x) + " w" + rt::shapeStr(c.w) + " group " +
                            std::to_string(c.group));
  }
}

TEST(Grad, MatrixProducts) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      Net net;
      net.input("a", net.random(ta ? rt::Shape{5, 3} : rt::Shape{3, 5}));
      net.weight("b", net.random(tb ? rt::Shape{4, 5} : rt::Shape{5, 4}));
      net.weight("c", net.random({4}));
      auto *n = net.node("Gemm", {"a", "b", "c"}, {"y"});
      Net::attr(n, "transA", int64_t(ta));
      Net::attr(n, "transB", int64_t(tb));
      Net::attr(n, "alpha", 0.7f);
      Net::attr(n, "beta", 1.3f);
      net.output("y");
      checkGradients(net, "Gemm transA " + std::to_string(ta) + " transB " + std::to_string(tb));
    }
  struct Case {
    rt::Shape a, b;
  };
  for (const Case &c : {Case{{2, 3, 5}, {5, 4}}, Case{{3, 5}, {2, 5, 4}}, Case{{5}, {5, 3}},
                        Case{{2, 1, 3, 4}, {3, 4, 2}}}) {
    Net net;
    net.input("a", net.random(c.a));
    net.weight("b", net.random(c.b));
    net.node("MatMul", {"a", "b"}, {"y"});
    net.output("y");
    checkGradients(net, "MatMul " + rt::shapeStr(c.a) + " " + rt::shapeStr(c.b));
  }
}

TEST(Grad, Poolings) {
  for (int avg = 0; avg < 2; ++avg)
    for (int k : {2, 3}) {
      Net net;
      net.input("x", net.distinct({2, 2, 7, 6}));
      auto *n = net.node(avg ? "AveragePool" : "MaxPool", {"x"}, {"y"});
      Net::attr(n, "kernel_shape", std::vector<int64_t>{k, k});
      Net::attr(n, "strides", std::vector<int64_t>{2, 2});
      Net::attr(n, "pads", std::vector<int64_t>(4, k == 3 ? 1 : 0));
      if (avg)
        Net::attr(n, "count_include_pad", int64_t(k == 3));
      net.output("y");
      checkGradients(net, std::string(avg ? "AveragePool " : "MaxPool ") + std::to_string(k));
    }
  for (const char *op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    Net net;
    net.input("x", net.distinct({2, 3, 4, 5}));
    net.node(op, {"x"}, {"y"});
    net.output("y");
    checkGradients(net, op);
  }
}

TEST(Grad, NormalizationsAndReductions) {
  for (const char *op : {"Softmax", "LogSoftmax"})
    for (int64_t opset : {11, 13}) {
      Net net(opset);
      net.input("x", net.random({2, 5, 3}));
      Net::attr(net.node(op, {"x"}, {"y"}), "axis", int64_t(1));
      net.output("y");
      checkGradients(net, std::string(op) + " opset " + std::to_string(opset));
    }
  Net bn;
  bn.input("x", bn.random({2, 3, 4, 4}));
  bn.weight("scale", bn.random({3}));
  bn.weight("bias", bn.random({3}));
  bn.weight("mean", bn.random({3}), false);
  bn.weight("var", bn.random({3}, 0.5f, 1.5f, true), false);
  bn.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"});
  bn.output("y");
  checkGradients(bn, "BatchNormalization");
  for (int64_t keep : {0, 1}) {
    Net net;
    net.input("x", net.random({2, 3, 4, 5}));
    auto *n = net.node("ReduceMean", {"x"}, {"y"});
    Net::attr(n, "axes", std::vector<int64_t>{2, -1});
    Net::attr(n, "keepdims", keep);
    net.output("y");
    checkGradients(net, "ReduceMean keepdims " + std::to_string(keep));
  }
}

TEST(Grad, DataMovement) {
  Net t;
  t.input("x", t.random({2, 3, 4, 5}));
  Net::attr(t.node("Transpose", {"x"}, {"y"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
  t.output("y");
  checkGradients(t, "Transpose");
  Net c;
  c.input("a", c.random({2, 1, 3}));
  c.input("b", c.random({2, 4, 3}));
  c.weight("k", c.random({2, 2, 3}));
  Net::attr(c.node("Concat", {"a", "b", "k"}, {"y"}), "axis", int64_t(1));
  c.output("y");
  checkGradients(c, "Concat");
  Net s; // Split with an output nobody reads
  s.input("x", s.random({2, 6, 2}));
  s.ints("parts", {1, 2, 3});
  auto *n = s.node("Split", {"x", "parts"}, {"p", "q", "r"});
  Net::attr(n, "axis", int64_t(1));
  s.node("Mul", {"p", "p"}, {"pp"});
  s.output("pp");
  s.output("r");
  checkGradients(s, "Split");
  Net r;
  r.input("x", r.random({2, 3, 4}));
  r.ints("shape", {4, 6});
  r.node("Reshape", {"x", "shape"}, {"a"});
  r.node("Flatten", {"a"}, {"b"});
  r.ints("axes", {0});
  r.node("Unsqueeze", {"b", "axes"}, {"c"});
  r.node("Squeeze", {"c", "axes"}, {"y"});
  r.output("y");
  checkGradients(r, "Reshape, Flatten, Unsqueeze, Squeeze");
}

TEST(Grad, QuantizeDequantizePassGradientsStraightThrough) {
  Net net;
  net.input("x", net.random({2, 8}));
  net.weight("s", Tensor(graph::ElemType::Float, {}), false);
  net.m.mutable_graph()->mutable_initializer(0)->set_raw_data(std::string("\x00\x00\x80\x3c", 4));
  net.node("QuantizeLinear", {"x", "s"}, {"q"});
  net.node("DequantizeLinear", {"q", "s"}, {"y"});
  net.output("y");
  Loaded l;
  l.model = graph::loadModelFromBuffer(net.m.SerializeAsString(), "qdq", ".", l.diags, unchecked());
  ASSERT_TRUE(l.model);
  l.ex = rt::Executor::create(*l.model, l.diags);
  ASSERT_TRUE(l.ex);
  l.bp = rt::grad::Backprop::create(*l.ex, {l.model->graph.findValue("x")}, l.diags);
  ASSERT_TRUE(l.bp) << messages(l.diags);
  std::vector<Tensor> ys, grads;
  ASSERT_TRUE(succeeded(l.bp->forward(net.feed, ys, l.diags)));
  Tensor dy = net.random(ys[0].shape());
  ASSERT_TRUE(succeeded(l.bp->backward({dy}, grads, l.diags))) << messages(l.diags);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(0, std::memcmp(grads[0].raw(), dy.raw(), dy.bytes()));
}

TEST(Grad, IntegerValuesCarryNoGradient) {
  // x -> Shape -> Reshape(Relu(x), shape): the Shape's integer output does
  // not depend on x's values, so no gradient passes it (and it needs no
  // backward kernel); x's gradient is the Reshape's, against central
  // differences.
  Net net;
  net.input("x", net.random({2, 6}));
  net.node("Shape", {"x"}, {"s"});
  net.node("Relu", {"x"}, {"r"});
  net.node("Reshape", {"r", "s"}, {"y"});
  net.output("y");
  checkGradients(net, "Shape");
}

TEST(Grad, AnOperatorWithoutBackwardIsNamedBeforeAnyWork) {
  Net net;
  net.input("x", net.random({2, 3}));
  net.node("Floor", {"x"}, {"a"});
  net.node("Relu", {"a"}, {"b"});
  net.node("Floor", {"b"}, {"y"});
  net.output("y");
  Loaded l;
  l.model = graph::loadModelFromBuffer(net.m.SerializeAsString(), "floor.onnx", ".", l.diags,
                                       unchecked());
  ASSERT_TRUE(l.model);
  l.ex = rt::Executor::create(*l.model, l.diags);
  ASSERT_TRUE(l.ex);
  EXPECT_FALSE(rt::grad::Backprop::create(*l.ex, {l.model->graph.findValue("x")}, l.diags));
  std::string m = messages(l.diags);
  EXPECT_NE(m.find("operator `Floor` has no backward kernel: gradients cannot pass 2 nodes "
                   "(`Floor_1`, `Floor_3`)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("floor.onnx: node 'Floor_1'"), std::string::npos) << m;
}

namespace {
const std::string kModels = TPCC_SOURCE_DIR "/../shared/models/";

/// Loads shared model `name` with gradients of every weight and bias (float
/// initializers of more than one element, in file order) and, with
/// `input`, of the model's input last.
void loadShared(const std::string &name, Loaded &l, bool input) {
  l.model = graph::loadModel(kModels + name + ".onnx", l.diags);
  ASSERT_TRUE(l.model);
  l.ex = rt::Executor::create(*l.model, l.diags);
  ASSERT_TRUE(l.ex);
  for (const auto &t : l.model->graph.initializers())
    if (t->elem == graph::ElemType::Float && t->numElements() > 1)
      l.wrt.push_back(l.model->graph.findValue(t->name));
  if (input)
    l.wrt.push_back(l.model->graph.inputs()[0]);
  l.bp = rt::grad::Backprop::create(*l.ex, l.wrt, l.diags);
  ASSERT_TRUE(l.bp) << messages(l.diags);
}
} // namespace

TEST(Grad, SharedModelsAlongRandomDirections) {
  // Whole models: for each weight and bias tensor w, the directional
  // derivative <grad, u> along a random direction u, against (L(w + e u) -
  // L(w - e u)) / 2e.
  if (!std::filesystem::exists(kModels + "fashion_calib_x.npy"))
    GTEST_SKIP() << "no shared models at " << kModels;
  Tensor all;
  std::string error;
  ASSERT_TRUE(rt::readTensorFile(kModels + "fashion_calib_x.npy", all, error)) << error;
  for (const char *name : {"fashion_cnn", "fashion_mbv2"}) {
    SCOPED_TRACE(name);
    Loaded l;
    loadShared(name, l, false);
    std::map<std::string, Tensor> feed{{l.model->graph.inputs()[0]->name, all.rows(0, 4)}};
    std::vector<Tensor> ys, grads;
    ASSERT_TRUE(succeeded(l.bp->forward(feed, ys, l.diags)));
    Net rng;
    std::vector<Tensor> dys{rng.random(ys[0].shape(), 0.2f, 1.f)};
    ASSERT_TRUE(succeeded(l.bp->backward(dys, grads, l.diags))) << messages(l.diags);
    const float eps = 1e-4f;
    for (size_t w = 0; w < l.wrt.size(); ++w) {
      const Tensor &base = *l.ex->constant(*l.wrt[w]);
      Tensor u = rng.random(base.shape(), 0.f, 1.f);
      double analytic = 0, side[2];
      for (int64_t i = 0; i < base.numel(); ++i)
        analytic += double(u.data<float>()[i]) * grads[w].data<float>()[i];
      for (int s = 0; s < 2; ++s) {
        Tensor moved(graph::ElemType::Float, base.shape());
        for (int64_t i = 0; i < base.numel(); ++i)
          moved.data<float>()[i] = base.data<float>()[i] + (s ? -eps : eps) * u.data<float>()[i];
        // Unfused, like the tape: oneDNN's fused post-ops approximate
        // exp-based activations with polynomials of their own.
        std::vector<Tensor> kept;
        rt::RunOptions o;
        auto sub = [&](const graph::Value &x) { return &x == l.wrt[w] ? &moved : nullptr; };
        o.substitute = sub;
        o.keep = &kept;
        std::vector<Tensor> y2;
        ASSERT_TRUE(succeeded(l.ex->run(feed, y2, l.diags, o)));
        side[s] = loss(y2, dys);
      }
      double numeric = (side[0] - side[1]) / (2.0 * eps);
      // A loose check: the forward runs in float (at this step the
      // difference carries ~0.05 of rounding noise) and a step crosses kinks
      // (ReLU6 bounds, ties of zeros in MaxPool windows after a ReLU). The
      // kernels' own checks above are the tight ones.
      EXPECT_NEAR(analytic, numeric, std::max(0.15, 5e-2 * std::fabs(numeric))) << l.wrt[w]->name;
    }
  }
}

TEST(Grad, SharedModelsAgreeWithPyTorch) {
  // dL/dW of every weight and bias and dL/dX against PyTorch autograd on the
  // same float graph (test/tools/torch_grad.py): 1e-4 relative to each
  // tensor's largest gradient.
  if (!std::filesystem::exists(kModels + "fashion_calib_x.npy"))
    GTEST_SKIP() << "no shared models at " << kModels;
  Tensor all;
  std::string error;
  ASSERT_TRUE(rt::readTensorFile(kModels + "fashion_calib_x.npy", all, error)) << error;
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("grad-torch", dir));
  for (const char *name : {"fashion_cnn", "fashion_mbv2"}) {
    SCOPED_TRACE(name);
    Loaded l;
    loadShared(name, l, true);
    Tensor x = all.rows(0, 8);
    std::vector<Tensor> ys, grads;
    ASSERT_TRUE(succeeded(l.bp->forward({{l.wrt.back()->name, x}}, ys, l.diags)));
    Net rng;
    Tensor dy = rng.random(ys[0].shape(), 0.2f, 1.f);
    ASSERT_TRUE(succeeded(l.bp->backward({dy}, grads, l.diags))) << messages(l.diags);
    std::string d = std::string(dir) + "/" + name;
    std::filesystem::create_directories(d);
    ASSERT_TRUE(rt::writeTensorFile(d + "/in.npy", x, error)) << error;
    ASSERT_TRUE(rt::writeTensorFile(d + "/dy.npy", dy, error)) << error;
    std::string cmd = "/usr/bin/python3 '" TPCC_SOURCE_DIR "/test/tools/torch_grad.py' '" +
                      kModels + name + ".onnx" + "' '" + d + "/in.npy' '" + d + "/dy.npy' '" + d +
                      "' 2>'" + d + "/log'";
    int rc = std::system(cmd.c_str());
    if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77) {
      std::filesystem::remove_all(std::string(dir));
      GTEST_SKIP() << "python3-torch is not installed (scripts/setup installs it)";
    }
    ASSERT_EQ(rc, 0) << cmd;
    for (size_t w = 0; w < l.wrt.size(); ++w) {
      Tensor want;
      std::string file = w + 1 == l.wrt.size() ? "x" : std::to_string(w);
      ASSERT_TRUE(rt::readTensorFile(d + "/" + file + ".npy", want, error)) << error;
      ASSERT_EQ(want.shape(), grads[w].shape()) << l.wrt[w]->name;
      double scale = 0, worst = 0;
      for (int64_t i = 0; i < want.numel(); ++i) {
        scale = std::max(scale, std::fabs(double(want.data<float>()[i])));
        worst =
            std::max(worst, std::fabs(double(want.data<float>()[i]) - grads[w].data<float>()[i]));
      }
      EXPECT_LE(worst, 1e-4 * scale + 1e-7) << l.wrt[w]->name << ": largest gradient " << scale;
    }
  }
  std::filesystem::remove_all(std::string(dir));
}

TEST(Grad, MovedElements) {
  // Backward through the forward kernel run on element indices.
  Net sl;
  sl.input("x", sl.random({3, 6, 5}));
  sl.ints("starts", {1, -1});
  sl.ints("ends", {6, 0});
  sl.ints("axes", {1, 2});
  sl.ints("steps", {2, -2});
  sl.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  sl.output("y");
  checkGradients(sl, "Slice");
  for (const char *mode : {"constant", "reflect", "edge"}) {
    Net pad;
    pad.input("x", pad.random({2, 3, 4}));
    pad.ints("pads", {0, 1, 2, 0, 2, -1});
    auto *n = pad.node("Pad", {"x", "pads"}, {"y"});
    auto *a = n->add_attribute();
    a->set_name("mode");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(mode);
    pad.output("y");
    checkGradients(pad, std::string("Pad ") + mode);
  }
  Net gather; // an index twice: its gradients add up
  gather.input("x", gather.random({4, 3}));
  gather.ints("idx", {2, 0, 2});
  Net::attr(gather.node("Gather", {"x", "idx"}, {"y"}), "axis", int64_t(0));
  gather.output("y");
  checkGradients(gather, "Gather");
  Net ex;
  ex.input("x", ex.random({3, 1}));
  ex.ints("shape", {2, 3, 4});
  ex.node("Expand", {"x", "shape"}, {"a"});
  ex.ints("reps", {1, 2, 1});
  ex.node("Tile", {"a", "reps"}, {"y"});
  ex.output("y");
  checkGradients(ex, "Expand, Tile");
  Net rs;
  rs.input("x", rs.random({1, 2, 3, 3}));
  rs.floats("roi", {});
  rs.floats("scales", {1.f, 1.f, 2.f, 1.5f});
  rs.node("Resize", {"x", "roi", "scales"}, {"y"});
  rs.output("y");
  checkGradients(rs, "Resize nearest");
}

/// A Resize of x (shape `in`) by `scales` or to `sizes`, with string
/// attributes `attrs` and, for tf_crop_and_resize, a roi.
Net resizeNet(const rt::Shape &in, std::vector<float> scales, std::vector<int64_t> sizes,
              std::vector<std::pair<std::string, std::string>> attrs, std::vector<float> roi = {}) {
  Net n;
  n.input("x", n.random(in));
  n.floats("roi", roi);
  n.floats("scales", scales);
  std::vector<std::string> ins{"x", "roi", "scales"};
  if (!sizes.empty()) {
    n.ints("sizes", sizes);
    ins.push_back("sizes");
  }
  auto *node = n.node("Resize", ins, {"y"});
  for (auto &[k, v] : attrs) {
    auto *a = node->add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  n.output("y");
  return n;
}

TEST(Grad, InterpolatingResize) {
  // Linear and cubic: the forward's taps transposed, on every coordinate
  // mapping, up- and downsampling, several axes at once, and a crop box
  // whose outside takes no gradient.
  for (const char *coord : {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"}) {
    Net n = resizeNet({1, 2, 3, 4}, {1, 1, 2, 0.75f}, {},
                      {{"mode", "linear"}, {"coordinate_transformation_mode", coord}});
    checkGradients(n, std::string("Resize linear ") + coord);
  }
  Net cubic = resizeNet({2, 1, 5, 3}, {}, {2, 1, 7, 6}, {{"mode", "cubic"}});
  checkGradients(cubic, "Resize cubic");
  Net crop =
      resizeNet({1, 1, 4, 4}, {}, {1, 1, 5, 3},
                {{"mode", "linear"}, {"coordinate_transformation_mode", "tf_crop_and_resize"}},
                {0, 0, -0.2f, 0.1f, 1, 1, 0.9f, 1.3f});
  checkGradients(crop, "Resize tf_crop_and_resize");
  Net up(9); // Upsample, opset 9: bilinear-style linear, asymmetric
  up.input("x", up.random({1, 2, 3, 3}));
  up.floats("scales", {1.f, 1.f, 2.f, 2.f});
  auto *node = up.node("Upsample", {"x", "scales"}, {"y"});
  auto *a = node->add_attribute();
  a->set_name("mode");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("linear");
  up.output("y");
  checkGradients(up, "Upsample linear");
}

TEST(Grad, LayerNormalizationAndConvTranspose) {
  Net ln(17);
  ln.input("x", ln.random({2, 3, 4}));
  ln.weight("scale", ln.random({3, 4}));
  ln.weight("bias", ln.random({4}));
  Net::attr(ln.node("LayerNormalization", {"x", "scale", "bias"}, {"y"}), "axis", int64_t(1));
  ln.output("y");
  checkGradients(ln, "LayerNormalization");
  struct Case {
    rt::Shape x, w;
    int64_t group, stride, pad;
  };
  for (const Case &c :
       {Case{{2, 4, 3, 3}, {4, 3, 3, 3}, 1, 2, 1}, Case{{1, 4, 4, 3}, {4, 2, 2, 2}, 2, 2, 0}}) {
    Net net;
    net.input("x", net.random(c.x));
    net.weight("w", net.random(c.w));
    net.weight("b", net.random({c.w[1] * c.group}));
    auto *n = net.node("ConvTranspose", {"x", "w", "b"}, {"y"});
    Net::attr(n, "group", c.group);
    Net::attr(n, "strides", std::vector<int64_t>(2, c.stride));
    Net::attr(n, "pads", std::vector<int64_t>(4, c.pad));
    net.output("y");
    checkGradients(net,
                   "ConvTranspose x" + rt::shapeStr(c.x) + " group " + std::to_string(c.group));
  }
}

TEST(Grad, SubstitutedWeightsAndGradientHooks) {
  // The backward reads the weights the forward read (a substitute), and the
  // gradient hook sees each hooked value's complete gradient once: a run
  // with w substituted by w2 gives the input gradient of a model whose
  // weight is w2, and the hook's scaling of the Conv output's gradient
  // scales every gradient before it.
  auto build = [](Net &net, const Tensor &w) {
    net.weight("w", w);
    net.node("Conv", {"x", "w"}, {"c"});
    net.node("Relu", {"c"}, {"r"});
    net.node("Mul", {"r", "r"}, {"y"});
    net.output("y");
  };
  Net a, b;
  Tensor x = a.random({1, 2, 5, 5}), w = a.random({3, 2, 3, 3}), w2 = a.random({3, 2, 3, 3});
  a.input("x", x);
  b.input("x", x);
  build(a, w);
  build(b, w2);
  auto load = [](Net &net, Loaded &l) {
    l.model = graph::loadModelFromBuffer(net.m.SerializeAsString(), "m", ".", l.diags, unchecked());
    ASSERT_TRUE(l.model);
    l.ex = rt::Executor::create(*l.model, l.diags);
    ASSERT_TRUE(l.ex);
    l.wrt = {l.model->graph.findValue("x"), l.model->graph.findValue("w")};
    l.bp = rt::grad::Backprop::create(*l.ex, l.wrt, l.diags);
    ASSERT_TRUE(l.bp);
  };
  Loaded la, lb;
  load(a, la);
  load(b, lb);
  std::vector<Tensor> ya, yb, ga, gb;
  rt::RunOptions o;
  const graph::Value *wv = la.model->graph.findValue("w");
  auto sub = [&](const graph::Value &v) { return &v == wv ? &w2 : nullptr; };
  o.substitute = sub;
  ASSERT_TRUE(succeeded(la.bp->forward(a.feed, ya, la.diags, o)));
  ASSERT_TRUE(succeeded(lb.bp->forward(b.feed, yb, lb.diags)));
  Tensor dy = a.random(ya[0].shape());
  std::map<std::string, int> calls;
  auto hook = [&](const graph::Value &v, Tensor g) {
    ++calls[v.name];
    if (v.name != "c")
      return g;
    Tensor h(graph::ElemType::Float, g.shape());
    for (int64_t i = 0; i < g.numel(); ++i)
      h.data<float>()[i] = 2 * g.data<float>()[i];
    return h;
  };
  ASSERT_TRUE(succeeded(la.bp->backward({dy}, ga, la.diags, hook)));
  ASSERT_TRUE(succeeded(lb.bp->backward({dy}, gb, lb.diags)));
  EXPECT_EQ(calls["c"], 1);
  EXPECT_EQ(calls["r"], 1);
  EXPECT_EQ(calls["w"], 1);
  EXPECT_EQ(calls["x"], 1);
  for (size_t k = 0; k < 2; ++k)
    for (int64_t i = 0; i < ga[k].numel(); ++i)
      EXPECT_FLOAT_EQ(ga[k].data<float>()[i], 2 * gb[k].data<float>()[i]) << k << " " << i;
}

TEST(Grad, GradientsSeededAtInnerValues) {
  // A loss term on an inner value (a layer's output) enters the backward
  // there: seeding c with dc gives the gradients of a model whose output is
  // c, and seeds add to the output's gradient (the backward is linear).
  auto build = [](Net &net, const Tensor &x, const Tensor &w, bool stopAtC) {
    net.input("x", x);
    net.weight("w", w);
    net.node("Conv", {"x", "w"}, {"c"});
    net.node("Relu", {"c"}, {"r"});
    net.node("Mul", {"r", "r"}, {"y"});
    net.output(stopAtC ? "c" : "y");
  };
  Net a, b;
  Tensor x = a.random({1, 2, 5, 5}), w = a.random({3, 2, 3, 3});
  build(a, x, w, false);
  build(b, x, w, true);
  Loaded la, lb;
  for (auto [net, l] : {std::pair{&a, &la}, std::pair{&b, &lb}}) {
    l->model =
        graph::loadModelFromBuffer(net->m.SerializeAsString(), "m", ".", l->diags, unchecked());
    ASSERT_TRUE(l->model);
    l->ex = rt::Executor::create(*l->model, l->diags);
    ASSERT_TRUE(l->ex);
    l->wrt = {l->model->graph.findValue("x"), l->model->graph.findValue("w")};
    l->bp = rt::grad::Backprop::create(*l->ex, l->wrt, l->diags);
    ASSERT_TRUE(l->bp);
  }
  std::vector<Tensor> ya, yb, seeded, direct, out, both;
  ASSERT_TRUE(succeeded(la.bp->forward(a.feed, ya, la.diags)));
  ASSERT_TRUE(succeeded(lb.bp->forward(b.feed, yb, lb.diags)));
  const graph::Value *c = la.model->graph.findValue("c");
  ASSERT_TRUE(la.bp->taped(*c));
  EXPECT_EQ(la.bp->taped(*c)->shape(), yb[0].shape());
  Tensor dc = a.random(yb[0].shape()), dy = a.random(ya[0].shape());
  std::vector<rt::grad::Backprop::ValueGradient> seeds{{c, dc}};
  ASSERT_TRUE(succeeded(la.bp->backward({Tensor()}, seeded, la.diags, nullptr, seeds)));
  ASSERT_TRUE(succeeded(lb.bp->backward({dc}, direct, lb.diags)));
  ASSERT_TRUE(succeeded(la.bp->backward({dy}, out, la.diags)));
  ASSERT_TRUE(succeeded(la.bp->backward({dy}, both, la.diags, nullptr, seeds)));
  for (size_t k = 0; k < 2; ++k)
    for (int64_t i = 0; i < seeded[k].numel(); ++i) {
      EXPECT_FLOAT_EQ(seeded[k].data<float>()[i], direct[k].data<float>()[i]) << k << " " << i;
      EXPECT_NEAR(both[k].data<float>()[i], out[k].data<float>()[i] + seeded[k].data<float>()[i],
                  1e-5 * (1 + std::fabs(both[k].data<float>()[i])))
          << k << " " << i;
    }
  // A seed whose shape is not the value's is an error.
  std::vector<rt::grad::Backprop::ValueGradient> bad{{c, a.random({2})}};
  EXPECT_TRUE(failed(la.bp->backward({Tensor()}, seeded, la.diags, nullptr, bad)));
}

//===- IntegerGemmTest.cpp - MatMulInteger and ConvInteger against int64 loops -===//
//
// The executor's MatMulInteger and ConvInteger (runtime/ops/IntegerGemm.cpp)
// against plain int64 loops over the operators' definitions: u8 and s8
// operands at the ends of their ranges (the largest sums, reductions of
// thousands that no float holds exactly), zero points per tensor, per row of
// A, per column of B and per output channel, broadcast batches, padded,
// strided, dilated and grouped 1-D and 2-D convolutions, constant weights
// (cached by the kernel) run twice with other activations, and the errors
// of malformed calls.
//
//===----------------------------------------------------------------------===//
#include "ir/graph/OnnxIO.h"
#include "runtime/Executor.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <random>

using namespace tpcc;
using rt::ElemType;
using rt::Shape;
using rt::Tensor;

namespace {

/// An operand: type, shape, values (within the type's range).
struct Operand {
  ElemType elem = ElemType::UInt8;
  Shape shape;
  std::vector<int32_t> v;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

int onnxType(ElemType e) {
  return e == ElemType::Int8 ? onnx::TensorProto::INT8 : onnx::TensorProto::UINT8;
}

/// Random values of `elem`, a third of them at the range's ends.
Operand randomOperand(std::mt19937 &rng, ElemType elem, Shape shape) {
  Operand o{elem, std::move(shape), {}};
  int lo = elem == ElemType::Int8 ? -128 : 0, hi = elem == ElemType::Int8 ? 127 : 255;
  std::uniform_int_distribution<int> any(lo, hi), pick(0, 5);
  for (int64_t i = 0; i < o.numel(); ++i) {
    int p = pick(rng);
    o.v.push_back(p == 0 ? lo : p == 1 ? hi : any(rng));
  }
  return o;
}

Tensor toTensor(const Operand &o) {
  Tensor t(o.elem, o.shape);
  for (int64_t i = 0; i < o.numel(); ++i) {
    if (o.elem == ElemType::Int8)
      t.data<int8_t>()[i] = int8_t(o.v[size_t(i)]);
    else
      t.data<uint8_t>()[i] = uint8_t(o.v[size_t(i)]);
  }
  return t;
}

/// A model of one node `op` whose inputs are `ins` (empty name: omitted);
/// `constant[i]` makes input i an initializer, else a graph input.
struct Call {
  std::string op;
  std::vector<std::optional<Operand>> ins;
  std::vector<bool> constant;
  std::vector<std::pair<std::string, std::vector<int64_t>>> intsAttrs;
  int64_t group = 1;
};

std::string modelOf(const Call &c) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(13);
  auto *g = m.mutable_graph();
  g->set_name("g");
  auto *n = g->add_node();
  n->set_op_type(c.op);
  n->set_name("n");
  for (size_t i = 0; i < c.ins.size(); ++i) {
    if (!c.ins[i]) {
      n->add_input("");
      continue;
    }
    std::string name = "in" + std::to_string(i);
    n->add_input(name);
    const Operand &o = *c.ins[i];
    if (i < c.constant.size() && c.constant[i]) {
      auto *t = g->add_initializer();
      t->set_name(name);
      t->set_data_type(onnxType(o.elem));
      for (int64_t d : o.shape)
        t->add_dims(d);
      for (int32_t v : o.v)
        t->add_int32_data(v);
      continue;
    }
    auto *vi = g->add_input();
    vi->set_name(name);
    auto *tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnxType(o.elem));
    tt->mutable_shape();
    for (int64_t d : o.shape)
      tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  n->add_output("y");
  for (auto &[name, ints] : c.intsAttrs) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : ints)
      a->add_ints(v);
  }
  if (c.group != 1) {
    auto *a = n->add_attribute();
    a->set_name("group");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(c.group);
  }
  // The output's rank (the checker wants a shape): that of the larger operand.
  size_t rank = std::max(c.ins[0]->shape.size(), c.ins[1]->shape.size());
  auto *out = g->add_output();
  out->set_name("y");
  auto *ot = out->mutable_type()->mutable_tensor_type();
  ot->set_elem_type(onnx::TensorProto::INT32);
  for (size_t d = 0; d < rank; ++d)
    ot->mutable_shape()->add_dim()->set_dim_param("d" + std::to_string(d));
  return m.SerializeAsString();
}

/// Runs `c` (its non-constant inputs fed, then fed again with `second` in
/// place of input 0 when given); the outputs of each run, or the first
/// error.
std::vector<Tensor> run(const Call &c, std::string &error, const Operand *second = nullptr) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto model = graph::loadModelFromBuffer(modelOf(c), "call.onnx", "", diags);
  std::vector<Tensor> results;
  std::unique_ptr<rt::Executor> ex = model ? rt::Executor::create(*model, diags) : nullptr;
  for (int pass = 0; ex && pass < (second ? 2 : 1); ++pass) {
    std::map<std::string, Tensor> feeds;
    for (size_t i = 0; i < c.ins.size(); ++i)
      if (c.ins[i] && !(i < c.constant.size() && c.constant[i]))
        feeds["in" + std::to_string(i)] = toTensor(pass == 1 && i == 0 ? *second : *c.ins[i]);
    std::vector<Tensor> out;
    if (failed(ex->run(feeds, out, diags)))
      break;
    results.push_back(out[0]);
  }
  for (const Diagnostic &d : diags.getDiagnostics())
    if (d.severity == Severity::Error && error.empty())
      error = d.message;
  return results;
}

/// The zero point of element i of an operand: `zp` broadcast as `zs`
/// (numpy rules) over `shape`.
int64_t zeroAt(const std::optional<Operand> &zp, const Shape &zs, const Shape &shape, int64_t i) {
  if (!zp)
    return 0;
  if (zp->v.size() == 1)
    return zp->v[0];
  int64_t off = 0, stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t coord = i % shape[d];
    i /= shape[d];
    size_t zd = d + zs.size() - shape.size();
    if (d + zs.size() >= shape.size() && zs[zd] != 1) {
      off += coord * stride;
    }
    if (d + zs.size() >= shape.size())
      stride *= zs[zd];
  }
  return zp->v[size_t(off)];
}

/// MatMulInteger by definition: 2-D or batched (batch dims equal or 1).
std::vector<int64_t> refMatmul(const Operand &a, const Operand &b, const std::optional<Operand> &az,
                               const Shape &azs, const std::optional<Operand> &bz, const Shape &bzs,
                               Shape &out) {
  size_t ra = a.shape.size(), rb = b.shape.size(), r = std::max(ra, rb);
  int64_t m = a.shape[ra - 2], k = a.shape[ra - 1], n = b.shape[rb - 1];
  Shape batch(r - 2, 1);
  for (size_t d = 0; d + 2 < r; ++d) {
    int64_t da = d + ra >= r ? a.shape[d + ra - r] : 1, db = d + rb >= r ? b.shape[d + rb - r] : 1;
    batch[d] = std::max(da, db);
  }
  out = batch;
  out.push_back(m);
  out.push_back(n);
  int64_t nb = 1;
  for (int64_t d : batch)
    nb *= d;
  auto batchOffset = [&](const Shape &s, int64_t bt) {
    int64_t off = 0, stride = 1;
    for (size_t d = batch.size(); d-- > 0;) {
      int64_t coord = bt % batch[d];
      bt /= batch[d];
      size_t rs = s.size() - 2;
      if (d + rs >= batch.size()) {
        int64_t dim = s[d + rs - batch.size()];
        off += (dim == 1 ? 0 : coord) * stride;
        stride *= dim;
      }
    }
    return off;
  };
  std::vector<int64_t> y(size_t(nb * m * n));
  for (int64_t bt = 0; bt < nb; ++bt) {
    int64_t ao = batchOffset(a.shape, bt) * m * k, bo = batchOffset(b.shape, bt) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t acc = 0;
        for (int64_t l = 0; l < k; ++l) {
          int64_t ai = ao + i * k + l, bi = bo + l * n + j;
          acc += (a.v[size_t(ai)] - zeroAt(az, azs, a.shape, ai)) *
                 (b.v[size_t(bi)] - zeroAt(bz, bzs, b.shape, bi));
        }
        y[size_t((bt * m + i) * n + j)] = acc;
      }
  }
  return y;
}

void expectEqual(const Tensor &got, const Shape &shape, const std::vector<int64_t> &want) {
  ASSERT_EQ(got.elem(), ElemType::Int32);
  ASSERT_EQ(got.shape(), shape);
  int64_t diffs = 0, first = -1;
  for (int64_t i = 0; i < got.numel(); ++i)
    if (got.data<int32_t>()[i] != want[size_t(i)] && diffs++ == 0)
      first = i;
  EXPECT_EQ(diffs, 0) << "first at " << first << ": " << got.data<int32_t>()[first] << " vs "
                      << want[size_t(first)];
}

Operand scalarZero(ElemType e, int32_t v) { return Operand{e, {}, {v}}; }

TEST(MatMulInteger, ExactAtTheEndsOfTheRangesAndPastFloatsExactSums) {
  std::mt19937 rng(7);
  for (auto [ea, eb] : {std::pair{ElemType::UInt8, ElemType::Int8},
                        {ElemType::UInt8, ElemType::UInt8},
                        {ElemType::Int8, ElemType::Int8}}) {
    for (int64_t k : {1, 255, 256, 257, 1000}) {
      Operand a = randomOperand(rng, ea, {5, k}), b = randomOperand(rng, eb, {k, 9});
      Operand az = scalarZero(ea, ea == ElemType::UInt8 ? 131 : -3);
      Operand bz = scalarZero(eb, eb == ElemType::UInt8 ? 255 : -128);
      for (bool withZero : {false, true}) {
        Call c{"MatMulInteger", {a, b}, {false, true}};
        if (withZero)
          c.ins = {a, b, az, bz};
        std::string err;
        auto out = run(c, err);
        ASSERT_EQ(out.size(), 1u) << err;
        Shape shape;
        auto want = refMatmul(a, b, withZero ? std::optional(az) : std::nullopt, {},
                              withZero ? std::optional(bz) : std::nullopt, {}, shape);
        expectEqual(out[0], shape, want);
      }
    }
  }
  // The largest sum there is: 4096 x 255 x 255 (past 2^28), each operand
  // at the far end from its zero point.
  Operand a{ElemType::UInt8, {1, 4096}, std::vector<int32_t>(4096, 255)};
  Operand b{ElemType::UInt8, {4096, 2}, std::vector<int32_t>(8192, 0)};
  Call c{"MatMulInteger",
         {a, b, scalarZero(ElemType::UInt8, 0), scalarZero(ElemType::UInt8, 255)},
         {false, true, true, true}};
  std::string err;
  auto out = run(c, err);
  ASSERT_EQ(out.size(), 1u) << err;
  EXPECT_EQ(out[0].data<int32_t>()[0], -4096 * 255 * 255);
}

TEST(MatMulInteger, ZeroPointsPerRowAndPerColumnAndBroadcastBatches) {
  std::mt19937 rng(11);
  // 2-D: a_zero_point per row of A [M], b_zero_point per column of B [N].
  Operand a = randomOperand(rng, ElemType::UInt8, {6, 300}),
          b = randomOperand(rng, ElemType::Int8, {300, 4});
  Operand az = randomOperand(rng, ElemType::UInt8, {6}),
          bz = randomOperand(rng, ElemType::Int8, {4});
  std::string err;
  auto out = run(Call{"MatMulInteger", {a, b, az, bz}, {false, true, false, true}}, err);
  ASSERT_EQ(out.size(), 1u) << err;
  Shape shape;
  expectEqual(out[0], shape, refMatmul(a, b, az, {6, 1}, bz, {4}, shape));

  // Batched: A [2, 3, 4, 70] x B [3, 70, 5] (B's batch broadcast over A's
  // first), a zero point per batch and row [2, 3, 4, 1], B's per column.
  a = randomOperand(rng, ElemType::UInt8, {2, 3, 4, 70});
  b = randomOperand(rng, ElemType::UInt8, {3, 70, 5});
  az = randomOperand(rng, ElemType::UInt8, {2, 3, 4, 1});
  bz = randomOperand(rng, ElemType::UInt8, {1, 5});
  out = run(Call{"MatMulInteger", {a, b, az, bz}, {false, false, false, false}}, err);
  ASSERT_EQ(out.size(), 1u) << err;
  expectEqual(out[0], shape, refMatmul(a, b, az, {2, 3, 4, 1}, bz, {1, 5}, shape));
  EXPECT_EQ(shape, (Shape{2, 3, 4, 5}));

  // One B for every batch of A: A's batches become rows of one product.
  a = randomOperand(rng, ElemType::UInt8, {2, 7, 600});
  b = randomOperand(rng, ElemType::Int8, {600, 3});
  out = run(Call{"MatMulInteger", {a, b}, {false, true}}, err);
  ASSERT_EQ(out.size(), 1u) << err;
  expectEqual(out[0], shape, refMatmul(a, b, std::nullopt, {}, std::nullopt, {}, shape));
}

TEST(MatMulInteger, ConstantWeightsStayRightWhenTheActivationsChange) {
  std::mt19937 rng(3);
  Operand a = randomOperand(rng, ElemType::UInt8, {4, 520}),
          a2 = randomOperand(rng, ElemType::UInt8, {4, 520});
  Operand b = randomOperand(rng, ElemType::Int8, {520, 6}),
          bz = randomOperand(rng, ElemType::Int8, {6});
  Call c{"MatMulInteger", {a, b, std::nullopt, bz}, {false, true, false, true}};
  std::string err;
  auto out = run(c, err, &a2);
  ASSERT_EQ(out.size(), 2u) << err;
  Shape shape;
  expectEqual(out[0], shape, refMatmul(a, b, std::nullopt, {}, bz, {6}, shape));
  expectEqual(out[1], shape, refMatmul(a2, b, std::nullopt, {}, bz, {6}, shape));
}

TEST(MatMulInteger, MalformedCallsAreErrors) {
  std::mt19937 rng(5);
  Operand a = randomOperand(rng, ElemType::UInt8, {2, 3}),
          b = randomOperand(rng, ElemType::Int8, {4, 5});
  std::string err;
  run(Call{"MatMulInteger", {a, b}}, err);
  EXPECT_NE(err.find("inner dimensions differ"), std::string::npos) << err;
  err.clear();
  b = randomOperand(rng, ElemType::Int8, {3, 5});
  run(Call{"MatMulInteger", {a, b, scalarZero(ElemType::Int8, 0)}}, err);
  EXPECT_NE(err.find("a_zero_point is int8 but its operand is uint8"), std::string::npos) << err;
  err.clear();
  run(Call{"MatMulInteger", {a, b, randomOperand(rng, ElemType::UInt8, {3})}}, err);
  EXPECT_NE(err.find("not one per row of A (2)"), std::string::npos) << err;
  err.clear();
  run(Call{"MatMulInteger", {a, b, std::nullopt, randomOperand(rng, ElemType::Int8, {4})}}, err);
  EXPECT_NE(err.find("b_zero_point [4] does not broadcast to [3,5]"), std::string::npos) << err;
}

/// ConvInteger by definition (NCHW / NCW, pads, strides, dilations, group;
/// w zero point scalar or per output channel).
std::vector<int64_t> refConv(const Operand &x, const Operand &w, int64_t xz,
                             const std::optional<Operand> &wz, const std::vector<int64_t> &strides,
                             const std::vector<int64_t> &pads, const std::vector<int64_t> &dil,
                             int64_t group, Shape &out) {
  size_t sp = x.shape.size() - 2;
  int64_t n = x.shape[0], c = x.shape[1], m = w.shape[0], cg = c / group, mg = m / group;
  out = {n, m};
  for (size_t d = 0; d < sp; ++d) {
    int64_t ke = (w.shape[d + 2] - 1) * dil[d] + 1;
    out.push_back((x.shape[d + 2] + pads[d] + pads[d + sp] - ke) / strides[d] + 1);
  }
  int64_t H = x.shape[2], W = sp > 1 ? x.shape[3] : 1, kh = w.shape[2],
          kw = sp > 1 ? w.shape[3] : 1;
  int64_t oh = out[2], ow = sp > 1 ? out[3] : 1;
  std::vector<int64_t> y;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < m; ++o) {
      int64_t gi = o / mg, wzero = !wz ? 0 : wz->v.size() == 1 ? wz->v[0] : wz->v[size_t(o)];
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          int64_t acc = 0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t u = 0; u < kh; ++u)
              for (int64_t v = 0; v < kw; ++v) {
                int64_t r = i * strides[0] - pads[0] + u * dil[0];
                int64_t s = sp > 1 ? j * strides[1] - pads[1] + v * dil[1] : 0;
                if (r < 0 || r >= H || s < 0 || s >= W)
                  continue; // the padding holds the zero point: adds 0
                int64_t xv = x.v[size_t(((b * c + gi * cg + ci) * H + r) * W + s)];
                int64_t wv = w.v[size_t(((o * cg + ci) * kh + u) * kw + v)];
                acc += (xv - xz) * (wv - wzero);
              }
          y.push_back(acc);
        }
    }
  return y;
}

TEST(ConvInteger, PaddedStridedDilatedGroupedAndPerChannelWeights) {
  std::mt19937 rng(13);
  struct Case {
    Shape x, w;
    std::vector<int64_t> strides, pads, dil;
    int64_t group;
    ElemType we;
    bool perChannel;
  };
  for (const Case &cs :
       {Case{{2, 4, 9, 8}, {6, 4, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, ElemType::UInt8, false},
        Case{{1, 6, 11, 10}, {4, 3, 3, 2}, {2, 1}, {2, 0, 1, 1}, {2, 1}, 2, ElemType::Int8, true},
        Case{{1, 40, 5, 5},
             {8, 40, 3, 3},
             {1, 1},
             {1, 1, 1, 1},
             {1, 1},
             1,
             ElemType::Int8,
             true}, // kernel_dim 360: two slices
        Case{{3, 3, 17}, {5, 3, 4}, {3}, {2, 1}, {2}, 1, ElemType::UInt8, true}}) {
    Operand x = randomOperand(rng, ElemType::UInt8, cs.x), w = randomOperand(rng, cs.we, cs.w);
    Operand xz = scalarZero(ElemType::UInt8, 119);
    Operand wz = cs.perChannel ? randomOperand(rng, cs.we, {cs.w[0]})
                               : scalarZero(cs.we, cs.we == ElemType::UInt8 ? 128 : 0);
    Call c{"ConvInteger",
           {x, w, xz, wz},
           {false, true, true, true},
           {{"strides", cs.strides}, {"pads", cs.pads}, {"dilations", cs.dil}},
           cs.group};
    std::string err;
    auto out = run(c, err);
    ASSERT_EQ(out.size(), 1u) << err;
    Shape shape;
    auto want = refConv(x, w, 119, wz, cs.strides, cs.pads, cs.dil, cs.group, shape);
    expectEqual(out[0], shape, want);
  }
}

TEST(ConvInteger, MalformedCallsAreErrors) {
  std::mt19937 rng(17);
  Operand x = randomOperand(rng, ElemType::UInt8, {1, 4, 5, 5});
  std::string err;
  run(Call{"ConvInteger", {x, randomOperand(rng, ElemType::UInt8, {2, 3, 3, 3})}}, err);
  EXPECT_NE(err.find("do not agree on channels"), std::string::npos) << err;
  err.clear();
  Operand w = randomOperand(rng, ElemType::UInt8, {2, 4, 3, 3});
  run(Call{"ConvInteger", {x, w, randomOperand(rng, ElemType::UInt8, {4})}}, err);
  EXPECT_NE(err.find("x_zero_point must have one element"), std::string::npos) << err;
  err.clear();
  run(Call{"ConvInteger", {x, w, std::nullopt, randomOperand(rng, ElemType::UInt8, {3})}}, err);
  EXPECT_NE(err.find("w_zero_point has 3 elements, not one per output channel (2)"),
            std::string::npos)
      << err;
}

} // namespace

//===- OnnxSchemaTest.cpp - Tests of the ONNX operator schema index -------===//
#include "ir/OnnxSchema.h"

#include "plan/ConstantOperands.h"

#include "support/Diagnostics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

using namespace tpcc;
using namespace tpcc::ir;

namespace {

const OnnxSchemaIndex &index() { return OnnxSchemaIndex::get(); }

TEST(OnnxSchemaTest, ConvHasGroupWithDefaultOne) {
  const OnnxOp *conv = index().find("Conv");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->name, "Conv");
  EXPECT_EQ(conv->domain, "");
  const OnnxAttrUnion *group = conv->findAttr("group");
  ASSERT_NE(group, nullptr);
  ASSERT_EQ(group->types.size(), 1u);
  EXPECT_EQ(group->types[0], OnnxAttrType::Int);
  ASSERT_NE(group->latest, nullptr);
  ASSERT_TRUE(group->latest->defaultValue.has_value());
  EXPECT_EQ(group->latest->defaultValue->type, OnnxAttrType::Int);
  EXPECT_EQ(group->latest->defaultValue->i, 1);
  EXPECT_EQ(group->latest->defaultValue->str(), "1");
}

TEST(OnnxSchemaTest, ConvAttributesAndInputs) {
  const OnnxOp *conv = index().find("Conv");
  ASSERT_NE(conv, nullptr);
  const OnnxAttrUnion *autoPad = conv->findAttr("auto_pad");
  ASSERT_NE(autoPad, nullptr);
  EXPECT_EQ(autoPad->types, std::vector<OnnxAttrType>{OnnxAttrType::String});
  ASSERT_TRUE(autoPad->latest->defaultValue);
  EXPECT_EQ(autoPad->latest->defaultValue->s, "NOTSET");
  EXPECT_EQ(autoPad->latest->defaultValue->str(), "\"NOTSET\"");

  // List attributes without a default.
  const OnnxAttrUnion *kernelShape = conv->findAttr("kernel_shape");
  ASSERT_NE(kernelShape, nullptr);
  EXPECT_EQ(kernelShape->types, std::vector<OnnxAttrType>{OnnxAttrType::Ints});
  EXPECT_FALSE(kernelShape->latest->defaultValue.has_value());
  EXPECT_FALSE(kernelShape->latest->required);

  EXPECT_EQ(conv->maxInputs, std::optional<unsigned>(3));
  EXPECT_TRUE(conv->hasInput(0));
  EXPECT_TRUE(conv->hasInput(2));
  EXPECT_FALSE(conv->hasInput(3));
  EXPECT_FALSE(conv->hasInput(-1));
  EXPECT_EQ(conv->latest().minInputs, 2u);
  ASSERT_EQ(conv->latest().inputs.size(), 3u);
  EXPECT_EQ(conv->latest().inputs[0].name, "X");
  EXPECT_EQ(conv->latest().inputs[2].option, OnnxInput::Option::Optional);

  EXPECT_EQ(conv->findAttr("groups"), nullptr);
  std::vector<std::string> attrs = conv->attributeNames();
  EXPECT_TRUE(std::is_sorted(attrs.begin(), attrs.end()));
  EXPECT_NE(std::find(attrs.begin(), attrs.end(), "dilations"), attrs.end());
}

TEST(OnnxSchemaTest, GemmDefaults) {
  const OnnxOp *gemm = index().find("Gemm");
  ASSERT_NE(gemm, nullptr);
  for (const char *name : {"transA", "transB"}) {
    const OnnxAttrUnion *a = gemm->findAttr(name);
    ASSERT_NE(a, nullptr) << name;
    ASSERT_TRUE(a->latest->defaultValue) << name;
    EXPECT_EQ(a->latest->defaultValue->type, OnnxAttrType::Int);
    EXPECT_EQ(a->latest->defaultValue->i, 0);
  }
  const OnnxAttrUnion *alpha = gemm->findAttr("alpha");
  ASSERT_NE(alpha, nullptr);
  EXPECT_EQ(alpha->types, std::vector<OnnxAttrType>{OnnxAttrType::Float});
  ASSERT_TRUE(alpha->latest->defaultValue);
  EXPECT_DOUBLE_EQ(alpha->latest->defaultValue->f, 1.0);
  EXPECT_EQ(alpha->latest->defaultValue->str(), "1.0");
  EXPECT_EQ(gemm->maxInputs, std::optional<unsigned>(3));
}

TEST(OnnxSchemaTest, AttributesOfOldVersionsAreInTheUnion) {
  const OnnxOp *gemm = index().find("Gemm");
  ASSERT_NE(gemm, nullptr);
  // `broadcast` was dropped in Gemm-7 but older models may still carry it.
  const OnnxAttrUnion *broadcast = gemm->findAttr("broadcast");
  ASSERT_NE(broadcast, nullptr);
  EXPECT_EQ(gemm->latest().findAttr("broadcast"), nullptr);
  const OnnxOpVersion *v6 = gemm->atOpset(6);
  ASSERT_NE(v6, nullptr);
  EXPECT_EQ(v6->sinceVersion, 6);
  EXPECT_NE(v6->findAttr("broadcast"), nullptr);
}

TEST(OnnxSchemaTest, VersionsAndAtOpset) {
  const OnnxOp *clip = index().find("Clip");
  ASSERT_NE(clip, nullptr);
  ASSERT_GE(clip->versions.size(), 3u);
  EXPECT_TRUE(std::is_sorted(clip->versions.begin(), clip->versions.end(),
                             [](const OnnxOpVersion &a, const OnnxOpVersion &b) {
                               return a.sinceVersion < b.sinceVersion;
                             }));
  EXPECT_EQ(clip->versions.front().sinceVersion, 1);
  // Clip-6 has `min`/`max` attributes with defaults; since Clip-11 they are
  // inputs.
  const OnnxOpVersion *v6 = clip->atOpset(10);
  ASSERT_NE(v6, nullptr);
  EXPECT_EQ(v6->sinceVersion, 6);
  ASSERT_NE(v6->findAttr("min"), nullptr);
  ASSERT_TRUE(v6->findAttr("min")->defaultValue);
  EXPECT_LT(v6->findAttr("min")->defaultValue->f, -1e38);
  EXPECT_EQ(v6->maxInputs, std::optional<unsigned>(1));
  const OnnxOpVersion *v11 = clip->atOpset(11);
  ASSERT_NE(v11, nullptr);
  EXPECT_EQ(v11->sinceVersion, 11);
  EXPECT_EQ(v11->findAttr("min"), nullptr);
  EXPECT_EQ(v11->maxInputs, std::optional<unsigned>(3));
  EXPECT_EQ(clip->atOpset(0), nullptr);
  EXPECT_EQ(&clip->latest(), &clip->versions.back());
}

TEST(OnnxSchemaTest, ClipTakesAtMostThreeInputs) {
  const OnnxOp *clip = index().find("Clip");
  ASSERT_NE(clip, nullptr);
  EXPECT_EQ(clip->maxInputs, std::optional<unsigned>(3));
  EXPECT_TRUE(clip->hasInput(2));
  EXPECT_FALSE(clip->hasInput(3));
}

TEST(OnnxSchemaTest, VariadicInputsAreUnbounded) {
  for (const char *name : {"Concat", "Sum", "Max"}) {
    const OnnxOp *op = index().find(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_FALSE(op->maxInputs.has_value()) << name;
    EXPECT_TRUE(op->hasInput(1000)) << name;
    EXPECT_FALSE(op->hasInput(-1)) << name;
    EXPECT_EQ(op->latest().inputs.back().option, OnnxInput::Option::Variadic);
  }
}

TEST(OnnxSchemaTest, AttributeWhoseTypeChanged) {
  // Cast-1 took `to` as a STRING, later versions as an INT.
  const OnnxOp *cast = index().find("Cast");
  ASSERT_NE(cast, nullptr);
  const OnnxAttrUnion *to = cast->findAttr("to");
  ASSERT_NE(to, nullptr);
  EXPECT_TRUE(to->hasType(OnnxAttrType::Int));
  EXPECT_TRUE(to->hasType(OnnxAttrType::String));
  EXPECT_EQ(to->latest->type, OnnxAttrType::Int);
  EXPECT_TRUE(to->latest->required);
  EXPECT_FALSE(to->latest->defaultValue);
}

TEST(OnnxSchemaTest, ListDefaults) {
  const OnnxOp *mvn = index().find("MeanVarianceNormalization");
  ASSERT_NE(mvn, nullptr);
  const OnnxAttrUnion *axes = mvn->findAttr("axes");
  ASSERT_NE(axes, nullptr);
  ASSERT_TRUE(axes->latest->defaultValue);
  EXPECT_EQ(axes->latest->defaultValue->type, OnnxAttrType::Ints);
  EXPECT_EQ(axes->latest->defaultValue->ints, (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(axes->latest->defaultValue->str(), "[0, 2, 3]");

  const OnnxOp *rnn = index().find("RNN");
  ASSERT_NE(rnn, nullptr);
  const OnnxAttrUnion *acts = rnn->findAttr("activations");
  ASSERT_NE(acts, nullptr);
  ASSERT_TRUE(acts->latest->defaultValue);
  EXPECT_EQ(acts->latest->defaultValue->type, OnnxAttrType::Strings);
  EXPECT_EQ(acts->latest->defaultValue->str(), "[\"Tanh\", \"Tanh\"]");
}

TEST(OnnxSchemaTest, TensorAndGraphAttributes) {
  const OnnxOp *constant = index().find("Constant");
  ASSERT_NE(constant, nullptr);
  const OnnxAttrUnion *value = constant->findAttr("value");
  ASSERT_NE(value, nullptr);
  EXPECT_EQ(value->types, std::vector<OnnxAttrType>{OnnxAttrType::Tensor});
  EXPECT_EQ(constant->maxInputs, std::optional<unsigned>(0));
  EXPECT_FALSE(constant->hasInput(0));

  const OnnxOp *ifOp = index().find("If");
  ASSERT_NE(ifOp, nullptr);
  ASSERT_NE(ifOp->findAttr("then_branch"), nullptr);
  EXPECT_EQ(ifOp->findAttr("then_branch")->types.front(), OnnxAttrType::Graph);
}

TEST(OnnxSchemaTest, UnknownOps) {
  EXPECT_EQ(index().find("Convolution"), nullptr);
  EXPECT_EQ(index().find("conv"), nullptr); // names are case-sensitive
  EXPECT_EQ(index().find(""), nullptr);
  EXPECT_FALSE(index().contains("NotAnOp"));
  EXPECT_TRUE(index().contains("Relu"));
  // Training ops (ai.onnx.preview.training) are not indexed.
  EXPECT_FALSE(index().contains("Adam"));
}

TEST(OnnxSchemaTest, MlDomainOps) {
  const OnnxOp *scaler = index().find("Scaler");
  ASSERT_NE(scaler, nullptr);
  EXPECT_EQ(scaler->domain, "ai.onnx.ml");
}

TEST(OnnxSchemaTest, OpNamesAreSortedAndComplete) {
  const std::vector<std::string> &names = index().opNames();
  EXPECT_EQ(names.size(), index().size());
  EXPECT_GT(names.size(), 150u);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_TRUE(std::adjacent_find(names.begin(), names.end()) == names.end());
  for (const char *name :
       {"Conv", "Gemm", "MatMul", "Relu", "HardSwish", "QuantizeLinear", "Softmax"})
    EXPECT_TRUE(std::binary_search(names.begin(), names.end(), name)) << name;
}

TEST(OnnxSchemaTest, DidYouMeanCandidates) {
  const std::vector<std::string> &names = index().opNames();
  EXPECT_EQ(findClosest("Cnv", names), "Conv");
  EXPECT_EQ(findClosest("conv", names), "Conv");
  EXPECT_EQ(findClosest("Relu6", names), "Relu");
  EXPECT_EQ(findClosest("HardSwsh", names), "HardSwish");
  EXPECT_EQ(findClosest("MatMull", names), "MatMul");
  EXPECT_EQ(findClosest("Xyzzy", names), "");
  EXPECT_EQ(didYouMean("Gem", names), "; did you mean `Gemm`?");

  const OnnxOp *conv = index().find("Conv");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(findClosest("grop", conv->attributeNames()), "group");
  EXPECT_EQ(findClosest("kernel_shap", conv->attributeNames()), "kernel_shape");
}

TEST(OnnxSchemaTest, AttrTypeHelpers) {
  EXPECT_STREQ(toString(OnnxAttrType::Int), "INT");
  EXPECT_STREQ(toString(OnnxAttrType::Strings), "STRINGS");
  EXPECT_STREQ(describe(OnnxAttrType::Ints), "a list of integers");
  EXPECT_TRUE(isListType(OnnxAttrType::Floats));
  EXPECT_FALSE(isListType(OnnxAttrType::Tensor));
  EXPECT_EQ(elementType(OnnxAttrType::Ints), OnnxAttrType::Int);
  EXPECT_EQ(elementType(OnnxAttrType::Int), OnnxAttrType::Int);
  OnnxAttrValue v;
  v.type = OnnxAttrType::Floats;
  v.floats = {0.5, 2};
  EXPECT_EQ(v.str(), "[0.5, 2.0]");
  v.type = OnnxAttrType::String;
  v.s = "a\"b";
  EXPECT_EQ(v.str(), "\"a\\\"b\"");
}

TEST(OnnxSchemaTest, SameIndexFromManyThreads) {
  std::vector<const OnnxSchemaIndex *> seen(8);
  std::vector<std::thread> threads;
  for (size_t k = 0; k < seen.size(); ++k)
    threads.emplace_back([&seen, k] { seen[k] = &OnnxSchemaIndex::get(); });
  for (std::thread &t : threads)
    t.join();
  for (const OnnxSchemaIndex *p : seen)
    EXPECT_EQ(p, &OnnxSchemaIndex::get());
}

// Constant operands (plan/ConstantOperands.h) are the inputs a schema
// marks differentiable: data, not parameters.
TEST(OnnxSchemaTest, DifferentiableInputs) {
  const auto &idx = ir::OnnxSchemaIndex::get();
  auto diff = [&](const char *op, int64_t i) {
    const ir::OnnxOpVersion *v = idx.find(op)->atOpset(13);
    const ir::OnnxInput *in = v ? v->inputAt(i) : nullptr;
    return in && in->differentiable;
  };
  EXPECT_TRUE(diff("Add", 1));
  EXPECT_TRUE(diff("Mul", 0));
  EXPECT_TRUE(diff("Concat", 3)); // variadic: every input is the last formal one
  EXPECT_TRUE(diff("Gather", 0));
  EXPECT_FALSE(diff("Gather", 1));
  EXPECT_FALSE(diff("Clip", 1));
  EXPECT_FALSE(diff("Clip", 2));
  EXPECT_FALSE(diff("Resize", 2));
  EXPECT_FALSE(diff("Pad", 2));
  EXPECT_FALSE(diff("Reshape", 1));
  EXPECT_FALSE(diff("Add", 2)); // no such input
}

TEST(ConstantOperandsTest, ChannelAxis) {
  using plan::constantChannelAxis;
  EXPECT_EQ(constantChannelAxis({4, 1, 1}, 4), 0); // the one long axis
  EXPECT_EQ(constantChannelAxis({1, 4, 1, 1}, 4), 1);
  EXPECT_EQ(constantChannelAxis({1, 2, 8, 8}, 4), 1); // lined up with the output's 1
  EXPECT_EQ(constantChannelAxis({2, 8, 8}, 4), 0);
  EXPECT_EQ(constantChannelAxis({8, 8}, 4), std::nullopt); // lines up with axis 2, 3
  EXPECT_EQ(constantChannelAxis({}, 4), std::nullopt);     // a scalar: per tensor
  EXPECT_EQ(constantChannelAxis({3, 5}, std::nullopt), std::nullopt);
  EXPECT_EQ(constantChannelAxis({96}, 3), 0); // a transformer's [N, T, C]
}

} // namespace

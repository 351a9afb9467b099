//===- JSONBackendTest.cpp - The canonical JSON of the typed IR -----------===//
//
// Builds an ir::Module by hand, emits it, parses it back with llvm::json and
// checks the shape field by field, then the canonical form: determinism,
// sorted keys, 2-space indentation, a trailing newline, "inf" strings and
// round-tripping doubles.
//
//===----------------------------------------------------------------------===//
#include "backends/Backends.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <limits>

using namespace tpcc;
namespace json = llvm::json;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

ir::OpConfig makeConfig(std::string name, int wbits) {
  ir::OpConfig c;
  c.name = std::move(name);
  c.activation.bits = 8;
  c.inputBits = {8};
  c.weights.bits = 32;
  ir::AttrConfig kernel;
  kernel.method = ir::QuantMethod::Symmetric;
  kernel.bits = wbits;
  kernel.perChannel = true;
  kernel.quantize = true;
  c.slots["kernel"] = kernel;
  c.slots["bias"] = ir::AttrConfig();
  return c;
}

ir::Predicate eqPred(std::string attr, int64_t v) {
  ir::Predicate p;
  p.kind = ir::Predicate::Kind::Cmp;
  p.lhs.kind = ir::Operand::Kind::Attr;
  p.lhs.attr = std::move(attr);
  p.op = ir::CmpOp::Eq;
  p.rhs.kind = ir::Operand::Kind::Literal;
  p.rhs.literal.kind = ir::Literal::Kind::Int;
  p.rhs.literal.i = v;
  return p;
}

/// A module with one of everything, including the awkward cases (absent
/// optionals, infinities, escapes, LUT bits, non-trivial doubles).
ir::Module makeModule() {
  ir::Module m;

  ir::Platform p;
  p.name = "imx500";
  p.type = "imx500";
  p.version = ir::Version{1, 0};
  p.simdPadding = true;
  ir::OpConfig a8;
  a8.name = "a8";
  a8.inputBits = {8};
  p.defaultOptions.configs = {a8};
  ir::Opset conv;
  conv.name = "Conv";
  conv.options.emplace();
  conv.options->configs = {makeConfig("linear8", 8), makeConfig("linear4", 4)};
  conv.options->configs[1].simd = 64;
  conv.options->base = 1;
  ir::Opset relu;
  relu.name = "AnyReLU";
  ir::Opset soft;
  soft.name = "Softmax";
  soft.options.emplace();
  ir::OpConfig inlineCfg;
  inlineCfg.activation.bits = 16;
  inlineCfg.activation.signedness = ir::Signedness::Unsigned;
  inlineCfg.activation.method = ir::QuantMethod::Uniform;
  inlineCfg.inputBits = {8, 16};
  inlineCfg.preserving = true;
  inlineCfg.fixedScale = 1.0 / 256;
  inlineCfg.fixedZeroPoint = -128;
  inlineCfg.weights.method = ir::QuantMethod::LutPot;
  inlineCfg.weights.bits = 4;
  inlineCfg.weights.lutBits = 8;
  inlineCfg.weights.quantize = true;
  soft.options->configs = {inlineCfg};
  p.opsets = {conv, relu, soft};
  ir::Fusing f1;
  f1.pattern = {{"Conv"}, {"AnyReLU", "Softmax"}};
  ir::Fusing f2;
  f2.name = "conv_relu";
  f2.pattern = {{"Conv"}, {"AnyReLU"}};
  p.fusings = {f1, f2};
  m.platforms.push_back(p);

  ir::Platform child;
  child.name = "my_chip";
  child.parent = "imx500";
  child.type = "type with \"quotes\", \\ and \b\f\n\t\x01 and é";
  child.defaultOptions.configs = {a8};
  m.platforms.push_back(child);

  ir::Framework fw;
  fw.name = "onnx";
  ir::WeightSlot w1;
  w1.slot = "kernel";
  w1.op = "Gemm";
  w1.input = 1;
  w1.where = eqPred("transB", 1);
  w1.outAxis = 0;
  w1.inAxis = 1;
  ir::WeightSlot w2;
  w2.slot = "bias";
  w2.op = "Conv";
  w2.input = 2;
  ir::WeightSlot w3;
  w3.slot = "kernel";
  w3.op = "MatMul";
  w3.input = 1;
  w3.outAxis = -1;
  fw.weights = {w1, w2, w3};
  fw.activationOps = {"Relu", "Sigmoid"};
  fw.noQuantizeOps = {"Shape"};
  fw.ranges = {{"Sigmoid", 0, 1, {}}, {"Relu", 0, kInf, {}}, {"Tanh", -kInf, 0.5, {}}};
  m.frameworks.push_back(fw);

  ir::Capabilities caps;
  caps.name = "imx500_onnx";
  caps.platform = "imx500";
  caps.framework = "onnx";
  ir::OpBinding b1;
  b1.opset = "Conv";
  b1.op = "Conv";
  ir::OpBinding b2;
  b2.opset = "AnyReLU";
  b2.op = "Clip";
  ir::Predicate orP;
  orP.kind = ir::Predicate::Kind::Or;
  orP.children = {eqPred("a", 1), eqPred("b", 2)};
  ir::Predicate andP;
  andP.kind = ir::Predicate::Kind::And;
  andP.children = {eqPred("group", 1), orP};
  b2.where = andP;
  caps.bindings = {b1, b2};
  m.capabilities.push_back(caps);

  ir::Recipe def;
  def.name = "default_recipe";
  m.recipes.push_back(def);
  ir::Recipe careful;
  careful.name = "careful";
  careful.parent = "default_recipe";
  careful.activationThreshold = ir::ThresholdMethod::KL;
  careful.weightsThreshold = ir::ThresholdMethod::NoClipping;
  careful.lp = 2.5;
  careful.shiftNegative.enabled = true;
  careful.shiftNegative.ratio = 0.1;
  careful.zThreshold = 3.0;
  careful.minThreshold = 1e-5;
  careful.activationBits = 16;
  careful.weightsMethod = ir::QuantMethod::Symmetric;
  careful.perChannel = false;
  careful.quantizeWeights = true;
  m.recipes.push_back(careful);
  return m;
}

std::string emit(const ir::Module &m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  emitJSON(m, os);
  return os.str();
}

json::Value parse(const std::string &text) {
  auto v = json::parse(text);
  if (!v) {
    ADD_FAILURE() << llvm::toString(v.takeError());
    return nullptr;
  }
  return std::move(*v);
}

/// Follows `path` (object keys and array indices) from `v`.
const json::Value *at(const json::Value &v,
                      std::initializer_list<std::variant<const char *, int>> path) {
  const json::Value *cur = &v;
  for (const auto &step : path) {
    if (!cur)
      return nullptr;
    if (std::holds_alternative<int>(step)) {
      const json::Array *a = cur->getAsArray();
      int i = std::get<int>(step);
      cur = a && i < static_cast<int>(a->size()) ? &(*a)[i] : nullptr;
    } else {
      const json::Object *o = cur->getAsObject();
      cur = o ? o->get(std::get<const char *>(step)) : nullptr;
    }
  }
  return cur;
}

/// The keys of an object, as a sorted list for comparisons.
std::vector<std::string> keys(const json::Value *v) {
  std::vector<std::string> out;
  if (const json::Object *o = v ? v->getAsObject() : nullptr)
    for (const auto &kv : *o)
      out.push_back(kv.first.str());
  std::sort(out.begin(), out.end());
  return out;
}

#define EXPECT_JSON(V, PATH, EXPECTED)                                                             \
  do {                                                                                             \
    const json::Value *got_ = at(V, PATH);                                                         \
    ASSERT_NE(got_, nullptr) << "missing " #PATH;                                                  \
    EXPECT_EQ(*got_, json::Value(EXPECTED)) << #PATH;                                              \
  } while (0)
#define P(...) (std::initializer_list<std::variant<const char *, int>>{__VA_ARGS__})

class JSONBackend : public ::testing::Test {
protected:
  void SetUp() override {
    text = emit(makeModule());
    doc = parse(text);
  }
  std::string text;
  json::Value doc = nullptr;
};

TEST_F(JSONBackend, TopLevel) {
  EXPECT_EQ(keys(&doc), (std::vector<std::string>{"capabilities", "frameworks", "platforms",
                                                  "recipes", "tpcc_ir_version"}));
  EXPECT_JSON(doc, P("tpcc_ir_version"), 1);
}

TEST_F(JSONBackend, EmptyModule) {
  std::string t = emit(ir::Module());
  EXPECT_EQ(t, "{\n"
               "  \"capabilities\": [],\n"
               "  \"frameworks\": [],\n"
               "  \"platforms\": [],\n"
               "  \"recipes\": [],\n"
               "  \"tpcc_ir_version\": 1\n"
               "}\n");
}

TEST_F(JSONBackend, Platform) {
  EXPECT_EQ(keys(at(doc, P("platforms", 0))),
            (std::vector<std::string>{"default", "fusings", "insert_preserving_quantizers",
                                      "metadata", "name", "opsets", "parent", "recipe",
                                      "simd_padding", "type", "version"}));
  EXPECT_JSON(doc, P("platforms", 0, "name"), "imx500");
  EXPECT_JSON(doc, P("platforms", 0, "version"), "1.0");
  EXPECT_JSON(doc, P("platforms", 0, "type"), "imx500");
  EXPECT_JSON(doc, P("platforms", 0, "parent"), nullptr);
  EXPECT_JSON(doc, P("platforms", 0, "simd_padding"), true);
  EXPECT_JSON(doc, P("platforms", 0, "metadata"), false);
  EXPECT_JSON(doc, P("platforms", 1, "version"), nullptr);
  EXPECT_JSON(doc, P("platforms", 1, "parent"), "imx500");
  EXPECT_JSON(doc, P("platforms", 1, "type"), "type with \"quotes\", \\ and \b\f\n\t\x01 and é");
}

TEST_F(JSONBackend, OptionsAndConfigs) {
  EXPECT_JSON(doc, P("platforms", 0, "default", "base"), 0);
  const json::Value *cfg = at(doc, P("platforms", 0, "default", "configs", 0));
  EXPECT_EQ(keys(cfg),
            (std::vector<std::string>{"activation", "fixed_scale", "fixed_zero_point", "input_bits",
                                      "name", "preserving", "simd", "weights"}));
  EXPECT_JSON(*cfg, P("name"), "a8");
  EXPECT_EQ(keys(at(*cfg, P("activation"))),
            (std::vector<std::string>{"bits", "method", "quantize", "signedness"}));
  EXPECT_JSON(*cfg, P("activation", "method"), "power_of_two");
  EXPECT_JSON(*cfg, P("activation", "bits"), 8);
  EXPECT_JSON(*cfg, P("activation", "quantize"), true);
  EXPECT_JSON(*cfg, P("activation", "signedness"), "auto");
  EXPECT_JSON(*cfg, P("input_bits"), json::Array{8});
  EXPECT_JSON(*cfg, P("preserving"), false);
  EXPECT_JSON(*cfg, P("fixed_scale"), nullptr);
  EXPECT_JSON(*cfg, P("fixed_zero_point"), nullptr);
  EXPECT_JSON(*cfg, P("simd"), 32);
  EXPECT_EQ(keys(at(*cfg, P("weights"))), (std::vector<std::string>{"default", "slots"}));
  EXPECT_EQ(keys(at(*cfg, P("weights", "default"))),
            (std::vector<std::string>{"bits", "lut_bits", "method", "per_channel", "quantize"}));
  EXPECT_JSON(*cfg, P("weights", "default", "bits"), 32);
  EXPECT_JSON(*cfg, P("weights", "default", "lut_bits"), nullptr);
  EXPECT_JSON(*cfg, P("weights", "slots"), json::Object{});

  // Opsets, in order, with their options or null.
  EXPECT_JSON(doc, P("platforms", 0, "opsets", 0, "name"), "Conv");
  EXPECT_JSON(doc, P("platforms", 0, "opsets", 1, "name"), "AnyReLU");
  EXPECT_JSON(doc, P("platforms", 0, "opsets", 1, "options"), nullptr);
  const json::Value *conv = at(doc, P("platforms", 0, "opsets", 0, "options"));
  EXPECT_JSON(*conv, P("base"), 1);
  EXPECT_JSON(*conv, P("configs", 0, "name"), "linear8");
  EXPECT_JSON(*conv, P("configs", 1, "name"), "linear4");
  EXPECT_JSON(*conv, P("configs", 1, "simd"), 64);
  EXPECT_JSON(*conv, P("configs", 1, "weights", "slots", "kernel", "bits"), 4);
  EXPECT_JSON(*conv, P("configs", 1, "weights", "slots", "kernel", "method"), "symmetric");
  EXPECT_JSON(*conv, P("configs", 1, "weights", "slots", "kernel", "per_channel"), true);
  EXPECT_JSON(*conv, P("configs", 1, "weights", "slots", "bias", "quantize"), false);

  // The inline config: no name, every non-default field.
  const json::Value *inl = at(doc, P("platforms", 0, "opsets", 2, "options", "configs", 0));
  EXPECT_JSON(*inl, P("name"), nullptr);
  EXPECT_JSON(*inl, P("activation", "bits"), 16);
  EXPECT_JSON(*inl, P("activation", "method"), "uniform");
  EXPECT_JSON(*inl, P("activation", "signedness"), "unsigned");
  EXPECT_JSON(*inl, P("input_bits"), (json::Array{8, 16}));
  EXPECT_JSON(*inl, P("preserving"), true);
  EXPECT_JSON(*inl, P("fixed_scale"), 1.0 / 256);
  EXPECT_JSON(*inl, P("fixed_zero_point"), -128);
  EXPECT_JSON(*inl, P("weights", "default", "method"), "lut_pot");
  EXPECT_JSON(*inl, P("weights", "default", "lut_bits"), 8);
}

TEST_F(JSONBackend, Fusings) {
  const json::Value *f = at(doc, P("platforms", 0, "fusings"));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->getAsArray()->size(), 2u);
  EXPECT_JSON(*f, P(0, "name"), nullptr);
  EXPECT_JSON(*f, P(0, "pattern"),
              (json::Array{json::Array{"Conv"}, json::Array{"AnyReLU", "Softmax"}}));
  EXPECT_JSON(*f, P(1, "name"), "conv_relu");
}

TEST_F(JSONBackend, Framework) {
  const json::Value *fw = at(doc, P("frameworks", 0));
  EXPECT_EQ(keys(fw), (std::vector<std::string>{"activation", "composites", "name", "no_quantize",
                                                "ranges", "weights"}));
  EXPECT_JSON(*fw, P("name"), "onnx");
  EXPECT_EQ(keys(at(*fw, P("weights", 0))),
            (std::vector<std::string>{"axes", "input", "op", "slot", "where"}));
  EXPECT_JSON(*fw, P("weights", 0, "slot"), "kernel");
  EXPECT_JSON(*fw, P("weights", 0, "op"), "Gemm");
  EXPECT_JSON(*fw, P("weights", 0, "input"), 1);
  EXPECT_JSON(*fw, P("weights", 0, "where"), "transB == 1");
  EXPECT_JSON(*fw, P("weights", 0, "axes"), (json::Object{{"out", 0}, {"in", 1}}));
  EXPECT_JSON(*fw, P("weights", 1, "where"), nullptr);
  EXPECT_JSON(*fw, P("weights", 1, "axes"), nullptr);
  EXPECT_JSON(*fw, P("weights", 2, "axes"), (json::Object{{"out", -1}, {"in", nullptr}}));
  EXPECT_JSON(*fw, P("activation"), (json::Array{"Relu", "Sigmoid"}));
  EXPECT_JSON(*fw, P("no_quantize"), json::Array{"Shape"});
  EXPECT_JSON(*fw, P("ranges", 0), (json::Object{{"op", "Sigmoid"}, {"min", 0}, {"max", 1}}));
  EXPECT_JSON(*fw, P("ranges", 1, "max"), "inf");
  EXPECT_JSON(*fw, P("ranges", 2, "min"), "-inf");
  EXPECT_JSON(*fw, P("ranges", 2, "max"), 0.5);
}

TEST_F(JSONBackend, Capabilities) {
  const json::Value *c = at(doc, P("capabilities", 0));
  EXPECT_EQ(keys(c),
            (std::vector<std::string>{"bindings", "framework", "name", "platform", "unbound"}));
  EXPECT_JSON(*c, P("name"), "imx500_onnx");
  EXPECT_JSON(*c, P("platform"), "imx500");
  EXPECT_JSON(*c, P("framework"), "onnx");
  EXPECT_JSON(
      *c, P("bindings", 0),
      (json::Object{{"opset", "Conv"}, {"op", "Conv"}, {"composite", false}, {"where", nullptr}}));
  EXPECT_JSON(*c, P("bindings", 1, "where"), "group == 1 and (a == 1 or b == 2)");
}

TEST_F(JSONBackend, Recipes) {
  const json::Value *def = at(doc, P("recipes", 0));
  EXPECT_EQ(keys(def),
            (std::vector<std::string>{"activation_channel_equalization", "activation_threshold",
                                      "awq", "bias_correction", "finetune", "gptq", "input_scaling",
                                      "lp", "min_threshold", "mixed_precision", "name", "overrides",
                                      "parent", "relu_unbound_correction", "shift_negative",
                                      "smooth_quant", "weights_threshold", "z_threshold"}));
  EXPECT_JSON(*def, P("name"), "default_recipe");
  EXPECT_JSON(*def, P("parent"), nullptr);
  EXPECT_JSON(*def, P("activation_threshold"), "mse");
  EXPECT_JSON(*def, P("weights_threshold"), "mse");
  EXPECT_JSON(*def, P("lp"), 2);
  EXPECT_JSON(*def, P("bias_correction"), true);
  EXPECT_JSON(*def, P("shift_negative"),
              (json::Object{{"enabled", false}, {"ratio", 0.25}, {"recompute_threshold", false}}));
  EXPECT_JSON(*def, P("relu_unbound_correction"), false);
  EXPECT_JSON(*def, P("activation_channel_equalization"), false);
  EXPECT_JSON(*def, P("input_scaling"), false);
  EXPECT_JSON(*def, P("z_threshold"), "inf");
  EXPECT_JSON(*def, P("min_threshold"), 1.0 / 65536);
  EXPECT_JSON(*def, P("overrides"),
              (json::Object{{"activation_bits", nullptr},
                            {"weights_bits", nullptr},
                            {"activation_method", nullptr},
                            {"weights_method", nullptr},
                            {"per_channel", nullptr},
                            {"quantize_activations", nullptr},
                            {"quantize_weights", nullptr}}));
  EXPECT_JSON(*def, P("mixed_precision"),
              (json::Object{{"enabled", false},
                            {"weights_memory", nullptr},
                            {"activation_memory", nullptr},
                            {"total_memory", nullptr},
                            {"bops", nullptr},
                            {"images", 32},
                            {"distance", "avg"},
                            {"refine", true},
                            {"time_limit", 60},
                            {"verify", 8}}));
  EXPECT_JSON(*def, P("finetune"),
              (json::Object{{"epochs", 1},
                            {"batch", 32},
                            {"lr", 1e-4},
                            {"weight_decay", 1e-4},
                            {"quantizer", "ste"},
                            {"seed", 0}}));
  EXPECT_JSON(*def, P("gptq"),
              (json::Object{{"method", nullptr},
                            {"dampening", 0.01},
                            {"act_order", false},
                            {"epochs", nullptr},
                            {"lr", 0.03},
                            {"bias_lr", 1e-4},
                            {"hessian_weights", true},
                            {"regularization", nullptr},
                            {"per_sample_loss", false},
                            {"gradual_activation", false}}));

  const json::Value *c = at(doc, P("recipes", 1));
  EXPECT_JSON(*c, P("parent"), "default_recipe");
  EXPECT_JSON(*c, P("activation_threshold"), "kl");
  EXPECT_JSON(*c, P("weights_threshold"), "no_clipping");
  EXPECT_JSON(*c, P("lp"), 2.5);
  EXPECT_JSON(*c, P("shift_negative", "enabled"), true);
  EXPECT_JSON(*c, P("shift_negative", "ratio"), 0.1);
  EXPECT_JSON(*c, P("z_threshold"), 3);
  EXPECT_JSON(*c, P("min_threshold"), 1e-5);
  EXPECT_JSON(*c, P("overrides", "activation_bits"), 16);
  EXPECT_JSON(*c, P("overrides", "weights_bits"), nullptr);
  EXPECT_JSON(*c, P("overrides", "activation_method"), nullptr);
  EXPECT_JSON(*c, P("overrides", "weights_method"), "symmetric");
  EXPECT_JSON(*c, P("overrides", "per_channel"), false);
  EXPECT_JSON(*c, P("overrides", "quantize_activations"), nullptr);
  EXPECT_JSON(*c, P("overrides", "quantize_weights"), true);
}

// Budgets and a platform's memory: `resources` only when declared.
TEST_F(JSONBackend, BudgetsAndResources) {
  EXPECT_EQ(at(doc, P("platforms", 0, "resources")), nullptr);
  ir::Module m = makeModule();
  ir::Budget weights{false, 41984, "41 KiB", {}};
  m.platforms[0].resources.emplace();
  m.platforms[0].resources->weightsMemory = weights;
  ir::MixedPrecision &mp = m.recipes[0].mixedPrecision;
  mp.enabled = true;
  mp.weightsMemory = ir::Budget{true, 0.75, "75%", {}};
  mp.bops = ir::Budget{false, 1.2e9, "1.2 G", {}};
  mp.images = 8;
  mp.distance = ir::MixedDistance::LastLayer;
  mp.refine = false;
  mp.timeLimit = 2.5;
  mp.verify = 3;
  json::Value d = parse(emit(m));
  EXPECT_JSON(d, P("platforms", 0, "resources"),
              (json::Object{{"weights_memory", 41984},
                            {"activation_memory", nullptr},
                            {"total_memory", nullptr}}));
  EXPECT_JSON(d, P("recipes", 0, "mixed_precision"),
              (json::Object{{"enabled", true},
                            {"weights_memory", json::Object{{"relative", true}, {"value", 0.75}}},
                            {"activation_memory", nullptr},
                            {"total_memory", nullptr},
                            {"bops", json::Object{{"relative", false}, {"value", 1200000000}}},
                            {"images", 8},
                            {"distance", "last_layer"},
                            {"refine", false},
                            {"time_limit", 2.5},
                            {"verify", 3}}));
}

//===----------------------------------------------------------------------===//
// Canonical form
//===----------------------------------------------------------------------===//

TEST_F(JSONBackend, Deterministic) {
  EXPECT_EQ(emit(makeModule()), text);
  EXPECT_EQ(emit(makeModule()), emit(makeModule()));
}

TEST_F(JSONBackend, PrettyPrinted) {
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.front(), '{');
  EXPECT_EQ(text.substr(text.size() - 2), "}\n");
  EXPECT_EQ(text.substr(0, 20), "{\n  \"capabilities\": ");
  // Every line is indented by a multiple of two spaces, no tabs, no trailing
  // blanks.
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end - start);
    size_t indent = line.find_first_not_of(' ');
    EXPECT_EQ(indent % 2, 0u) << line;
    EXPECT_EQ(line.find('\t'), std::string::npos) << line;
    EXPECT_NE(line.back(), ' ') << line;
    start = end + 1;
  }
  EXPECT_NE(text.find("\n        \"configs\": [\n"), std::string::npos);
}

/// Scans the text and checks that, in every object, each key sorts after the
/// previous one (llvm::json::Object forgets the order, so look at the bytes).
TEST_F(JSONBackend, KeysSorted) {
  struct Level {
    bool isObject;
    std::string lastKey;
    bool expectKey;
  };
  std::vector<Level> stack;
  size_t checked = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      std::string s;
      for (++i; text[i] != '"'; ++i) {
        if (text[i] == '\\')
          s += text[i++];
        s += text[i];
      }
      if (!stack.empty() && stack.back().isObject && stack.back().expectKey) {
        EXPECT_LT(stack.back().lastKey, s) << "key out of order at " << i;
        stack.back().lastKey = s;
        stack.back().expectKey = false;
        ++checked;
      }
    } else if (c == '{' || c == '[') {
      stack.push_back({c == '{', "", c == '{'});
    } else if (c == '}' || c == ']') {
      stack.pop_back();
    } else if (c == ',' && !stack.empty() && stack.back().isObject) {
      stack.back().expectKey = true;
    }
  }
  EXPECT_TRUE(stack.empty());
  EXPECT_GT(checked, 100u);
}

TEST_F(JSONBackend, InfinityAsString) {
  EXPECT_EQ(text.find("Infinity"), std::string::npos);
  EXPECT_EQ(text.find("inf\n"), std::string::npos); // never a bare token
  EXPECT_NE(text.find("\"z_threshold\": \"inf\""), std::string::npos);
  EXPECT_NE(text.find("\"min\": \"-inf\""), std::string::npos);
}

TEST_F(JSONBackend, NumberSpelling) {
  // Integral values as integers, other doubles shortest and round-tripping.
  EXPECT_NE(text.find("\"lp\": 2,"), std::string::npos);
  EXPECT_NE(text.find("\"lp\": 2.5,"), std::string::npos);
  EXPECT_NE(text.find("\"ratio\": 0.1,"), std::string::npos);
  EXPECT_NE(text.find("\"min_threshold\": 1e-05,"), std::string::npos);
  EXPECT_NE(text.find("\"min_threshold\": 1.52587890625e-05,"), std::string::npos);
  EXPECT_NE(text.find("\"fixed_scale\": 0.00390625,"), std::string::npos);
}

TEST_F(JSONBackend, StringEscapes) {
  EXPECT_NE(text.find("\"type\": \"type with \\\"quotes\\\", \\\\ and "
                      "\\b\\f\\n\\t\\u0001 and é\""),
            std::string::npos);
}

TEST(JSONBackendDoubles, RoundTrip) {
  const double values[] = {0.1,  1.0 / 3, 2.0 / 3, 1e-300, 1e300, 5e-324,   123.456,
                           1e16, 1e22,    -7.25,   0.3,    1e-7,  4.35e-05, 1e21};
  for (double d : values) {
    ir::Module m;
    ir::Recipe r;
    r.name = "r";
    r.lp = d;
    m.recipes.push_back(r);
    json::Value v = parse(emit(m));
    const json::Value *lp = at(v, P("recipes", 0, "lp"));
    ASSERT_NE(lp, nullptr);
    ASSERT_TRUE(lp->getAsNumber().hasValue());
    EXPECT_EQ(*lp->getAsNumber(), d);
  }
}

TEST(JSONBackendStrings, InvalidUTF8IsReplaced) {
  ir::Module m;
  ir::Platform p;
  p.name = "bad\xff";
  p.type = "t";
  m.platforms.push_back(p);
  std::string t = emit(m);
  EXPECT_TRUE(json::isUTF8(t));
  EXPECT_TRUE(static_cast<bool>(json::parse(t)));
}

} // namespace

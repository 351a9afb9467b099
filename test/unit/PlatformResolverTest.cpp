//===- PlatformResolverTest.cpp - Tests of platform and recipe resolution -===//
//
// buildModule on small sources: `with` chains and field blocks, defaults,
// options, groups and fusing patterns, `extends` / `override` / late binding
// / `remove fuse`, Rules 1-11 and 15 (each diagnostic with its location),
// and recipes. Diagnostics are compared as "LINE:COL kind" strings, notes
// as "  note LINE:COL kind".
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <memory>

using namespace tpcc;

namespace {

using Strings = std::vector<std::string>;

class PlatformResolverTest : public ::testing::Test {
protected:
  /// Parses each (name, text) file in order (as if each imported the ones
  /// before it) and builds the module.
  void compileFiles(const std::vector<std::pair<std::string, std::string>> &files) {
    c = std::make_unique<Compilation>();
    for (const auto &[name, text] : files) {
      ast::File *f = parseBuffer(*c, name, text);
      c->files.push_back(f);
    }
    ASSERT_FALSE(c->diags.hasErrors()) << "the test input does not parse:\n" << printed();
    m = buildModule(*c);
  }
  void compile(const std::string &text) { compileFiles({{"test.tpc", text}}); }

  /// The diagnostics as "LINE:COL kind" (notes indented, "  note LINE:COL
  /// kind").
  Strings diags() const {
    Strings out;
    for (const Diagnostic &d : c->diags.getDiagnostics()) {
      out.push_back(where(d) + " " + getKindName(d.kind).str());
      for (const Diagnostic &n : d.notes)
        out.push_back("  note " + where(n) + " " + getKindName(n.kind).str());
    }
    return out;
  }
  /// The messages only.
  Strings messages() const {
    Strings out;
    for (const Diagnostic &d : c->diags.getDiagnostics())
      out.push_back(d.message);
    return out;
  }
  std::string where(const Diagnostic &d) const {
    LineCol lc = c->sources.getLineCol(d.range.begin);
    return std::to_string(lc.line) + ":" + std::to_string(lc.col);
  }
  std::string printed() const {
    std::string s;
    llvm::raw_string_ostream os(s);
    for (const Diagnostic &d : c->diags.getDiagnostics())
      c->diags.printOne(os, d, false);
    return os.str();
  }

  const ir::Platform &platform(llvm::StringRef name) {
    const ir::Platform *p = m.findPlatform(name);
    if (!p) {
      ADD_FAILURE() << "no platform " << name.str();
      static ir::Platform empty;
      return empty;
    }
    return *p;
  }
  const ir::Opset &opset(llvm::StringRef p, llvm::StringRef name) {
    const ir::Opset *o = platform(p).findOpset(name);
    if (!o) {
      ADD_FAILURE() << "no opset " << name.str();
      static ir::Opset empty;
      return empty;
    }
    return *o;
  }
  /// The base config of an opset with options.
  const ir::OpConfig &baseOf(llvm::StringRef p, llvm::StringRef name) {
    const ir::Opset &o = opset(p, name);
    if (!o.options || o.options->configs.empty()) {
      ADD_FAILURE() << "opset " << name.str() << " has no options";
      static ir::OpConfig empty;
      return empty;
    }
    return o.options->baseConfig();
  }

  void TearDown() override {
    if (HasFailure() && c)
      std::cerr << printed();
  }

  std::unique_ptr<Compilation> c;
  ir::Module m;
};

const char *imx500 = R"(platform imx500 {
  version 1.0
  type "imx500"
  simd_padding true
  metadata true

  attr kernel8 = { method: symmetric, bits: 8, per_channel: true }
  attr float32 = { quantize: false, bits: 32 }

  config a8 = {
    activation: { method: power_of_two, bits: 8, signedness: auto }
    input_bits: [8]
    weights: float32
    simd: 32
  }
  config linear8 = a8 with { weights.kernel: kernel8, weights.bias: float32 }
  config linear4 = linear8 with { weights.kernel.bits: 4, simd: 64 }
  config linear2 = linear8 with { weights.kernel.bits: 2, simd: 128 }
  config no_quant = a8 with { activation.quantize: false, weights.quantize: false }

  options linear = [linear8, linear4, linear2] base linear8
  default [a8]

  opset NoQuantization : [no_quant]
  opset Conv, FullyConnected : linear
  opset AnyReLU, Add, Sub, Mul, Div, PReLU, Swish, Sigmoid, Tanh

  group ConvActs = AnyReLU | Swish | PReLU | Sigmoid | Tanh
  fuse Conv -> ConvActs
  fuse FullyConnected -> (AnyReLU | Swish | Sigmoid)
  fuse (Add | Sub | Mul | Div) -> AnyReLU
}
)";

//===----------------------------------------------------------------------===//
// The language.md example
//===----------------------------------------------------------------------===//

TEST_F(PlatformResolverTest, Imx500ExampleResolves) {
  compile(imx500);
  EXPECT_EQ(diags(), Strings{});
  const ir::Platform &p = platform("imx500");
  ASSERT_TRUE(p.version.has_value());
  EXPECT_EQ(p.version->minor, 1);
  EXPECT_EQ(p.version->patch, 0);
  EXPECT_EQ(p.type, "imx500");
  EXPECT_TRUE(p.simdPadding);
  EXPECT_TRUE(p.metadata);
  EXPECT_FALSE(p.parent.has_value());
  ASSERT_EQ(p.defaultOptions.configs.size(), 1u);
  EXPECT_EQ(p.defaultOptions.baseConfig().name, "a8");
  EXPECT_EQ(p.opsets.size(), 12u);
  EXPECT_EQ(p.opsets[0].name, "NoQuantization");
  EXPECT_FALSE(opset("imx500", "AnyReLU").options.has_value());

  const ir::Opset &conv = opset("imx500", "Conv");
  ASSERT_TRUE(conv.options.has_value());
  ASSERT_EQ(conv.options->configs.size(), 3u);
  EXPECT_EQ(conv.options->base, 0u);
  const ir::OpConfig &l4 = conv.options->configs[1];
  EXPECT_EQ(l4.name, "linear4");
  EXPECT_EQ(l4.simd, 64);
  const ir::AttrConfig &k4 = l4.weightConfig("kernel");
  EXPECT_EQ(k4.method, ir::QuantMethod::Symmetric);
  EXPECT_EQ(k4.bits, 4);
  EXPECT_TRUE(k4.perChannel);
  EXPECT_TRUE(k4.quantize);
  EXPECT_EQ(l4.weightConfig("bias").bits, 32);
  EXPECT_FALSE(l4.weightConfig("bias").quantize);
  EXPECT_FALSE(l4.weights.quantize);
  EXPECT_EQ(l4.inputBits, std::vector<int>{8});

  const ir::OpConfig &nq = baseOf("imx500", "NoQuantization");
  EXPECT_FALSE(nq.activation.quantize);
  EXPECT_FALSE(nq.weights.quantize);
  EXPECT_TRUE(nq.slots.empty());

  ASSERT_EQ(p.fusings.size(), 3u);
  EXPECT_EQ(p.fusings[0].name, "Conv->ConvActs");
  using Pattern = std::vector<std::vector<std::string>>;
  EXPECT_EQ(p.fusings[0].pattern,
            (Pattern{{"Conv"}, {"AnyReLU", "PReLU", "Sigmoid", "Swish", "Tanh"}}));
  EXPECT_EQ(p.fusings[1].name, "FullyConnected->(AnyReLU|Swish|Sigmoid)");
  EXPECT_EQ(p.fusings[2].name, "(Add|Sub|Mul|Div)->AnyReLU");
  EXPECT_EQ(p.fusings[2].pattern, (Pattern{{"Add", "Div", "Mul", "Sub"}, {"AnyReLU"}}));
}

//===----------------------------------------------------------------------===//
// Field blocks, `with` chains, defaults
//===----------------------------------------------------------------------===//

TEST_F(PlatformResolverTest, DefaultsAreFilledAfterEdits) {
  compile(R"(platform p {
  attr plain = {}
  attr b8 = { bits: 8 }
  attr b32 = { bits: 32 }
  attr off8 = { bits: 8, quantize: false }
  attr back32 = b8 with { bits: 32 }
  config c = {}
  config a16 = { activation.bits: 16 }
  config a4 = a16 with { activation.bits: 4 }
  config fixedIn = { input_bits: 8, activation.bits: 16 }
  config w = { weights: b8, weights.kernel: plain, weights.bias: off8,
               weights.x: back32, weights.y: b32 }
  default [c]
  opset A : [a4, a16, fixedIn, w] base a4
}
)");
  EXPECT_EQ(diags(), Strings{});
  const ir::OpConfig &c0 = platform("p").defaultOptions.baseConfig();
  EXPECT_EQ(c0.activation.method, ir::QuantMethod::PowerOfTwo);
  EXPECT_EQ(c0.activation.bits, 8);
  EXPECT_TRUE(c0.activation.quantize);
  EXPECT_EQ(c0.activation.signedness, ir::Signedness::Auto);
  EXPECT_EQ(c0.inputBits, std::vector<int>{8});
  EXPECT_FALSE(c0.preserving);
  EXPECT_FALSE(c0.fixedScale.has_value());
  EXPECT_FALSE(c0.fixedZeroPoint.has_value());
  EXPECT_EQ(c0.simd, 32);
  EXPECT_EQ(c0.weights, ir::AttrConfig());
  EXPECT_FALSE(c0.weights.quantize);

  const auto &cfgs = opset("p", "A").options->configs;
  ASSERT_EQ(cfgs.size(), 4u);
  // input_bits follows activation.bits through the chain.
  EXPECT_EQ(cfgs[0].inputBits, std::vector<int>{4});
  EXPECT_EQ(cfgs[1].inputBits, std::vector<int>{16});
  EXPECT_EQ(cfgs[2].inputBits, std::vector<int>{8});
  const ir::OpConfig &w = cfgs[3];
  EXPECT_TRUE(w.weights.quantize); // bits 8 given
  EXPECT_EQ(w.weights.bits, 8);
  EXPECT_FALSE(w.weightConfig("kernel").quantize); // nothing given
  EXPECT_FALSE(w.weightConfig("bias").quantize);   // explicitly off
  // `quantize` is computed after the edit to 32 bits.
  EXPECT_FALSE(w.weightConfig("x").quantize);
  EXPECT_FALSE(w.weightConfig("y").quantize);
  EXPECT_EQ(w.weightConfig("z").bits, 8); // unnamed slots use the default
}

// Number formats (Rule 16's fields): a floating-point element sets the
// width and turns the attr on; `with` edits each format field on its own;
// `none` clears a block and a block scale; activations default their bits to
// the element's.
TEST_F(PlatformResolverTest, NumberFormatsResolve) {
  compile(R"(platform p {
  attr fp4 = { element: fp4_e2m1, block: 32, scale: e8m0 }
  attr nv = fp4 with { block: 16, block_axis: output, scale: float32, block_scale: fp8_e4m3 }
  attr back = nv with { element: int, bits: 8, block: none, block_scale: none }
  attr off = fp4 with { quantize: false }
  config fp8 = { activation: { element: fp8_e5m2, method: symmetric }, weights.kernel: fp4 }
  config k = fp8 with { weights.kernel: nv, weights.bias: back, weights.x: off,
                        activation.block: 32, activation.scale: e8m0 }
  default [fp8]
  opset A : [k]
}
)");
  EXPECT_EQ(diags(), Strings{});
  const ir::OpConfig &fp8 = platform("p").defaultOptions.baseConfig();
  EXPECT_EQ(fp8.activation.bits, 8);
  EXPECT_EQ(fp8.activation.format.element, ir::ElementFormat::Fp8E5M2);
  EXPECT_FALSE(fp8.activation.format.block.has_value());
  EXPECT_FALSE(fp8.activation.format.plain());
  const ir::AttrConfig &fp4 = fp8.weightConfig("kernel");
  EXPECT_TRUE(fp4.quantize);
  EXPECT_EQ(fp4.bits, 4);
  EXPECT_EQ(fp4.format.block, std::optional<int>(32));
  EXPECT_EQ(fp4.format.scale, ir::ScaleFormat::E8M0);
  EXPECT_EQ(fp4.format.blockAxis, ir::BlockAxis::Reduction);
  EXPECT_EQ(ir::formatText(fp4.format, fp4.bits),
            "fp4_e2m1 values in blocks of 32 along the reduction axis with e8m0 scales");

  const ir::OpConfig &k = opset("p", "A").options->configs[0];
  EXPECT_EQ(k.activation.format.element, ir::ElementFormat::Fp8E5M2);
  EXPECT_EQ(k.activation.format.block, std::optional<int>(32));
  EXPECT_EQ(k.activation.format.scale, ir::ScaleFormat::E8M0);
  const ir::AttrConfig &nv = k.weightConfig("kernel");
  EXPECT_EQ(nv.format.element, ir::ElementFormat::Fp4E2M1);
  EXPECT_EQ(nv.format.block, std::optional<int>(16));
  EXPECT_EQ(nv.format.blockAxis, ir::BlockAxis::Output);
  EXPECT_EQ(nv.format.scale, ir::ScaleFormat::Float32);
  EXPECT_EQ(nv.format.blockScale, std::optional<ir::ScaleFormat>(ir::ScaleFormat::Fp8E4M3));
  EXPECT_EQ(ir::formatText(nv.format, nv.bits),
            "fp4_e2m1 values in blocks of 16 along the output axis with fp8_e4m3 factors under "
            "float32 scales");
  // Back to plain integers: without blocks the block axis is dropped too.
  const ir::AttrConfig &back = k.weightConfig("bias");
  EXPECT_EQ(back.format, ir::FormatConfig());
  EXPECT_EQ(back.bits, 8);
  EXPECT_EQ(back.format.element, ir::ElementFormat::Int);
  EXPECT_FALSE(back.format.block.has_value());
  EXPECT_FALSE(back.format.blockScale.has_value());
  EXPECT_EQ(back.format.scale, ir::ScaleFormat::Float32);
  EXPECT_FALSE(k.weightConfig("x").quantize);
}

TEST_F(PlatformResolverTest, WithCopiesOnlyExplicitFieldsAndEditsNamedOnes) {
  compile(R"(platform p {
  config base = { activation: { method: symmetric, bits: 16, signedness: signed },
                  simd: 64, preserving: true, fixed_scale: 2^-7, fixed_zero_point: 3 }
  config nested = base with { activation: { bits: 8 } }
  config dotted = base with { activation.bits: 8 }
  config chain = dotted with { simd: 16 } with { fixed_scale: none }
  default [nested]
  opset A : [dotted, chain, base with { preserving: false }] base dotted
}
)");
  EXPECT_EQ(diags(), Strings{});
  const ir::OpConfig &nested = platform("p").defaultOptions.baseConfig();
  EXPECT_EQ(nested.activation.method, ir::QuantMethod::Symmetric);
  EXPECT_EQ(nested.activation.bits, 8);
  EXPECT_EQ(nested.activation.signedness, ir::Signedness::Signed);
  EXPECT_EQ(nested.simd, 64);
  EXPECT_TRUE(nested.preserving);
  ASSERT_TRUE(nested.fixedScale.has_value());
  EXPECT_DOUBLE_EQ(*nested.fixedScale, 1.0 / 128);
  EXPECT_EQ(nested.fixedZeroPoint, std::optional<int64_t>(3));
  const auto &cfgs = opset("p", "A").options->configs;
  EXPECT_EQ(cfgs[0].activation, nested.activation);
  EXPECT_EQ(cfgs[0].simd, 64);
  EXPECT_EQ(cfgs[1].simd, 16);
  EXPECT_FALSE(cfgs[1].fixedScale.has_value());
  EXPECT_EQ(cfgs[1].fixedZeroPoint, std::optional<int64_t>(3));
  EXPECT_EQ(cfgs[2].name, "base");
  EXPECT_FALSE(cfgs[2].preserving);
  EXPECT_EQ(cfgs[2].activation.bits, 16);
}

TEST_F(PlatformResolverTest, WeightsAddressDefaultAndSlots) {
  compile(R"(platform p {
  attr k8 = { method: symmetric, bits: 8, per_channel: true }
  config a = { weights.bits: 16, weights.kernel: k8 with { bits: 4 },
               weights.bias: { method: uniform, bits: 32 } }
  config b = a with { weights.kernel.per_channel: false, weights.act.bits: 2 }
  config off = b with { weights.quantize: false }
  config offButKernel = b with { weights.quantize: false, weights.kernel.quantize: true }
  default [a]
  opset B : [b]
  opset Off : [off]
  opset OffK : [offButKernel]
}
)");
  EXPECT_EQ(diags(), Strings{});
  const ir::OpConfig &a = platform("p").defaultOptions.baseConfig();
  EXPECT_EQ(a.weights.bits, 16);
  EXPECT_TRUE(a.weights.quantize);
  EXPECT_EQ(a.weightConfig("kernel").bits, 4);
  EXPECT_EQ(a.weightConfig("kernel").method, ir::QuantMethod::Symmetric);
  EXPECT_EQ(a.weightConfig("bias").method, ir::QuantMethod::Uniform);

  const ir::OpConfig &b = baseOf("p", "B");
  EXPECT_FALSE(b.weightConfig("kernel").perChannel);
  EXPECT_EQ(b.weightConfig("kernel").bits, 4);
  // A new slot starts from the attr defaults, not from `weights`.
  EXPECT_EQ(b.weightConfig("act").bits, 2);
  EXPECT_EQ(b.weightConfig("act").method, ir::QuantMethod::PowerOfTwo);
  EXPECT_TRUE(b.weightConfig("act").quantize);

  const ir::OpConfig &off = baseOf("p", "Off");
  EXPECT_FALSE(off.weights.quantize);
  for (const auto &[slot, attr] : off.slots)
    EXPECT_FALSE(attr.quantize) << slot;
  EXPECT_EQ(off.slots.size(), 3u);

  const ir::OpConfig &offK = baseOf("p", "OffK");
  EXPECT_TRUE(offK.weightConfig("kernel").quantize);
  EXPECT_FALSE(offK.weightConfig("bias").quantize);
  EXPECT_FALSE(offK.weights.quantize);
}

TEST_F(PlatformResolverTest, ReferencesMayPointForward) {
  compile(R"(platform p {
  default [late]
  opset A : lateOptions
  group G = A | B
  fuse G -> B
  options lateOptions = [late with { simd: 8 }]
  config late = { weights: lateAttr }
  attr lateAttr = { bits: 4 }
  opset B
}
)");
  EXPECT_EQ(diags(), Strings{});
  EXPECT_EQ(platform("p").defaultOptions.baseConfig().weights.bits, 4);
  EXPECT_EQ(baseOf("p", "A").simd, 8);
  ASSERT_EQ(platform("p").fusings.size(), 1u);
}

TEST_F(PlatformResolverTest, CyclicWithChains) {
  compile(R"(platform p {
  config a = b with {}
  config b = a with {}
  config self = self with { simd: 8 }
  attr x = y with {}
  attr y = x
  options o1 = o2
  options o2 = o1
  group g1 = g2
  group g2 = g1 | A
  opset A
  default [a]
}
)");
  EXPECT_EQ(diags(), (Strings{
                         "2:14 err_cyclic_definition",
                         "  note 3:10 note_declared_here",
                         "4:17 err_cyclic_definition",
                         "  note 4:10 note_declared_here",
                         "5:12 err_cyclic_definition",
                         "  note 6:8 note_declared_here",
                         "7:16 err_cyclic_definition",
                         "  note 8:11 note_declared_here",
                         "9:14 err_cyclic_definition",
                         "  note 10:9 note_declared_here",
                     }));
  EXPECT_EQ(messages()[0], "`b` is defined in terms of itself");
}

TEST_F(PlatformResolverTest, DuplicateKeys) {
  compile(R"(platform p {
  config a = { simd: 8, simd: 16 }
  config b = { activation: { bits: 8 }, activation.bits: 4 }
  config c = a with { weights.kernel.bits: 4, weights: { kernel.bits: 2 } }
  default [a]
}
)");
  EXPECT_EQ(diags(), (Strings{
                         "2:25 err_duplicate_key",
                         "  note 2:16 note_previous_definition",
                         "3:41 err_duplicate_key",
                         "  note 3:30 note_previous_definition",
                         "4:58 err_duplicate_key",
                         "  note 4:23 note_previous_definition",
                     }));
  EXPECT_EQ(messages()[0], "field `simd` is given twice in one block");
  EXPECT_EQ(messages()[2], "field `weights.kernel.bits` is given twice in one block");
  // The first of two keys is kept.
  EXPECT_EQ(platform("p").defaultOptions.baseConfig().simd, 8);
}

TEST_F(PlatformResolverTest, FieldErrors) {
  compile(R"(platform p {
  config a = { activaton.bits: 8, activation.bitz: 8, simd: 8.5,
               activation.method: lut_sym2, activation.signedness: maybe,
               input_bits: [8, "16"], preserving: 1, weights.kernel.bitz: 3,
               fixed_scale: inf, weights: 3 }
  attr k = { method: symetric, bits: 2^3, lut_bits: true, extra: 1 }
  default [a]
}
)");
  EXPECT_EQ(diags(), (Strings{
                         "2:16 err_unknown_field",
                         "2:46 err_unknown_field",
                         "2:61 err_field_type",
                         "3:35 err_bad_enum",
                         "3:68 err_bad_enum",
                         "4:32 err_field_type",
                         "4:51 err_field_type",
                         "4:69 err_unknown_field",
                         "5:29 err_field_type",
                         "5:43 err_field_type",
                         "6:22 err_bad_enum",
                         "6:38 err_field_type",
                         "6:53 err_field_type",
                         "6:59 err_unknown_field",
                     }));
  Strings msg = messages();
  EXPECT_EQ(msg[0], "unknown field `activaton` in a config; did you mean `activation`?");
  EXPECT_EQ(msg[1], "unknown field `bitz` in `activation`; did you mean `bits`?");
  EXPECT_EQ(msg[2], "field `simd` expects an integer or `none`, found a decimal number");
  EXPECT_EQ(msg[3], "`lut_sym2` is not a valid quantization method; expected one of "
                    "`power_of_two`, `symmetric`, `uniform`, `lut_pot`, `lut_sym`");
  EXPECT_EQ(msg[4], "`maybe` is not a valid signedness; expected one of "
                    "`auto`, `signed`, `unsigned`");
  EXPECT_EQ(msg[7], "unknown field `bitz` in `weights.kernel`; did you mean `bits`?");
  EXPECT_EQ(msg[13], "unknown field `extra` in an attr");
}

TEST_F(PlatformResolverTest, UndefinedAndWrongKindReferences) {
  compile(R"(platform p {
  attr k8 = { bits: 8 }
  config a8 = { weights: k9 }
  config b = a9 with {}
  config c = k8 with {}
  default [a8]
  opset A : a8
  opset B : [nope]
  group G = A | Bx
  fuse A -> a8
}
)");
  EXPECT_EQ(diags(), (Strings{
                         "3:26 err_undefined",
                         "4:14 err_undefined",
                         "5:14 err_wrong_kind",
                         "  note 2:8 note_declared_here",
                         "7:13 err_wrong_kind",
                         "  note 3:10 note_declared_here",
                         "  note 7:13 note_options_from_config",
                         "8:14 err_undefined",
                         "9:17 err_undefined",
                         "10:13 err_wrong_kind",
                         "  note 3:10 note_declared_here",
                     }));
  Strings msg = messages();
  EXPECT_EQ(msg[0], "use of undefined attr `k9`; did you mean `k8`?");
  EXPECT_EQ(msg[1], "use of undefined config `a9`; did you mean `a8`?");
  EXPECT_EQ(msg[2], "`k8` is an attr, but a config is expected here");
  EXPECT_EQ(msg[3], "`a8` is a config, but an options name is expected here");
  EXPECT_EQ(msg[4], "use of undefined config `nope`");
  EXPECT_EQ(msg[5], "use of undefined opset or group `Bx`; did you mean `B`?");
  // Opset A still exists (so capabilities can bind it).
  EXPECT_NE(platform("p").findOpset("A"), nullptr);
}

//===----------------------------------------------------------------------===//
// Options and default (Rules 3-5)
//===----------------------------------------------------------------------===//

TEST_F(PlatformResolverTest, OptionsBase) {
  compile(R"(platform p {
  config a = {}
  config b = { simd: 64 }
  options ok = [a, b with { simd: 8 }, { simd: 4 }] base b
  options noBase = [a, b]
  options badBase = [a, b] base c
  options twice = [a with { simd: 2 }, a with { simd: 4 }] base a
  options one = [b]
  default [a]
  // The plain `a` beside an edit of it: the one `base a` names.
  opset P : [a with { simd: 2 }, a] base a
}
)");
  EXPECT_EQ(diags(), (Strings{
                         "5:20 err_options_need_base",
                         "6:33 err_base_not_in_list",
                         "7:65 err_base_ambiguous",
                     }));
  EXPECT_EQ(opset("p", "P").options->base, 1u);
  Strings msg = messages();
  EXPECT_EQ(msg[0], "options with 2 configs need a `base`");
  EXPECT_EQ(msg[1], "`base c` is not one of the listed configs");
  EXPECT_EQ(msg[2], "`base a` names 2 elements of the list");
}

TEST_F(PlatformResolverTest, OptionsBaseIndexAndNamedOptions) {
  compile(R"(platform p {
  config a = {}
  config b = { simd: 64 }
  options mixed = [{ simd: 4 }, a, b with { simd: 8 }] base b
  options alias = mixed
  default [a]
  opset X : alias
}
)");
  EXPECT_EQ(diags(), Strings{});
  const ir::Options &o = *opset("p", "X").options;
  ASSERT_EQ(o.configs.size(), 3u);
  EXPECT_EQ(o.base, 2u);
  EXPECT_EQ(o.configs[0].name, "");
  EXPECT_EQ(o.configs[0].simd, 4);
  EXPECT_EQ(o.baseConfig().simd, 8);
}

TEST_F(PlatformResolverTest, DefaultMustBeOneConfig) {
  compile(R"(platform p {
  config a = {}
  config b = {}
  options two = [a, b] base a
  default two
}
platform q {
  config a = {}
  default [a, a with { simd: 8 }] base a
}
platform noDefault {
  opset A
}
)");
  EXPECT_EQ(diags(), (Strings{
                         "5:11 err_default_not_one_config",
                         "9:11 err_default_not_one_config",
                         "11:10 err_platform_no_default",
                     }));
  EXPECT_EQ(messages()[0], "`default` must name exactly one config, found 2");
  EXPECT_EQ(messages()[2], "platform `noDefault` has no `default` options, "
                           "neither its own nor inherited");
}

//===----------------------------------------------------------------------===//
// Names (Rules 1, 7)
//===----------------------------------------------------------------------===//

TEST_F(PlatformResolverTest, RedefinitionInsidePlatform) {
  compile(R"(platform p {
  config a = {}
  attr a = {}
  opset A, B
  opset A
  group B = A
  version 1.0
  version 1.1
  default [a]
  default [a]
}
)");
  EXPECT_EQ(diags(), (Strings{
                         "3:8 err_redefinition",
                         "  note 2:10 note_previous_definition",
                         "5:9 err_redefinition",
                         "  note 4:9 note_previous_definition",
                         "6:9 err_redefinition",
                         "  note 4:12 note_previous_definition",
                         "8:3 err_redefinition",
                         "  note 7:3 note_previous_definition",
                         "10:3 err_redefinition",
                         "  note 9:3 note_previous_definition",
                     }));
  // The first definitions stay.
  EXPECT_EQ(platform("p").version->patch, 0);
  EXPECT_EQ(platform("p").opsets.size(), 2u);
}

TEST_F(PlatformResolverTest, TopLevelRedefinitionAcrossFiles) {
  compileFiles({{"lib.tpc", "platform shared { config a = {} default [a] }\n"
                            "recipe r {}\n"},
                {"main.tpc", "recipe shared {}\n"
                             "platform r { config a = {} default [a] }\n"}});
  Strings d = diags();
  EXPECT_EQ(d, (Strings{"1:8 err_redefinition", "  note 1:10 note_previous_definition",
                        "2:10 err_redefinition", "  note 2:8 note_previous_definition"}));
  const auto &all = c->diags.getDiagnostics();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(c->sources.getName(all[0].range.begin.file), "main.tpc");
  EXPECT_EQ(c->sources.getName(all[0].notes[0].range.begin.file), "lib.tpc");
  // Only the first declaration of a name enters the module.
  EXPECT_EQ(m.platforms.size(), 1u);
  EXPECT_EQ(m.recipes.size(), 1u);
}

//===----------------------------------------------------------------------===//
// Groups and fusing patterns (Rule 6)
//===----------------------------------------------------------------------===//

TEST_F(PlatformResolverTest, FusingPatterns) {
  compile(R"(platform p {
  config a = {}
  default [a]
  opset A, B, C, D
  group AB = A | B
  group All = AB | (C | D) | A
  fuse A
  fuse AB -> C as first
  fuse (B | A) -> (C) as second
  fuse A -> B -> C
  fuse All -> (A | (B | C))
  fuse A -> B -> C
}
)");
  EXPECT_EQ(diags(), (Strings{
                         "7:3 err_fuse_too_short",
                         "9:3 warn_duplicate_fuse",
                         "  note 8:3 note_previous_pattern",
                         "12:3 warn_duplicate_fuse",
                         "  note 10:3 note_previous_pattern",
                     }));
  EXPECT_EQ(messages()[0], "a fusing pattern needs at least two elements, found 1");
  EXPECT_EQ(messages()[1], "fusing pattern `second` is equal to an earlier pattern");
  const ir::Platform &p = platform("p");
  ASSERT_EQ(p.fusings.size(), 3u);
  EXPECT_EQ(p.fusings[0].name, "first");
  EXPECT_EQ(p.fusings[1].name, "A->B->C");
  EXPECT_EQ(p.fusings[2].name, "All->(A|(B|C))");
  using Pattern = std::vector<std::vector<std::string>>;
  EXPECT_EQ(p.fusings[2].pattern, (Pattern{{"A", "B", "C", "D"}, {"A", "B", "C"}}));
}

//===----------------------------------------------------------------------===//
// Extending a platform (Rule 15)
//===----------------------------------------------------------------------===//

TEST_F(PlatformResolverTest, ChildSeesParentAndOverrides) {
  compileFiles({{"imx500.tpc", imx500}, {"chip.tpc", R"(platform my_chip extends imx500 {
  version 0.1
  opset Softmax : [a8 with { activation.bits: 16 }]
  override opset FullyConnected : [linear8]
  opset Resize : [no_quant]
  remove fuse FullyConnected -> (AnyReLU | Swish | Sigmoid)
  fuse Softmax -> Conv
}
)"}});
  EXPECT_EQ(diags(), Strings{"7:3 warn_fuse_incompatible_bits"});
  const ir::Platform &p = platform("my_chip");
  EXPECT_EQ(p.parent, std::optional<std::string>("imx500"));
  EXPECT_EQ(p.version->minor, 0);
  EXPECT_EQ(p.version->patch, 1);
  EXPECT_EQ(p.type, "imx500");
  EXPECT_TRUE(p.simdPadding);
  EXPECT_TRUE(p.metadata);
  EXPECT_EQ(p.defaultOptions.baseConfig().name, "a8");
  ASSERT_EQ(p.opsets.size(), 14u);
  // An overridden opset keeps the parent's place.
  EXPECT_EQ(p.opsets[2].name, "FullyConnected");
  EXPECT_EQ(p.opsets[2].options->configs.size(), 1u);
  EXPECT_EQ(p.opsets[13].name, "Resize");
  EXPECT_EQ(baseOf("my_chip", "Softmax").activation.bits, 16);
  ASSERT_EQ(p.fusings.size(), 3u);
  EXPECT_EQ(p.fusings[0].name, "Conv->ConvActs");
  EXPECT_EQ(p.fusings[1].name, "(Add|Sub|Mul|Div)->AnyReLU");
  EXPECT_EQ(p.fusings[2].name, "Softmax->Conv");
  // The parent is unchanged.
  EXPECT_EQ(opset("imx500", "FullyConnected").options->configs.size(), 3u);
  EXPECT_EQ(platform("imx500").fusings.size(), 3u);
}

TEST_F(PlatformResolverTest, LateBindingOfOverrides) {
  compile(R"(platform base {
  attr w = { bits: 8 }
  config a8 = { weights: w }
  config linear = a8 with { simd: 64 }
  options lin = [linear]
  group Acts = Relu
  default [a8]
  opset Conv : lin
  opset Relu, Tanh
  fuse Conv -> Acts
}
platform child extends base {
  override config a8 = { activation.bits: 16, weights: w }
  override attr w = { bits: 4 }
  override group Acts = Relu | Tanh
}
platform grandchild extends child {
  override default [linear with { simd: 8 }]
}
)");
  EXPECT_EQ(diags(), Strings{});
  const ir::OpConfig &lin = baseOf("child", "Conv");
  EXPECT_EQ(lin.activation.bits, 16);
  EXPECT_EQ(lin.simd, 64);
  EXPECT_EQ(lin.weights.bits, 4);
  EXPECT_EQ(platform("child").defaultOptions.baseConfig().activation.bits, 16);
  EXPECT_EQ(platform("child").fusings[0].pattern[1], (std::vector<std::string>{"Relu", "Tanh"}));
  // The parent keeps its own definitions.
  EXPECT_EQ(baseOf("base", "Conv").activation.bits, 8);
  EXPECT_EQ(baseOf("base", "Conv").weights.bits, 8);
  const ir::OpConfig &gd = platform("grandchild").defaultOptions.baseConfig();
  EXPECT_EQ(gd.simd, 8);
  EXPECT_EQ(gd.activation.bits, 16);
  // An unset type is inherited: the root platform's name.
  EXPECT_EQ(platform("grandchild").type, "base");
}

TEST_F(PlatformResolverTest, OverrideErrors) {
  compile(R"(platform base {
  config a = {}
  default [a]
  opset A
  fuse A -> A
}
platform child extends base {
  config a = { simd: 8 }
  override config b = {}
  override opset A : [a]
  override attr A = {}
  default [b]
  remove fuse A -> (A | A)
  remove fuse A -> A -> A
}
platform root {
  override config x = {}
  override default [x]
  remove fuse x -> x
}
)");
  EXPECT_EQ(diags(), (Strings{
                         "8:10 err_parent_defines",
                         "  note 2:10 note_previous_definition",
                         "9:19 err_override_missing",
                         "11:17 err_redefinition",
                         "  note 10:18 note_previous_definition",
                         "12:3 err_parent_defines",
                         "  note 3:3 note_previous_definition",
                         "14:3 err_remove_fuse_absent",
                         "17:19 err_override_missing",
                         "18:3 err_override_missing",
                         "19:15 err_wrong_kind",
                         "  note 17:19 note_declared_here",
                         "19:20 err_wrong_kind",
                         "  note 17:19 note_declared_here",
                     }));
  Strings msg = messages();
  EXPECT_EQ(msg[0], "`a` is already defined by parent platform `base`; "
                    "write `override` to replace it");
  EXPECT_EQ(msg[1], "`override` of `b`, which parent platform `base` does not define");
  EXPECT_EQ(msg[4], "`remove fuse`: no inherited pattern is equal to `A->A->A`");
  EXPECT_EQ(msg[5], "`override` of `x`, which no parent platform defines "
                    "(platform `root` extends no platform)");
  // `remove fuse A -> (A | A)` removed the inherited `A -> A`.
  EXPECT_TRUE(platform("child").fusings.empty());
}

TEST_F(PlatformResolverTest, Rule7OpsetNamesAreUniqueAcrossParents) {
  compile(R"(platform base {
  config a = {}
  default [a]
  opset Conv, Relu
}
platform child extends base {
  opset Relu : [a]
  override opset Conv : [a with { simd: 8 }]
}
)");
  EXPECT_EQ(diags(), (Strings{"7:9 err_parent_defines", "  note 4:15 note_previous_definition"}));
  EXPECT_EQ(messages()[0], "`Relu` is already defined by parent platform "
                           "`base`; write `override` to replace it");
  // After the error the child's definition is used, in the parent's place.
  const ir::Platform &p = platform("child");
  ASSERT_EQ(p.opsets.size(), 2u);
  EXPECT_EQ(p.opsets[1].name, "Relu");
  EXPECT_TRUE(p.opsets[1].options.has_value());
  EXPECT_EQ(baseOf("child", "Conv").simd, 8);
}

TEST_F(PlatformResolverTest, OverrideOfDifferentKind) {
  compile(R"(platform base {
  config a = {}
  default [a]
  opset X
}
platform child extends base {
  override group X = Y
  opset Y
}
)");
  EXPECT_EQ(diags(), (Strings{"7:18 err_override_missing", "  note 4:9 note_previous_definition"}));
  EXPECT_EQ(messages()[0], "`override` of `X`, which parent platform `base` "
                           "defines as an opset, not as a group");
}

TEST_F(PlatformResolverTest, ExtendsErrorsAndOrder) {
  compile(R"(platform kid extends mom { opset K }
platform mom extends grandma { opset M }
platform grandma { config a = {} default [a] }
platform a extends b { config x = {} default [x] }
platform b extends a { }
platform self extends self { }
platform lost extends mum { }
recipe r {}
platform odd extends r { }
platform orphan extends lost { }
)");
  EXPECT_EQ(diags(), (Strings{
                         "5:20 err_extends_cycle",
                         "6:23 err_extends_cycle",
                         "7:23 err_undefined",
                         "9:22 err_wrong_kind",
                         "  note 8:8 note_declared_here",
                     }));
  Strings msg = messages();
  EXPECT_EQ(msg[0], "platform `a` extends itself");
  EXPECT_EQ(msg[2], "use of undefined platform `mum`; did you mean `mom`?");
  EXPECT_EQ(msg[3], "`r` is a recipe, but a platform is expected here");
  // A child written before its parent is resolved after it.
  ASSERT_EQ(m.platforms.size(), 3u);
  EXPECT_EQ(m.platforms[0].name, "kid");
  EXPECT_EQ(platform("kid").opsets.size(), 2u);
  EXPECT_EQ(platform("kid").defaultOptions.baseConfig().name, "a");
}

TEST_F(PlatformResolverTest, InheritedErrorsAreReportedOnce) {
  compile(R"(platform base {
  config xyz = { activation.bits: 99, simd: 0 }
  config b = a9 with {}
  default [xyz]
}
platform child extends base { config a8 = {} }
platform grandchild extends child { opset X }
)");
  // The child's `a8` is not suggested for the parent's `a9`: the parent's
  // definitions only know the parent's names, so the message is the same.
  EXPECT_EQ(diags(),
            (Strings{"2:35 err_bits_range", "2:45 err_not_positive", "3:14 err_undefined"}));
  EXPECT_EQ(messages()[2], "use of undefined config `a9`");
}

TEST_F(PlatformResolverTest, RemoveFuseSeesOverriddenGroups) {
  compile(R"(platform base {
  config a = {}
  default [a]
  opset A, B, C
  group G = B
  fuse A -> G as named
  fuse A -> C
}
platform child extends base {
  override group G = B | C
  remove fuse A -> (C | B)
  fuse A -> C
}
)");
  EXPECT_EQ(diags(), (Strings{"12:3 warn_duplicate_fuse", "  note 7:3 note_previous_pattern"}));
  ASSERT_EQ(platform("child").fusings.size(), 1u);
  EXPECT_EQ(platform("child").fusings[0].name, "A->C");
  EXPECT_EQ(platform("base").fusings.size(), 2u);
}

//===----------------------------------------------------------------------===//
// Rules 8-10
//===----------------------------------------------------------------------===//

TEST_F(PlatformResolverTest, BitRanges) {
  compile(R"(platform p {
  attr w0 = { bits: 0 }
  attr w33 = { bits: 33 }
  attr lut = { method: lut_sym, bits: 4, lut_bits: 3 }
  attr lut40 = { method: lut_pot, bits: 4, lut_bits: 40 }
  attr lutOk = { method: lut_pot, bits: 4, lut_bits: 8 }
  attr lutShrunk = lutOk with { bits: 16 }
  attr notLut = { method: symmetric, lut_bits: 8 }
  attr switched = lutOk with { method: uniform }
  attr cleared = lutOk with { method: uniform, lut_bits: none }
  config a = { activation.bits: 17, input_bits: [8, 0] }
  config l = { activation.method: lut_pot }
  default [a]
}
)");
  EXPECT_EQ(diags(), (Strings{
                         "2:21 err_bits_range",
                         "3:22 err_bits_range",
                         "4:52 err_lut_bits_range",
                         "5:54 err_lut_bits_range",
                         "7:39 err_lut_bits_range",
                         "8:48 err_lut_bits_method",
                         "9:40 err_lut_bits_method",
                         "11:33 err_bits_range",
                         "11:53 err_bits_range",
                         "12:35 err_lut_on_activation",
                     }));
  Strings msg = messages();
  EXPECT_EQ(msg[0], "weight bits must be between 1 and 32, found 0");
  EXPECT_EQ(msg[2], "`lut_bits` must be between `bits` (4) and 32, found 3");
  EXPECT_EQ(msg[4], "`lut_bits` must be between `bits` (16) and 32, found 8");
  EXPECT_EQ(msg[5], "`lut_bits` requires a LUT method (`lut_pot` or `lut_sym`), "
                    "but the method is `symmetric`");
  EXPECT_EQ(msg[7], "activation bits must be between 1 and 16, found 17");
  EXPECT_EQ(msg[8], "input bits must be between 1 and 16, found 0");
  EXPECT_EQ(msg[9], "LUT method `lut_pot` cannot quantize activations");
}

TEST_F(PlatformResolverTest, FixedScaleAndZeroPoint) {
  compile(R"(platform p {
  config s8 = { activation.signedness: signed, fixed_zero_point: -128 }
  config s8bad = { activation.signedness: signed, fixed_zero_point: 128 }
  config u8bad = { activation.signedness: unsigned, fixed_zero_point: -1 }
  config auto8 = { fixed_zero_point: 255 }
  config auto8bad = { fixed_zero_point: 256 }
  config wide = { activation.bits: 16, fixed_zero_point: 30000 }
  config narrowed = wide with { activation.bits: 8 }
  config scale0 = { fixed_scale: 0 }
  config scaleNeg = { fixed_scale: -0.5 }
  config scaleOk = { fixed_scale: 2^-16 }
  default [s8]
}
)");
  EXPECT_EQ(diags(), (Strings{
                         "3:69 err_zero_point_range",
                         "4:71 err_zero_point_range",
                         "6:41 err_zero_point_range",
                         "8:50 err_zero_point_range",
                         "9:34 err_scale_not_positive",
                         "10:36 err_scale_not_positive",
                     }));
  Strings msg = messages();
  EXPECT_EQ(msg[0], "`fixed_zero_point` 128 is outside the range of 8-bit "
                    "signed values [-128, 127]");
  EXPECT_EQ(msg[1], "`fixed_zero_point` -1 is outside the range of 8-bit "
                    "unsigned values [0, 255]");
  EXPECT_EQ(msg[2], "`fixed_zero_point` 256 is outside the range of 8-bit "
                    "signed or unsigned values [-128, 255]");
  EXPECT_EQ(msg[4], "`fixed_scale` must be positive, found 0");
  EXPECT_EQ(msg[5], "`fixed_scale` must be positive, found -0.5");
}

//===----------------------------------------------------------------------===//
// Rule 11
//===----------------------------------------------------------------------===//

TEST_F(PlatformResolverTest, BitWidthWarnings) {
  compile(R"(platform p {
  config a8 = { input_bits: [8, 4, 16] }
  config a16 = { activation.bits: 16, input_bits: 16 }
  config off = { activation: { bits: 2, quantize: false }, input_bits: [8] }
  default [a8]
  opset Eight : [a8]
  opset Sixteen : [a16]
  opset Float : [off]
  fuse Eight -> Sixteen
  fuse Sixteen -> Eight
  fuse Float -> Sixteen
}
platform q extends p { }
)");
  EXPECT_EQ(diags(),
            (Strings{"2:33 warn_input_bits_unproduced", "9:3 warn_fuse_incompatible_bits"}));
  Strings msg = messages();
  EXPECT_EQ(msg[0], "no config of platform `p` produces 4-bit activations, so "
                    "input bit width 4 is never used");
  EXPECT_EQ(msg[1], "`Eight` cannot feed `Sixteen` in this pattern: `Eight` "
                    "produces 8 bits, `Sixteen` accepts 16");
}

TEST_F(PlatformResolverTest, ChildThatProducesTheWidthSilencesNothingTwice) {
  compile(R"(platform p {
  config a = { input_bits: [8, 16] }
  default [a]
}
platform q extends p {
  config b = { activation.bits: 16 }
}
platform r extends p {
  override config a = { input_bits: [8, 4] }
}
)");
  EXPECT_EQ(diags(),
            (Strings{"2:32 warn_input_bits_unproduced", "9:41 warn_input_bits_unproduced"}));
  EXPECT_EQ(messages()[1], "no config of platform `r` produces 4-bit "
                           "activations, so input bit width 4 is never used");
}

//===----------------------------------------------------------------------===//
// Robustness
//===----------------------------------------------------------------------===//

TEST_F(PlatformResolverTest, KeepsGoingAfterErrors) {
  compile(R"(platform p {
  config a = { simd: true }
  config b = { bits: 8 }
  options o = [a, b]
  default [missing]
  opset A : [a] base b
  fuse A
}
platform fine { config a = {} default [a] }
)");
  EXPECT_EQ(diags(),
            (Strings{"2:22 err_field_type", "3:16 err_unknown_field", "4:15 err_options_need_base",
                     "5:12 err_undefined", "6:22 err_base_not_in_list", "7:3 err_fuse_too_short"}));
  EXPECT_EQ(m.platforms.size(), 2u);
  EXPECT_NE(platform("p").findOpset("A"), nullptr);
}

TEST_F(PlatformResolverTest, LongBackwardChainsDoNotRecurseDeeply) {
  // c0 = c1 with {}, c1 = c2 with {}, ...: evaluated from the far end.
  const int n = 20000;
  std::string text = "platform p {\n";
  for (int i = 0; i < n; ++i)
    text += "config c" + std::to_string(i) + " = c" + std::to_string(i + 1) +
            " with { simd: " + std::to_string(i + 1) + " }\n";
  text += "config c" + std::to_string(n) + " = { activation.bits: 4 }\n";
  text += "default [c0]\n}\n";
  compile(text);
  EXPECT_EQ(diags(), Strings{});
  const ir::OpConfig &c0 = platform("p").defaultOptions.baseConfig();
  EXPECT_EQ(c0.activation.bits, 4);
  EXPECT_EQ(c0.simd, 1);
}

//===----------------------------------------------------------------------===//
// Recipes
//===----------------------------------------------------------------------===//

TEST_F(PlatformResolverTest, RecipeDefaultsFieldsAndExtends) {
  compile(R"(recipe plain {}
recipe careful {
  activation_threshold: kl
  weights_threshold: lp
  lp: 3
  bias_correction: false
  shift_negative: { enabled: true, ratio: 0.5 }
  shift_negative.recompute_threshold: true
  relu_unbound_correction: true
  activation_channel_equalization: true
  input_scaling: true
  z_threshold: 8
  min_threshold: 2^-10
}
recipe child extends careful { lp: 4, z_threshold: inf }
)");
  EXPECT_EQ(diags(), Strings{});
  const ir::Recipe *plain = m.findRecipe("plain");
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->activationThreshold, ir::ThresholdMethod::MSE);
  EXPECT_TRUE(plain->biasCorrection);
  EXPECT_DOUBLE_EQ(plain->minThreshold, 1.0 / 65536);
  EXPECT_FALSE(plain->parent.has_value());
  const ir::Recipe *child = m.findRecipe("child");
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(child->parent, std::optional<std::string>("careful"));
  EXPECT_EQ(child->activationThreshold, ir::ThresholdMethod::KL);
  EXPECT_EQ(child->weightsThreshold, ir::ThresholdMethod::LP);
  EXPECT_DOUBLE_EQ(child->lp, 4);
  EXPECT_FALSE(child->biasCorrection);
  EXPECT_TRUE(child->shiftNegative.enabled);
  EXPECT_DOUBLE_EQ(child->shiftNegative.ratio, 0.5);
  EXPECT_TRUE(child->shiftNegative.recomputeThreshold);
  EXPECT_TRUE(child->reluUnboundCorrection);
  EXPECT_TRUE(child->activationChannelEqualization);
  EXPECT_TRUE(child->inputScaling);
  EXPECT_TRUE(std::isinf(child->zThreshold));
  EXPECT_DOUBLE_EQ(child->minThreshold, 1.0 / 1024);
}

TEST_F(PlatformResolverTest, RecipeOverridesAndErrors) {
  compile(R"(recipe forced {
  activation_bits: 16, weights_bits: 4, activation_method: symmetric
  weights_method: lut_sym, per_channel: false
  quantize_activations: true, quantize_weights: false
}
recipe bad {
  activation_bits: 17, weights_bits: 0, activation_method: lut_pot
  activation_threshold: l2, lp: 0, shift_negative.ratio: 2
  shift_negative.enable: true, z_threshold: -inf, lp_norm: 2
}
recipe kid extends forced { }
recipe loop1 extends loop2 { }
recipe loop2 extends loop1 { }
recipe stray extends frced { }
)");
  EXPECT_EQ(diags(), (Strings{
                         "2:3 warn_recipe_overrides",
                         "2:24 warn_recipe_overrides",
                         "2:41 warn_recipe_overrides",
                         "3:3 warn_recipe_overrides",
                         "3:28 warn_recipe_overrides",
                         "4:3 warn_recipe_overrides",
                         "4:31 warn_recipe_overrides",
                         "7:20 err_bits_range",
                         "7:38 err_bits_range",
                         "7:60 err_lut_on_activation",
                         "8:25 err_bad_enum",
                         "8:33 err_not_positive",
                         "8:58 err_value_range",
                         "9:18 err_unknown_field",
                         "9:45 err_not_positive",
                         "9:51 err_unknown_field",
                         "13:22 err_recipe_extends_cycle",
                         "14:22 err_undefined",
                     }));
  Strings msg = messages();
  EXPECT_EQ(msg[0], "recipe `forced` overrides the platform's own choice of "
                    "activation bit width");
  EXPECT_EQ(msg[13], "unknown field `enable` in `shift_negative`; did you mean `enabled`?");
  EXPECT_EQ(msg[15], "unknown field `lp_norm` in a recipe");
  EXPECT_EQ(msg[16], "recipe `loop1` extends itself");
  const ir::Recipe *kid = m.findRecipe("kid");
  ASSERT_NE(kid, nullptr);
  EXPECT_EQ(kid->activationBits, std::optional<int>(16));
  EXPECT_EQ(kid->weightsMethod, std::optional<ir::QuantMethod>(ir::QuantMethod::LutSym));
  EXPECT_EQ(kid->quantizeWeights, std::optional<bool>(false));
}

} // namespace

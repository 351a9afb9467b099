//===- TpcIR.h - The typed, resolved platform IR -----------------*- C++ -*-===//
//
// What the passes produce from the AST and every backend consumes: platforms
// with every `with` / `extends` / group expanded and every default filled in,
// frameworks, capabilities (opsets bound to ONNX ops with predicates) and
// recipes. Plain data, immutable once the passes are done. Source ranges are
// kept for diagnostics that later stages (the planner) emit.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_IR_TPCIR_H
#define TPCC_IR_TPCIR_H

#include "support/CmpOp.h"
#include "support/Diagnostics.h"
#include "support/SourceManager.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tpcc::ir {

enum class QuantMethod { PowerOfTwo, Symmetric, Uniform, LutPot, LutSym };
enum class Signedness { Auto, Signed, Unsigned };

const char *toString(QuantMethod m);
const char *toString(Signedness s);
std::optional<QuantMethod> parseQuantMethod(llvm::StringRef s);
std::optional<Signedness> parseSignedness(llvm::StringRef s);
inline bool isLut(QuantMethod m) { return m == QuantMethod::LutPot || m == QuantMethod::LutSym; }

/// What one quantized element is (docs/language.md §4.2, "Number formats"):
/// an integer of `bits` bits (the method says its grid), or a floating-point
/// value of a fixed format: FP8 E4M3 (OCP/ONNX `float8e4m3fn`: no infinities,
/// finite maximum 448), FP8 E5M2 (maximum 57344) or FP4 E2M1 (maximum 6).
enum class ElementFormat { Int, Fp8E4M3, Fp8E5M2, Fp4E2M1 };
/// How a scale is stored: float32, float16, a power of two as an 8-bit
/// exponent (OCP MX's E8M0), an FP8 E4M3 value, or (only as a second-level
/// per-block factor) an unsigned integer of 4 or 8 bits.
enum class ScaleFormat { Float32, Float16, E8M0, Fp8E4M3, UInt4, UInt8 };
/// The axis along which a weight's blocks run: the one the operator reduces
/// over (a kernel's input channels), or its output channels.
enum class BlockAxis { Reduction, Output };

const char *toString(ElementFormat e);
const char *toString(ScaleFormat s);
const char *toString(BlockAxis a);
std::optional<ElementFormat> parseElementFormat(llvm::StringRef s);
std::optional<ScaleFormat> parseScaleFormat(llvm::StringRef s);
std::optional<BlockAxis> parseBlockAxis(llvm::StringRef s);
/// The bits of a floating-point element format (8 or 4); 0 for Int.
int elementBits(ElementFormat e);
/// The bits one scale of format `s` takes: 32, 16, 8 (E8M0, FP8), 4 or 8.
int scaleBits(ScaleFormat s);

/// The number format of a quantized tensor beyond its method and bits: its
/// element format and its groups. Without `block` every group (the tensor,
/// or a channel) has one scale of format `scale`; with `block`, groups of
/// `block` consecutive elements along `blockAxis` do, and with `blockScale`
/// too each block's scale is a factor of format `blockScale` times the
/// group's scale of format `scale` (two-level scales: Qualcomm's LPBQ,
/// NVFP4).
struct FormatConfig {
  ElementFormat element = ElementFormat::Int;
  std::optional<int> block;
  BlockAxis blockAxis = BlockAxis::Reduction;
  ScaleFormat scale = ScaleFormat::Float32;
  std::optional<ScaleFormat> blockScale;
  /// An integer element with one float32 scale per group: what every format
  /// was before blocks and floating-point elements.
  bool plain() const {
    return element == ElementFormat::Int && !block && scale == ScaleFormat::Float32 && !blockScale;
  }
  bool operator==(const FormatConfig &o) const {
    return element == o.element && block == o.block && blockAxis == o.blockAxis &&
           scale == o.scale && blockScale == o.blockScale;
  }
};

/// "4-bit integers in blocks of 32 along the reduction axis with uint4
/// factors under float32 scales", "fp8_e4m3 values with float32 scales": a
/// number format for messages and documents.
std::string formatText(const FormatConfig &f, int bits);

/// An attribute (weight) quantization config.
struct AttrConfig {
  QuantMethod method = QuantMethod::PowerOfTwo;
  int bits = 32;
  bool perChannel = false;
  bool quantize = false;
  std::optional<int> lutBits; ///< only with LUT methods
  FormatConfig format;
  bool operator==(const AttrConfig &o) const {
    return method == o.method && bits == o.bits && perChannel == o.perChannel &&
           quantize == o.quantize && lutBits == o.lutBits && format == o.format;
  }
};

struct ActivationConfig {
  QuantMethod method = QuantMethod::PowerOfTwo;
  int bits = 8;
  bool quantize = true;
  Signedness signedness = Signedness::Auto;
  /// `blockAxis` is always Reduction: an activation's blocks run along the
  /// axis its consumers reduce over.
  FormatConfig format;
  bool operator==(const ActivationConfig &o) const {
    return method == o.method && bits == o.bits && quantize == o.quantize &&
           signedness == o.signedness && format == o.format;
  }
};

/// An operator quantization config, fully resolved.
struct OpConfig {
  std::string name; ///< the config's name; "" for an inline block
  ActivationConfig activation;
  std::vector<int> inputBits;              ///< sorted, unique
  AttrConfig weights;                      ///< for slots `slots` does not name
  std::map<std::string, AttrConfig> slots; ///< per weight slot (kernel, bias)
  bool preserving = false;
  std::optional<double> fixedScale;
  std::optional<int64_t> fixedZeroPoint;
  std::optional<int> simd = 32; ///< none: no SIMD width (MCT's `simd_size: None`)
  SourceRange loc;

  /// The config that applies to weight slot `slot`.
  const AttrConfig &weightConfig(llvm::StringRef slot) const {
    auto it = slots.find(slot.str());
    return it == slots.end() ? weights : it->second;
  }
};

/// The signedness of a grid with a fixed zero point: the config's, and for
/// `auto` signed unless the zero point only fits an unsigned grid (above
/// 2^(bits-1) - 1). MCT's TFLite Softmax (zero point -128, `auto`) is int8.
Signedness fixedSignedness(const OpConfig &c);

/// The real range [min, max] that a fixed scale and zero point give an
/// activation of `bits` bits of fixedSignedness(c):
/// scale * (qmin - zp), scale * (qmax - zp). Needs both fixed values.
std::pair<double, double> fixedRange(const OpConfig &c);

/// Calls f(tensors, format, bits, method) for each tensor config `c`
/// quantizes with a number format other than plain integers: "activations",
/// "default weights", "`SLOT` weights".
void forEachFormat(const OpConfig &c,
                   llvm::function_ref<void(const std::string &tensors, const FormatConfig &f,
                                           int bits, QuantMethod method)>
                       f);

/// Quantization config options: mixed-precision candidates and the base one.
struct Options {
  std::vector<OpConfig> configs;
  unsigned base = 0;
  SourceRange loc;
  const OpConfig &baseConfig() const { return configs[base]; }
};

struct Opset {
  std::string name;
  std::optional<Options> options; ///< none: config-less (takes the default)
  SourceRange loc;
};

/// A fusing pattern: each element is the set of opsets it accepts (groups
/// expanded, sorted, unique).
struct Fusing {
  std::string name;
  std::vector<std::vector<std::string>> pattern;
  /// The same sets in the order written (groups expanded in their members'
  /// order, each opset at its first place): MCT's OperatorSetGroup order.
  std::vector<std::vector<std::string>> written;
  /// `as NAME` was given (else `name` is the elements as written).
  bool named = false;
  /// `with CONFIG`: the fused operation's config (MCT's
  /// `fuse_op_quantization_config`). When its activation is quantized, so
  /// are the outputs inside the fused chain, with its grid; absent or not,
  /// nothing inside is quantized.
  std::optional<OpConfig> config;
  SourceRange loc;
};

struct Version {
  int64_t minor = 0, patch = 0;
};

/// A resource a budget limits (docs/plan.md, "Resources").
enum class Resource { WeightsMemory, ActivationMemory, TotalMemory, Bops };
const char *toString(Resource r); ///< `weights_memory`, ..., `bops`
std::string flagOf(Resource r);   ///< `--weights-memory`, ..., `--bops`

/// A budget on one resource: an absolute amount (bytes for memory, a count
/// for BOPs) or a fraction of what the base configuration uses (`75%`).
struct Budget {
  bool relative = false;
  double value = 0; ///< bytes / BOPs, or the fraction (0.75 for `75%`)
  std::string text; ///< as written: `41 KiB`, `75%`
  SourceRange loc;  ///< where a spec wrote it (invalid for a flag)
};

/// Parses a budget as recipes and flags write it: memory as a number with a
/// unit (`B`, `kB`/`KB`, `MB`, `GB`, `KiB`, `MiB`, `GiB`; a bare integer is
/// bytes) or a percentage (`75%`); BOPs as a number (`1.5e9`, `2 G`: `k`,
/// `M`, `G`, `T` multiply by powers of 1000) or a percentage. Zero, negative,
/// non-finite and fractional-byte amounts are errors. `error` says why, for
/// the caller's diagnostic. (Budget.cpp has the full grammar; the `loc` of the
/// result is left for the caller.)
std::optional<Budget> parseBudget(llvm::StringRef text, Resource r, std::string &error);

/// Bytes as people read them (Budget.cpp): below 1024, "512 B"; else KiB, MiB,
/// GiB or TiB with at most two decimals, trailing zeros dropped: 41984 ->
/// "41 KiB", 11824 -> "11.55 KiB", 1048575 -> "1 MiB" (rounding may carry
/// into the next unit).
std::string formatBytes(double bytes);

/// The memory a platform declares (`resources { ... }`): absolute amounts only.
struct PlatformResources {
  std::optional<Budget> weightsMemory, activationMemory, totalMemory;
  SourceRange loc;
  bool empty() const { return !weightsMemory && !activationMemory && !totalMemory; }
};

struct Platform {
  std::string name;
  std::optional<std::string> parent;
  std::optional<Version> version;
  std::string type; ///< defaults to the name
  bool simdPadding = false;
  bool metadata = false;
  /// `insert_preserving_quantizers` (MCT's switch, default false): a
  /// quantization-preserving op's output gets a quantizer (a Q/DQ pair)
  /// re-applying its input's grid; without it the output has none.
  bool insertPreservingQuantizers = false;
  Options defaultOptions;
  std::vector<Opset> opsets; ///< in definition order (parent's first)
  std::vector<Fusing> fusings;
  /// The memory the platform has, if it says (inherited field by field).
  std::optional<PlatformResources> resources;
  /// `recipe NAME`: the recipe `tpcc quantize` uses when the user names
  /// none (inherited like `type`), and where the name is written.
  std::optional<std::string> recipe;
  SourceRange recipeLoc;
  SourceRange loc;

  const Opset *findOpset(llvm::StringRef n) const;
  /// The options an operator of `opset` uses: its own, or the default.
  const Options &optionsFor(const Opset &opset) const {
    return opset.options ? *opset.options : defaultOptions;
  }
};

//===----------------------------------------------------------------------===//
// Filter predicates
//===----------------------------------------------------------------------===//

struct Literal {
  enum class Kind { Int, Float, String, Bool, None, List } kind = Kind::None;
  int64_t i = 0;
  double f = 0; ///< also holds +-inf
  std::string s;
  bool b = false;
  std::vector<Literal> list;
  SourceRange loc;
  /// Canonical spelling, as in the source language.
  std::string str() const;
};

struct Operand {
  enum class Kind { Attr, Input, Rank, Shape, Literal } kind = Kind::Literal;
  std::string attr;  ///< Attr
  int64_t index = 0; ///< Input, Rank, Shape
  int64_t dim = 0;   ///< Shape
  ir::Literal literal;
  SourceRange loc;
  std::string str() const;
};

using tpcc::CmpOp;
using tpcc::toString;

struct Predicate {
  enum class Kind { Or, And, Not, Cmp, In, Const, Has } kind = Kind::And;
  std::vector<Predicate> children; ///< Or, And: operands; Not: one operand
  CmpOp op = CmpOp::Eq;            ///< Cmp
  Operand lhs, rhs;                ///< Cmp (lhs, rhs); In (lhs)
  std::vector<Literal> list;       ///< In
  int64_t index = 0;               ///< Const
  std::string attr;                ///< Has
  SourceRange loc;
  /// Canonical spelling (fully parenthesized where precedence needs it).
  std::string str() const;
};

//===----------------------------------------------------------------------===//
// Frameworks, capabilities, recipes
//===----------------------------------------------------------------------===//

/// `weight SLOT: OP.input[i] [where P] [axes(out: a, in: b)]`
struct WeightSlot {
  std::string slot;
  std::string op;
  int64_t input = 0;
  std::optional<Predicate> where;
  std::optional<int64_t> outAxis, inAxis;
  SourceRange loc;
};

struct OpRange {
  std::string op;
  double lo = 0, hi = 0; ///< may be +-inf
  SourceRange loc;
};

/// One term of a composite operator's pattern: an op applied to terms (with
/// an optional predicate on the op's attributes), a parameter, or a constant
/// input matched by value.
struct PatternTerm {
  enum class Kind { Op, Param, Constant } kind = Kind::Op;
  std::string op;     ///< Op
  unsigned param = 0; ///< Param: the parameter's index
  double value = 0;   ///< Constant
  std::vector<PatternTerm> args;
  std::optional<Predicate> where;
  SourceRange loc;
};

/// `composite NAME(x, ...) = PATTERN`: one operator (an activation, to the
/// hardware) that the framework spells as a small dataflow of its own ops.
struct Composite {
  std::string name;
  std::vector<std::string> params;
  PatternTerm root;
  /// `is OP`: the ONNX operator the chain computes; a platform that binds no
  /// opset to the composite plans the chain as that operator (language.md 6.1).
  std::string is;
  SourceRange isLoc;
  SourceRange loc;
  /// `SiLU(x) = Mul(x, Sigmoid(x))`, as in the source language.
  std::string str() const;
};

struct Framework {
  std::string name;
  std::vector<WeightSlot> weights;
  std::vector<std::string> activationOps;
  std::vector<std::string> noQuantizeOps;
  std::vector<OpRange> ranges;
  std::vector<Composite> composites;
  SourceRange loc;

  const Composite *findComposite(llvm::StringRef n) const;
};

/// One `OPSET <- OP [where P]`; OP is an ONNX operator or a composite of
/// the bound framework.
struct OpBinding {
  std::string opset;
  std::string op;
  std::optional<Predicate> where;
  SourceRange loc;
  bool composite = false; ///< `op` names a Composite of the framework
};

struct Capabilities {
  std::string name;
  std::string platform;
  std::string framework;
  std::vector<OpBinding> bindings;
  /// Opsets bound with `OPSET <- none`: no framework op realises them (the
  /// platform's fact stays, e.g. for other toolkits' formats).
  std::vector<std::string> unbound;
  SourceRange loc;
};

/// Threshold selection errors (docs/algorithms.md §2); HMSE (weights only) is
/// the MSE weighted by each weight's Hessian diagonal (MCT's HMSE).
enum class ThresholdMethod { NoClipping, MSE, MAE, KL, LP, HMSE };
const char *toString(ThresholdMethod m);
std::optional<ThresholdMethod> parseThresholdMethod(llvm::StringRef s);

/// The smallest threshold a quantizer may get when the recipe does not set
/// `min_threshold` (docs/algorithms.md §4: 2^-16).
constexpr double kDefaultMinThreshold = 1.0 / 65536;

/// How a layer's sensitivity weighs the interest points (docs/quantize.md,
/// "Mixed precision").
enum class MixedDistance { Avg, LastLayer, Hessian };
const char *toString(MixedDistance d); ///< `avg`, `last_layer`, `hessian`
std::optional<MixedDistance> parseMixedDistance(llvm::StringRef s);

/// A recipe's `mixed_precision: { ... }`: budgets and the search's settings.
/// The search runs when any budget is set (here, by a flag, or, with
/// `enabled: true` and no budget, the platform's declared memory).
struct MixedPrecision {
  bool enabled = false; ///< `enabled: true` (implied by any budget)
  std::optional<Budget> weightsMemory, activationMemory, totalMemory, bops;
  int64_t images = 32;
  MixedDistance distance = MixedDistance::Avg;
  bool refine = true;
  double timeLimit = 60; ///< seconds, for the ILP
  /// The best ILP solutions measured as whole models (the ILP adds up
  /// per-layer sensitivities; the whole model decides among the best few).
  /// 1: the ILP's optimum, as MCT.
  int64_t verify = 8;
  SourceRange loc;
  const std::optional<Budget> &budget(Resource r) const;
  std::optional<Budget> &budget(Resource r);
  bool anyBudget() const { return weightsMemory || activationMemory || totalMemory || bops; }
};

/// The trainable quantizers `tpcc finetune` wraps tensors in
/// (docs/finetune.md): straight-through (thresholds train) or LSQ (steps
/// train).
enum class FinetuneQuantizer { Ste, Lsq };
const char *toString(FinetuneQuantizer q); ///< `ste`, `lsq`
std::optional<FinetuneQuantizer> parseFinetuneQuantizer(llvm::StringRef s);

/// A recipe's `finetune` block: the training options of `tpcc finetune`
/// (its flags win).
struct Finetune {
  int64_t epochs = 1;
  int64_t batch = 32;
  double lr = 1e-4;
  double weightDecay = 1e-4; ///< decoupled (AdamW), on the kernels
  FinetuneQuantizer quantizer = FinetuneQuantizer::Ste;
  int64_t seed = 0; ///< the sample order
};

/// How `tpcc quantize` rounds kernels beyond nearest (docs/quantize.md, "GPTQ"
/// and "Second-order rounding"): GPTQ's trained soft rounding or
/// straight-through rounding against the float model, or layer-wise
/// second-order rounding (no backprop).
enum class GptqMethod { SoftRounding, Ste, SecondOrder };
const char *toString(GptqMethod m); ///< `soft_rounding`, `ste`, `second_order`
std::optional<GptqMethod> parseGptqMethod(llvm::StringRef s);

/// A recipe's `gptq` block (`--gptq` and `--gptq-epochs` win over it).
struct Gptq {
  std::optional<GptqMethod> method; ///< none: rounding to nearest
  // Second-order rounding.
  double dampening = 0.01; ///< of the mean diagonal of H
  bool actOrder = false;   ///< columns by decreasing H_ii
  // Soft rounding and STE (the defaults of MCT, docs/language.md §8.3).
  std::optional<int64_t> epochs; ///< required: the recipe's or --gptq-epochs
  double lr = 3e-2;              ///< Adam, on the rounding variables
  double biasLr = 1e-4;          ///< SGD with momentum 0.9; 0: biases stay
  bool hessianWeights = true;
  /// λ of soft rounding's regularizer; unset: 0.01, or 10 with
  /// per_sample_loss.
  std::optional<double> regularization;
  bool perSampleLoss = false;     ///< MCT 2.4's per-sample Hessian loss
  bool gradualActivation = false; ///< MCT 2.4's gradual activation quantization
};

struct Recipe {
  std::string name;
  std::optional<std::string> parent;
  ThresholdMethod activationThreshold = ThresholdMethod::MSE;
  /// `activation_threshold: [a, b, ...]`: each is tried and the one whose
  /// outputs keep the most signal is kept (quant/pipeline/ThresholdChoice.h);
  /// empty for one method. activationThreshold is the first.
  std::vector<ThresholdMethod> activationThresholdChoices;
  ThresholdMethod weightsThreshold = ThresholdMethod::MSE;
  double lp = 2;
  bool biasCorrection = true;
  struct {
    bool enabled = false;
    double ratio = 0.25;
    bool recomputeThreshold = false;
  } shiftNegative;
  bool reluUnboundCorrection = false;
  bool activationChannelEqualization = false;
  /// `smooth_quant`: activation outliers moved into the next linear layers'
  /// weights (docs/quantize.md, "Corrections"); alpha absent: searched.
  struct Scaling {
    bool enabled = false;
    std::optional<double> alpha;
  } smoothQuant;
  /// `awq`: activation-aware scaling of weight-only layers' input channels
  /// (docs/quantize.md, "Corrections"); alpha absent: searched.
  Scaling awq;
  bool inputScaling = false;
  double zThreshold = 1.0 / 0.0;              ///< inf: no outlier removal
  double minThreshold = kDefaultMinThreshold; ///< `min_threshold`
  // Overrides of the platform's choices (absent: the platform decides).
  std::optional<int> activationBits, weightsBits;
  std::optional<QuantMethod> activationMethod, weightsMethod;
  std::optional<bool> perChannel, quantizeActivations, quantizeWeights;
  MixedPrecision mixedPrecision;
  Finetune finetune;
  Gptq gptq;
  SourceRange loc;
};

/// Everything one compilation resolved, in declaration order (imports first).
struct Module {
  std::vector<Platform> platforms;
  std::vector<Framework> frameworks;
  std::vector<Capabilities> capabilities;
  std::vector<Recipe> recipes;

  const Platform *findPlatform(llvm::StringRef n) const;
  const Framework *findFramework(llvm::StringRef n) const;
  const Capabilities *findCapabilities(llvm::StringRef n) const;
  const Recipe *findRecipe(llvm::StringRef n) const;

  /// `p` and its parents, nearest first.
  std::vector<const Platform *> lineage(const Platform &p) const;
  /// The capabilities a plan for `p` uses: the one named `name` (it must bind
  /// `p` or a parent), else the only one that binds `p` or, failing that, its
  /// nearest parent that has any. Null after a diagnostic.
  const Capabilities *capabilitiesFor(const Platform &p, llvm::StringRef name,
                                      DiagnosticEngine &diags) const;
};

} // namespace tpcc::ir

#endif

//===- Quantizers.h - Trainable quantizers (docs/finetune.md) -*- C++ -*-===//
//
// A trainable quantizer wraps one quantized weight or activation. Its config
// is what MCT's trainable infrastructure derives from the platform: target,
// method, bits, enabled, channel axis, per-channel, min threshold, the
// current parameters (the PTQ grids) and the mixed-precision candidates.
// It has a forward (fake quantization onto its grid), a backward (the
// gradient of its input under the quantizer's straight-through rule, and of
// its trainable parameters, accumulated) and a finalize that turns what it
// learned back into grids of the plan (and, for soft rounding, hard-rounded
// weights), so the existing QDQ rewrite and `tpcc apply` give the model.
//
// Kinds (the registry, trainableQuantizer, is keyed like MCT's
// get_trainable_quantizer_class by target, method and kind):
// - STE (default). Weights: w_q = Δ clip(rnd(w/Δ)), Δ fixed, ∂w_q/∂w = 1.
//   Activations, symmetric and power-of-two: threshold t trains, Δ =
//   t / 2^(n-s), ∂q/∂x = 1, ∂q/∂t = (clip(rnd(x/Δ)) - x/Δ) / 2^(n-s); uniform:
//   the range (a, b) trains through the zero-exact grid (∂q/∂x = 1 inside,
//   ∂q/∂a = 1 below, ∂q/∂b = 1 above). Power-of-two thresholds are rounded
//   up to a power of two at finalize.
// - LSQ. The step Δ trains (weights: per channel) with its gradient scaled
//   by g = 1 / sqrt(q_max N), N the threshold count (weights) or channels
//   (activations: 1); ∂q/∂x = 1 inside the grid and 0 outside; ∂q/∂Δ =
//   clip(rnd(x/Δ)) - x/Δ inside, q_min or q_max outside. Uniform LSQ trains
//   (a, b) on x - a (Δ = (b - a) / (2^n - 1)).
// - Soft rounding (weights; GPTQ, docs/quantize.md): W_q = Δ clip(⌊W/Δ⌋ + h),
//   h = clip(1.2 σ(α) - 0.1, 0, 1) per element, α initialised so that h is
//   the fractional part; the float weights stay fixed; the regularizer
//   λ Σ (1 - |2h - 1|^β) pushes h to 0 or 1; finalize rounds h at 0.5.
// - STE rounding (weights; GPTQ's option): a perturbation d per element
//   moves the rounded value by at most a step, W_q = Δ clip(rnd(rnd(W/Δ) +
//   clip(d, ±Δ)/Δ)), ∂W_q/∂d = 1; d starts at 0 (nearest rounding).
// LUT methods: weights keep their k-means tables (a fixed quantizer that
// passes gradients straight through); their activations train as above.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_LEARN_FINETUNE_QUANTIZERS_H
#define TPCC_QUANT_LEARN_FINETUNE_QUANTIZERS_H

#include "quant/core/format/NumberFormat.h"
#include "quant/core/grids/Grid.h"
#include "runtime/Tensor.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tpcc::quant {

enum class QuantizerTarget { Weights, Activation };
enum class QuantizerKind { Ste, Lsq, SoftRounding, SteRounding };

const char *toString(QuantizerKind k);
std::optional<QuantizerKind> parseQuantizerKind(llvm::StringRef s);

struct TrainableQuantizerConfig {
  QuantizerTarget target = QuantizerTarget::Activation;
  ir::QuantMethod method = ir::QuantMethod::Symmetric;
  int bits = 8;
  bool enabled = true;
  bool isSigned = true;
  /// Weights: the axis their channels run along, -1 per tensor.
  int64_t channelAxis = -1;
  bool perChannel() const { return channelAxis >= 0; }
  /// Weights in blocks: `block` indices along `blockAxis` share a grid
  /// (then one grid per block, in NumberFormat's order).
  int64_t block = 0, blockAxis = -1;
  /// How a tensor of `shape` falls into the grids.
  GroupLayout layout(const rt::Shape &shape) const {
    return block > 0 ? blockLayout(block, blockAxis, shape)
                     : groupLayout(grids.size(), channelAxis, shape);
  }
  double minThreshold = ir::kDefaultMinThreshold;
  /// The current parameters: one grid per channel, or one.
  std::vector<QuantGrid> grids;
  /// The mixed-precision candidates' bits (informational; the grid's bits
  /// are the chosen one).
  std::vector<int> candidateBits;
};

/// A trainable parameter: values and the gradients backward accumulates.
struct QuantizerParam {
  std::string name;
  std::vector<double> *value = nullptr, *grad = nullptr;
};

/// What finalize gives back.
struct FinalizedQuantizer {
  std::vector<QuantGrid> grids;
  /// Soft rounding: the hard-rounded weights (exact grid values).
  std::optional<std::vector<float>> weights;
};

class TrainableQuantizer {
public:
  explicit TrainableQuantizer(TrainableQuantizerConfig c) : cfg(std::move(c)) {}
  virtual ~TrainableQuantizer();
  const TrainableQuantizerConfig &config() const { return cfg; }
  virtual QuantizerKind kind() const = 0;

  /// y = the fake-quantized x (x's shape; per-channel grids along the
  /// config's axis).
  virtual rt::Tensor forward(const rt::Tensor &x) const = 0;
  /// dx for dy (x the forward's input); adds the parameters' gradients.
  virtual rt::Tensor backward(const rt::Tensor &x, const rt::Tensor &dy) = 0;
  /// The trainable parameters (none for STE weights).
  virtual std::vector<QuantizerParam> parameters() { return {}; }
  /// Zeroes the parameters' gradients.
  void zeroGrad();
  /// The learned grids (and weights); `w` is the float weight (soft rounding).
  virtual FinalizedQuantizer finalize(const rt::Tensor *w = nullptr) const = 0;

protected:
  TrainableQuantizerConfig cfg;
};

using QuantizerFactory = std::unique_ptr<TrainableQuantizer> (*)(const TrainableQuantizerConfig &);

/// The quantizer class for (target, method, kind), or null when there is
/// none (soft rounding of activations).
QuantizerFactory trainableQuantizer(QuantizerTarget target, ir::QuantMethod method,
                                    QuantizerKind kind);

/// A quantizer onto the config's grids exactly, nothing trainable,
/// gradients straight through (activations as the QDQ model computes them).
std::unique_ptr<TrainableQuantizer> fixedQuantizer(const TrainableQuantizerConfig &c);

/// Soft rounding's regularizer λ Σ (1 - |2h - 1|^β) over `q` (a
/// soft-rounding quantizer): its value, with its gradient added to α's.
double softRoundingRegularizer(TrainableQuantizer &q, double beta, double lambda);

} // namespace tpcc::quant

#endif

//===- FakeQuantModel.h - The QDQ model as it trains -------------*- C++ -*-===//
//
// What fine-tuning (Finetune.h) and gradient GPTQ (gptq/Gptq.h) both train:
// the corrected model copy the QDQ rewrite turns into the output, with every
// quantized kernel and activation of QuantizeResult::spec wrapped in a
// trainable quantizer (Quantizers.h). The forward fake-quantizes weights
// through the executor's `substitute` hook and activations through
// `transform`; biases the rewrite stores in int32 on the scale s_in s_w are
// rounded onto that grid (straight through), so the model that trains is the
// model that is written. The backward (runtime/grad) applies each
// quantizer's straight-through rule in gradient(). Activations that only
// move a quantized input's values (a MaxPool after a quantized Conv) stay
// tied to their input's grid.
//
// The caller owns the optimizer: it reads the float weights' gradients from
// Backprop::backward and the quantizers' from their parameters(), and calls
// refresh() after changing either. finish() writes what trained back.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_LEARN_FINETUNE_FAKEQUANTMODEL_H
#define TPCC_QUANT_LEARN_FINETUNE_FAKEQUANTMODEL_H

#include "quant/learn/finetune/Quantizers.h"
#include "quant/ptq/Quantizer.h"
#include "runtime/grad/Gradient.h"

#include <functional>
#include <memory>

namespace tpcc::quant {

/// One trained quantizer, for the report: the tensor it wraps, its config
/// (the grids as trained) and the parameters that trained.
struct TrainedQuantizer {
  std::string tensor;
  TrainableQuantizerConfig config;
  QuantizerKind kind = QuantizerKind::Ste;
  std::vector<std::string> parameters;
};

/// A float initializer that trains: a kernel (with its quantizer) or the
/// bias of a quantized kernel's node.
struct TrainingWeight {
  const graph::Value *value = nullptr;
  std::string node;   ///< the node that reads it (the first)
  unsigned input = 0; ///< as its input
  bool bias = false;
  size_t spec = 0;                               ///< its WeightQDQ (kernels)
  std::unique_ptr<TrainableQuantizer> quantizer; ///< kernels
  std::vector<double> w;                         ///< the master copy
  rt::Tensor current;                            ///< w as float, what the fake quantization reads
  rt::Tensor read;                               ///< what the model reads (fake-quantized)
};

/// A quantized activation with its quantizer.
struct TrainingActivation {
  const graph::Value *value = nullptr;
  size_t spec = 0; ///< its ActivationQDQ
  std::unique_ptr<TrainableQuantizer> quantizer;
  rt::Tensor input; ///< the last forward's unquantized value
};

struct FakeQuantOptions {
  QuantizerKind weights = QuantizerKind::Ste, activations = QuantizerKind::Ste;
  /// False: the activations keep their grids exactly (fixedQuantizer).
  bool trainActivations = true;
  /// False: constant operands (WeightQDQ::operand) keep their nearest
  /// rounding on their grids (fixedQuantizer); GPTQ trains kernels only.
  bool trainOperands = true;
  /// The recipe's `min_threshold`: no trained threshold goes below it.
  double minThreshold = ir::kDefaultMinThreshold;
};

class FakeQuantModel {
public:
  /// Wraps `model` (whose values `result.spec` names; `plan` gives each
  /// quantizer's mixed-precision candidates); `wrt` gets the float weights'
  /// values, whose gradients Backprop::backward returns in that order.
  /// Null after errors.
  static std::unique_ptr<FakeQuantModel> create(graph::Model &model, QuantizeResult &result,
                                                const plan::Plan &plan,
                                                const FakeQuantOptions &options,
                                                DiagnosticEngine &diags);

  rt::Executor &executor() { return *ex; }
  rt::grad::Backprop &backprop() { return *bp; }
  std::vector<TrainingWeight> weights;         ///< kernels and biases, as `wrt`
  std::vector<TrainingActivation> activations; ///< those that train

  /// Gradual activation quantization (algorithms.md 6): a quantized
  /// activation reads (1 - f) x + f Q(x); 1 (all quantized) by default.
  double activationMix = 1;

  /// Kernels read as finish() will write them (soft rounding's h rounded at
  /// 0.5) from the next refresh() on.
  bool hard = false;

  /// Fake-quantizes the weights and biases for the next run (after the
  /// caller changed them or the quantizers).
  void refresh();
  /// The hooks of a run of the fake-quantized model (valid while this
  /// model lives).
  rt::RunOptions runOptions();
  /// The gradient hook for Backprop::backward: each quantizer's
  /// straight-through rule (accumulating its parameters' gradients).
  rt::Tensor gradient(const graph::Value &v, rt::Tensor grad);
  /// Zeroes every quantizer's parameter gradients.
  void zeroGrad();
  /// Writes what trained back: the quantizers' grids into the spec (tied
  /// activations follow their input), the weights into the model and into
  /// `result` for the plan (kernels as trained values: soft rounding's
  /// hard-rounded ones; biases as corrected ones). Each quantizer is
  /// described in `trained` when given (weights, then activations).
  void finish(std::vector<TrainedQuantizer> *trained = nullptr);

private:
  FakeQuantModel(graph::Model &model, QuantizeResult &result) : model(model), result(result) {}
  QuantGrid gridNow(const graph::Value *v) const;

  graph::Model &model;
  QuantizeResult &result;
  std::unique_ptr<rt::Executor> ex;
  std::unique_ptr<rt::grad::Backprop> bp;
  std::vector<int> slotOf, actOf, specOf; ///< by value id, -1 for none
  std::vector<bool> tied;                 ///< by ActivationQDQ
  std::vector<bool> watched;
  /// A bias stored on the scale s_in s_w: the bias and kernel weights, and
  /// the kernel's node input whose grid is s_in.
  struct BiasLink {
    size_t bias, kernel;
    const graph::Value *input;
  };
  std::vector<BiasLink> biasLinks;
  std::function<const rt::Tensor *(const graph::Value &)> substituteHook;
  std::function<void(const graph::Value &, rt::Tensor &)> transformHook;
};

} // namespace tpcc::quant

#endif

//===- HessianTrace.h - Activation and weight Hessians (Hutchinson) -*- C++ -*-===//
//
// How much the model's output moves with each activation, as MCT measures it
// for mixed precision's `hessian` weighting (docs/quantize.md, "Mixed
// precision") and GPTQ's layer weights (docs/quantize.md, "GPTQ"): for
// activation a and the model's first output y, the trace of JᵀJ with J = ∂y/∂a,
// estimated with Hutchinson's method as E_v ‖∂(vᵀy)/∂a‖² over standard normal
// probes v. One forward pass per batch keeps the tape; each probe is one
// backward pass that gives every activation's gradient at once. Probes stop
// when no trace moved by more than `tolerance` (relative) after `minProbes`, or
// at `maxProbes`.
//
// The same probes give each weight's Hessian diagonal (of JᵀJ, J = ∂y/∂W)
// for the `hmse` weight threshold: E_v (∂(vᵀy)/∂w_i)² per element.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_CORE_STATS_HESSIANTRACE_H
#define TPCC_QUANT_CORE_STATS_HESSIANTRACE_H

#include "runtime/Executor.h"

#include <map>

namespace tpcc::quant {

struct HutchinsonOptions {
  int64_t maxProbes = 100, minProbes = 10;
  double tolerance = 1e-3;
  uint32_t seed = 0;
};

/// The Hessian trace of each of `points` (values of `ex`'s model), per
/// image, averaged over the images of `feeds`; `probes` gets the most
/// probes a batch took. With `perImage`, each image's traces too (one row
/// of points per image, in order; a point without a batch axis gives every
/// image of a batch its batch mean). Fails (with the operators named) when
/// an operator between the points and the output has no backward kernel.
LogicalResult activationHessianTraces(rt::Executor &ex,
                                      const std::vector<std::map<std::string, rt::Tensor>> &feeds,
                                      const std::vector<const graph::Value *> &points,
                                      const HutchinsonOptions &options, std::vector<double> &traces,
                                      int64_t &probes, DiagnosticEngine &diags,
                                      std::vector<std::vector<double>> *perImage = nullptr);

/// The Hessian diagonal of each element of each of `weights` (float
/// initializers of `ex`'s model), per image, averaged over the images of
/// `feeds`; the probes of a batch stop when each weight's sum settled.
LogicalResult weightHessianDiagonals(rt::Executor &ex,
                                     const std::vector<std::map<std::string, rt::Tensor>> &feeds,
                                     const std::vector<const graph::Value *> &weights,
                                     const HutchinsonOptions &options,
                                     std::vector<std::vector<float>> &diagonals, int64_t &probes,
                                     DiagnosticEngine &diags);

} // namespace tpcc::quant

#endif

//===- Solver.h - The bit-allocation ILP and its refinement -----*- C++ -*-===//
//
// Mixed precision's choice (docs/quantize.md, "Mixed precision") as a
// multiple-choice integer program: every layer l takes exactly one candidate c
// (binary x(l,c), sum_c x(l,c) = 1), the objective sum s(l,c) x(l,c) is
// minimised, and each budget is one or more constraints
//   constant + sum coef * x(l,c) + sum coef * x(l,c) * x(m,d) <= bound
// (a product term: a kernel's BOPs depend on its own weight bits and on the
// bits of the activation feeding it; it is linearised with one continuous y
// per pair of candidates of the two layers, sum_d y(c,d) = x(a,c) and
// sum_c y(c,d) = x(b,d): y is then exactly the product for binary x, whatever
// the coefficient's sign, and CBC proves such problems far faster than with
// y >= x + x' - 1). Pairs of candidates that cannot be chosen together (a
// producer's bits a consumer does not accept) are conflicts.
//
// solveAllocation solves it with COIN-OR CBC (one thread, a time limit, a fixed
// seed: the same problem gives the same choice). refineAllocation is the
// refinement of docs/quantize.md ("Mixed precision"): while some layer can move
// to a candidate whose weight and activation bits are both >= its current ones
// (not both equal) and every constraint still holds, upgrade the layer whose
// cheapest such move costs least (total, then weights, then activation
// resources).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_SEARCH_MIXED_SOLVER_H
#define TPCC_QUANT_SEARCH_MIXED_SOLVER_H

#include <functional>
#include <string>
#include <vector>

namespace tpcc::quant::mixed {

/// x(layer, candidate).
struct Choice {
  unsigned layer = 0, candidate = 0;
  bool operator==(const Choice &o) const { return layer == o.layer && candidate == o.candidate; }
};

/// constant + sum coef * x + sum coef * x * x' <= bound. Coefficients and the
/// constant are >= 0 (resources).
struct Constraint {
  std::string name; ///< "weights_memory", "activation_memory (cut 12)"...
  double constant = 0;
  std::vector<std::pair<Choice, double>> linear;
  struct Product {
    Choice a, b;
    double coef = 0;
  };
  std::vector<Product> products;
  double bound = 0;

  /// The left-hand side for `choice` (one candidate index per layer).
  double evaluate(const std::vector<unsigned> &choice) const;
};

struct AllocationProblem {
  /// cost[l][c]: the sensitivity of layer l at candidate c (>= 0); each
  /// layer has at least one candidate.
  std::vector<std::vector<double>> cost;
  std::vector<Constraint> constraints;
  /// Pairs that may not both be chosen.
  std::vector<std::pair<Choice, Choice>> conflicts;
  double timeLimitSeconds = 60;
  /// Stop when the best choice is proven within this fraction of the
  /// optimum (0: prove it optimal). Sensitivities are estimates: mixed
  /// precision asks 1e-6, which lets CBC stop at 1,000 layers in seconds.
  double relativeGap = 0;
  /// A choice to start from (empty: none). When it is feasible the solver
  /// begins with it, and a search the time limit stops before finding
  /// anything better returns it (TimeLimit).
  std::vector<unsigned> start;
};

struct AllocationResult {
  enum class Status {
    Optimal,    ///< proven optimal
    TimeLimit,  ///< the time limit stopped the search; `choice` is the best found
    Infeasible, ///< no choice meets every constraint (proven)
    NoSolution, ///< the time limit stopped the search before any solution
    SolverError ///< `message` says what the solver reported
  } status = Status::SolverError;
  std::vector<unsigned> choice; ///< per layer; empty unless Optimal or TimeLimit
  double objective = 0;
  double seconds = 0;
  std::string message;
};

/// True when `choice` meets every constraint (within 1e-9 relative) and no
/// conflict.
bool feasible(const AllocationProblem &p, const std::vector<unsigned> &choice);

/// Solves `p` with CBC. Deterministic.
AllocationResult solveAllocation(const AllocationProblem &p);

/// What refinement needs to know of a candidate.
struct CandidateBits {
  int weightBits = 0;     ///< 0: no weights
  int activationBits = 0; ///< 0: no quantized activation
};

/// Resources of a whole choice, compared lexicographically to pick the
/// cheapest upgrade (total, weights, activation).
struct ResourceKey {
  double total = 0, weights = 0, activation = 0;
  bool operator<(const ResourceKey &o) const;
};

/// Algorithms.md 5's refinement of `choice` (in place). `bits[l][c]` gives
/// each candidate's bit widths; `resources(choice)` the resources of a whole
/// choice. Returns how many upgrades it made.
unsigned
refineAllocation(const AllocationProblem &p, const std::vector<std::vector<CandidateBits>> &bits,
                 const std::function<ResourceKey(const std::vector<unsigned> &)> &resources,
                 std::vector<unsigned> &choice);

} // namespace tpcc::quant::mixed

#endif

//===- MixedSolverTest.cpp - The bit-allocation ILP and refinement --------===//
//
// Hand-solved instances (budgets, products, conflicts, infeasibility, ties),
// a brute-force cross-check of solveAllocation on random small instances, a
// large instance of the size real models give, and the refinement of
// docs/quantize.md ("Mixed precision") traced step by step.
//
//===----------------------------------------------------------------------===//
#include "quant/search/mixed/Solver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

using namespace tpcc::quant::mixed;
using Status = AllocationResult::Status;

namespace {

/// Every layer's candidates weigh `bits[c] * elements[l]`.
Constraint weightsBudget(const std::vector<double> &elements, const std::vector<double> &bits,
                         double bound) {
  Constraint k;
  k.name = "weights_memory";
  k.bound = bound;
  for (unsigned l = 0; l < elements.size(); ++l)
    for (unsigned c = 0; c < bits.size(); ++c)
      k.linear.push_back({{l, c}, bits[c] * elements[l]});
  return k;
}

double objectiveOf(const AllocationProblem &p, const std::vector<unsigned> &choice) {
  double s = 0;
  for (size_t l = 0; l < choice.size(); ++l)
    s += p.cost[l][choice[l]];
  return s;
}

/// The cheapest feasible choice by enumeration; empty when none.
std::vector<unsigned> bruteForce(const AllocationProblem &p) {
  std::vector<unsigned> choice(p.cost.size(), 0), best;
  double bestCost = 0;
  for (;;) {
    if (feasible(p, choice)) {
      double c = objectiveOf(p, choice);
      if (best.empty() || c < bestCost) {
        best = choice;
        bestCost = c;
      }
    }
    size_t l = 0;
    while (l < choice.size() && ++choice[l] == p.cost[l].size())
      choice[l++] = 0;
    if (l == choice.size())
      return best;
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Evaluation, feasibility, keys
//===----------------------------------------------------------------------===//

TEST(MixedSolverEvaluate, LinearAndProductTerms) {
  Constraint k;
  k.constant = 10;
  k.linear = {{{0, 0}, 8}, {{0, 1}, 4}, {{1, 0}, 16}, {{1, 1}, 2}};
  k.products = {{{0, 0}, {1, 0}, 100}, {{0, 1}, {1, 0}, 50}};
  EXPECT_EQ(k.evaluate({0, 0}), 10 + 8 + 16 + 100);
  EXPECT_EQ(k.evaluate({1, 0}), 10 + 4 + 16 + 50);
  EXPECT_EQ(k.evaluate({0, 1}), 10 + 8 + 2);
  EXPECT_EQ(k.evaluate({1, 1}), 10 + 4 + 2);
}

TEST(MixedSolverFeasible, RelativeAndAbsoluteTolerance) {
  AllocationProblem p;
  p.cost = {{0, 0}};
  Constraint k;
  k.linear = {{{0, 0}, 1e9 + 0.5}, {{0, 1}, 1e9 + 2}};
  k.bound = 1e9; // allowance 1e-9 * 1e9 + 1e-9 = 1 + 1e-9
  p.constraints = {k};
  EXPECT_TRUE(feasible(p, {0}));
  EXPECT_FALSE(feasible(p, {1}));
  // Bound 0: only the absolute 1e-9.
  p.constraints[0].bound = 0;
  p.constraints[0].linear = {{{0, 0}, 0.5e-9}, {{0, 1}, 2e-9}};
  EXPECT_TRUE(feasible(p, {0}));
  EXPECT_FALSE(feasible(p, {1}));
}

TEST(MixedSolverFeasible, ConflictsAndShape) {
  AllocationProblem p;
  p.cost = {{0, 0}, {0, 0, 0}};
  p.conflicts = {{{0, 1}, {1, 2}}};
  EXPECT_TRUE(feasible(p, {0, 2}));
  EXPECT_TRUE(feasible(p, {1, 1}));
  EXPECT_FALSE(feasible(p, {1, 2}));
  EXPECT_FALSE(feasible(p, {0}));       // one layer missing
  EXPECT_FALSE(feasible(p, {0, 3}));    // no candidate 3
  EXPECT_FALSE(feasible(p, {0, 0, 0})); // one layer too many
}

TEST(MixedSolverKey, Lexicographic) {
  EXPECT_TRUE((ResourceKey{1, 9, 9} < ResourceKey{2, 0, 0}));
  EXPECT_TRUE((ResourceKey{2, 1, 9} < ResourceKey{2, 2, 0}));
  EXPECT_TRUE((ResourceKey{2, 2, 0} < ResourceKey{2, 2, 1}));
  EXPECT_FALSE((ResourceKey{2, 2, 1} < ResourceKey{2, 2, 1}));
  EXPECT_FALSE((ResourceKey{3, 0, 0} < ResourceKey{2, 5, 5}));
}

//===----------------------------------------------------------------------===//
// Hand-solved instances
//===----------------------------------------------------------------------===//

TEST(MixedSolver, WeightsBudgetThreeLayers) {
  // Candidates 8/4/2 bits, layers of 1/2/3 elements, 20 bits of weights.
  // Feasible choices by cost: (1,2,1) = 1 + 6 + 0.5 = 7.5 using exactly 20
  // bits (4 + 4 + 12), then (2,2,1) = 8.5 and (0,2,2) = (1,1,2) = 9.
  AllocationProblem p;
  p.cost = {{0, 1, 2}, {0, 5, 6}, {0, 0.5, 3}};
  p.constraints = {weightsBudget({1, 2, 3}, {8, 4, 2}, 20)};
  AllocationResult r = solveAllocation(p);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  EXPECT_EQ(r.choice, (std::vector<unsigned>{1, 2, 1}));
  EXPECT_DOUBLE_EQ(r.objective, 7.5);
  EXPECT_GE(r.seconds, 0);
  // 19 bits: the optimum is (2,2,1) = 8.5 (2 + 4 + 12 = 18 bits).
  p.constraints[0].bound = 19;
  r = solveAllocation(p);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  EXPECT_EQ(r.choice, (std::vector<unsigned>{2, 2, 1}));
  EXPECT_DOUBLE_EQ(r.objective, 8.5);
}

TEST(MixedSolver, ConstantAndFixedLayers) {
  // Layer 1 has one candidate (fixed, 6 bits) and the constant is 10 (fixed
  // layers elsewhere): 10 + 6 + layers 0 and 2 <= 26 leaves 10 bits for
  // layers 0 (8/4 bits) and 2 (4/2 bits): (1,0,0) = 8 bits, cost 2 + 0;
  // (0,0,1) = 10 bits, cost 0 + 3; so (1,0,0).
  AllocationProblem p;
  p.cost = {{0, 2}, {7}, {0, 3}};
  Constraint k;
  k.constant = 10;
  k.bound = 26;
  k.linear = {{{0, 0}, 8}, {{0, 1}, 4}, {{1, 0}, 6}, {{2, 0}, 4}, {{2, 1}, 2}};
  p.constraints = {k};
  AllocationResult r = solveAllocation(p);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  EXPECT_EQ(r.choice, (std::vector<unsigned>{1, 0, 0}));
  EXPECT_DOUBLE_EQ(r.objective, 9); // 2 + 7 + 0
}

TEST(MixedSolver, EveryLayerFixed) {
  AllocationProblem p;
  p.cost = {{1.5}, {2}};
  Constraint k;
  k.constant = 3;
  k.linear = {{{0, 0}, 4}, {{1, 0}, 5}};
  k.bound = 12;
  p.constraints = {k};
  AllocationResult r = solveAllocation(p);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  EXPECT_EQ(r.choice, (std::vector<unsigned>{0, 0}));
  EXPECT_DOUBLE_EQ(r.objective, 3.5);
  p.constraints[0].bound = 11.5; // 3 + 4 + 5 = 12 > 11.5
  r = solveAllocation(p);
  EXPECT_EQ(r.status, Status::Infeasible);
  EXPECT_TRUE(r.choice.empty());
}

TEST(MixedSolver, Infeasible) {
  // The smallest choice (2 bits everywhere) needs 2 + 4 + 6 = 12 bits.
  AllocationProblem p;
  p.cost = {{0, 1, 2}, {0, 5, 6}, {0, 0.5, 3}};
  p.constraints = {weightsBudget({1, 2, 3}, {8, 4, 2}, 11.9)};
  AllocationResult r = solveAllocation(p);
  EXPECT_EQ(r.status, Status::Infeasible) << r.message;
  EXPECT_TRUE(r.choice.empty());
  // Exactly 12 fits.
  p.constraints[0].bound = 12;
  r = solveAllocation(p);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  EXPECT_EQ(r.choice, (std::vector<unsigned>{2, 2, 2}));
  EXPECT_DOUBLE_EQ(r.objective, 11);
}

TEST(MixedSolver, BoundUpToRounding) {
  // 0.1 + 0.2 = 0.30000000000000004 > 0.3: within feasible()'s slack, so
  // the cheap choice (0, 0) is taken; the expensive (1, 1) needs 0.
  AllocationProblem p;
  p.cost = {{0, 1}, {0, 1}};
  Constraint k;
  k.linear = {{{0, 0}, 0.1}, {{1, 0}, 0.2}};
  k.bound = 0.3;
  p.constraints = {k};
  AllocationResult r = solveAllocation(p);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  EXPECT_EQ(r.choice, (std::vector<unsigned>{0, 0}));
  // Bits: 1e9 + 0.4 against 1e9 (slack 1 + 1e-9) still fits; 1e9 + 3 does not.
  p.constraints[0].linear = {{{0, 0}, 6e8 + 0.4}, {{1, 0}, 4e8}};
  p.constraints[0].bound = 1e9;
  r = solveAllocation(p);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  EXPECT_EQ(r.choice, (std::vector<unsigned>{0, 0}));
  p.constraints[0].linear[0].second = 6e8 + 3;
  r = solveAllocation(p);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  EXPECT_EQ(r.choice, (std::vector<unsigned>{0, 1}));
  EXPECT_DOUBLE_EQ(r.objective, 1);
}

TEST(MixedSolver, ProductTermsBops) {
  // Layer 0 is an activation (8 or 4 bits), layer 1 a kernel (8 or 4 weight
  // bits) reading it, MAC 1: BOPs = a * w: 64, 32 (8x4), 32 (4x8), 16.
  // Bound 40: (0,1) costs 3, (1,0) costs 1, (1,1) costs 4 -> (1,0).
  AllocationProblem p;
  p.cost = {{0, 1}, {0, 3}};
  Constraint bops;
  bops.name = "bops";
  bops.bound = 40;
  bops.products = {
      {{0, 0}, {1, 0}, 64}, {{0, 0}, {1, 1}, 32}, {{0, 1}, {1, 0}, 32}, {{0, 1}, {1, 1}, 16}};
  p.constraints = {bops};
  AllocationResult r = solveAllocation(p);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  EXPECT_EQ(r.choice, (std::vector<unsigned>{1, 0}));
  EXPECT_DOUBLE_EQ(r.objective, 1);
  // Make the activation expensive: (0,1) at 3 beats (1,0) at 10.
  p.cost[0][1] = 10;
  r = solveAllocation(p);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  EXPECT_EQ(r.choice, (std::vector<unsigned>{0, 1}));
  // Bound 16: only (1,1).
  p.constraints[0].bound = 16;
  r = solveAllocation(p);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  EXPECT_EQ(r.choice, (std::vector<unsigned>{1, 1}));
  EXPECT_DOUBLE_EQ(r.objective, 13);
}

TEST(MixedSolver, ProductWithFixedSide) {
  // Layer 0 (fixed, 8-bit activation) feeds kernel 1 (8/4/2 weight bits),
  // MAC 3: BOPs = 24 w; plus a linear 100 for the other kernel. Bound 220:
  // 24 w <= 120 -> w <= 5 -> 4 bits is the best allowed.
  AllocationProblem p;
  p.cost = {{0}, {0, 1, 5}};
  Constraint bops;
  bops.constant = 100;
  bops.bound = 220;
  bops.products = {{{0, 0}, {1, 0}, 192}, {{0, 0}, {1, 1}, 96}, {{1, 2}, {0, 0}, 48}};
  p.constraints = {bops};
  AllocationResult r = solveAllocation(p);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  EXPECT_EQ(r.choice, (std::vector<unsigned>{0, 1}));
}

TEST(MixedSolver, Conflicts) {
  // Unconstrained, (0,0) costs 0; it conflicts, so (0,1) at 1 beats (1,0) at 2.
  AllocationProblem p;
  p.cost = {{0, 2}, {0, 1}};
  p.conflicts = {{{0, 0}, {1, 0}}};
  AllocationResult r = solveAllocation(p);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  EXPECT_EQ(r.choice, (std::vector<unsigned>{0, 1}));
  EXPECT_DOUBLE_EQ(r.objective, 1);
  // Forbid (0,1) as well: (1,0) at 2.
  p.conflicts.push_back({{1, 1}, {0, 0}});
  r = solveAllocation(p);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  EXPECT_EQ(r.choice, (std::vector<unsigned>{1, 0}));
  // And (1,0), (1,1): nothing left.
  p.conflicts.push_back({{0, 1}, {1, 0}});
  p.conflicts.push_back({{0, 1}, {1, 1}});
  r = solveAllocation(p);
  EXPECT_EQ(r.status, Status::Infeasible);
  // A conflict with a fixed layer's only candidate removes the other side.
  AllocationProblem q;
  q.cost = {{0, 1, 2}, {5}};
  q.conflicts = {{{1, 0}, {0, 0}}};
  r = solveAllocation(q);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  EXPECT_EQ(r.choice, (std::vector<unsigned>{1, 0}));
}

TEST(MixedSolver, TiesPreferTheLowerIndex) {
  // No constraint, equal costs: the lower index (more bits) everywhere.
  AllocationProblem p;
  p.cost = {{1, 1, 1}, {0, 0}, {2, 2, 2, 2}};
  AllocationResult r = solveAllocation(p);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  EXPECT_EQ(r.choice, (std::vector<unsigned>{0, 0, 0}));
  // Candidate 0 does not fit; 1 and 2 tie: 1.
  p.cost = {{0, 3, 3}, {0, 1}};
  p.constraints = {weightsBudget({1, 1}, {8, 4, 2}, 6)};
  p.constraints[0].linear.resize(3); // layer 1 weighs nothing
  r = solveAllocation(p);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  EXPECT_EQ(r.choice, (std::vector<unsigned>{1, 0}));
}

TEST(MixedSolver, MalformedProblems) {
  AllocationProblem p;
  p.cost = {{0, 1}, {}};
  AllocationResult r = solveAllocation(p);
  EXPECT_EQ(r.status, Status::SolverError);
  EXPECT_NE(r.message.find("layer 1 has no candidate"), std::string::npos) << r.message;
  p.cost = {{0, 1}, {0}};
  p.constraints = {weightsBudget({1, 1}, {8, 4, 2}, 12)}; // candidate 2 does not exist
  r = solveAllocation(p);
  EXPECT_EQ(r.status, Status::SolverError);
  EXPECT_TRUE(r.choice.empty());
  p.cost = {{0, NAN}, {0}};
  p.constraints.clear();
  r = solveAllocation(p);
  EXPECT_EQ(r.status, Status::SolverError);
  EXPECT_NE(r.message.find("x(0,1) is not finite"), std::string::npos) << r.message;
  // An infinite bound is no constraint; -inf none can meet.
  p.cost = {{0, 1}, {0}};
  p.constraints = {weightsBudget({1, 1}, {8, 4}, INFINITY)};
  r = solveAllocation(p);
  EXPECT_EQ(r.status, Status::Optimal);
  EXPECT_EQ(r.choice, (std::vector<unsigned>{0, 0}));
  p.constraints[0].bound = -INFINITY;
  r = solveAllocation(p);
  EXPECT_EQ(r.status, Status::Infeasible);
  // No layers: nothing to choose.
  r = solveAllocation(AllocationProblem{});
  EXPECT_EQ(r.status, Status::Optimal);
  EXPECT_TRUE(r.choice.empty());
}

//===----------------------------------------------------------------------===//
// Random instances
//===----------------------------------------------------------------------===//

namespace {

/// 2-6 layers of 1-4 candidates, 1-3 constraints with linear and product
/// terms and a constant, 0-2 conflicts. `wide`: costs over 1e-8 .. 1e3 and
/// resources up to 1e9, as real models give.
AllocationProblem randomInstance(std::mt19937 &rng, bool wide) {
  auto uniform = [&](double a, double b) { return std::uniform_real_distribution<>(a, b)(rng); };
  auto pick = [&](unsigned a, unsigned b) { return std::uniform_int_distribution<>(a, b)(rng); };
  AllocationProblem p;
  p.cost.resize(pick(2, 6));
  for (auto &layer : p.cost) {
    layer.resize(pick(1, 4));
    for (double &c : layer)
      c = wide ? std::pow(10, uniform(-8, 3)) : uniform(0, 1);
  }
  auto anyChoice = [&]() {
    unsigned l = pick(0, p.cost.size() - 1);
    return Choice{l, unsigned(pick(0, p.cost[l].size() - 1))};
  };
  auto resource = [&]() { return wide ? std::pow(10, uniform(0, 9)) : uniform(0, 10); };
  unsigned nConstraints = pick(1, 3);
  for (unsigned k = 0; k < nConstraints; ++k) {
    Constraint ck;
    ck.name = "k" + std::to_string(k);
    ck.constant = pick(0, 1) ? resource() : 0;
    for (unsigned l = 0; l < p.cost.size(); ++l)
      for (unsigned c = 0; c < p.cost[l].size(); ++c)
        if (pick(0, 3))
          ck.linear.push_back({{l, c}, resource()});
    for (unsigned n = pick(0, 3); n > 0; --n)
      ck.products.push_back({anyChoice(), anyChoice(), resource()});
    p.constraints.push_back(ck);
  }
  for (unsigned n = pick(0, 2); n > 0; --n)
    p.conflicts.push_back({anyChoice(), anyChoice()});
  // Bounds between the smallest and largest left-hand side over all choices
  // (a little below the smallest now and then: infeasible instances), but
  // not within twice feasible()'s slack (1e-9 relative) of any choice's:
  // there CBC and feasible() may disagree, by design.
  for (Constraint &ck : p.constraints) {
    std::vector<double> lhs;
    std::vector<unsigned> choice(p.cost.size(), 0);
    for (;;) {
      lhs.push_back(ck.evaluate(choice));
      size_t l = 0;
      while (l < choice.size() && ++choice[l] == p.cost[l].size())
        choice[l++] = 0;
      if (l == choice.size())
        break;
    }
    double lo = *std::min_element(lhs.begin(), lhs.end());
    double hi = *std::max_element(lhs.begin(), lhs.end());
    auto ambiguous = [&](double bound) {
      return std::any_of(lhs.begin(), lhs.end(), [&](double v) {
        return std::fabs(v - bound) <= 2 * (1e-9 * std::fabs(bound) + 1e-9);
      });
    };
    double range = std::max(hi - lo, 1e-6 * std::fabs(lo) + 1e-6);
    do
      ck.bound = lo + uniform(-0.1, 1) * range;
    while (ambiguous(ck.bound));
  }
  return p;
}

} // namespace

TEST(MixedSolver, BruteForceCrossCheck) {
  std::mt19937 rng(20240614);
  unsigned feasibleCount = 0, infeasibleCount = 0;
  for (int i = 0; i < 200; ++i) {
    AllocationProblem p = randomInstance(rng, i % 2 == 1);
    std::vector<unsigned> best = bruteForce(p);
    AllocationResult r = solveAllocation(p);
    if (best.empty()) {
      ++infeasibleCount;
      EXPECT_EQ(r.status, Status::Infeasible) << "instance " << i << ": " << r.message;
      continue;
    }
    ++feasibleCount;
    ASSERT_EQ(r.status, Status::Optimal) << "instance " << i << ": " << r.message;
    EXPECT_TRUE(feasible(p, r.choice)) << "instance " << i;
    double want = objectiveOf(p, best);
    EXPECT_NEAR(r.objective, want, 1e-9 * std::fabs(want)) << "instance " << i;
    EXPECT_DOUBLE_EQ(r.objective, objectiveOf(p, r.choice));
  }
  // Both kinds occur.
  EXPECT_GT(feasibleCount, 100u);
  EXPECT_GT(infeasibleCount, 5u);
}

namespace {

/// `n` layers x 3 candidates (8/4/2 bits, weights and activations) with
/// sensitivities over 1e-8 .. 1e2 and resources up to 1e9 bits: a weights
/// budget and one activation-memory constraint per cut of 3 live tensors;
/// with `bopsFraction` > 0 also a BOPs budget with a product per kernel and
/// the activation it reads (that fraction of the all-8-bit BOPs).
AllocationProblem largeInstance(unsigned n, double bopsFraction) {
  std::mt19937 rng(7);
  auto uniform = [&](double a, double b) { return std::uniform_real_distribution<>(a, b)(rng); };
  const double bits[3] = {8, 4, 2};
  AllocationProblem p;
  std::vector<double> weights(n), acts(n);
  for (unsigned l = 0; l < n; ++l) {
    double s = std::pow(10, uniform(-8, 1));
    p.cost.push_back({s, s * uniform(2, 10), s * uniform(20, 100)});
    weights[l] = std::round(std::pow(10, uniform(3, 7)));
    acts[l] = std::round(std::pow(10, uniform(3, 6)));
  }
  Constraint w;
  w.name = "weights_memory";
  double wMax = 0;
  for (unsigned l = 0; l < n; ++l) {
    for (unsigned c = 0; c < 3; ++c)
      w.linear.push_back({{l, c}, weights[l] * bits[c]});
    wMax += weights[l] * 8;
  }
  w.bound = 0.45 * wMax;
  p.constraints.push_back(w);
  for (unsigned cut = 0; cut + 2 < n; ++cut) {
    Constraint a;
    a.name = "activation_memory (cut " + std::to_string(cut) + ")";
    double aMax = 0;
    for (unsigned l = cut; l < cut + 3; ++l) {
      for (unsigned c = 0; c < 3; ++c)
        a.linear.push_back({{l, c}, acts[l] * bits[c]});
      aMax += acts[l] * 8;
    }
    a.bound = 0.6 * aMax;
    p.constraints.push_back(a);
  }
  if (bopsFraction > 0) {
    Constraint bops;
    bops.name = "bops";
    double bMax = 0;
    for (unsigned l = 1; l < n; ++l) {
      double mac = weights[l] * 50;
      for (unsigned c = 0; c < 3; ++c)
        for (unsigned d = 0; d < 3; ++d)
          bops.products.push_back({{l, c}, {l - 1, d}, mac * bits[c] * bits[d]});
      bMax += mac * 64;
    }
    bops.bound = bopsFraction * bMax;
    p.constraints.push_back(bops);
  }
  return p;
}

/// How many layers took each candidate.
std::vector<unsigned> histogram(const std::vector<unsigned> &choice) {
  std::vector<unsigned> at(3, 0);
  for (unsigned c : choice)
    ++at[c];
  return at;
}

} // namespace

TEST(MixedSolver, LargeInstance) {
  AllocationProblem p = largeInstance(1000, 0);
  AllocationResult r = solveAllocation(p);
  std::printf("[ info     ] 1000 layers x 3 candidates, %zu constraints: %.3f s\n",
              p.constraints.size(), r.seconds);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  ASSERT_EQ(r.choice.size(), 1000u);
  EXPECT_TRUE(feasible(p, r.choice));
  // The budgets bind: neither all 8 bits nor all 2 bits.
  std::vector<unsigned> at = histogram(r.choice);
  EXPECT_GT(at[0], 0u);
  EXPECT_LT(at[0], 1000u);
  EXPECT_GT(at[1] + at[2], 0u);
  // Determinism: the same problem gives the same choice.
  AllocationResult again = solveAllocation(p);
  ASSERT_EQ(again.status, Status::Optimal) << again.message;
  EXPECT_EQ(again.choice, r.choice);
  EXPECT_EQ(again.objective, r.objective);
}

TEST(MixedSolver, BopsInstance) {
  // 120 kernels, a binding BOPs budget (12% of all-8-bit) on top of the
  // memory budgets: 1071 products.
  AllocationProblem p = largeInstance(120, 0.12);
  AllocationResult r = solveAllocation(p);
  std::printf("[ info     ] 120 layers with BOPs, %zu products: %.3f s\n",
              p.constraints.back().products.size(), r.seconds);
  ASSERT_EQ(r.status, Status::Optimal) << r.message;
  EXPECT_TRUE(feasible(p, r.choice));
  // Without the BOPs budget the optimum breaks it: it binds.
  AllocationProblem free = largeInstance(120, 0);
  AllocationResult rf = solveAllocation(free);
  ASSERT_EQ(rf.status, Status::Optimal) << rf.message;
  EXPECT_GT(p.constraints.back().evaluate(rf.choice), p.constraints.back().bound);
  EXPECT_GT(r.objective, rf.objective);
}

TEST(MixedSolver, TimeLimit) {
  // 300 kernels under a binding BOPs budget take CBC seconds; with 0.2 s it
  // stops early. Whether it has a solution by then depends on the machine;
  // whatever it reports must be consistent.
  AllocationProblem p = largeInstance(300, 0.12);
  p.timeLimitSeconds = 0.2;
  AllocationResult r = solveAllocation(p);
  std::printf("[ info     ] 300 layers with BOPs, 0.2 s limit: status %d after %.3f s\n",
              int(r.status), r.seconds);
  switch (r.status) {
  case Status::Optimal:
  case Status::TimeLimit:
    EXPECT_TRUE(feasible(p, r.choice));
    EXPECT_DOUBLE_EQ(r.objective, objectiveOf(p, r.choice));
    break;
  case Status::NoSolution:
    EXPECT_TRUE(r.choice.empty());
    EXPECT_NE(r.message, "");
    break;
  default:
    ADD_FAILURE() << "status " << int(r.status) << ": " << r.message;
  }
}

TEST(MixedSolver, Deterministic) {
  std::mt19937 rng(99);
  for (int i = 0; i < 20; ++i) {
    AllocationProblem q = randomInstance(rng, i % 2 == 1);
    AllocationResult x = solveAllocation(q), y = solveAllocation(q);
    EXPECT_EQ(x.status, y.status);
    EXPECT_EQ(x.choice, y.choice);
  }
}

TEST(MixedSolver, Silent) {
  // The tool's stdout is parsed: CBC must print nothing, solving or not.
  AllocationProblem p = largeInstance(50, 0.12);
  AllocationProblem infeasible = p;
  infeasible.constraints[0].bound = 0;
  testing::internal::CaptureStdout();
  AllocationResult r = solveAllocation(p);
  AllocationResult ri = solveAllocation(infeasible);
  std::fflush(stdout);
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(r.status, Status::Optimal);
  EXPECT_EQ(ri.status, Status::Infeasible);
  EXPECT_EQ(out, "");
}

//===----------------------------------------------------------------------===//
// Refinement
//===----------------------------------------------------------------------===//

namespace {

/// Weights only: candidates 8/4/2 bits, resources = total weight bits.
struct WeightsOnly {
  std::vector<double> elements;
  std::vector<std::vector<CandidateBits>> bits() const {
    return std::vector<std::vector<CandidateBits>>(elements.size(), {{8, 0}, {4, 0}, {2, 0}});
  }
  ResourceKey operator()(const std::vector<unsigned> &choice) const {
    const double b[3] = {8, 4, 2};
    double w = 0;
    for (size_t l = 0; l < choice.size(); ++l)
      w += elements[l] * b[choice[l]];
    return {w, w, 0};
  }
};

} // namespace

TEST(MixedSolverRefine, UpgradesCheapestLayerFirst) {
  // Layers of 3/1/2 elements, 30 bits, all at 2 bits (12 bits). Traced:
  //  1. moves to 18 (L0->4), 30 (L0->8), 14 (L1->4), 18, 16, 24: L1->4 (14)
  //  2. L0->4 20, L1->8 18, L2->4 18, L2->8 26: tie at 18 -> lower layer, L1->8
  //  3. L0->4 24, L2->4 22, L2->8 30: L2->4 (22)
  //  4. L0->4 28, L2->8 30: L0->4 (28)
  //  5. L0->8 40, L2->8 36: over 30, stop.
  WeightsOnly res{{3, 1, 2}};
  AllocationProblem p;
  p.cost.assign(3, {0, 1, 2});
  p.constraints = {weightsBudget(res.elements, {8, 4, 2}, 30)};
  std::vector<unsigned> choice = {2, 2, 2};
  EXPECT_EQ(refineAllocation(p, res.bits(), res, choice), 4u);
  EXPECT_EQ(choice, (std::vector<unsigned>{1, 0, 1}));
  EXPECT_TRUE(feasible(p, choice));
  EXPECT_EQ(res(choice).total, 28);
  // Nothing is left to do.
  EXPECT_EQ(refineAllocation(p, res.bits(), res, choice), 0u);
  // 17 bits: 1. L1->4 (14; L2->4 gives 16, the rest is over), then every
  // move (20, 18, 18) is over: one upgrade.
  p.constraints[0].bound = 17;
  choice = {2, 2, 2};
  EXPECT_EQ(refineAllocation(p, res.bits(), res, choice), 1u);
  EXPECT_EQ(choice, (std::vector<unsigned>{2, 1, 2}));
}

TEST(MixedSolverRefine, BothBitWidthsMustNotDecrease) {
  // Candidates (w, a): (8,8), (8,4), (4,8), (4,4). From (8,4) only (8,8)
  // qualifies ((4,8) lowers the weights); from (4,4) all three do.
  std::vector<CandidateBits> cands = {{8, 8}, {8, 4}, {4, 8}, {4, 4}};
  AllocationProblem p;
  p.cost = {{0, 1, 2, 3}, {0, 1}};
  std::vector<std::vector<CandidateBits>> bits = {cands, {{8, 0}, {4, 0}}};
  // Resources: w bits + a bits of layer 0 (layer 1 weighs 100 per bit).
  auto res = [&](const std::vector<unsigned> &c) {
    double w = bits[0][c[0]].weightBits + 100.0 * bits[1][c[1]].weightBits;
    double a = bits[0][c[0]].activationBits;
    return ResourceKey{w + a, w, a};
  };
  // Layer 1 must stay at 4 bits: 8 bits is over the budget.
  Constraint k;
  k.linear = {{{1, 0}, 800}, {{1, 1}, 400}};
  k.bound = 500;
  p.constraints = {k};
  // (8,8) conflicts with layer 1 at 4 bits: from (8,4) nothing is left.
  p.conflicts = {{{0, 0}, {1, 1}}};
  std::vector<unsigned> choice = {1, 1};
  EXPECT_EQ(refineAllocation(p, bits, res, choice), 0u);
  EXPECT_EQ(choice, (std::vector<unsigned>{1, 1}));
  // From (4,4): (8,4) and (4,8) both add 4 to the total; (4,8) adds nothing
  // to the weights so it wins; then (8,8) is barred: stop at (4,8).
  choice = {3, 1};
  EXPECT_EQ(refineAllocation(p, bits, res, choice), 1u);
  EXPECT_EQ(choice, (std::vector<unsigned>{2, 1}));
  // Without the conflict: (4,8) then (8,8).
  p.conflicts.clear();
  choice = {3, 1};
  EXPECT_EQ(refineAllocation(p, bits, res, choice), 2u);
  EXPECT_EQ(choice, (std::vector<unsigned>{0, 1}));
}

TEST(MixedSolverRefine, EqualKeysGoToTheLowerLayer) {
  // Two identical one-element layers, 12 bits: equal keys go to layer 0.
  WeightsOnly res{{1, 1}};
  AllocationProblem p;
  p.cost.assign(2, {0, 1, 2});
  p.constraints = {weightsBudget(res.elements, {8, 4, 2}, 12)};
  std::vector<unsigned> choice = {2, 2};
  // 4: L0->4 (6) and L1->4 (6) tie -> L0; then L0->8 (10) vs L1->4 (8) ->
  // L1; then L0->8 (12) vs L1->8 (12) -> L0; then L1->8 (16) is over.
  EXPECT_EQ(refineAllocation(p, res.bits(), res, choice), 3u);
  EXPECT_EQ(choice, (std::vector<unsigned>{0, 1}));
}

TEST(MixedSolverRefine, InfeasibleStartIsLeftAlone) {
  WeightsOnly res{{1, 1}};
  AllocationProblem p;
  p.cost.assign(2, {0, 1, 2});
  p.constraints = {weightsBudget(res.elements, {8, 4, 2}, 3)};
  std::vector<unsigned> choice = {2, 2}; // 4 bits > 3
  EXPECT_EQ(refineAllocation(p, res.bits(), res, choice), 0u);
  EXPECT_EQ(choice, (std::vector<unsigned>{2, 2}));
}

TEST(MixedSolverRefine, RandomInstancesStayFeasibleAndStop) {
  // After refining an optimal choice, it is still feasible and no single
  // qualifying move is: refinement stopped because none was left.
  std::mt19937 rng(4242);
  unsigned upgrades = 0;
  for (int i = 0; i < 100; ++i) {
    AllocationProblem p = randomInstance(rng, false);
    AllocationResult r = solveAllocation(p);
    if (r.status != Status::Optimal)
      continue;
    std::vector<std::vector<CandidateBits>> bits;
    for (auto &layer : p.cost) {
      bits.emplace_back();
      for (size_t c = 0; c < layer.size(); ++c)
        bits.back().push_back({int(8 >> (c / 2)), int(8 >> ((c + 1) / 2))});
    }
    auto res = [&](const std::vector<unsigned> &c) {
      ResourceKey key;
      for (size_t l = 0; l < c.size(); ++l) {
        key.weights += (l + 1) * bits[l][c[l]].weightBits;
        key.activation = std::max<double>(key.activation, bits[l][c[l]].activationBits);
      }
      key.total = key.weights + key.activation;
      return key;
    };
    std::vector<unsigned> choice = r.choice;
    upgrades += refineAllocation(p, bits, res, choice);
    ASSERT_TRUE(feasible(p, choice)) << "instance " << i;
    for (unsigned l = 0; l < choice.size(); ++l)
      for (unsigned c = 0; c < p.cost[l].size(); ++c) {
        const CandidateBits &cur = bits[l][choice[l]], &to = bits[l][c];
        if (to.weightBits < cur.weightBits || to.activationBits < cur.activationBits ||
            (to.weightBits == cur.weightBits && to.activationBits == cur.activationBits))
          continue;
        std::vector<unsigned> trial = choice;
        trial[l] = c;
        EXPECT_FALSE(feasible(p, trial)) << "instance " << i << " layer " << l;
      }
  }
  EXPECT_GT(upgrades, 0u);
}

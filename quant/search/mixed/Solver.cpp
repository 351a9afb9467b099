//===- Solver.cpp - The bit-allocation ILP and its refinement -------------===//
//
// The model handed to CBC (through its C interface):
//  - a binary x(l,c) per candidate of every layer with two or more candidates
//    (a single-candidate layer is fixed: its terms become constants) and a row
//    sum_c x(l,c) = 1 per such layer;
//  - per Constraint one row, sum coef * x + sum coef * y <= bound - constant,
//    divided by the bound: resources are bits (1e9 and more) and the solver's
//    tolerances are absolute, so every row is brought to a scale of 1;
//  - per pair of layers (l, m) with a product term, a continuous y(c,d) in
//    [0, 1] for every pair of their candidates, with
//      sum_d y(c,d) = x(l,c) for every c,  sum_c y(c,d) = x(m,d) for every d.
//    For binary x (one candidate per layer) these force y(c,d) = x(l,c) *
//    x(m,d) exactly, whatever the sign of the coefficient, and every row
//    with that product uses y. The textbook y - x_a - x_b >= -1 (y >= 0) is
//    also exact for a positive coefficient in an upper-bound row (a larger y
//    only makes the row harder, so a choice is feasible iff it is with y = the
//    product), but its LP relaxation is weak: y = 0 whenever x_a + x_b <= 1.
//    On a binding BOPs budget over 300 kernels CBC proved the optimum in 3 s
//    with the rows above and hit a 60 s limit with the textbook ones;
//  - per conflict x_a + x_b <= 1 (or an upper bound of 0 when the other side
//    is fixed).
// The objective is the cost shifted by each layer's cheapest candidate (a
// constant: one candidate per layer) and scaled so the largest shifted cost
// is 1000, whatever the scale of the sensitivities (1e-8 .. 1e3). 1000 and
// not 1: CBC's remaining absolute tolerances then sit far below the
// differences that count (with 1, it returned choices worse than the optimum
// by 1e-8 of the scale). Ties: among candidates of one layer with exactly
// the same cost (floored sensitivities), 1e-9 of the scale per lower
// candidate of that cost makes CBC take the lowest index (candidates are
// sorted by descending bit width: the more precise one) instead of whichever
// optimum its search meets first. Only exact ties get it, so it cannot trade
// against a real cost difference larger than 1e-9 of the scale per layer.
// CBC runs with one thread, fixed seeds and tightened tolerances (below).
//
// The solution is rounded (the largest x per layer) and checked with
// feasible(), which uses the original (unscaled) numbers; the reported
// objective is the original cost of the rounded choice.
//
//===----------------------------------------------------------------------===//
#include "quant/search/mixed/Solver.h"

#include <Cbc_C_Interface.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

using namespace tpcc::quant::mixed;

//===----------------------------------------------------------------------===//
// Evaluation
//===----------------------------------------------------------------------===//

static bool chosen(const std::vector<unsigned> &choice, const Choice &x) {
  return x.layer < choice.size() && choice[x.layer] == x.candidate;
}

double Constraint::evaluate(const std::vector<unsigned> &choice) const {
  double v = constant;
  for (const auto &[x, coef] : linear)
    if (chosen(choice, x))
      v += coef;
  for (const Product &pr : products)
    if (chosen(choice, pr.a) && chosen(choice, pr.b))
      v += pr.coef;
  return v;
}

/// How far over its bound a constraint may go: 1e-9 relative, 1e-9 absolute.
static double slack(double bound) { return 1e-9 * std::fabs(bound) + 1e-9; }

static bool withinBound(double lhs, double bound) { return lhs <= bound + slack(bound); }

bool tpcc::quant::mixed::feasible(const AllocationProblem &p, const std::vector<unsigned> &choice) {
  if (choice.size() != p.cost.size())
    return false;
  for (size_t l = 0; l < choice.size(); ++l)
    if (choice[l] >= p.cost[l].size())
      return false;
  for (const Constraint &k : p.constraints)
    if (!withinBound(k.evaluate(choice), k.bound))
      return false;
  for (const auto &[a, b] : p.conflicts)
    if (chosen(choice, a) && chosen(choice, b))
      return false;
  return true;
}

bool ResourceKey::operator<(const ResourceKey &o) const {
  return std::tie(total, weights, activation) < std::tie(o.total, o.weights, o.activation);
}

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

namespace {

using Status = AllocationResult::Status;

/// A row under construction: sum coef * column <op> rhs.
struct Row {
  std::vector<int> cols;
  std::vector<double> coefs;
  char sense = 'L';
  double rhs = 0;
};

/// The MILP in CBC's terms, before it is handed over.
class ModelBuilder {
public:
  explicit ModelBuilder(const AllocationProblem &p) : p(p) {}

  /// Builds the columns and rows. On failure (a malformed problem, or an
  /// infeasibility already certain without the solver) sets `status` and
  /// `message` and returns false.
  bool build();

  const AllocationProblem &p;
  /// column of x(l,c), -1 when the layer is fixed.
  std::vector<std::vector<int>> column;
  std::vector<double> colLower, colUpper, objective;
  std::vector<char> isInteger;
  std::vector<Row> rows;
  Status status = Status::SolverError;
  std::string message;

private:
  bool fail(Status s, std::string msg) {
    status = s;
    message = std::move(msg);
    return false;
  }
  bool fixed(const Choice &x) const { return column[x.layer][x.candidate] < 0; }
  int col(const Choice &x) const { return column[x.layer][x.candidate]; }
  bool valid(const Choice &x) const {
    return x.layer < p.cost.size() && x.candidate < p.cost[x.layer].size();
  }
  int addColumn(double lo, double hi, double obj, bool integer) {
    colLower.push_back(lo);
    colUpper.push_back(hi);
    objective.push_back(obj);
    isInteger.push_back(integer);
    return int(colLower.size()) - 1;
  }
  int productColumn(const Choice &a, const Choice &b);
  bool addConstraint(const Constraint &k);
  bool addConflict(const Choice &a, const Choice &b);

  /// The first y column per pair of layers (lower layer first).
  std::map<std::pair<unsigned, unsigned>, int> products;
};

} // namespace

/// The largest (shifted) cost in the model.
static constexpr double kObjectiveScale = 1000;

static std::string choiceName(const Choice &x) {
  return "x(" + std::to_string(x.layer) + "," + std::to_string(x.candidate) + ")";
}

bool ModelBuilder::build() {
  if (p.cost.empty())
    return true;
  // Columns for layers with a choice to make; the objective shifted and scaled.
  double scale = 0;
  std::vector<double> lowest(p.cost.size(), 0);
  for (size_t l = 0; l < p.cost.size(); ++l) {
    if (p.cost[l].empty())
      return fail(Status::SolverError, "layer " + std::to_string(l) + " has no candidate");
    for (size_t c = 0; c < p.cost[l].size(); ++c)
      if (!std::isfinite(p.cost[l][c]))
        return fail(Status::SolverError,
                    "the cost of " + choiceName({unsigned(l), unsigned(c)}) + " is not finite");
    lowest[l] = *std::min_element(p.cost[l].begin(), p.cost[l].end());
    for (double s : p.cost[l])
      scale = std::max(scale, s - lowest[l]);
  }
  if (scale <= 0)
    scale = 1;
  column.resize(p.cost.size());
  for (size_t l = 0; l < p.cost.size(); ++l) {
    column[l].assign(p.cost[l].size(), -1);
    if (p.cost[l].size() < 2)
      continue;
    Row one;
    one.sense = 'E';
    one.rhs = 1;
    for (size_t c = 0; c < p.cost[l].size(); ++c) {
      // The tie-break: 1e-9 of the scale per lower candidate of equal cost.
      unsigned rank = 0;
      for (size_t d = 0; d < c; ++d)
        rank += p.cost[l][d] == p.cost[l][c];
      double obj = kObjectiveScale * ((p.cost[l][c] - lowest[l]) / scale + 1e-9 * double(rank));
      column[l][c] = addColumn(0, 1, obj, true);
      one.cols.push_back(column[l][c]);
      one.coefs.push_back(1);
    }
    rows.push_back(std::move(one));
  }
  for (const auto &[a, b] : p.conflicts)
    if (!addConflict(a, b))
      return false;
  for (const Constraint &k : p.constraints)
    if (!addConstraint(k))
      return false;
  return true;
}

int ModelBuilder::productColumn(const Choice &a, const Choice &b) {
  const Choice &lo = a.layer < b.layer ? a : b, &hi = a.layer < b.layer ? b : a;
  size_t nLo = p.cost[lo.layer].size(), nHi = p.cost[hi.layer].size();
  auto [it, isNew] = products.try_emplace({lo.layer, hi.layer}, 0);
  if (isNew) {
    // y(c,d) for every pair of candidates, sum_d y(c,d) = x(lo,c) and
    // sum_c y(c,d) = x(hi,d).
    it->second = int(colLower.size());
    for (size_t i = 0; i < nLo * nHi; ++i)
      addColumn(0, 1, 0, false);
    for (unsigned c = 0; c < nLo; ++c) {
      Row row{{column[lo.layer][c]}, {-1}, 'E', 0};
      for (unsigned d = 0; d < nHi; ++d) {
        row.cols.push_back(it->second + int(c * nHi + d));
        row.coefs.push_back(1);
      }
      rows.push_back(std::move(row));
    }
    for (unsigned d = 0; d < nHi; ++d) {
      Row row{{column[hi.layer][d]}, {-1}, 'E', 0};
      for (unsigned c = 0; c < nLo; ++c) {
        row.cols.push_back(it->second + int(c * nHi + d));
        row.coefs.push_back(1);
      }
      rows.push_back(std::move(row));
    }
  }
  return it->second + int(lo.candidate * nHi + hi.candidate);
}

bool ModelBuilder::addConstraint(const Constraint &k) {
  if (std::isnan(k.bound) || !std::isfinite(k.constant))
    return fail(Status::SolverError,
                "constraint '" + k.name + "' has a bound or constant that is not a number");
  if (k.bound == std::numeric_limits<double>::infinity())
    return true;
  if (k.bound == -std::numeric_limits<double>::infinity())
    return fail(Status::Infeasible, "constraint '" + k.name + "' has the bound -inf");
  // Terms on fixed layers join the constant; a product with one fixed side
  // is linear in the other; a product of two candidates of one layer is 0.
  double constant = k.constant;
  std::map<int, double> terms; // column -> coefficient, in column order
  auto linearTerm = [&](const Choice &x, double coef) {
    if (fixed(x))
      constant += coef;
    else
      terms[col(x)] += coef;
  };
  double largest = 0;
  for (const auto &[x, coef] : k.linear) {
    if (!valid(x) || !std::isfinite(coef))
      return fail(Status::SolverError,
                  "constraint '" + k.name + "' has an invalid term " + choiceName(x));
    linearTerm(x, coef);
    largest = std::max(largest, std::fabs(coef));
  }
  for (const Constraint::Product &pr : k.products) {
    if (!valid(pr.a) || !valid(pr.b) || !std::isfinite(pr.coef))
      return fail(Status::SolverError, "constraint '" + k.name + "' has an invalid product " +
                                           choiceName(pr.a) + " * " + choiceName(pr.b));
    largest = std::max(largest, std::fabs(pr.coef));
    if (pr.coef == 0)
      continue;
    if (pr.a.layer == pr.b.layer) {
      if (pr.a.candidate == pr.b.candidate)
        linearTerm(pr.a, pr.coef);
    } else if (fixed(pr.a)) {
      linearTerm(pr.b, pr.coef);
    } else if (fixed(pr.b)) {
      linearTerm(pr.a, pr.coef);
    } else {
      terms[productColumn(pr.a, pr.b)] += pr.coef;
    }
  }
  // Half of feasible()'s slack goes into the row: a choice over the bound
  // by less than that (rounding: 0.1 + 0.2 against 0.3) is feasible for CBC
  // too, while its own tolerances act on the scaled row where a hair over
  // the bound can look large; and what CBC accepts beyond the row (1e-10 of
  // the row's scale for the primal and integer tolerances each) stays within
  // the other half.
  double rhs = k.bound + 0.5 * slack(k.bound) - constant;
  bool anyTerm = std::any_of(terms.begin(), terms.end(), [](auto &t) { return t.second != 0; });
  if (!anyTerm) {
    if (withinBound(constant, k.bound))
      return true;
    return fail(Status::Infeasible, "constraint '" + k.name + "' cannot hold: its fixed part " +
                                        std::to_string(constant) + " exceeds the bound " +
                                        std::to_string(k.bound));
  }
  // Scale the row to about 1: by the bound, or by the largest coefficient
  // when the bound is 0 (or tiny next to the terms).
  double s = std::fabs(k.bound);
  if (!(s > 1e-12 * largest))
    s = largest;
  Row row;
  row.sense = 'L';
  row.rhs = rhs / s;
  for (const auto &[c, coef] : terms)
    if (coef != 0) {
      row.cols.push_back(c);
      row.coefs.push_back(coef / s);
    }
  rows.push_back(std::move(row));
  return true;
}

bool ModelBuilder::addConflict(const Choice &a, const Choice &b) {
  if (!valid(a) || !valid(b))
    return fail(Status::SolverError, "invalid conflict " + choiceName(a) + " / " + choiceName(b));
  if (a.layer == b.layer) {
    // Two candidates of one layer are never both chosen; a candidate in
    // conflict with itself is never chosen.
    if (a.candidate == b.candidate) {
      if (fixed(a))
        return fail(Status::Infeasible,
                    "the only candidate " + choiceName(a) + " conflicts with itself");
      colUpper[col(a)] = 0;
    }
    return true;
  }
  if (fixed(a) && fixed(b))
    return fail(Status::Infeasible,
                "the only candidates " + choiceName(a) + " and " + choiceName(b) + " conflict");
  if (fixed(a) || fixed(b)) {
    colUpper[col(fixed(a) ? b : a)] = 0;
    return true;
  }
  rows.push_back({{col(a), col(b)}, {1, 1}, 'L', 1});
  return true;
}

//===----------------------------------------------------------------------===//
// Solving
//===----------------------------------------------------------------------===//

AllocationResult tpcc::quant::mixed::solveAllocation(const AllocationProblem &p) {
  auto start = std::chrono::steady_clock::now();
  AllocationResult r;
  auto finish = [&](Status s, std::vector<unsigned> choice, std::string msg) {
    r.status = s;
    r.message = std::move(msg);
    r.choice.clear();
    r.objective = 0;
    if (s == Status::Optimal || s == Status::TimeLimit) {
      if (!feasible(p, choice)) {
        r.status = Status::SolverError;
        r.message = "the solver's choice does not meet every constraint (tolerances)";
      } else {
        for (size_t l = 0; l < choice.size(); ++l)
          r.objective += p.cost[l][choice[l]];
        r.choice = std::move(choice);
      }
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  };

  ModelBuilder mb(p);
  if (!mb.build())
    return finish(mb.status, {}, mb.message);
  std::vector<unsigned> choice(p.cost.size(), 0);
  if (mb.colLower.empty()) // every layer fixed: nothing to choose
    return feasible(p, choice) ? finish(Status::Optimal, choice, "")
                               : finish(Status::Infeasible, {}, "the only choice is infeasible");

  Cbc_Model *m = Cbc_newModel();
  for (size_t c = 0; c < mb.colLower.size(); ++c)
    Cbc_addCol(m, "", mb.colLower[c], mb.colUpper[c], mb.objective[c], mb.isInteger[c], 0, nullptr,
               nullptr);
  for (const Row &row : mb.rows)
    Cbc_addRow(m, "", int(row.cols.size()), row.cols.data(), row.coefs.data(), row.sense, row.rhs);
  Cbc_setObjSense(m, 1);
  double limit = p.timeLimitSeconds;
  if (!(limit > 0) || !std::isfinite(limit))
    limit = std::isinf(limit) ? 1e8 : 0;
  // Quiet: with log level 0 CBC prints nothing (MixedSolver.Silent checks).
  Cbc_setLogLevel(m, 0);
  Cbc_setParameter(m, "log", "0");
  Cbc_setParameter(m, "slog", "0");
  // No threads: with "threads 1" CBC 2.10 runs its threaded search with one
  // worker, and it sometimes sleeps 10 s there (3 of 150 `--weights-memory
  // 50%` runs of digits_cnn, 5 solves each: 10.2 s for 0.12 s of CPU);
  // unthreaded, none of 150 did, with the same choices.
  Cbc_setParameter(m, "threads", "0");
  Cbc_setParameter(m, "randomSeed", "1234567");
  Cbc_setParameter(m, "randomCbcSeed", "1234567");
  // The limit is wall-clock time, like `seconds` (CBC counts CPU time by
  // default, which other threads of the process would eat into).
  Cbc_setParameter(m, "timeMode", "elapsed");
  Cbc_setParameter(m, "seconds", std::to_string(limit).c_str());
  Cbc_setMaximumSeconds(m, limit);
  // Tolerances (MixedSolver.BruteForceCrossCheck and BoundUpToRounding found
  // each of these with the defaults):
  //  - objective: with a 1e-7 dual tolerance CBC returned "optimal" choices
  //    worse than the best by 1e-8 of the cost scale; resolve ~1e-12;
  //  - CBC 2.10's preprocessing, when it fixed every variable, returned a
  //    plainly suboptimal choice as optimal: off;
  //  - integrality: with 1e-6, an LP vertex 1e-8 off integral counted as a
  //    solution, its rounding broke the row, and CBC declared a plainly
  //    feasible problem infeasible. A rounding error of integerTolerance
  //    times a coefficient (about 1 on the scaled rows) plus the primal
  //    tolerance stays well inside the half slack (see addConstraint).
  Cbc_setParameter(m, "preprocess", "off");
  Cbc_setParameter(m, "allowableGap", "1e-9");
  Cbc_setParameter(m, "ratioGap", std::to_string(std::max(0.0, p.relativeGap)).c_str());
  Cbc_setParameter(m, "increment", "1e-9");
  Cbc_setParameter(m, "primalTolerance", "1e-10");
  Cbc_setParameter(m, "dualTolerance", "1e-10");
  Cbc_setParameter(m, "integerTolerance", "1e-10");

  // The start: CBC begins from it, and the time limit falls back to it.
  bool startFeasible = !p.start.empty() && feasible(p, p.start);
  if (startFeasible) {
    std::vector<int> cols;
    for (size_t l = 0; l < p.start.size(); ++l)
      if (mb.column[l][p.start[l]] >= 0)
        cols.push_back(mb.column[l][p.start[l]]);
    std::vector<double> ones(cols.size(), 1.0);
    Cbc_setMIPStartI(m, int(cols.size()), cols.data(), ones.data());
  }

  Cbc_solve(m);

  Status status;
  std::string msg;
  const double *x = Cbc_bestSolution(m);
  if (!x && Cbc_isProvenOptimal(m))
    x = Cbc_getColSolution(m);
  if (Cbc_isProvenOptimal(m) && x) {
    status = Status::Optimal;
  } else if (Cbc_isProvenInfeasible(m)) {
    status = Status::Infeasible;
    msg = "no choice meets every constraint";
  } else if (Cbc_isSecondsLimitReached(m)) {
    status = x ? Status::TimeLimit : Status::NoSolution;
    if (!x)
      msg = "the time limit stopped the search before any solution";
  } else {
    status = Status::SolverError;
    msg = Cbc_isAbandoned(m) ? "cbc abandoned the search (numerical difficulties)"
                             : "cbc stopped with status " + std::to_string(Cbc_status(m)) +
                                   " (secondary " + std::to_string(Cbc_secondaryStatus(m)) + ")";
  }
  if (x && (status == Status::Optimal || status == Status::TimeLimit))
    for (size_t l = 0; l < p.cost.size(); ++l) {
      if (mb.column[l][0] < 0)
        continue;
      unsigned best = 0;
      for (unsigned c = 1; c < mb.column[l].size(); ++c)
        if (x[mb.column[l][c]] > x[mb.column[l][best]])
          best = c;
      choice[l] = best;
    }
  Cbc_deleteModel(m);
  if (status == Status::NoSolution && startFeasible)
    return finish(Status::TimeLimit, p.start, "");
  return finish(status, std::move(choice), std::move(msg));
}

//===----------------------------------------------------------------------===//
// Refinement
//===----------------------------------------------------------------------===//

namespace {

/// What the constraints and conflicts say about moving one layer: the terms
/// that mention it, so a move is checked without evaluating whole rows.
struct LayerIndex {
  struct Ref {
    unsigned constraint;
    bool product;
    unsigned term;
  };
  std::vector<std::vector<Ref>> refs;         ///< per layer, by constraint
  std::vector<std::vector<unsigned>> clashes; ///< per layer, conflict indices

  explicit LayerIndex(const AllocationProblem &p) : refs(p.cost.size()), clashes(p.cost.size()) {
    auto add = [&](unsigned layer, Ref ref) {
      if (layer < refs.size())
        refs[layer].push_back(ref);
    };
    for (unsigned k = 0; k < p.constraints.size(); ++k) {
      const Constraint &ck = p.constraints[k];
      for (unsigned t = 0; t < ck.linear.size(); ++t)
        add(ck.linear[t].first.layer, {k, false, t});
      for (unsigned t = 0; t < ck.products.size(); ++t) {
        add(ck.products[t].a.layer, {k, true, t});
        if (ck.products[t].b.layer != ck.products[t].a.layer)
          add(ck.products[t].b.layer, {k, true, t});
      }
    }
    for (unsigned i = 0; i < p.conflicts.size(); ++i) {
      unsigned la = p.conflicts[i].first.layer, lb = p.conflicts[i].second.layer;
      if (la < clashes.size())
        clashes[la].push_back(i);
      if (lb != la && lb < clashes.size())
        clashes[lb].push_back(i);
    }
  }
};

} // namespace

/// Whether `trial` (= `choice` with layer l changed) keeps every constraint
/// and conflict, given `lhs`, the left-hand sides under the feasible `choice`.
static bool moveKeepsBounds(const AllocationProblem &p, const LayerIndex &index,
                            const std::vector<double> &lhs, const std::vector<unsigned> &choice,
                            const std::vector<unsigned> &trial, unsigned l) {
  for (unsigned i : index.clashes[l])
    if (chosen(trial, p.conflicts[i].first) && chosen(trial, p.conflicts[i].second))
      return false;
  const auto &refs = index.refs[l];
  for (size_t i = 0; i < refs.size();) {
    unsigned k = refs[i].constraint;
    const Constraint &ck = p.constraints[k];
    double delta = 0;
    for (; i < refs.size() && refs[i].constraint == k; ++i) {
      if (refs[i].product) {
        const Constraint::Product &pr = ck.products[refs[i].term];
        bool before = chosen(choice, pr.a) && chosen(choice, pr.b);
        bool after = chosen(trial, pr.a) && chosen(trial, pr.b);
        delta += (double(after) - double(before)) * pr.coef;
      } else {
        const auto &[x, coef] = ck.linear[refs[i].term];
        delta += (double(chosen(trial, x)) - double(chosen(choice, x))) * coef;
      }
    }
    if (delta > 0 && !withinBound(lhs[k] + delta, ck.bound))
      return false;
  }
  return true;
}

unsigned tpcc::quant::mixed::refineAllocation(
    const AllocationProblem &p, const std::vector<std::vector<CandidateBits>> &bits,
    const std::function<ResourceKey(const std::vector<unsigned> &)> &resources,
    std::vector<unsigned> &choice) {
  // Refinement keeps a feasible choice feasible; it has nothing to keep
  // otherwise (and a malformed choice or bit table is left alone).
  if (!feasible(p, choice) || bits.size() != p.cost.size())
    return 0;
  for (size_t l = 0; l < bits.size(); ++l)
    if (bits[l].size() != p.cost[l].size())
      return 0;
  LayerIndex index(p);
  std::vector<double> lhs(p.constraints.size());
  for (size_t k = 0; k < lhs.size(); ++k)
    lhs[k] = p.constraints[k].evaluate(choice);

  unsigned upgrades = 0;
  std::vector<unsigned> trial = choice;
  for (;;) {
    bool found = false;
    ResourceKey bestKey;
    unsigned bestLayer = 0, bestCandidate = 0;
    for (unsigned l = 0; l < choice.size(); ++l) {
      const CandidateBits &cur = bits[l][choice[l]];
      for (unsigned c = 0; c < bits[l].size(); ++c) {
        const CandidateBits &to = bits[l][c];
        if (to.weightBits < cur.weightBits || to.activationBits < cur.activationBits ||
            (to.weightBits == cur.weightBits && to.activationBits == cur.activationBits))
          continue;
        trial[l] = c;
        if (moveKeepsBounds(p, index, lhs, choice, trial, l)) {
          ResourceKey key = resources(trial);
          if (!found || key < bestKey) {
            found = true;
            bestKey = key;
            bestLayer = l;
            bestCandidate = c;
          }
        }
        trial[l] = choice[l];
      }
    }
    if (!found)
      return upgrades;
    choice[bestLayer] = trial[bestLayer] = bestCandidate;
    ++upgrades;
    for (const LayerIndex::Ref &ref : index.refs[bestLayer])
      lhs[ref.constraint] = p.constraints[ref.constraint].evaluate(choice);
  }
}

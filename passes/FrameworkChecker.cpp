//===- FrameworkChecker.cpp - Checking `framework` declarations -----------===//
//
// Resolves a `framework` declaration into ir::Framework: weight slots
// (`weight SLOT: OP.input[i] [where P] [axes(out: a, in: b)]`), the
// `activation` and `no_quantize` op lists and the known output ranges, with
// every op name, input index and predicate checked against the ONNX operator
// schemas (Rule 12), and names defined twice reported (Rule 1).
//
//===----------------------------------------------------------------------===//
#include "passes/Internal.h"
#include "passes/PredicateChecker.h"
#include "passes/QuantConfig.h"

#include <cmath>
#include <map>
#include <sstream>

using namespace tpcc;
using namespace tpcc::passes;

namespace {

class FrameworkChecker {
public:
  FrameworkChecker(Compilation &c, const ast::FrameworkDecl &decl) : c(c), decl(decl) {}

  ir::Framework run();

private:
  void checkWeight(const ast::WeightDecl &w);
  void checkSlotBinding(const std::string &slot, const ast::SlotBinding &b);
  void checkOpList(const ast::OpListDecl &list);
  void checkRange(const ast::RangeDecl &r);
  void checkComposite(const ast::CompositeDecl &d);
  std::optional<ir::PatternTerm> checkTerm(const ast::PatternTerm &t, const ast::CompositeDecl &d,
                                           std::vector<bool> &used);
  std::optional<double> rangeBound(const ast::Value &v);
  std::string sourceText(SourceRange r, double fallback) const;

  Compilation &c;
  const ast::FrameworkDecl &decl;
  ir::Framework fw;
  /// Slot name -> where it is defined.
  std::map<std::string, SourceRange> slots;
  /// `OP.input[i]` bound without a predicate, or with one (its canonical
  /// spelling after ` where `) -> where.
  std::map<std::string, SourceRange> bound;
  /// Op -> where it is listed, per list.
  std::map<std::string, SourceRange> listed[2];
  /// Op -> its `range`.
  std::map<std::string, SourceRange> ranges;
  /// Composite -> where it is defined.
  std::map<std::string, SourceRange> composites;
};

} // namespace

ir::Framework FrameworkChecker::run() {
  fw.name = decl.name.name;
  fw.loc = decl.name.range;
  for (const ast::Node *item : decl.items) {
    if (auto *w = llvm::dyn_cast<ast::WeightDecl>(item))
      checkWeight(*w);
    else if (auto *l = llvm::dyn_cast<ast::OpListDecl>(item))
      checkOpList(*l);
    else if (auto *r = llvm::dyn_cast<ast::RangeDecl>(item))
      checkRange(*r);
    else if (auto *d = llvm::dyn_cast<ast::CompositeDecl>(item))
      checkComposite(*d);
  }
  return std::move(fw);
}

void FrameworkChecker::checkWeight(const ast::WeightDecl &w) {
  auto [it, inserted] = slots.emplace(w.slot.name, w.slot.range);
  if (!inserted)
    c.diags.emit(w.slot.range, diag::err_redefinition, w.slot.name)
        .note(it->second, diag::note_previous_definition);
  else if (isAttrField(w.slot.name))
    c.diags.emit(w.slot.range, diag::err_slot_is_attr_field, w.slot.name);
  for (const ast::SlotBinding &b : w.bindings)
    checkSlotBinding(w.slot.name, b);
}

void FrameworkChecker::checkSlotBinding(const std::string &slot, const ast::SlotBinding &b) {
  ir::WeightSlot ws;
  ws.slot = slot;
  ws.op = b.op.name;
  ws.input = b.input;
  ws.loc = b.range;

  const ir::OnnxOp *op = lookupOnnxOp(c, b.op);
  bool indexOk = succeeded(checkInputIndex(c, op, b.input, b.inputRange));
  if (b.where)
    ws.where = checkPredicate(c, *b.where, op);

  // The same input bound twice with no predicate to tell the bindings apart,
  // or with the same one (canonical spellings).
  if ((!b.where || ws.where) && op && indexOk) {
    std::string key = b.op.name + ".input[" + std::to_string(b.input) + "]" +
                      (ws.where ? " where " + ws.where->str() : "");
    auto [it, inserted] = bound.emplace(key, b.range);
    if (!inserted)
      c.diags.emit(b.range, diag::err_duplicate_op, key)
          .note(it->second, diag::note_listed_here, key);
  }

  std::map<std::string, SourceRange> seenAxes;
  for (const ast::AxisArg &axis : b.axes) {
    const std::string &name = axis.name.name;
    if (name != "out" && name != "in") {
      c.diags.emit(axis.name.range, diag::err_bad_axis, name).report();
      continue;
    }
    auto [it, inserted] = seenAxes.emplace(name, axis.name.range);
    if (!inserted) {
      c.diags.emit(axis.name.range, diag::err_duplicate_axis, name)
          .note(it->second, diag::note_previous_definition);
      continue;
    }
    (name == "out" ? ws.outAxis : ws.inAxis) = axis.value;
  }
  fw.weights.push_back(std::move(ws));
}

void FrameworkChecker::checkOpList(const ast::OpListDecl &list) {
  bool isActivation = list.listKind == ast::OpListDecl::Activation;
  auto &mine = listed[isActivation ? 0 : 1];
  auto &other = listed[isActivation ? 1 : 0];
  std::vector<std::string> &out = isActivation ? fw.activationOps : fw.noQuantizeOps;
  for (const ast::Ident &name : list.ops) {
    if (!lookupOnnxOp(c, name))
      continue;
    auto [it, inserted] = mine.emplace(name.name, name.range);
    if (!inserted) {
      c.diags.emit(name.range, diag::err_duplicate_op, name.name)
          .note(it->second, diag::note_listed_here, name.name);
      continue;
    }
    auto conflict = other.find(name.name);
    if (conflict != other.end()) {
      c.diags.emit(name.range, diag::err_op_in_both_lists, name.name)
          .note(conflict->second, diag::note_listed_here, name.name);
      continue;
    }
    out.push_back(name.name);
  }
}

void FrameworkChecker::checkComposite(const ast::CompositeDecl &d) {
  ir::Composite comp;
  comp.name = d.name.name;
  comp.loc = d.name.range;
  bool ok = true;
  if (ir::OnnxSchemaIndex::get().find(d.name.name)) {
    c.diags.emit(d.name.range, diag::err_composite_is_op, d.name.name).report();
    ok = false;
  }
  auto [it, inserted] = composites.emplace(d.name.name, d.name.range);
  if (!inserted) {
    c.diags.emit(d.name.range, diag::err_redefinition, d.name.name)
        .note(it->second, diag::note_previous_definition);
    ok = false;
  }
  std::map<std::string, SourceRange> params;
  for (const ast::Ident &p : d.params) {
    auto [pit, fresh] = params.emplace(p.name, p.range);
    if (!fresh) {
      c.diags.emit(p.range, diag::err_composite_param_twice, p.name)
          .note(pit->second, diag::note_previous_definition);
      ok = false;
    }
    comp.params.push_back(p.name);
  }
  std::vector<bool> used(d.params.size(), false);
  std::optional<ir::PatternTerm> root = checkTerm(d.pattern, d, used);
  for (size_t i = 0; i < used.size(); ++i)
    // A parameter declared twice is reported once, as such.
    if (!used[i] && root &&
        params[d.params[i].name].begin.offset == d.params[i].range.begin.offset) {
      c.diags
          .emit(d.params[i].range, diag::err_composite_unused_param, d.params[i].name, d.name.name)
          .report();
      ok = false;
    }
  // `is OP`: an ONNX operator (Rule 12), which a platform's bindings of it
  // then plan the chain as.
  if (d.is) {
    if (lookupOnnxOp(c, *d.is)) {
      comp.is = d.is->name;
      comp.isLoc = d.is->range;
    } else {
      ok = false;
    }
  }
  if (!root || !ok)
    return;
  bool single = !root->where;
  for (const ir::PatternTerm &a : root->args)
    single &= a.kind == ir::PatternTerm::Kind::Param;
  if (single)
    c.diags.emit(d.pattern.range, diag::warn_composite_single_op, d.name.name, root->op).report();
  comp.root = std::move(*root);
  fw.composites.push_back(std::move(comp));
}

std::optional<ir::PatternTerm> FrameworkChecker::checkTerm(const ast::PatternTerm &t,
                                                           const ast::CompositeDecl &d,
                                                           std::vector<bool> &used) {
  ir::PatternTerm out;
  out.loc = t.range;
  switch (t.termKind) {
  case ast::PatternTerm::Number:
    out.kind = ir::PatternTerm::Kind::Constant;
    out.value = t.number;
    return out;
  case ast::PatternTerm::Param: {
    for (size_t i = 0; i < d.params.size(); ++i)
      if (d.params[i].name == t.name.name) {
        used[i] = true;
        out.kind = ir::PatternTerm::Kind::Param;
        out.param = unsigned(i);
        return out;
      }
    std::string names;
    for (const ast::Ident &p : d.params)
      names += (names.empty() ? "`" : ", `") + p.name + "`";
    c.diags.emit(t.name.range, diag::err_composite_unknown_param, t.name.name, d.name.name, names)
        .report();
    return std::nullopt;
  }
  case ast::PatternTerm::Op:
    break;
  }
  out.kind = ir::PatternTerm::Kind::Op;
  out.op = t.name.name;
  bool ok = true;
  const ir::OnnxOp *op = lookupOnnxOp(c, t.name);
  if (!op)
    ok = false;
  else if (op->maxInputs && t.args.size() > *op->maxInputs) {
    c.diags
        .emit(t.name.range, diag::err_composite_arity, op->name,
              std::to_string(*op->maxInputs) + (*op->maxInputs == 1 ? " input" : " inputs"),
              t.args.size())
        .report();
    ok = false;
  }
  if (t.where && op)
    out.where = checkPredicate(c, *t.where, op);
  for (const ast::PatternTerm &a : t.args) {
    std::optional<ir::PatternTerm> arg = checkTerm(a, d, used);
    if (!arg)
      ok = false;
    else
      out.args.push_back(std::move(*arg));
  }
  if (!ok)
    return std::nullopt;
  return out;
}

std::optional<double> FrameworkChecker::rangeBound(const ast::Value &v) {
  if (auto *i = llvm::dyn_cast<ast::IntLit>(&v))
    return double(i->value);
  if (auto *f = llvm::dyn_cast<ast::FloatLit>(&v))
    return f->value;
  if (auto *p = llvm::dyn_cast<ast::Pow2Lit>(&v))
    return std::ldexp(1.0, p->exponent);
  if (auto *inf = llvm::dyn_cast<ast::InfLit>(&v))
    return inf->negative ? -HUGE_VAL : HUGE_VAL;
  const char *what = llvm::isa<ast::StringLit>(&v) ? "a string"
                     : llvm::isa<ast::BoolLit>(&v) ? "a boolean"
                     : llvm::isa<ast::NoneLit>(&v) ? "`none`"
                                                   : "a value that is not a number";
  c.diags.emit(v.getRange(), diag::err_range_bound, what).report();
  return std::nullopt;
}

std::string FrameworkChecker::sourceText(SourceRange r, double fallback) const {
  if (r.isValid() && r.end.file == r.begin.file && r.end.offset > r.begin.offset) {
    llvm::StringRef buf = c.sources.getBuffer(r.begin.file);
    if (r.end.offset <= buf.size())
      return buf.slice(r.begin.offset, r.end.offset).str();
  }
  if (std::isinf(fallback))
    return fallback < 0 ? "-inf" : "inf";
  std::ostringstream os;
  os << fallback;
  return os.str();
}

void FrameworkChecker::checkRange(const ast::RangeDecl &r) {
  const ir::OnnxOp *op = lookupOnnxOp(c, r.op);
  std::optional<double> lo = rangeBound(*r.lo);
  std::optional<double> hi = rangeBound(*r.hi);
  if (!op || !lo || !hi)
    return;
  if (*lo > *hi) {
    c.diags
        .emit(SourceRange(r.lo->getRange().begin, r.hi->getRange().end), diag::err_range_order,
              sourceText(r.lo->getRange(), *lo), sourceText(r.hi->getRange(), *hi))
        .report();
    return;
  }
  auto [it, inserted] = ranges.emplace(r.op.name, r.op.range);
  if (!inserted) {
    c.diags.emit(r.op.range, diag::err_duplicate_range, r.op.name)
        .note(it->second, diag::note_previous_definition);
    return;
  }
  ir::OpRange range;
  range.op = r.op.name;
  range.lo = *lo;
  range.hi = *hi;
  range.loc = r.getRange();
  fw.ranges.push_back(std::move(range));
}

ir::Framework passes::checkFramework(Compilation &c, const ast::FrameworkDecl &decl) {
  return FrameworkChecker(c, decl).run();
}

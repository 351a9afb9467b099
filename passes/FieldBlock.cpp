//===- FieldBlock.cpp - Reading `{ key: value }` blocks -------------------===//
#include "passes/FieldBlock.h"

#include "llvm/Support/ErrorHandling.h"

#include <cmath>
#include <map>

using namespace tpcc;
using namespace tpcc::passes;

std::string FlatField::prefix(size_t n) const {
  std::string s;
  for (size_t i = 0; i < n && i < path.size(); ++i)
    s += (i ? "." : "") + path[i]->name;
  return s;
}

static void flattenInto(Compilation &c, const ast::BlockValue &block,
                        const std::vector<const ast::Ident *> &prefix,
                        std::map<std::string, SourceRange> &seen, std::vector<FlatField> &out) {
  for (const ast::Field &field : block.fields) {
    if (field.key.empty() || !field.value)
      continue; // a syntax error, already reported
    FlatField f;
    f.path = prefix;
    for (const ast::Ident &k : field.key)
      f.path.push_back(&k);
    f.value = field.value;
    f.key = f.prefix(f.path.size());
    f.keyRange = {field.key.front().range.begin, field.key.back().range.end};
    auto [it, inserted] = seen.emplace(f.key, f.keyRange);
    if (!inserted) {
      c.diags.emit(f.keyRange, diag::err_duplicate_key, f.key)
          .note(it->second, diag::note_previous_definition);
      continue;
    }
    auto *nested = llvm::dyn_cast<ast::BlockValue>(field.value);
    if (nested && !nested->fields.empty()) {
      flattenInto(c, *nested, f.path, seen, out);
      continue;
    }
    out.push_back(std::move(f));
  }
}

std::vector<FlatField> passes::flattenBlock(Compilation &c, const ast::BlockValue &block) {
  std::vector<FlatField> out;
  std::map<std::string, SourceRange> seen;
  flattenInto(c, block, {}, seen, out);
  return out;
}

bool passes::isEmptyBlock(const ast::Value *v) {
  auto *b = llvm::dyn_cast_or_null<ast::BlockValue>(v);
  return b && b->fields.empty();
}

std::string passes::describeValue(const ast::Value &v) {
  using K = ast::Node::Kind;
  switch (v.getKind()) {
  case K::IntLit:
    return "an integer";
  case K::FloatLit:
    return "a decimal number";
  case K::Pow2Lit:
    return "a power of two";
  case K::StringLit:
    return "a string";
  case K::BoolLit:
    return "a boolean";
  case K::NoneLit:
    return "`none`";
  case K::InfLit:
    return llvm::cast<ast::InfLit>(v).negative ? "`-inf`" : "`inf`";
  case K::Quantity:
    return "a quantity";
  case K::NameValue: {
    auto &n = llvm::cast<ast::NameValue>(v);
    if (!n.withs.empty())
      return "a `with` expression";
    return "the name `" + n.name.name + "`";
  }
  case K::BlockValue:
    return "a block";
  case K::ListValue:
    return llvm::cast<ast::ListValue>(v).elements.empty() ? "an empty list" : "a list";
  case K::NamedOptions:
  case K::ListOptions:
  case K::ConcatOptions:
  case K::SetName:
  case K::SetUnion:
  case K::VersionItem:
  case K::TypeItem:
  case K::SimdPaddingItem:
  case K::MetadataItem:
  case K::PreservingQuantizersItem:
  case K::ResourcesItem:
  case K::RecipeItem:
  case K::AttrDecl:
  case K::ConfigDecl:
  case K::OptionsDecl:
  case K::DefaultDecl:
  case K::OpsetDecl:
  case K::GroupDecl:
  case K::FuseDecl:
  case K::WeightDecl:
  case K::OpListDecl:
  case K::RangeDecl:
  case K::CompositeDecl:
  case K::OrPred:
  case K::AndPred:
  case K::NotPred:
  case K::CmpPred:
  case K::InPred:
  case K::ConstPred:
  case K::HasPred:
  case K::AttrOperand:
  case K::InputOperand:
  case K::RankOperand:
  case K::ShapeOperand:
  case K::LiteralOperand:
  case K::ListOperand:
  case K::ImportDecl:
  case K::PlatformDecl:
  case K::FrameworkDecl:
  case K::CapabilitiesDecl:
  case K::RecipeDecl:
    return "a value";
  }
  llvm_unreachable("every node kind is handled");
}

void passes::reportUnknownField(Compilation &c, const FlatField &f, size_t i, llvm::StringRef where,
                                llvm::ArrayRef<const char *> known) {
  std::vector<std::string> candidates(known.begin(), known.end());
  std::string place = i == 0 ? where.str() : "`" + f.prefix(i) + "`";
  c.diags.emit(f.path[i]->range, diag::err_unknown_field, f.path[i]->name, place,
               didYouMean(f.path[i]->name, candidates));
}

void passes::reportFieldType(Compilation &c, const FlatField &f, llvm::StringRef expected) {
  c.diags.emit(f.value->getRange(), diag::err_field_type, f.key, expected, describeValue(*f.value));
}

std::optional<int64_t> passes::readInt(Compilation &c, const FlatField &f,
                                       llvm::StringRef expected) {
  if (auto *i = llvm::dyn_cast<ast::IntLit>(f.value))
    return i->value;
  reportFieldType(c, f, expected);
  return std::nullopt;
}

std::optional<std::optional<int64_t>> passes::readIntOrNone(Compilation &c, const FlatField &f) {
  using Result = std::optional<std::optional<int64_t>>;
  if (llvm::isa<ast::NoneLit>(f.value))
    return Result(std::in_place); // `none`
  if (auto i = readInt(c, f, "an integer or `none`"))
    return Result(std::in_place, *i);
  return std::nullopt;
}

std::optional<double> passes::readNumber(Compilation &c, const FlatField &f, bool allowInf,
                                         llvm::StringRef expected) {
  if (auto *i = llvm::dyn_cast<ast::IntLit>(f.value))
    return static_cast<double>(i->value);
  if (auto *d = llvm::dyn_cast<ast::FloatLit>(f.value))
    return d->value;
  if (auto *p = llvm::dyn_cast<ast::Pow2Lit>(f.value))
    return std::ldexp(1.0, p->exponent);
  if (auto *inf = llvm::dyn_cast<ast::InfLit>(f.value); inf && allowInf)
    return inf->negative ? -HUGE_VAL : HUGE_VAL;
  reportFieldType(c, f, expected);
  return std::nullopt;
}

std::optional<bool> passes::readBool(Compilation &c, const FlatField &f) {
  if (auto *b = llvm::dyn_cast<ast::BoolLit>(f.value))
    return b->value;
  reportFieldType(c, f, "`true` or `false`");
  return std::nullopt;
}

const ast::Ident *passes::readWord(Compilation &c, const FlatField &f, llvm::StringRef expected) {
  auto *n = llvm::dyn_cast<ast::NameValue>(f.value);
  if (n && n->withs.empty())
    return &n->name;
  reportFieldType(c, f, expected);
  return nullptr;
}

std::optional<ir::Budget> passes::readBudget(Compilation &c, const FlatField &f, ir::Resource r) {
  const bool memory = r != ir::Resource::Bops;
  std::string text;
  if (auto *q = llvm::dyn_cast<ast::Quantity>(f.value))
    text = q->text();
  else if (auto *i = llvm::dyn_cast<ast::IntLit>(f.value))
    text = std::to_string(i->value);
  else if (auto *d = llvm::dyn_cast<ast::FloatLit>(f.value); d && !memory)
    text = d->text;
  if (text.empty()) {
    reportFieldType(c, f,
                    memory ? "an amount of memory (`41 KiB`, `75%`)"
                           : "a number of BOPs (`1.5e9`, `2 G`, `75%`)");
    return std::nullopt;
  }
  std::string error;
  std::optional<ir::Budget> b = ir::parseBudget(text, r, error);
  if (!b) {
    c.diags.emit(f.value->getRange(), diag::err_bad_amount, text, f.key, error);
    return std::nullopt;
  }
  b->loc = f.value->getRange();
  return b;
}

std::string passes::joinQuoted(llvm::ArrayRef<std::string> words) {
  std::string s;
  for (const std::string &w : words)
    s += (s.empty() ? "`" : ", `") + w + "`";
  return s;
}

std::string passes::formatNumber(double d) {
  if (std::isinf(d))
    return d < 0 ? "-inf" : "inf";
  return fmt::format("{}", d);
}

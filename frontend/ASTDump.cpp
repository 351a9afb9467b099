//===- ASTDump.cpp - A textual dump of the AST (`--emit=ast`) -------------===//
//
// Prints one parsed file as an indented tree in the style of clang's
// `-ast-dump`, one line per node:
//
//   File "examples/chip.tpc"
//   |-ImportDecl <1:1, 1:15> "imx500"
//   `-PlatformDecl <3:1, 9:1> my_chip extends imx500
//     |-VersionItem <4:3, 4:13> 0.1
//     `-OpsetDecl <5:3, 5:36> override FullyConnected
//       `-ListOptions <5:29, 5:36>
//         `-NameValue <5:30, 5:35> linear8
//
// Each line is the node's kind, its source range and its payload (names,
// values, `override`, `remove`, operators; a run of N `not`s is one node and
// prints `not xN`). Ranges are `<line:col, line:col>`, 1-based, columns in
// code points (as diagnostics count them); the end is INCLUSIVE: it is the
// position of the node's last character, so a one-letter name prints
// `<3:9, 3:9>`. An empty range prints its begin twice and a missing range
// prints `<invalid>`. Parts of the AST that are plain structs rather than
// nodes (a block's `Field`, a weight's `SlotBinding` and `Axes`, a
// capabilities `Binding` and its `OpRef`s) are printed as nodes of those
// names. A missing child (left null by error recovery) prints `<<<NULL>>>`.
// Imports and declarations are printed in source order. The dump depends only
// on the AST and the source text, so it is deterministic.
//
//===----------------------------------------------------------------------===//
#include "frontend/AST.h"
#include "frontend/Frontend.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <functional>
#include <string>

using namespace tpcc;
using namespace tpcc::ast;

namespace {

const char *kindName(Node::Kind k) {
  switch (k) {
#define CASE(K)                                                                                    \
  case Node::Kind::K:                                                                              \
    return #K;
    CASE(IntLit)
    CASE(FloatLit)
    CASE(Pow2Lit)
    CASE(StringLit)
    CASE(BoolLit)
    CASE(NoneLit)
    CASE(InfLit)
    CASE(Quantity)
    CASE(NameValue)
    CASE(BlockValue)
    CASE(ListValue)
    CASE(NamedOptions)
    CASE(ListOptions)
    CASE(ConcatOptions)
    CASE(SetName)
    CASE(SetUnion)
    CASE(VersionItem)
    CASE(TypeItem)
    CASE(SimdPaddingItem)
    CASE(MetadataItem)
    CASE(PreservingQuantizersItem)
    CASE(ResourcesItem)
    CASE(RecipeItem)
    CASE(AttrDecl)
    CASE(ConfigDecl)
    CASE(OptionsDecl)
    CASE(DefaultDecl)
    CASE(OpsetDecl)
    CASE(GroupDecl)
    CASE(FuseDecl)
    CASE(WeightDecl)
    CASE(OpListDecl)
    CASE(RangeDecl)
    CASE(CompositeDecl)
    CASE(OrPred)
    CASE(AndPred)
    CASE(NotPred)
    CASE(CmpPred)
    CASE(InPred)
    CASE(ConstPred)
    CASE(HasPred)
    CASE(AttrOperand)
    CASE(InputOperand)
    CASE(RankOperand)
    CASE(ShapeOperand)
    CASE(LiteralOperand)
    CASE(ListOperand)
    CASE(ImportDecl)
    CASE(PlatformDecl)
    CASE(FrameworkDecl)
    CASE(CapabilitiesDecl)
    CASE(RecipeDecl)
#undef CASE
  }
  return "<unknown node>";
}

/// A string as the language spells it: quoted, `"` and `\` escaped; control
/// characters (which the language cannot hold) as `\xNN` so lines stay whole.
std::string quote(llvm::StringRef s) {
  std::string out = "\"";
  for (char ch : s) {
    unsigned char c = ch;
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string join(const std::vector<Ident> &names) {
  std::string out;
  for (const Ident &n : names)
    out += (out.empty() ? "" : ", ") + n.name;
  return out;
}

class Dumper {
public:
  Dumper(const SourceManager &sm, llvm::raw_ostream &os) : sm(sm), os(os) {}

  void dumpFile(const File &file);

private:
  using Children = std::vector<std::function<void()>>;

  /// Prints one line `KIND <range> PAYLOAD`, then its children one level
  /// deeper. `children` are thunks, each printing exactly one child.
  void line(llvm::StringRef kind, SourceRange r, const std::string &payload,
            const Children &children = {});
  void node(const Node *n);
  std::string range(SourceRange r) const;
  std::string pos(SourceLoc l) const;
  SourceLoc lastChar(SourceRange r) const;

  // Child thunk builders.
  std::function<void()> child(const Node *n) {
    return [this, n] { node(n); };
  }
  template <typename T> void addAll(Children &c, const std::vector<T *> &nodes) {
    for (const T *n : nodes)
      c.push_back(child(n));
  }
  void field(const Field &f);
  void slotBinding(const SlotBinding &b);
  void patternTerm(const PatternTerm &t);
  void binding(const Binding &b);
  void opRef(const OpRef &r);

  std::string payload(const Node &n) const;
  Children childrenOf(const Node &n);

  const SourceManager &sm;
  llvm::raw_ostream &os;
  std::string prefix; ///< the tree lines of the enclosing levels
};

std::string Dumper::pos(SourceLoc l) const {
  LineCol lc = sm.getLineCol(l);
  return std::to_string(lc.line) + ":" + std::to_string(lc.col);
}

/// The location of the last character of a half-open range (its begin when
/// the range is empty), stepping back over UTF-8 continuation bytes.
SourceLoc Dumper::lastChar(SourceRange r) const {
  if (!r.end.isValid() || r.end.file != r.begin.file || r.end.offset <= r.begin.offset)
    return r.begin;
  llvm::StringRef text = sm.getBuffer(r.end.file);
  uint32_t off = std::min<uint32_t>(r.end.offset, text.size());
  if (off <= r.begin.offset)
    return r.begin;
  --off;
  while (off > r.begin.offset && (static_cast<unsigned char>(text[off]) & 0xC0) == 0x80)
    --off;
  return {r.end.file, off};
}

std::string Dumper::range(SourceRange r) const {
  if (!r.isValid())
    return "<invalid>";
  return "<" + pos(r.begin) + ", " + pos(lastChar(r)) + ">";
}

void Dumper::line(llvm::StringRef kind, SourceRange r, const std::string &payload,
                  const Children &children) {
  os << kind << ' ' << range(r);
  if (!payload.empty())
    os << ' ' << payload;
  os << '\n';
  for (size_t i = 0; i < children.size(); ++i) {
    bool last = i + 1 == children.size();
    os << prefix << (last ? "`-" : "|-");
    size_t saved = prefix.size();
    prefix += last ? "  " : "| ";
    children[i]();
    prefix.resize(saved);
  }
}

std::string Dumper::payload(const Node &n) const {
  std::string out;
  auto add = [&](const std::string &s) {
    if (s.empty())
      return;
    out += (out.empty() ? "" : " ") + s;
  };
  if (const auto *item = llvm::dyn_cast<PlatformItem>(&n))
    if (item->isOverride)
      add("override");

  switch (n.getKind()) {
  case Node::Kind::IntLit:
    add(std::to_string(llvm::cast<IntLit>(n).value));
    break;
  case Node::Kind::FloatLit: {
    const auto &f = llvm::cast<FloatLit>(n);
    if (!f.text.empty()) {
      add(f.text);
    } else {
      std::string s;
      llvm::raw_string_ostream ss(s);
      ss << llvm::format("%.17g", f.value);
      add(ss.str());
    }
    break;
  }
  case Node::Kind::Pow2Lit:
    add("2^" + std::to_string(llvm::cast<Pow2Lit>(n).exponent));
    break;
  case Node::Kind::StringLit:
    add(quote(llvm::cast<StringLit>(n).value));
    break;
  case Node::Kind::BoolLit:
    add(llvm::cast<BoolLit>(n).value ? "true" : "false");
    break;
  case Node::Kind::InfLit:
    add(llvm::cast<InfLit>(n).negative ? "-inf" : "inf");
    break;
  case Node::Kind::Quantity:
    add(llvm::cast<Quantity>(n).text());
    break;
  case Node::Kind::NameValue:
    add(llvm::cast<NameValue>(n).name.name);
    break;
  case Node::Kind::NamedOptions:
    add(llvm::cast<NamedOptions>(n).name.name);
    break;
  case Node::Kind::ListOptions:
    if (const auto &base = llvm::cast<ListOptions>(n).base)
      add("base " + base->name);
    break;
  case Node::Kind::SetName:
    add(llvm::cast<SetName>(n).name.name);
    break;
  case Node::Kind::VersionItem: {
    const auto &v = llvm::cast<VersionItem>(n);
    add(std::to_string(v.minor) + "." + std::to_string(v.patch));
    break;
  }
  case Node::Kind::TypeItem:
    add(quote(llvm::cast<TypeItem>(n).type));
    break;
  case Node::Kind::SimdPaddingItem:
    add(llvm::cast<SimdPaddingItem>(n).value ? "true" : "false");
    break;
  case Node::Kind::MetadataItem:
    add(llvm::cast<MetadataItem>(n).value ? "true" : "false");
    break;
  case Node::Kind::PreservingQuantizersItem:
    add(llvm::cast<PreservingQuantizersItem>(n).value ? "true" : "false");
    break;
  case Node::Kind::RecipeItem:
    add(llvm::cast<RecipeItem>(n).recipe.name);
    break;
  case Node::Kind::AttrDecl:
    add(llvm::cast<AttrDecl>(n).name.name);
    break;
  case Node::Kind::ConfigDecl:
    add(llvm::cast<ConfigDecl>(n).name.name);
    break;
  case Node::Kind::OptionsDecl:
    add(llvm::cast<OptionsDecl>(n).name.name);
    break;
  case Node::Kind::OpsetDecl:
    add(join(llvm::cast<OpsetDecl>(n).names));
    break;
  case Node::Kind::GroupDecl:
    add(llvm::cast<GroupDecl>(n).name.name);
    break;
  case Node::Kind::FuseDecl: {
    const auto &f = llvm::cast<FuseDecl>(n);
    if (f.isRemove)
      add("remove");
    if (f.asName)
      add("as " + f.asName->name);
    break;
  }
  case Node::Kind::WeightDecl:
    add(llvm::cast<WeightDecl>(n).slot.name);
    break;
  case Node::Kind::OpListDecl: {
    const auto &l = llvm::cast<OpListDecl>(n);
    add(l.listKind == OpListDecl::Activation ? "activation" : "no_quantize");
    add(join(l.ops));
    break;
  }
  case Node::Kind::RangeDecl:
    add(llvm::cast<RangeDecl>(n).op.name);
    break;
  case Node::Kind::CompositeDecl: {
    const auto &d = llvm::cast<CompositeDecl>(n);
    add(d.name.name + "(" + join(d.params) + ")" + (d.is ? " is " + d.is->name : ""));
    break;
  }
  case Node::Kind::NotPred: {
    // A run of `not`s is one node: `not`, or `not x3` for three.
    unsigned count = llvm::cast<NotPred>(n).count;
    add(count == 1 ? std::string("not") : "not x" + std::to_string(count));
    break;
  }
  case Node::Kind::CmpPred:
    add(std::string("'") + toString(llvm::cast<CmpPred>(n).op) + "'");
    break;
  case Node::Kind::ConstPred:
    add("input[" + std::to_string(llvm::cast<ConstPred>(n).index) + "]");
    break;
  case Node::Kind::HasPred:
    add(llvm::cast<HasPred>(n).attr.name);
    break;
  case Node::Kind::AttrOperand:
    add(llvm::cast<AttrOperand>(n).name.name);
    break;
  case Node::Kind::InputOperand:
    add("input[" + std::to_string(llvm::cast<InputOperand>(n).index) + "]");
    break;
  case Node::Kind::RankOperand:
    add("rank(input[" + std::to_string(llvm::cast<RankOperand>(n).index) + "])");
    break;
  case Node::Kind::ShapeOperand: {
    const auto &s = llvm::cast<ShapeOperand>(n);
    add("shape(input[" + std::to_string(s.index) + "])[" + std::to_string(s.dim) + "]");
    break;
  }
  case Node::Kind::ImportDecl:
    add(quote(llvm::cast<ImportDecl>(n).path));
    break;
  case Node::Kind::PlatformDecl: {
    const auto &p = llvm::cast<PlatformDecl>(n);
    add(p.name.name);
    if (p.parent)
      add("extends " + p.parent->name);
    break;
  }
  case Node::Kind::FrameworkDecl:
    add(llvm::cast<FrameworkDecl>(n).name.name);
    break;
  case Node::Kind::CapabilitiesDecl: {
    const auto &c = llvm::cast<CapabilitiesDecl>(n);
    add(c.name.name + " = " + c.platform.name + " on " + c.framework.name);
    if (c.parent)
      add("extends " + c.parent->name);
    break;
  }
  case Node::Kind::RecipeDecl: {
    const auto &r = llvm::cast<RecipeDecl>(n);
    add(r.name.name);
    if (r.parent)
      add("extends " + r.parent->name);
    break;
  }
  case Node::Kind::NoneLit:
  case Node::Kind::ResourcesItem:
  case Node::Kind::BlockValue:
  case Node::Kind::ListValue:
  case Node::Kind::SetUnion:
  case Node::Kind::ConcatOptions:
  case Node::Kind::DefaultDecl:
  case Node::Kind::OrPred:
  case Node::Kind::AndPred:
  case Node::Kind::InPred:
  case Node::Kind::LiteralOperand:
  case Node::Kind::ListOperand:
    break;
  }
  return out;
}

Dumper::Children Dumper::childrenOf(const Node &n) {
  Children c;
  switch (n.getKind()) {
  case Node::Kind::NameValue:
    addAll(c, llvm::cast<NameValue>(n).withs);
    break;
  case Node::Kind::BlockValue:
    for (const Field &f : llvm::cast<BlockValue>(n).fields)
      c.push_back([this, &f] { field(f); });
    break;
  case Node::Kind::ListValue:
    addAll(c, llvm::cast<ListValue>(n).elements);
    break;
  case Node::Kind::NamedOptions:
    addAll(c, llvm::cast<NamedOptions>(n).withs);
    break;
  case Node::Kind::ListOptions:
    addAll(c, llvm::cast<ListOptions>(n).elements);
    break;
  case Node::Kind::ConcatOptions:
    addAll(c, llvm::cast<ConcatOptions>(n).parts);
    break;
  case Node::Kind::SetUnion:
    addAll(c, llvm::cast<SetUnion>(n).members);
    break;
  case Node::Kind::ResourcesItem:
    c.push_back(child(llvm::cast<ResourcesItem>(n).body));
    break;
  case Node::Kind::AttrDecl:
    c.push_back(child(llvm::cast<AttrDecl>(n).value));
    break;
  case Node::Kind::ConfigDecl:
    c.push_back(child(llvm::cast<ConfigDecl>(n).value));
    break;
  case Node::Kind::OptionsDecl:
    c.push_back(child(llvm::cast<OptionsDecl>(n).options));
    break;
  case Node::Kind::DefaultDecl:
    c.push_back(child(llvm::cast<DefaultDecl>(n).options));
    break;
  case Node::Kind::OpsetDecl:
    // A config-less opset has no options child.
    if (const OptionsExpr *o = llvm::cast<OpsetDecl>(n).options)
      c.push_back(child(o));
    break;
  case Node::Kind::GroupDecl:
    addAll(c, llvm::cast<GroupDecl>(n).members);
    break;
  case Node::Kind::FuseDecl: {
    const auto &f = llvm::cast<FuseDecl>(n);
    addAll(c, f.elements);
    if (f.config)
      c.push_back(child(f.config));
    break;
  }
  case Node::Kind::WeightDecl:
    for (const SlotBinding &b : llvm::cast<WeightDecl>(n).bindings)
      c.push_back([this, &b] { slotBinding(b); });
    break;
  case Node::Kind::RangeDecl: {
    const auto &r = llvm::cast<RangeDecl>(n);
    c.push_back(child(r.lo));
    c.push_back(child(r.hi));
    break;
  }
  case Node::Kind::CompositeDecl: {
    const PatternTerm &t = llvm::cast<CompositeDecl>(n).pattern;
    c.push_back([this, &t] { patternTerm(t); });
    break;
  }
  case Node::Kind::OrPred:
    addAll(c, llvm::cast<OrPred>(n).operands);
    break;
  case Node::Kind::AndPred:
    addAll(c, llvm::cast<AndPred>(n).operands);
    break;
  case Node::Kind::NotPred:
    c.push_back(child(llvm::cast<NotPred>(n).operand));
    break;
  case Node::Kind::CmpPred: {
    const auto &p = llvm::cast<CmpPred>(n);
    c.push_back(child(p.lhs));
    c.push_back(child(p.rhs));
    break;
  }
  case Node::Kind::InPred: {
    const auto &p = llvm::cast<InPred>(n);
    c.push_back(child(p.lhs));
    addAll(c, p.list);
    break;
  }
  case Node::Kind::LiteralOperand:
    c.push_back(child(llvm::cast<LiteralOperand>(n).literal));
    break;
  case Node::Kind::ListOperand:
    addAll(c, llvm::cast<ListOperand>(n).elements);
    break;
  case Node::Kind::PlatformDecl:
    addAll(c, llvm::cast<PlatformDecl>(n).items);
    break;
  case Node::Kind::FrameworkDecl:
    addAll(c, llvm::cast<FrameworkDecl>(n).items);
    break;
  case Node::Kind::CapabilitiesDecl:
    for (const Binding &b : llvm::cast<CapabilitiesDecl>(n).bindings)
      c.push_back([this, &b] { binding(b); });
    break;
  case Node::Kind::RecipeDecl:
    c.push_back(child(llvm::cast<RecipeDecl>(n).body));
    break;
  case Node::Kind::IntLit:
  case Node::Kind::FloatLit:
  case Node::Kind::Pow2Lit:
  case Node::Kind::StringLit:
  case Node::Kind::BoolLit:
  case Node::Kind::NoneLit:
  case Node::Kind::InfLit:
  case Node::Kind::Quantity:
  case Node::Kind::SetName:
  case Node::Kind::VersionItem:
  case Node::Kind::TypeItem:
  case Node::Kind::SimdPaddingItem:
  case Node::Kind::PreservingQuantizersItem:
  case Node::Kind::MetadataItem:
  case Node::Kind::RecipeItem:
  case Node::Kind::OpListDecl:
  case Node::Kind::ConstPred:
  case Node::Kind::HasPred:
  case Node::Kind::AttrOperand:
  case Node::Kind::InputOperand:
  case Node::Kind::RankOperand:
  case Node::Kind::ShapeOperand:
  case Node::Kind::ImportDecl:
    break;
  }
  return c;
}

void Dumper::node(const Node *n) {
  if (!n) {
    os << "<<<NULL>>>\n";
    return;
  }
  line(kindName(n->getKind()), n->getRange(), payload(*n), childrenOf(*n));
}

void Dumper::field(const Field &f) { line("Field", f.range, f.keyString(), {child(f.value)}); }

void Dumper::slotBinding(const SlotBinding &b) {
  Children c;
  if (b.where)
    c.push_back(child(b.where));
  if (!b.axes.empty())
    c.push_back([this, &b] {
      std::string args;
      for (const AxisArg &a : b.axes)
        args += (args.empty() ? "" : ", ") + a.name.name + ": " + std::to_string(a.value);
      line("Axes", b.axesRange, args);
    });
  line("SlotBinding", b.range, b.op.name + ".input[" + std::to_string(b.input) + "]", c);
}

void Dumper::patternTerm(const PatternTerm &t) {
  if (t.termKind == PatternTerm::Param)
    return line("PatternParam", t.range, t.name.name);
  if (t.termKind == PatternTerm::Number)
    return line("PatternNumber", t.range, t.text);
  Children c;
  for (const PatternTerm &a : t.args)
    c.push_back([this, &a] { patternTerm(a); });
  if (t.where)
    c.push_back(child(t.where));
  line("PatternOp", t.range, t.name.name, c);
}

void Dumper::binding(const Binding &b) {
  Children c;
  for (const OpRef &r : b.ops)
    c.push_back([this, &r] { opRef(r); });
  std::string text = b.none ? b.opset.name + " <- none" : b.opset.name;
  line("Binding", b.range, b.isOverride() ? "override " + text : text, c);
}

void Dumper::opRef(const OpRef &r) {
  Children c;
  if (r.where)
    c.push_back(child(r.where));
  line("OpRef", r.range, r.op.name, c);
}

void Dumper::dumpFile(const File &file) {
  std::string name = file.bufferId ? sm.getName(file.bufferId).str() : file.path;
  os << "File " << quote(name) << '\n';

  // Imports and declarations are kept apart in ast::File; print them
  // interleaved, in source order.
  std::vector<const Node *> top;
  top.insert(top.end(), file.imports.begin(), file.imports.end());
  top.insert(top.end(), file.decls.begin(), file.decls.end());
  std::stable_sort(top.begin(), top.end(), [](const Node *a, const Node *b) {
    if (!a || !b)
      return a && !b; // a missing node (error recovery) goes last
    return a->getLoc().offset < b->getLoc().offset;
  });
  for (size_t i = 0; i < top.size(); ++i) {
    bool last = i + 1 == top.size();
    os << (last ? "`-" : "|-");
    prefix = last ? "  " : "| ";
    node(top[i]);
  }
  prefix.clear();
}

} // namespace

void tpcc::dumpAST(const SourceManager &sm, const ast::File &file, llvm::raw_ostream &os) {
  Dumper(sm, os).dumpFile(file);
}

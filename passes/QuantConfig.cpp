//===- QuantConfig.cpp - Building attrs and configs from field blocks -----===//
//
// The keys a config block understands:
//
//   activation.{method,bits,quantize,signedness,element,block,scale,block_scale}
//   input_bits         an integer or a list of integers
//   weights: ATTR      replaces the default weight config
//   weights.F          (F an attr field) edits the default weight config
//   weights.S: ATTR    replaces slot S (`weights.S: {}` creates it)
//   weights.S.F        edits slot S (a new slot starts from the defaults)
//   preserving, fixed_scale, fixed_zero_point, simd
//
// ATTR is an attr name, `attr with {...}`, or an inline block (which, being a
// nested block, means its dotted keys). Shorter keys are applied first, so
// `weights.kernel: k8, weights.kernel.bits: 4` is k8 with 4 bits in any order.
// `weights.quantize: false` applies to the default and to every slot, except
// slots whose `quantize` the same block sets.
//
//===----------------------------------------------------------------------===//
#include "passes/QuantConfig.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <set>

using namespace tpcc;
using namespace tpcc::passes;

namespace {
const char *const attrFields[] = {"method",  "bits",  "per_channel", "quantize", "lut_bits",
                                  "element", "block", "block_axis",  "scale",    "block_scale"};
const char *const activationFields[] = {"method",  "bits",  "quantize", "signedness",
                                        "element", "block", "scale",    "block_scale"};
const char *const configFields[] = {"activation",  "input_bits",       "weights", "preserving",
                                    "fixed_scale", "fixed_zero_point", "simd"};
const ir::QuantMethod allMethods[] = {ir::QuantMethod::PowerOfTwo, ir::QuantMethod::Symmetric,
                                      ir::QuantMethod::Uniform, ir::QuantMethod::LutPot,
                                      ir::QuantMethod::LutSym};
const ir::Signedness allSignedness[] = {ir::Signedness::Auto, ir::Signedness::Signed,
                                        ir::Signedness::Unsigned};
const ir::ElementFormat allElements[] = {ir::ElementFormat::Int, ir::ElementFormat::Fp8E4M3,
                                         ir::ElementFormat::Fp8E5M2, ir::ElementFormat::Fp4E2M1};
const ir::BlockAxis allBlockAxes[] = {ir::BlockAxis::Reduction, ir::BlockAxis::Output};
// A group's scale, and a block's factor under it.
const ir::ScaleFormat groupScales[] = {ir::ScaleFormat::Float32, ir::ScaleFormat::Float16,
                                       ir::ScaleFormat::E8M0, ir::ScaleFormat::Fp8E4M3};
const ir::ScaleFormat blockScales[] = {ir::ScaleFormat::UInt4, ir::ScaleFormat::UInt8,
                                       ir::ScaleFormat::E8M0, ir::ScaleFormat::Fp8E4M3};

/// Parses a scale format among `allowed` only.
template <size_t N> auto scaleParser(const ir::ScaleFormat (&allowed)[N]) {
  return [&allowed](llvm::StringRef s) -> std::optional<ir::ScaleFormat> {
    std::optional<ir::ScaleFormat> f = ir::parseScaleFormat(s);
    return f && llvm::is_contained(allowed, *f) ? f : std::nullopt;
  };
}

template <typename T> Explicit<T> at(T value, const FlatField &f, unsigned seq) {
  return Explicit<T>{std::move(value), f.value->getRange(), seq};
}

std::optional<ir::QuantMethod> readMethod(Compilation &c, const FlatField &f) {
  return readEnum<ir::QuantMethod>(c, f, "quantization method", allMethods, ir::parseQuantMethod);
}
} // namespace

bool passes::isAttrField(llvm::StringRef s) { return llvm::is_contained(attrFields, s); }

std::optional<PartialAttr> QuantConfigBuilder::buildAttr(const ast::Value &v) {
  if (auto *block = llvm::dyn_cast<ast::BlockValue>(&v)) {
    PartialAttr a;
    applyAttrBlock(a, *block);
    return a;
  }
  auto *n = llvm::dyn_cast<ast::NameValue>(&v);
  if (!n)
    return std::nullopt;
  const PartialAttr *base = names.lookupAttr(n->name);
  if (!base)
    return std::nullopt;
  PartialAttr a = *base;
  for (const ast::BlockValue *w : n->withs)
    if (w)
      applyAttrBlock(a, *w);
  return a;
}

std::optional<PartialConfig> QuantConfigBuilder::buildConfig(const ast::Value &v) {
  if (auto *block = llvm::dyn_cast<ast::BlockValue>(&v)) {
    PartialConfig cfg;
    applyConfigBlock(cfg, *block);
    return cfg;
  }
  auto *n = llvm::dyn_cast<ast::NameValue>(&v);
  if (!n)
    return std::nullopt;
  const PartialConfig *base = names.lookupConfig(n->name);
  if (!base)
    return std::nullopt;
  PartialConfig cfg = *base;
  for (const ast::BlockValue *w : n->withs)
    if (w)
      applyConfigBlock(cfg, *w);
  return cfg;
}

//===----------------------------------------------------------------------===//
// Attrs
//===----------------------------------------------------------------------===//

void QuantConfigBuilder::applyAttrBlock(PartialAttr &a, const ast::BlockValue &block) {
  unsigned seq = nextSeq++;
  // Attr keys have one component, so no edit can depend on another.
  for (const FlatField &f : flattenBlock(c, block))
    if (AttrEdit edit = readAttrField(f, 0, seq, "an attr"))
      edit(a);
}

/// Reads the attr field named by component `i` of `f`.
QuantConfigBuilder::AttrEdit QuantConfigBuilder::readAttrField(const FlatField &f, size_t i,
                                                               unsigned seq,
                                                               llvm::StringRef where) {
  llvm::StringRef name = f.name(i);
  if (!isAttrField(name)) {
    reportUnknownField(c, f, i, where, attrFields);
    return nullptr;
  }
  if (f.path.size() > i + 1) {
    reportUnknownField(c, f, i + 1, where, {});
    return nullptr;
  }
  if (name == "method") {
    if (auto m = readMethod(c, f))
      return [e = at(*m, f, seq)](PartialAttr &a) { a.method = e; };
  } else if (name == "bits") {
    if (auto b = readInt(c, f))
      return [e = at(*b, f, seq)](PartialAttr &a) { a.bits = e; };
  } else if (name == "per_channel") {
    if (auto b = readBool(c, f))
      return [e = at(*b, f, seq)](PartialAttr &a) { a.perChannel = e; };
  } else if (name == "quantize") {
    if (auto b = readBool(c, f))
      return [e = at(*b, f, seq)](PartialAttr &a) { a.quantize = e; };
  } else if (name == "lut_bits") {
    if (auto v = readIntOrNone(c, f))
      return [e = at(*v, f, seq)](PartialAttr &a) { a.lutBits = e; };
  } else if (auto edit = readFormatField(f, name, seq)) {
    return [edit](PartialAttr &a) { edit(a.format); };
  }
  return nullptr;
}

std::function<void(PartialFormat &)>
QuantConfigBuilder::readFormatField(const FlatField &f, llvm::StringRef name, unsigned seq) {
  if (name == "element") {
    if (auto e = readEnum<ir::ElementFormat>(c, f, "element format", allElements,
                                             ir::parseElementFormat))
      return [e = at(*e, f, seq)](PartialFormat &p) { p.element = e; };
  } else if (name == "block") {
    if (auto v = readIntOrNone(c, f))
      return [e = at(*v, f, seq)](PartialFormat &p) { p.block = e; };
  } else if (name == "block_axis") {
    if (auto a = readEnum<ir::BlockAxis>(c, f, "block axis", allBlockAxes, ir::parseBlockAxis))
      return [e = at(*a, f, seq)](PartialFormat &p) { p.blockAxis = e; };
  } else if (name == "scale") {
    if (auto s =
            readEnum<ir::ScaleFormat>(c, f, "scale format", groupScales, scaleParser(groupScales)))
      return [e = at(*s, f, seq)](PartialFormat &p) { p.scale = e; };
  } else if (name == "block_scale") {
    std::optional<std::optional<ir::ScaleFormat>> v;
    if (llvm::isa<ast::NoneLit>(f.value))
      v.emplace();
    else if (auto s = readEnum<ir::ScaleFormat>(c, f, "block scale format", blockScales,
                                                scaleParser(blockScales)))
      v.emplace(*s);
    if (v)
      return [e = at(*v, f, seq)](PartialFormat &p) { p.blockScale = e; };
  }
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Configs
//===----------------------------------------------------------------------===//

void QuantConfigBuilder::applyConfigBlock(PartialConfig &cfg, const ast::BlockValue &block) {
  unsigned seq = nextSeq++;
  std::vector<std::pair<size_t, ConfigEdit>> edits;
  const FlatField *quantizeOff = nullptr;
  std::set<std::string> slotsSettingQuantize;
  std::vector<FlatField> fields = flattenBlock(c, block);
  for (const FlatField &f : fields) {
    ConfigEdit edit = readConfigField(f, seq);
    if (!edit)
      continue;
    edits.emplace_back(f.path.size(), std::move(edit));
    if (f.name(0) != "weights")
      continue;
    if (f.path.size() == 2 && f.name(1) == "quantize" && !llvm::cast<ast::BoolLit>(f.value)->value)
      quantizeOff = &f;
    if (f.path.size() == 3 && f.name(2) == "quantize")
      slotsSettingQuantize.insert(f.name(1).str());
  }

  // A whole value (`weights.kernel: k8`) is set before the fields that edit
  // it (`weights.kernel.bits: 4`), whatever their order in the block.
  std::stable_sort(edits.begin(), edits.end(),
                   [](const auto &a, const auto &b) { return a.first < b.first; });
  for (auto &[depth, edit] : edits)
    edit(cfg);

  // `weights.quantize: false` also turns off every slot.
  if (quantizeOff)
    for (auto &[slot, attr] : cfg.slots)
      if (!slotsSettingQuantize.count(slot))
        attr.quantize = at(false, *quantizeOff, seq);
}

QuantConfigBuilder::ConfigEdit QuantConfigBuilder::readConfigField(const FlatField &f,
                                                                   unsigned seq) {
  llvm::StringRef head = f.name(0);
  if (head == "activation") {
    if (f.path.size() > 1)
      return readActivationField(f, seq);
    if (!isEmptyBlock(f.value))
      reportFieldType(c, f, "a block");
    return nullptr;
  }
  if (head == "weights")
    return readWeightsField(f, seq);
  bool known = head == "input_bits" || head == "preserving" || head == "fixed_scale" ||
               head == "fixed_zero_point" || head == "simd";
  if (!known) {
    reportUnknownField(c, f, 0, "a config", configFields);
    return nullptr;
  }
  if (f.path.size() > 1) {
    reportUnknownField(c, f, 1, "a config", {});
    return nullptr;
  }
  if (head == "input_bits")
    return readInputBits(f, seq);
  if (head == "preserving") {
    if (auto b = readBool(c, f))
      return [e = at(*b, f, seq)](PartialConfig &p) { p.preserving = e; };
  } else if (head == "fixed_scale") {
    std::optional<std::optional<double>> v;
    if (llvm::isa<ast::NoneLit>(f.value))
      v.emplace();
    else if (auto d = readNumber(c, f, /*allowInf=*/false, "a number or `none`"))
      v.emplace(*d);
    if (v)
      return [e = at(*v, f, seq)](PartialConfig &p) { p.fixedScale = e; };
  } else if (head == "fixed_zero_point") {
    if (auto v = readIntOrNone(c, f))
      return [e = at(*v, f, seq)](PartialConfig &p) { p.fixedZeroPoint = e; };
  } else if (head == "simd") {
    if (auto v = readIntOrNone(c, f))
      return [e = at(*v, f, seq)](PartialConfig &p) { p.simd = e; };
  }
  return nullptr;
}

QuantConfigBuilder::ConfigEdit QuantConfigBuilder::readActivationField(const FlatField &f,
                                                                       unsigned seq) {
  llvm::StringRef name = f.name(1);
  if (!llvm::is_contained(activationFields, name)) {
    reportUnknownField(c, f, 1, "", activationFields);
    return nullptr;
  }
  if (f.path.size() > 2) {
    reportUnknownField(c, f, 2, "", {});
    return nullptr;
  }
  if (name == "method") {
    if (auto m = readMethod(c, f))
      return [e = at(*m, f, seq)](PartialConfig &p) { p.activation.method = e; };
  } else if (name == "bits") {
    if (auto b = readInt(c, f))
      return [e = at(*b, f, seq)](PartialConfig &p) { p.activation.bits = e; };
  } else if (name == "quantize") {
    if (auto b = readBool(c, f))
      return [e = at(*b, f, seq)](PartialConfig &p) { p.activation.quantize = e; };
  } else if (name == "signedness") {
    if (auto s = readEnum<ir::Signedness>(c, f, "signedness", allSignedness, ir::parseSignedness))
      return [e = at(*s, f, seq)](PartialConfig &p) { p.activation.signedness = e; };
  } else if (auto edit = readFormatField(f, name, seq)) {
    return [edit](PartialConfig &p) { edit(p.activation.format); };
  }
  return nullptr;
}

QuantConfigBuilder::ConfigEdit QuantConfigBuilder::readInputBits(const FlatField &f, unsigned seq) {
  std::vector<Explicit<int64_t>> bits;
  if (auto *i = llvm::dyn_cast<ast::IntLit>(f.value)) {
    bits.push_back({i->value, i->getRange(), seq});
  } else if (auto *list = llvm::dyn_cast<ast::ListValue>(f.value);
             list && !list->elements.empty()) {
    bool ok = true;
    for (const ast::Value *e : list->elements) {
      if (auto *i = llvm::dyn_cast_or_null<ast::IntLit>(e)) {
        bits.push_back({i->value, i->getRange(), seq});
      } else if (e) {
        c.diags.emit(e->getRange(), diag::err_field_type, f.key, "an integer", describeValue(*e));
        ok = false;
      }
    }
    if (!ok)
      return nullptr;
  } else {
    reportFieldType(c, f, "an integer or a non-empty list of integers");
    return nullptr;
  }
  return [e = at(std::move(bits), f, seq)](PartialConfig &p) { p.inputBits = e; };
}

QuantConfigBuilder::ConfigEdit QuantConfigBuilder::readWeightsField(const FlatField &f,
                                                                    unsigned seq) {
  // `weights: ATTR` replaces the default weight config.
  if (f.path.size() == 1) {
    if (llvm::isa<ast::NameValue>(f.value)) {
      if (std::optional<PartialAttr> a = buildAttr(*f.value))
        return [a = std::move(*a)](PartialConfig &p) { p.weights = a; };
    } else if (!isEmptyBlock(f.value)) {
      reportFieldType(c, f, "an attr name or a block");
    }
    return nullptr;
  }
  std::string sub = f.name(1).str();
  // `weights.F`: a field of the default weight config.
  if (isAttrField(sub)) {
    if (AttrEdit edit = readAttrField(f, 1, seq, ""))
      return [edit](PartialConfig &p) { edit(p.weights); };
    return nullptr;
  }
  // `weights.S: ATTR` replaces slot S (`{}` creates it); `weights.S.F` edits
  // it.
  if (f.path.size() == 2) {
    if (llvm::isa<ast::NameValue>(f.value)) {
      if (std::optional<PartialAttr> a = buildAttr(*f.value))
        return [sub, a = std::move(*a)](PartialConfig &p) { p.slots[sub] = a; };
    } else if (isEmptyBlock(f.value)) {
      return [sub](PartialConfig &p) { p.slots[sub]; };
    } else {
      reportFieldType(c, f, "an attr name or a block");
    }
    return nullptr;
  }
  if (AttrEdit edit = readAttrField(f, 2, seq, ""))
    return [sub, edit](PartialConfig &p) { edit(p.slots[sub]); };
  return nullptr;
}

//===- QuantConfigChecks.cpp - Defaults and Rules 8-10, 16 of configs ----===//
//
// Defaults are filled in only once every edit is applied (an attr's
// `quantize` depends on whether `bits` was given, `input_bits` on the
// activation's bits). The checks run on partial values so that each
// diagnostic points at the field that is wrong; when two fields are wrong only
// together (`lut_bits` and `bits`, a zero point and its bit width) it points
// at the one set last, which is the edit that broke the pair.
//
//===----------------------------------------------------------------------===//
#include "passes/QuantConfig.h"

#include <algorithm>
#include <climits>

using namespace tpcc;
using namespace tpcc::passes;

namespace {

int toInt(int64_t v) { return static_cast<int>(std::clamp<int64_t>(v, INT_MIN, INT_MAX)); }

template <typename T> T valueOr(const std::optional<Explicit<T>> &e, T dflt) {
  return e ? e->value : dflt;
}

/// The location of whichever of the given fields was set last (the first
/// one given when several were set by the same block).
struct Latest {
  SourceRange loc;
  unsigned seq = 0;
  bool any = false;
  template <typename T> Latest &operator<<(const std::optional<Explicit<T>> &e) {
    if (e && (!any || e->seq > seq)) {
      loc = e->loc;
      seq = e->seq;
      any = true;
    }
    return *this;
  }
};

void checkBits(Compilation &c, const std::optional<Explicit<int64_t>> &bits, const char *what,
               int64_t lo, int64_t hi) {
  if (bits && (bits->value < lo || bits->value > hi))
    c.diags.emit(bits->loc, diag::err_bits_range, what, lo, hi, bits->value);
}

ir::FormatConfig finalizeFormat(const PartialFormat &p) {
  ir::FormatConfig r;
  r.element = valueOr(p.element, ir::ElementFormat::Int);
  if (p.block && p.block->value)
    r.block = toInt(*p.block->value);
  // Without blocks the axis says nothing: plain formats compare equal.
  r.blockAxis = r.block ? valueOr(p.blockAxis, ir::BlockAxis::Reduction) : ir::BlockAxis::Reduction;
  r.scale = valueOr(p.scale, ir::ScaleFormat::Float32);
  if (p.blockScale && p.blockScale->value)
    r.blockScale = *p.blockScale->value;
  return r;
}

bool floatElement(const PartialFormat &f) {
  return f.element && f.element->value != ir::ElementFormat::Int;
}

/// Rule 16 for the fields an attr and an activation share: the element's
/// bits and method, the block size, and a block scale without blocks.
void checkFormat(Compilation &c, const PartialFormat &f,
                 const std::optional<Explicit<ir::QuantMethod>> &method,
                 const std::optional<Explicit<int64_t>> &bits, ir::QuantMethod defaultMethod) {
  ir::QuantMethod m = valueOr(method, defaultMethod);
  if (floatElement(f)) {
    ir::ElementFormat e = f.element->value;
    if (bits && bits->value != ir::elementBits(e))
      c.diags.emit((Latest() << bits << f.element).loc, diag::err_element_bits, ir::toString(e),
                   ir::elementBits(e), bits->value);
    if (m != ir::QuantMethod::Symmetric && m != ir::QuantMethod::PowerOfTwo)
      c.diags.emit((Latest() << method << f.element).loc, diag::err_element_method, ir::toString(e),
                   ir::toString(m));
  }
  bool blocked = f.block && f.block->value;
  if (blocked && *f.block->value <= 0)
    c.diags.emit(f.block->loc, diag::err_not_positive, "block", *f.block->value);
  if (blocked && ir::isLut(m))
    c.diags.emit((Latest() << method << f.block).loc, diag::err_lut_block, ir::toString(m));
  if (f.blockScale && f.blockScale->value && !blocked)
    c.diags.emit((Latest() << f.blockScale << f.block).loc, diag::err_block_scale_needs_block);
}

} // namespace

//===----------------------------------------------------------------------===//
// Defaults
//===----------------------------------------------------------------------===//

ir::AttrConfig passes::finalizeAttr(const PartialAttr &a) {
  ir::AttrConfig r;
  r.format = finalizeFormat(a.format);
  r.method = valueOr(a.method, ir::QuantMethod::PowerOfTwo);
  bool fp = r.format.element != ir::ElementFormat::Int;
  r.bits = toInt(valueOr<int64_t>(a.bits, fp ? ir::elementBits(r.format.element) : 32));
  r.perChannel = valueOr(a.perChannel, false);
  r.quantize = a.quantize ? a.quantize->value : (a.bits && a.bits->value < 32) || fp;
  if (a.lutBits && a.lutBits->value)
    r.lutBits = toInt(*a.lutBits->value);
  return r;
}

ir::OpConfig passes::finalizeConfig(const PartialConfig &p, std::string name, SourceRange loc) {
  ir::OpConfig r;
  r.name = std::move(name);
  r.loc = loc;
  r.activation.format = finalizeFormat(p.activation.format);
  r.activation.method = valueOr(p.activation.method, ir::QuantMethod::PowerOfTwo);
  ir::ElementFormat element = r.activation.format.element;
  r.activation.bits = toInt(valueOr<int64_t>(
      p.activation.bits, element == ir::ElementFormat::Int ? 8 : ir::elementBits(element)));
  r.activation.quantize = valueOr(p.activation.quantize, true);
  r.activation.signedness = valueOr(p.activation.signedness, ir::Signedness::Auto);
  if (p.inputBits) {
    for (const Explicit<int64_t> &b : p.inputBits->value)
      r.inputBits.push_back(toInt(b.value));
    std::sort(r.inputBits.begin(), r.inputBits.end());
    r.inputBits.erase(std::unique(r.inputBits.begin(), r.inputBits.end()), r.inputBits.end());
  } else {
    r.inputBits = {r.activation.bits};
  }
  r.weights = finalizeAttr(p.weights);
  for (const auto &[slot, attr] : p.slots)
    r.slots[slot] = finalizeAttr(attr);
  r.preserving = valueOr(p.preserving, false);
  if (p.fixedScale)
    r.fixedScale = p.fixedScale->value;
  if (p.fixedZeroPoint)
    r.fixedZeroPoint = p.fixedZeroPoint->value;
  if (!p.simd)
    r.simd = 32;
  else if (p.simd->value)
    r.simd = toInt(*p.simd->value);
  else
    r.simd.reset();
  return r;
}

//===----------------------------------------------------------------------===//
// Rules 8-10 and 16
//===----------------------------------------------------------------------===//

static void checkAttrFormat(Compilation &c, const PartialAttr &a) {
  checkFormat(c, a.format, a.method, a.bits, ir::QuantMethod::PowerOfTwo);
  const PartialFormat &f = a.format;
  if (f.block && f.block->value && !(f.blockScale && f.blockScale->value) && a.perChannel &&
      a.perChannel->value)
    c.diags.emit((Latest() << a.perChannel << f.block << f.blockScale).loc,
                 diag::warn_block_per_channel);
}

void passes::checkAttr(Compilation &c, const PartialAttr &a) {
  checkBits(c, a.bits, "weight", 1, 32);
  checkAttrFormat(c, a);
  if (!a.lutBits || !a.lutBits->value)
    return;
  int64_t lut = *a.lutBits->value;
  ir::QuantMethod method = valueOr(a.method, ir::QuantMethod::PowerOfTwo);
  if (!ir::isLut(method)) {
    c.diags.emit((Latest() << a.lutBits << a.method).loc, diag::err_lut_bits_method,
                 ir::toString(method));
    return;
  }
  int64_t bits = valueOr<int64_t>(a.bits, 32);
  if (bits < 1 || bits > 32)
    return; // already reported
  if (lut < bits || lut > 32)
    c.diags.emit((Latest() << a.lutBits << a.bits).loc, diag::err_lut_bits_range, bits, lut);
}

void passes::checkConfig(Compilation &c, const PartialConfig &p) {
  const PartialActivation &act = p.activation;
  checkBits(c, act.bits, "activation", 1, 16);
  checkFormat(c, act.format, act.method, act.bits, ir::QuantMethod::PowerOfTwo);
  if (floatElement(act.format)) {
    const char *e = ir::toString(act.format.element->value);
    if (act.signedness && act.signedness->value == ir::Signedness::Unsigned)
      c.diags.emit((Latest() << act.signedness << act.format.element).loc,
                   diag::err_element_unsigned, e);
    if (p.fixedZeroPoint && p.fixedZeroPoint->value && *p.fixedZeroPoint->value != 0)
      c.diags.emit((Latest() << p.fixedZeroPoint << act.format.element).loc,
                   diag::err_element_zero_point, e, *p.fixedZeroPoint->value);
  }
  if (act.format.block && act.format.block->value && p.fixedScale && p.fixedScale->value)
    c.diags.emit((Latest() << p.fixedScale << act.format.block).loc, diag::err_block_fixed_scale);
  if (act.method && ir::isLut(act.method->value))
    c.diags.emit(act.method->loc, diag::err_lut_on_activation, ir::toString(act.method->value));
  if (p.inputBits)
    for (const Explicit<int64_t> &b : p.inputBits->value)
      checkBits(c, std::optional<Explicit<int64_t>>(b), "input", 1, 16);

  if (p.fixedScale && p.fixedScale->value && *p.fixedScale->value <= 0)
    c.diags.emit(p.fixedScale->loc, diag::err_scale_not_positive,
                 formatNumber(*p.fixedScale->value));

  int64_t bits = valueOr<int64_t>(act.bits, 8);
  if (p.fixedZeroPoint && p.fixedZeroPoint->value && isValidActivationBits(bits)) {
    int64_t zp = *p.fixedZeroPoint->value;
    ir::Signedness s = valueOr(act.signedness, ir::Signedness::Auto);
    int64_t lo = s == ir::Signedness::Unsigned ? 0 : -(int64_t(1) << (bits - 1));
    int64_t hi =
        s == ir::Signedness::Signed ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
    const char *kind = s == ir::Signedness::Signed     ? "signed"
                       : s == ir::Signedness::Unsigned ? "unsigned"
                                                       : "signed or unsigned";
    if (zp < lo || zp > hi)
      c.diags.emit((Latest() << p.fixedZeroPoint << act.bits << act.signedness).loc,
                   diag::err_zero_point_range, zp, bits, kind, lo, hi);
  }

  if (p.simd && p.simd->value && *p.simd->value <= 0)
    c.diags.emit(p.simd->loc, diag::err_not_positive, "simd", *p.simd->value);

  checkAttr(c, p.weights);
  for (const auto &[slot, attr] : p.slots)
    checkAttr(c, attr);
}

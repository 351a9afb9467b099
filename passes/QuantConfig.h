//===- QuantConfig.h - Attrs and configs before defaults --------*- C++ -*-===//
//
// `X with { ... }` copies the fields X set explicitly and edits only the named
// ones; defaults are computed after all edits. So an attr or a config is first
// built as a *partial* value that holds only explicitly set fields, each with
// where it was written; `finalize*` then fills the defaults and produces the
// IR, and `check*` applies Rules 8-10.
//
// The builder resolves names (`a8 with {...}`, `weights: kernel8`) through
// `QuantNames`, which the platform resolver implements with its scope.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_PASSES_QUANTCONFIG_H
#define TPCC_PASSES_QUANTCONFIG_H

#include "frontend/Frontend.h"
#include "ir/TpcIR.h"
#include "passes/FieldBlock.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tpcc::passes {

/// An explicitly set field: its value, where it was written, and the order in
/// which edits happened (a later edit has a larger `seq`), so that a check of
/// two fields together can point at the one set last.
template <typename T> struct Explicit {
  T value;
  SourceRange loc;
  unsigned seq = 0;
};

/// The number-format fields of an attr or an activation (ir::FormatConfig).
struct PartialFormat {
  std::optional<Explicit<ir::ElementFormat>> element;
  std::optional<Explicit<std::optional<int64_t>>> block; ///< none clears
  std::optional<Explicit<ir::BlockAxis>> blockAxis;      ///< attrs only
  std::optional<Explicit<ir::ScaleFormat>> scale;
  std::optional<Explicit<std::optional<ir::ScaleFormat>>> blockScale; ///< none clears
};

struct PartialAttr {
  std::optional<Explicit<ir::QuantMethod>> method;
  std::optional<Explicit<int64_t>> bits;
  std::optional<Explicit<bool>> perChannel, quantize;
  std::optional<Explicit<std::optional<int64_t>>> lutBits; ///< none clears
  PartialFormat format;
};

struct PartialActivation {
  std::optional<Explicit<ir::QuantMethod>> method;
  std::optional<Explicit<int64_t>> bits;
  std::optional<Explicit<bool>> quantize;
  std::optional<Explicit<ir::Signedness>> signedness;
  PartialFormat format;
};

struct PartialConfig {
  PartialActivation activation;
  /// Each element with its own location (Rule 11 points at it).
  std::optional<Explicit<std::vector<Explicit<int64_t>>>> inputBits;
  PartialAttr weights;
  std::map<std::string, PartialAttr> slots;
  std::optional<Explicit<bool>> preserving;
  std::optional<Explicit<std::optional<double>>> fixedScale;
  std::optional<Explicit<std::optional<int64_t>>> fixedZeroPoint;
  std::optional<Explicit<std::optional<int64_t>>> simd; ///< inner none: `simd: none`
};

/// Named attrs and configs, as the builder sees them.
class QuantNames {
public:
  virtual ~QuantNames() = default;
  /// The attr `name` refers to, or null after an error was reported.
  virtual const PartialAttr *lookupAttr(const ast::Ident &name) = 0;
  /// The config `name` refers to, or null after an error was reported.
  virtual const PartialConfig *lookupConfig(const ast::Ident &name) = 0;
};

/// Builds partial attrs and configs from their AST values.
class QuantConfigBuilder {
public:
  QuantConfigBuilder(Compilation &c, QuantNames &names) : c(c), names(names) {}

  /// `NAME with {...}...` or `{...}` as an attr; nullopt when NAME cannot be
  /// resolved. Field errors are reported and the field is skipped.
  std::optional<PartialAttr> buildAttr(const ast::Value &v);
  /// The same for a config.
  std::optional<PartialConfig> buildConfig(const ast::Value &v);

  void applyAttrBlock(PartialAttr &a, const ast::BlockValue &block);
  void applyConfigBlock(PartialConfig &cfg, const ast::BlockValue &block);

private:
  // Readers check a field's value (reporting errors in source order) and
  // return the edit it makes, or null after an error. Edits of a block are
  // applied after all its fields are read, shorter keys first.
  using AttrEdit = std::function<void(PartialAttr &)>;
  using ConfigEdit = std::function<void(PartialConfig &)>;
  AttrEdit readAttrField(const FlatField &f, size_t i, unsigned seq, llvm::StringRef where);
  ConfigEdit readConfigField(const FlatField &f, unsigned seq);
  ConfigEdit readActivationField(const FlatField &f, unsigned seq);
  ConfigEdit readInputBits(const FlatField &f, unsigned seq);
  ConfigEdit readWeightsField(const FlatField &f, unsigned seq);
  /// Reads format field `name` (element, block, block_axis, scale,
  /// block_scale) of `f`; null after an error.
  std::function<void(PartialFormat &)> readFormatField(const FlatField &f, llvm::StringRef name,
                                                       unsigned seq);

  Compilation &c;
  QuantNames &names;
  unsigned nextSeq = 1;
};

/// The IR of an attr, with defaults: method power_of_two, bits 32 (a
/// floating-point element's width), per_channel false, quantize = (bits
/// given and < 32, or a floating-point element given), lut_bits unset.
ir::AttrConfig finalizeAttr(const PartialAttr &a);
/// The IR of a config, with defaults (see docs/language.md §4.3).
ir::OpConfig finalizeConfig(const PartialConfig &p, std::string name, SourceRange loc);

/// Rules 8, 9 and 16 for an attr (weights bits, `lut_bits`, number formats).
void checkAttr(Compilation &c, const PartialAttr &a);
/// Rules 8-10 and 16 for a config and its weight attrs.
void checkConfig(Compilation &c, const PartialConfig &p);

/// Whether `name` is a field of an attr (`method`, `bits`, ..., `block_scale`):
/// `weights.NAME` addresses it, so no weight slot may be named so.
bool isAttrField(llvm::StringRef name);

/// The bit widths an activation may have.
inline bool isValidActivationBits(int64_t b) { return b >= 1 && b <= 16; }

} // namespace tpcc::passes

#endif

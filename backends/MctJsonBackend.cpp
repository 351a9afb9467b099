//===- MctJsonBackend.cpp - MCT's serialized TPC (schema version 2) -------===//
//
// `tpcc emit --emit=mct-json --platform NAME`: one platform as the JSON that
// Sony MCT's `TargetPlatformCapabilities` (schema v2) serializes to, so
// `TargetPlatformCapabilities.model_validate_json` reads it back. The object
// is denormalized: every options block is repeated in place, also inside
// fusing patterns. Field by field (see docs/language.md §11.3):
//
//   - methods and signedness are MCT's enum numbers (interop::mctMethod,
//     interop::mctSignedness);
//   - `attr_weights_configs_mapping` holds only the slots a config names,
//     `kernel` as "kernel_attr" and `bias` as "bias_attr";
//   - `qc_options` is null for a config-less opset (MCT then uses
//     `default_qco`); an options block with one config still has
//     `base_config`;
//   - a fusing element with one opset is that OperatorsSet; with several, an
//     OperatorSetGroup of them in the order written, named as MCT names it
//     (the opset names joined by `_`); a pattern's `name` is its `as NAME`,
//     else, as MCT names it, its elements' names joined by `_`;
//     `fuse_op_quantization_config` is the pattern's `with` config, or null;
//   - `tpc_minor_version` / `tpc_patch_version` come from `version`, and are
//     null when the platform has none (MCT's fields are Optional[int]);
//   - `insert_preserving_quantizers` is the platform's switch;
//   - a platform's `resources` (its memory) has no MCT field: it is left out,
//     with a warning (`warn_interop_resources`);
//   - MCT's attrs and activations are integers with one scale per tensor or
//     channel: another number format (floating-point elements, blocks, scale
//     formats) is written as integers of its bits, with a warning
//     (`warn_interop_format`);
//   - opset names are MCT's `OperatorSetNames` where they mean one: `Expand` is
//     written as MCT spells it, "Expend". MCT attaches a TPC to PyTorch or Keras
//     by these names, so a name outside them is a warning (`warn_mct_set_name`).
//
// Keys are sorted and the output is canonical, as for `--emit=json`.
//
//===----------------------------------------------------------------------===//
#include "backends/Backends.h"
#include "ir/JSONWriter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace tpcc;

int interop::mctMethod(ir::QuantMethod m) {
  switch (m) {
  case ir::QuantMethod::PowerOfTwo:
    return 0;
  case ir::QuantMethod::LutPot:
    return 1;
  case ir::QuantMethod::Symmetric:
    return 2;
  case ir::QuantMethod::Uniform:
    return 3;
  case ir::QuantMethod::LutSym:
    return 4;
  }
  return 0;
}

int interop::mctSignedness(ir::Signedness s) {
  switch (s) {
  case ir::Signedness::Auto:
    return 0;
  case ir::Signedness::Signed:
    return 1;
  case ir::Signedness::Unsigned:
    return 2;
  }
  return 0;
}

std::vector<interop::LostFormat> interop::lostFormats(const ir::Options &o) {
  std::vector<LostFormat> lost;
  for (const ir::OpConfig &cfg : o.configs)
    ir::forEachFormat(
        cfg, [&](const std::string &tensors, const ir::FormatConfig &f, int bits, ir::QuantMethod) {
          LostFormat l{ir::formatText(f, bits), tensors,
                       std::to_string(bits) + "-bit integers with one scale per tensor or channel"};
          if (llvm::none_of(lost, [&](const LostFormat &e) {
                return e.format == l.format && e.tensors == l.tensors;
              }))
            lost.push_back(std::move(l));
        });
  return lost;
}

namespace {

/// MCT 2.4.1's OperatorSetNames (schema v2), as written in its JSON.
constexpr const char *kMctSetNames[] = {"Conv",
                                        "DepthwiseConv2D",
                                        "ConvTranspose",
                                        "FullyConnected",
                                        "Concatenate",
                                        "Stack",
                                        "Unstack",
                                        "Gather",
                                        "Expend",
                                        "BatchNorm",
                                        "L2Norm",
                                        "ReLU",
                                        "ReLU6",
                                        "LeakyReLU",
                                        "Elu",
                                        "HardTanh",
                                        "Add",
                                        "Sub",
                                        "Mul",
                                        "Div",
                                        "Min",
                                        "Max",
                                        "PReLU",
                                        "AddBias",
                                        "Swish",
                                        "Sigmoid",
                                        "Softmax",
                                        "LogSoftmax",
                                        "Tanh",
                                        "Gelu",
                                        "HardSigmoid",
                                        "HardSwish",
                                        "Flatten",
                                        "GetItem",
                                        "Reshape",
                                        "Unsqueeze",
                                        "Squeeze",
                                        "Permute",
                                        "Transpose",
                                        "Dropout",
                                        "SplitChunk",
                                        "MaxPool",
                                        "AvgPool",
                                        "Size",
                                        "Shape",
                                        "Equal",
                                        "ArgMax",
                                        "TopK",
                                        "FakeQuant",
                                        "CombinedNonMaxSuppression",
                                        "ZeroPadding2D",
                                        "Cast",
                                        "Resize",
                                        "Pad",
                                        "Fold",
                                        "StridedSlice",
                                        "SSDPostProcess",
                                        "Exp",
                                        "Sin",
                                        "Cos"};

} // namespace

std::string interop::mctSetName(llvm::StringRef opset) {
  // MCT's enum member EXPAND has the value "Expend".
  if (opset == "Expand")
    return "Expend";
  return opset.str();
}

bool interop::isMctSetName(llvm::StringRef name) { return llvm::is_contained(kMctSetNames, name); }

std::string interop::mctAttrKey(llvm::StringRef slot) {
  if (slot == "kernel")
    return "kernel_attr";
  if (slot == "bias")
    return "bias_attr";
  return slot.str();
}

namespace {

class MctWriter : public JSONWriter {
public:
  using JSONWriter::JSONWriter;

  void platform(const ir::Platform &p);

private:
  void attr(const ir::AttrConfig &a);
  void config(const ir::OpConfig &c);
  void options(const ir::Options &o);
  void opset(const ir::Opset &o);
  void group(const std::vector<const ir::Opset *> &sets);
};

void MctWriter::attr(const ir::AttrConfig &a) {
  object({{"weights_quantization_method", [&] { integer(interop::mctMethod(a.method)); }},
          {"weights_n_bits", [&] { integer(a.bits); }},
          {"weights_per_channel_threshold", [&] { boolean(a.perChannel); }},
          {"enable_weights_quantization", [&] { boolean(a.quantize); }},
          {"lut_values_bitwidth", [&] { integerOrNull(a.lutBits); }}});
}

void MctWriter::config(const ir::OpConfig &c) {
  const ir::ActivationConfig &act = c.activation;
  object({{"default_weight_attr_config", [&] { attr(c.weights); }},
          {"attr_weights_configs_mapping",
           [&] {
             // Keys in byte order of MCT's names ("bias_attr" < "kernel_attr").
             std::map<std::string, const ir::AttrConfig *> byKey;
             for (const auto &[slot, a] : c.slots)
               byKey[interop::mctAttrKey(slot)] = &a;
             j.objectBegin();
             for (const auto &[key, a] : byKey) {
               j.attributeBegin(key);
               attr(*a);
               j.attributeEnd();
             }
             j.objectEnd();
           }},
          {"activation_quantization_method", [&] { integer(interop::mctMethod(act.method)); }},
          {"activation_n_bits", [&] { integer(act.bits); }},
          {"supported_input_activation_n_bits",
           [&] { array(c.inputBits, [&](int b) { integer(b); }); }},
          {"enable_activation_quantization", [&] { boolean(act.quantize); }},
          {"quantization_preserving", [&] { boolean(c.preserving); }},
          {"signedness", [&] { integer(interop::mctSignedness(act.signedness)); }},
          {"fixed_scale", [&] { c.fixedScale ? number(*c.fixedScale) : null(); }},
          {"fixed_zero_point", [&] { integerOrNull(c.fixedZeroPoint); }},
          {"simd_size", [&] { integerOrNull(c.simd); }}});
}

void MctWriter::options(const ir::Options &o) {
  object({{"quantization_configurations",
           [&] { array(o.configs, [&](const ir::OpConfig &c) { config(c); }); }},
          {"base_config", [&] { config(o.baseConfig()); }}});
}

void MctWriter::opset(const ir::Opset &o) {
  object({{"name", [&] { string(interop::mctSetName(o.name)); }},
          {"qc_options", [&] { o.options ? options(*o.options) : null(); }},
          {"type", [&] { string("OperatorsSet"); }}});
}

/// MCT's name of a fusing element (its opsets, by tpcc name): its opset's, or
/// its opsets' joined by `_`.
std::string elementName(const std::vector<std::string> &opsets) {
  std::vector<std::string> names;
  for (const std::string &n : opsets)
    names.push_back(interop::mctSetName(n));
  return llvm::join(names, "_");
}

void MctWriter::group(const std::vector<const ir::Opset *> &sets) {
  if (sets.size() == 1)
    return opset(*sets.front());
  std::vector<std::string> names;
  for (const ir::Opset *o : sets)
    names.push_back(o->name);
  object({{"operators_set", [&] { array(sets, [&](const ir::Opset *o) { opset(*o); }); }},
          {"name", [&] { string(elementName(names)); }},
          {"type", [&] { string("OperatorSetGroup"); }}});
}

void MctWriter::platform(const ir::Platform &p) {
  object({{"default_qco", [&] { options(p.defaultOptions); }},
          {"operator_set", [&] { array(p.opsets, [&](const ir::Opset &o) { opset(o); }); }},
          {"fusing_patterns",
           [&] {
             array(p.fusings, [&](const ir::Fusing &f) {
               object({{"operator_groups",
                        [&] {
                          array(f.written, [&](const std::vector<std::string> &e) {
                            std::vector<const ir::Opset *> sets;
                            for (const std::string &n : e)
                              if (const ir::Opset *o = p.findOpset(n))
                                sets.push_back(o);
                            if (sets.empty()) // resolved IR: never happens
                              return null();
                            group(sets);
                          });
                        }},
                       {"name",
                        [&] {
                          std::vector<std::string> names;
                          for (const std::vector<std::string> &e : f.written)
                            names.push_back(elementName(e));
                          string(f.named ? f.name : llvm::join(names, "_"));
                        }},
                       {"fuse_op_quantization_config",
                        [&] { f.config ? config(*f.config) : null(); }}});
             });
           }},
          {"tpc_minor_version", [&] { p.version ? integer(p.version->minor) : null(); }},
          {"tpc_patch_version", [&] { p.version ? integer(p.version->patch) : null(); }},
          {"tpc_platform_type", [&] { string(p.type); }},
          {"add_metadata", [&] { boolean(p.metadata); }},
          {"name", [&] { string(p.name); }},
          {"is_simd_padding", [&] { boolean(p.simdPadding); }},
          {"insert_preserving_quantizers", [&] { boolean(p.insertPreservingQuantizers); }},
          {"SCHEMA_VERSION", [&] { integer(2); }}});
}

} // namespace

void tpcc::emitMctJSON(const ir::Platform &p, llvm::raw_ostream &os, DiagnosticEngine *diags) {
  if (diags && p.resources)
    diags->emit(p.resources->loc, diag::warn_interop_resources,
                "MCT's target platform capabilities", p.name, interop::resourcesText(*p.resources));
  if (diags) {
    const std::vector<std::string> known(std::begin(kMctSetNames), std::end(kMctSetNames));
    auto warnFormats = [&](const ir::Options &o, const std::string &what, SourceRange loc) {
      for (const interop::LostFormat &l : interop::lostFormats(o))
        diags->emit(loc, diag::warn_interop_format, "MCT's target platform capabilities", l.format,
                    l.tensors, what, l.writtenAs);
    };
    warnFormats(p.defaultOptions, "the default options", p.defaultOptions.loc);
    for (const ir::Opset &o : p.opsets) {
      if (!interop::isMctSetName(interop::mctSetName(o.name)))
        diags->emit(o.loc, diag::warn_mct_set_name, "2.4.1", o.name, didYouMean(o.name, known));
      if (o.options)
        warnFormats(*o.options, "opset `" + o.name + "`", o.loc);
    }
  }
  {
    MctWriter w(os);
    w.platform(p);
  }
  os << '\n';
}

//===- AimetBackend.cpp - An AIMET quantsim config from capabilities ------===//
//
// `tpcc emit --emit=aimet --capabilities NAME`: the JSON config file AIMET's
// QuantizationSimModel takes (`config_file=`), derived from one capabilities
// (a platform bound to ONNX ops). AIMET's schema spells booleans as the
// strings "True" / "False" and allows no extra keys, so this backend does too.
//
//   defaults      from the platform's default options (base config): output
//                 quantized, activation symmetric (any method but uniform),
//                 kernel quantized / symmetric / per-channel, unsigned
//                 symmetric unless activations are `signed`; supported_kernels
//                 from every default candidate;
//   params        `weight` from the default's `kernel` slot, `bias` from its
//                 `bias` slot;
//   op_type       one rule per ONNX op bound in the capabilities, from its
//                 opset's options (config-less: the default): the base config
//                 gives the flags, every candidate a supported kernel;
//                 `encoding_constraints` from a fixed scale / zero point, else
//                 from the framework's finite `range`; the framework's
//                 `no_quantize` ops not bound get an unquantized output;
//   supergroups   the fusing patterns with each element replaced by the ONNX
//                 ops bound to its opsets (cartesian product, deduplicated);
//   model_input   inputs quantized; model_output {}.
//
// What AIMET cannot express (power-of-two and LUT methods, preserving ops,
// input bit widths, bit widths other than 4/8/16/32, predicates, an op bound
// to several opsets) is reported as a warning located at the opset or
// binding, once per opset and concept; so is the platform's declared memory
// (`resources`), at its block.
//
//===----------------------------------------------------------------------===//
#include "backends/Backends.h"
#include "ir/JSONWriter.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <map>
#include <set>

using namespace tpcc;

std::vector<std::vector<std::string>> interop::aimetSupergroups(const ir::Platform &p,
                                                                const ir::Capabilities &c) {
  std::vector<std::vector<std::string>> result;
  std::set<std::vector<std::string>> seen;
  for (const ir::Fusing &f : p.fusings) {
    // The ONNX ops each element accepts, in binding order, unique.
    std::vector<std::vector<std::string>> elements;
    for (const std::vector<std::string> &e : f.pattern) {
      std::vector<std::string> ops;
      for (const ir::OpBinding &b : c.bindings)
        if (!b.composite && llvm::is_contained(e, b.opset) && !llvm::is_contained(ops, b.op))
          ops.push_back(b.op);
      elements.push_back(std::move(ops));
    }
    if (elements.empty() || llvm::any_of(elements, [](const auto &e) { return e.empty(); }))
      continue;
    // Odometer over the elements: the last element varies fastest.
    std::vector<size_t> idx(elements.size(), 0);
    while (true) {
      std::vector<std::string> list;
      for (size_t i = 0; i < elements.size(); ++i)
        list.push_back(elements[i][idx[i]]);
      if (seen.insert(list).second)
        result.push_back(std::move(list));
      size_t i = elements.size();
      while (i > 0 && ++idx[i - 1] == elements[i - 1].size())
        idx[--i] = 0;
      if (i == 0)
        break;
    }
  }
  return result;
}

namespace {

bool aimetBitwidth(int bits) { return bits == 4 || bits == 8 || bits == 16 || bits == 32; }

/// One entry of `supported_kernels`; `param` 0 means none.
struct Kernel {
  int activation = 8, param = 0;
  bool operator==(const Kernel &o) const { return activation == o.activation && param == o.param; }
};

class AimetWriter : public JSONWriter {
public:
  AimetWriter(llvm::raw_ostream &os, const ir::Module &m, const ir::Capabilities &c,
              const ir::Platform &p, DiagnosticEngine &diags)
      : JSONWriter(os), m(m), c(c), p(p), fw(m.findFramework(c.framework)), diags(diags) {}

  /// Reports what AIMET cannot express; then `write` uses `comments`.
  void analyze();
  void write(bool withComment);

private:
  template <typename... Args> void warn(SourceRange loc, diag::Kind kind, const Args &...args) {
    comments.push_back(DiagnosticEngine::format(kind, args...));
    diags.emit(loc, kind, args...);
  }
  void checkOptions(const ir::Options &o, const std::string &what, SourceRange loc);
  std::vector<Kernel> kernels(const ir::Options &o, bool withParam) const;

  void flag(bool b) { string(b ? "True" : "False"); }
  void kernelList(const std::vector<Kernel> &ks);
  /// `{"weight": {is_quantized, is_symmetric}, "bias": {is_quantized}}`.
  void params(const ir::AttrConfig &kernel, const ir::AttrConfig &bias);
  void rule(const ir::OpBinding &b);
  bool constraints(const ir::OpConfig &base, llvm::StringRef op, double &lo, double &hi) const;

  const ir::Module &m;
  const ir::Capabilities &c;
  const ir::Platform &p;
  const ir::Framework *fw;
  DiagnosticEngine &diags;
  std::vector<std::string> comments;
  /// The binding that decides each ONNX op's rule (the first one).
  std::map<std::string, const ir::OpBinding *> rules;
};

static bool symmetric(ir::QuantMethod m) { return m != ir::QuantMethod::Uniform; }

void AimetWriter::checkOptions(const ir::Options &o, const std::string &what, SourceRange loc) {
  std::vector<std::string> pot, lut;
  std::set<int> inputBits;
  bool preserving = false, extraInputs = false;
  auto note = [](std::vector<std::string> &v, const std::string &s) {
    if (!llvm::is_contained(v, s))
      v.push_back(s);
  };
  for (const ir::OpConfig &cfg : o.configs) {
    if (cfg.activation.quantize && cfg.activation.method == ir::QuantMethod::PowerOfTwo)
      note(pot, "activations");
    for (llvm::StringRef slot : {"kernel", "bias"}) {
      const ir::AttrConfig &a = cfg.weightConfig(slot);
      if (!a.quantize)
        continue;
      if (a.method == ir::QuantMethod::PowerOfTwo)
        note(pot, "`" + slot.str() + "` weights");
      if (ir::isLut(a.method))
        note(lut, "`" + slot.str() + "` weights");
    }
    preserving |= cfg.preserving;
    for (int b : cfg.inputBits) {
      inputBits.insert(b);
      extraInputs |= b != cfg.activation.bits;
    }
  }
  for (const interop::LostFormat &l : interop::lostFormats(o))
    warn(loc, diag::warn_interop_format, "AIMET's quantsim config", l.format, l.tensors, what,
         l.writtenAs);
  for (const std::string &s : pot)
    warn(loc, diag::warn_aimet_power_of_two, s, what);
  for (const std::string &s : lut)
    warn(loc, diag::warn_aimet_lut, s, what);
  if (preserving)
    warn(loc, diag::warn_aimet_preserving, what);
  if (extraInputs) {
    std::vector<std::string> bits;
    for (int b : inputBits)
      bits.push_back(std::to_string(b));
    warn(loc, diag::warn_aimet_input_bits, llvm::join(bits, ", "), what);
  }
  for (const ir::OpConfig &cfg : o.configs) {
    if (!aimetBitwidth(cfg.activation.bits))
      warn(loc, diag::warn_aimet_bitwidth, what,
           "activation bits " + std::to_string(cfg.activation.bits));
    const ir::AttrConfig &k = cfg.weightConfig("kernel");
    if (k.quantize && !aimetBitwidth(k.bits))
      warn(loc, diag::warn_aimet_bitwidth, what, "kernel bits " + std::to_string(k.bits));
  }
}

std::vector<Kernel> AimetWriter::kernels(const ir::Options &o, bool withParam) const {
  std::vector<Kernel> ks;
  // The base candidate first, then the others in order.
  std::vector<const ir::OpConfig *> order{&o.baseConfig()};
  for (const ir::OpConfig &cfg : o.configs)
    if (&cfg != &o.baseConfig())
      order.push_back(&cfg);
  for (const ir::OpConfig *cfg : order) {
    const ir::AttrConfig &k = cfg->weightConfig("kernel");
    Kernel kn{cfg->activation.bits, 0};
    if (withParam || k.quantize)
      kn.param = k.bits;
    if (!aimetBitwidth(kn.activation) || (kn.param && !aimetBitwidth(kn.param)))
      continue;
    if (!llvm::is_contained(ks, kn))
      ks.push_back(kn);
  }
  return ks;
}

void AimetWriter::analyze() {
  if (p.resources)
    warn(p.resources->loc, diag::warn_interop_resources, "AIMET's quantsim config", p.name,
         interop::resourcesText(*p.resources));
  for (const ir::Fusing &f : p.fusings)
    if (f.config && f.config->activation.quantize)
      warn(f.loc, diag::warn_interop_fuse_config, "AIMET's quantsim config", f.name);
  checkOptions(p.defaultOptions, "the default options",
               p.defaultOptions.loc.isValid() ? p.defaultOptions.loc : p.loc);
  std::set<std::string> checked;
  for (const ir::OpBinding &b : c.bindings) {
    const ir::Opset *set = p.findOpset(b.opset);
    if (set && checked.insert(b.opset).second && set->options)
      checkOptions(*set->options, "opset `" + b.opset + "`", set->loc);
    if (b.composite) {
      warn(b.loc, diag::warn_aimet_composite, b.opset, b.op);
      continue;
    }
    if (b.where)
      warn(b.loc, diag::warn_aimet_predicate, b.opset, b.op, b.where->str());
    auto [it, inserted] = rules.emplace(b.op, &b);
    if (!inserted && it->second->opset != b.opset)
      warn(b.loc, diag::warn_aimet_op_rebound, b.op, b.opset, it->second->opset);
  }
}

void AimetWriter::kernelList(const std::vector<Kernel> &ks) {
  array(ks, [&](const Kernel &k) {
    auto entry = [&](int bits) {
      object({{"bitwidth", [&] { integer(bits); }}, {"dtype", [&] { string("int"); }}});
    };
    if (k.param)
      object({{"activation", [&] { entry(k.activation); }}, {"param", [&] { entry(k.param); }}});
    else
      object({{"activation", [&] { entry(k.activation); }}});
  });
}

bool AimetWriter::constraints(const ir::OpConfig &base, llvm::StringRef op, double &lo,
                              double &hi) const {
  if (base.fixedScale && base.fixedZeroPoint) {
    std::tie(lo, hi) = ir::fixedRange(base);
    return true;
  }
  if (!fw)
    return false;
  for (const ir::OpRange &r : fw->ranges)
    if (r.op == op && std::isfinite(r.lo) && std::isfinite(r.hi)) {
      lo = r.lo;
      hi = r.hi;
      return true;
    }
  return false;
}

void AimetWriter::rule(const ir::OpBinding &b) {
  const ir::Opset *set = p.findOpset(b.opset);
  const ir::Options &o = set ? p.optionsFor(*set) : p.defaultOptions;
  const ir::OpConfig &base = o.baseConfig();
  const ir::AttrConfig &kernel = base.weightConfig("kernel");
  const ir::AttrConfig &bias = base.weightConfig("bias");
  std::vector<Kernel> ks = kernels(o, /*withParam=*/false);
  double lo = 0, hi = 0;
  bool constrained = constraints(base, b.op, lo, hi);
  std::vector<Field> fields = {
      {"is_input_quantized", [&] { flag(false); }},
      {"is_output_quantized", [&] { flag(base.activation.quantize && !base.preserving); }},
      {"is_symmetric", [&] { flag(symmetric(base.activation.method)); }},
      {"per_channel_quantization", [&] { flag(kernel.perChannel); }},
      {"params", [&] { params(kernel, bias); }}};
  auto writeKernels = [&] { kernelList(ks); };
  if (!ks.empty())
    fields.push_back({"supported_kernels", writeKernels});
  auto writeConstraints = [&] {
    object({{"min", [&] { number(lo); }}, {"max", [&] { number(hi); }}});
  };
  if (constrained)
    fields.push_back({"encoding_constraints", writeConstraints});
  object(fields);
}

void AimetWriter::params(const ir::AttrConfig &kernel, const ir::AttrConfig &bias) {
  object({{"weight",
           [&] {
             object({{"is_quantized", [&] { flag(kernel.quantize); }},
                     {"is_symmetric", [&] { flag(symmetric(kernel.method)); }}});
           }},
          {"bias", [&] {
             object({{"is_quantized", [&] { flag(bias.quantize); }}});
           }}});
}

void AimetWriter::write(bool withComment) {
  const ir::OpConfig &def = p.defaultOptions.baseConfig();
  const ir::AttrConfig &kernel = def.weightConfig("kernel");
  const ir::AttrConfig &bias = def.weightConfig("bias");
  std::vector<Kernel> defKernels = kernels(p.defaultOptions, /*withParam=*/true);

  // Unbound ops the framework knows about: never quantized, or ranged.
  std::map<std::string, std::pair<double, double>> extraRanges;
  std::set<std::string> extraNoQuantize;
  if (fw) {
    for (const std::string &op : fw->noQuantizeOps)
      if (!rules.count(op))
        extraNoQuantize.insert(op);
    for (const ir::OpRange &r : fw->ranges)
      if (!rules.count(r.op) && !extraNoQuantize.count(r.op) && std::isfinite(r.lo) &&
          std::isfinite(r.hi))
        extraRanges.emplace(r.op, std::make_pair(r.lo, r.hi));
  }

  std::vector<Field> top = {
      {"defaults",
       [&] {
         std::vector<Field> fields = {
             {"ops",
              [&] {
                object({{"is_output_quantized", [&] { flag(def.activation.quantize); }},
                        {"is_symmetric", [&] { flag(symmetric(def.activation.method)); }}});
              }},
             {"params",
              [&] {
                object({{"is_quantized", [&] { flag(kernel.quantize); }},
                        {"is_symmetric", [&] { flag(symmetric(kernel.method)); }}});
              }},
             {"strict_symmetric", [&] { flag(false); }},
             {"unsigned_symmetric",
              [&] { flag(def.activation.signedness != ir::Signedness::Signed); }},
             {"per_channel_quantization", [&] { flag(kernel.perChannel); }}};
         auto writeKernels = [&] { kernelList(defKernels); };
         if (!defKernels.empty())
           fields.push_back({"supported_kernels", writeKernels});
         object(fields);
       }},
      {"params", [&] { params(kernel, bias); }},
      {"op_type",
       [&] {
         // Every key of one object: bound ops, then the framework's others.
         std::set<std::string> keys;
         for (const auto &[op, b] : rules)
           keys.insert(op);
         keys.insert(extraNoQuantize.begin(), extraNoQuantize.end());
         for (const auto &[op, r] : extraRanges)
           keys.insert(op);
         j.objectBegin();
         for (const std::string &op : keys) {
           j.attributeBegin(op);
           if (auto it = rules.find(op); it != rules.end()) {
             rule(*it->second);
           } else if (extraNoQuantize.count(op)) {
             object({{"is_output_quantized", [&] { flag(false); }}});
           } else {
             auto [lo, hi] = extraRanges.at(op);
             object({{"encoding_constraints", [&] {
                        object({{"min", [&] { number(lo); }}, {"max", [&] { number(hi); }}});
                      }}});
           }
           j.attributeEnd();
         }
         j.objectEnd();
       }},
      {"supergroups",
       [&] {
         array(interop::aimetSupergroups(p, c), [&](const std::vector<std::string> &ops) {
           object({{"op_list", [&] { strings(ops); }}});
         });
       }},
      {"model_input",
       [&] {
         object({{"is_input_quantized", [&] { flag(true); }}});
       }},
      {"model_output", [&] { object(llvm::ArrayRef<Field>()); }}};
  auto writeComment = [&] { strings(comments); };
  if (withComment)
    top.push_back({"comment", writeComment});
  object(top);
}

} // namespace

void tpcc::emitAimet(const ir::Module &m, const ir::Capabilities &c, DiagnosticEngine &diags,
                     llvm::raw_ostream &os, bool comment) {
  const ir::Platform *p = m.findPlatform(c.platform);
  if (!p) // the passes reject such capabilities
    return;
  {
    AimetWriter w(os, m, c, *p, diags);
    w.analyze();
    w.write(comment);
  }
  os << '\n';
}

//===- BitWidthChecks.cpp - Rule 11: bit widths that cannot meet ----------===//
//
// Warnings, not errors: an `input_bits` width that no config of the platform
// produces, and a fusing pattern with adjacent opsets P -> Q where no config of
// P produces a width that a config of Q accepts. A producer whose activation
// is not quantized hands on floats, which any consumer takes.
//
//===----------------------------------------------------------------------===//
#include "passes/PlatformResolverImpl.h"

#include "llvm/ADT/STLExtras.h"

using namespace tpcc;
using namespace tpcc::passes;

namespace {

/// "8", "8 or 16", "4, 8 or 16".
std::string joinBits(const std::set<int> &bits) {
  std::string s;
  size_t i = 0;
  for (int b : bits) {
    if (i)
      s += i + 1 == bits.size() ? " or " : ", ";
    s += std::to_string(b);
    ++i;
  }
  return s;
}

bool hasValidBits(const ir::OpConfig &c) {
  return isValidActivationBits(c.activation.bits) &&
         llvm::all_of(c.inputBits, isValidActivationBits);
}

} // namespace

void PlatformResolver::checkInputBits(PlatformResult &r) {
  std::set<int64_t> produced;
  for (const SeenConfig &s : seen)
    if (s.config.activation.quantize)
      produced.insert(s.config.activation.bits);
  for (const SeenConfig &s : seen)
    for (const Explicit<int64_t> &b : s.explicitInputBits) {
      if (!isValidActivationBits(b.value) || produced.count(b.value))
        continue;
      // A config inherited from a parent that already warned stays quiet.
      if (!r.inputBitsWarnings.emplace(b.loc.begin, b.value).second)
        continue;
      c.diags.emit(b.loc, diag::warn_input_bits_unproduced, r.platform.name, b.value);
    }
}

void PlatformResolver::checkFusingBits(const ir::Platform &p) {
  std::map<std::string, const ir::Options *> optionsOf;
  for (const ir::Opset &o : p.opsets)
    optionsOf[o.name] = &p.optionsFor(o);

  for (const ir::Fusing &f : p.fusings)
    for (size_t i = 0; i + 1 < f.pattern.size(); ++i)
      for (const std::string &producer : f.pattern[i])
        for (const std::string &consumer : f.pattern[i + 1]) {
          auto pit = optionsOf.find(producer), cit = optionsOf.find(consumer);
          if (pit == optionsOf.end() || cit == optionsOf.end())
            continue;
          const std::vector<ir::OpConfig> &from = pit->second->configs;
          const std::vector<ir::OpConfig> &to = cit->second->configs;
          std::set<int> produced, accepted;
          // Out-of-range widths were reported as errors; do not guess.
          bool connects = from.empty() || to.empty() || !llvm::all_of(from, hasValidBits) ||
                          !llvm::all_of(to, hasValidBits);
          for (const ir::OpConfig &out : from) {
            if (!out.activation.quantize)
              connects = true;
            produced.insert(out.activation.bits);
          }
          for (const ir::OpConfig &in : to) {
            accepted.insert(in.inputBits.begin(), in.inputBits.end());
            for (int b : in.inputBits)
              connects |= produced.count(b) != 0;
          }
          if (!connects)
            c.diags.emit(f.loc, diag::warn_fuse_incompatible_bits, producer, consumer,
                         joinBits(produced), joinBits(accepted));
        }
}

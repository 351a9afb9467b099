//===- Flags.cpp - Every flag of tpcc, the commands that take it ------------===//
//
// One row per flag: its spelling, the commands that accept it (any other
// command refuses it: "--X works with `tpcc A` and `tpcc B`", with the names
// of the command table, Commands.h), whether it takes a value, the error for
// a missing or refused value, and the setter that checks and stores the value.
//
//===----------------------------------------------------------------------===//
#include "tools/tpcc/Options.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <utility>

using namespace tpcc;
using namespace tpcc::driver;

bool driver::oneOf(const std::string &v, std::initializer_list<const char *> allowed) {
  for (const char *a : allowed)
    if (v == a)
      return true;
  return false;
}

namespace {
/// `v` as a positive integer of at most `digits` digits.
bool positive(const std::string &v, int64_t &out, size_t digits = 6) {
  if (v.empty() || v.size() > digits || v.find_first_not_of("0123456789") != std::string::npos ||
      std::stoll(v) == 0)
    return false;
  out = std::stoll(v);
  return true;
}

/// `v`, all of it, as a finite number; none otherwise.
std::optional<double> finiteNumber(const std::string &v) {
  char *end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !std::isfinite(x))
    return std::nullopt;
  return x;
}

/// `v` split at its last `=` (a node or input name may hold `=`) into a
/// name and a value, both non-empty; none otherwise.
std::optional<std::pair<std::string, std::string>> nameAndValue(const std::string &v) {
  size_t eq = v.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
    return std::nullopt;
  return std::make_pair(v.substr(0, eq), v.substr(eq + 1));
}

NamedFile named(const std::string &v) {
  size_t eq = v.find('=');
  return eq == std::string::npos ? NamedFile("", v) : NamedFile(v.substr(0, eq), v.substr(eq + 1));
}

/// A setter for a budget flag (ir::parseBudget says what is wrong).
template <ir::Resource R> bool budget(Options &o, const std::string &v) {
  std::string error;
  std::optional<ir::Budget> b = ir::parseBudget(v, R, error);
  if (!b) {
    o.flagError = ir::flagOf(R) + ": " + error;
    return false;
  }
  o.budgets.budget(R) = b;
  o.budgets.enabled = true;
  return true;
}

/// A setter storing a non-empty value into a string field.
template <std::string Options::*F> bool text(Options &o, const std::string &v) {
  o.*F = v;
  return !v.empty();
}

} // namespace

const std::vector<Flag> &driver::flagTable() {
  static const std::vector<Flag> table = {
      {"--platform", Plan | Quantize | Finetune | Emit, true, "--platform needs a platform name",
       text<&Options::platform>},
      {"--capabilities", Plan | Quantize | Finetune | Emit, true,
       "--capabilities needs a capabilities name", text<&Options::capabilities>},
      {"--recipe", Plan | Quantize | Finetune, true, "--recipe needs a recipe name or .tpc file",
       text<&Options::recipe>},
      {"--calib", Plan | Quantize | Finetune, true,
       "--calib needs a file or folder of calibration data",
       [](Options &o, const std::string &v) {
         o.calib.push_back(v);
         return !v.empty();
       }},
      {"--fix-input", Quantize | Finetune, true,
       "--fix-input takes NAME=VALUE, an input of the model and the one number it holds (e.g. "
       "sr=16000)",
       [](Options &o, const std::string &v) {
         std::optional<std::pair<std::string, std::string>> nv = nameAndValue(v);
         std::optional<double> value = nv ? finiteNumber(nv->second) : std::nullopt;
         if (value)
           o.fixedInputs.emplace_back(nv->first, *value);
         return value.has_value();
       }},
      {"--dim", Plan | Quantize | Finetune | Run | Eval, true,
       "--dim takes NAME=VALUE, a symbolic dimension of the model's inputs and its size (e.g. "
       "sequence=128)",
       [](Options &o, const std::string &v) {
         std::optional<std::pair<std::string, std::string>> nv = nameAndValue(v);
         if (!nv)
           return false;
         const auto &[name, text] = *nv;
         int64_t value = 0;
         if (!positive(text, value, 9)) {
           o.flagError =
               fmt::format("--dim {}: the size `{}` is not a positive integer", name, text);
           return false;
         }
         for (const auto &[given, before] : o.dims)
           if (given == name) {
             o.flagError = fmt::format("--dim {} is given twice, with {} and {}; give each "
                                       "dimension once",
                                       name, before, value);
             return false;
           }
         o.dims.emplace_back(name, value);
         return true;
       }},
      {"--weights-memory", Plan | Quantize, true,
       "--weights-memory needs a budget: bytes with a unit (41KiB, 2.5MB) or a percentage of the "
       "base configuration (75%)",
       budget<ir::Resource::WeightsMemory>},
      {"--activation-memory", Plan | Quantize, true,
       "--activation-memory needs a budget: bytes with a unit (64KiB) or a percentage (75%)",
       budget<ir::Resource::ActivationMemory>},
      {"--total-memory", Plan | Quantize, true,
       "--total-memory needs a budget: bytes with a unit (1MiB) or a percentage (75%)",
       budget<ir::Resource::TotalMemory>},
      {"--bops", Plan | Quantize, true,
       "--bops needs a budget: a number of bit operations (2e9, 1.5G) or a percentage (50%)",
       budget<ir::Resource::Bops>},
      {"--plan-out", Quantize | Finetune, true, "--plan-out needs a file name",
       text<&Options::planOut>},
      {"--report", Quantize | Finetune, true, "--report needs a file name", text<&Options::report>},
      {"--plan", Apply, true, "--plan needs a file", text<&Options::planFile>},
      {"--matmul-nbits", Quantize | Apply, false, "",
       [](Options &o, auto &) { return o.matmulNBits = true; }},
      {"--gptq", Quantize, true, "--gptq takes soft_rounding, ste or second_order",
       [](Options &o, const std::string &v) {
         o.gptq = v;
         return oneOf(v, {"soft_rounding", "ste", "second_order"});
       }},
      {"--gptq-epochs", Quantize, true, "--gptq-epochs takes a positive number",
       [](Options &o, const std::string &v) {
         int64_t n = 0;
         bool ok = positive(v, n);
         o.gptqEpochs = n;
         return ok;
       }},
      {"--batch", Plan | Quantize | Finetune | Eval, true, "--batch takes a positive number",
       [](Options &o, const std::string &v) { return positive(v, o.batch); }},
      {"--sqnr-samples", Quantize | Finetune, true, "--sqnr-samples takes a positive number",
       [](Options &o, const std::string &v) { return positive(v, o.sqnrSamples); }},
      {"--min-sqnr", Quantize, true, "--min-sqnr takes a number of dB (20, 25.5)",
       [](Options &o, const std::string &v) {
         std::optional<double> db = finiteNumber(v);
         if (!db || *db <= 0 || *db > 200)
           return false;
         o.minSqnr = *db;
         return true;
       }},
      {"--min-sqnr-at", Quantize, true, "--min-sqnr-at needs a tensor name",
       [](Options &o, const std::string &v) {
         o.minSqnrAt.push_back(v);
         return !v.empty();
       }},
      {"--progress", Plan | Quantize | Finetune | Run | Eval, true,
       "--progress takes auto, always or never",
       [](Options &o, const std::string &v) {
         o.progress = v;
         return oneOf(v, {"auto", "always", "never"});
       }},
      {"--explain", Plan, true, "--explain needs a node name", text<&Options::explain>},
      {"--choose", Plan | Quantize, true,
       "--choose takes NODE=CONFIG, a node name and one of its candidate config ids (e.g. "
       "/f/f.11/Gemm=FullyConnected.3)",
       [](Options &o, const std::string &v) {
         // Node names may hold `=`; config ids (`Conv.1`) never do.
         std::optional<std::pair<std::string, std::string>> nv = nameAndValue(v);
         if (nv)
           o.choose.push_back(*nv);
         return nv.has_value();
       }},
      {"--format", Doc, true, "--format takes markdown or html",
       [](Options &o, const std::string &v) {
         o.format = v;
         return oneOf(v, {"markdown", "html"});
       }},
      {"--emit", Emit | Plan, true, "--emit needs a kind (json, ast, mct-json or aimet)",
       [](Options &o, const std::string &v) { return o.emit = v, true; }},
      {"--aimet-comment", Emit, false, "",
       [](Options &o, auto &) { return o.aimetComment = true; }},
      {"--verify", Check, false, "", [](Options &o, auto &) { return o.verify = true; }},
      {"--input", Run, true, "--input needs a file: --input [NAME=]FILE",
       [](Options &o, const std::string &v) {
         o.runInputs.push_back(named(v));
         return !v.empty();
       }},
      {"-i", Run, true, "--input needs a file: --input [NAME=]FILE",
       [](Options &o, const std::string &v) {
         o.runInputs.push_back(named(v));
         return !v.empty();
       }},
      {"--output", Run, true, "--output needs a file: --output [NAME=]FILE",
       [](Options &o, const std::string &v) {
         o.runOutputs.push_back(named(v));
         return !v.empty();
       }},
      {"-o", allCommands() & ~(Check | Eval), true, "-o needs a file name",
       [](Options &o, const std::string &v) {
         o.output = v;
         o.runOutputs.push_back(named(v));
         return true;
       }},
      {"--data", Eval | Finetune, true, "--data needs a file",
       [](Options &o, const std::string &v) {
         o.data = v;
         o.evalData.push_back(named(v));
         return !v.empty();
       }},
      {"--labels", Eval | Finetune, true, "--labels needs a file", text<&Options::labels>},
      {"--epochs", Finetune, true, "--epochs takes a positive number",
       [](Options &o, const std::string &v) {
         int64_t n = 0;
         bool ok = positive(v, n);
         o.epochs = n;
         return ok;
       }},
      {"--lr", Finetune, true, "--lr takes a positive number (1e-4, 0.001)",
       [](Options &o, const std::string &v) {
         char *end = nullptr;
         double lr = std::strtod(v.c_str(), &end);
         o.lr = lr;
         return !v.empty() && end && *end == 0 && lr > 0 && std::isfinite(lr);
       }},
      {"--validate", Finetune, true, "--validate takes two files: --validate X.npy Y.npy",
       [](Options &o, const std::string &v) {
         size_t nl = v.find('\n');
         if (nl == std::string::npos || nl == 0 || nl + 1 == v.size())
           return false;
         o.validateData = v.substr(0, nl);
         o.validateLabels = v.substr(nl + 1);
         return true;
       },
       1},
      {"--quantizer", Finetune, true, "--quantizer takes ste or lsq",
       [](Options &o, const std::string &v) {
         o.quantizer = v;
         return oneOf(v, {"ste", "lsq"});
       }},
      {"--reference", Eval, true, "--reference needs a model", text<&Options::reference>},
      {"--qdq", Run | Eval, true, "--qdq takes integer or emulate",
       [](Options &o, const std::string &v) {
         o.arithmetic =
             v == "emulate" ? rt::IntegerArithmetic::Float : rt::IntegerArithmetic::Exact;
         return oneOf(v, {"integer", "emulate"});
       }},
      {"--ort-cpu", Run | Eval, true, "--ort-cpu takes vnni or no-vnni",
       [](Options &o, const std::string &v) {
         o.arithmetic =
             v == "vnni" ? rt::IntegerArithmetic::Exact : rt::IntegerArithmetic::SaturatingPairs;
         o.ortCpu = true;
         return oneOf(v, {"vnni", "no-vnni"});
       }},
      {"-I", specCommands(), true, "-I needs a directory",
       [](Options &o, const std::string &v) { return o.includeDirs.push_back(v), true; }},
      {"--stdlib", specCommands(), true, "--stdlib needs a directory",
       [](Options &o, const std::string &v) { return o.stdlibDir = v, true; }},
      {"--error-limit", specCommands(), true, "--error-limit takes a number",
       [](Options &o, const std::string &v) {
         if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos)
           return false;
         o.errorLimit = unsigned(std::stoul(v));
         return true;
       }},
      {"-Werror", specCommands(), false, "", [](Options &o, auto &) { return o.werror = true; }},
      {"--time", allCommands() & ~Apply, false, "",
       [](Options &o, auto &) { return o.time = true; }},
      {"--color", allCommands(), true, "--color takes auto, always or never",
       [](Options &o, const std::string &v) {
         o.color = v;
         return oneOf(v, {"auto", "always", "never"});
       }},
  };
  return table;
}

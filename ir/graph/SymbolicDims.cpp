//===- SymbolicDims.cpp - Values for a model's symbolic dimensions --------===//
//
// A model exported for any batch and sequence length names those dimensions
// (`batch`, `sequence`); its other shapes follow from them, so until they
// have values the planner counts them 1 and cannot size what a Reshape of a
// computed shape makes. `--dim NAME=VALUE` gives one a value: every type
// that names it, or an expression of such names (`sequence + 1`), takes the
// value, and shape inference runs again with data propagation to carry it
// through the shapes the model computes.
//
//===----------------------------------------------------------------------===//
#include "ir/graph/OnnxIO.h"

#include "llvm/ADT/StringExtras.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

using namespace tpcc;
using namespace tpcc::graph;

namespace {
/// The value of a dimension named by an expression of bound names, as
/// exporters write the shapes they derive (`sequence_length + 1`): names,
/// integers, `+`, `-`, `*` and parentheses. None when it names anything
/// unbound or is not such an expression.
class DimExpression {
public:
  DimExpression(llvm::StringRef text, const DimValues &dims) : rest(text), dims(dims) {}

  std::optional<int64_t> value() {
    std::optional<int64_t> v = sum();
    skipSpaces();
    return rest.empty() ? v : std::nullopt;
  }

private:
  std::optional<int64_t> sum() {
    std::optional<int64_t> v = product();
    while (v && (take('+') || peek('-'))) {
      bool minus = take('-');
      std::optional<int64_t> r = product();
      v = r ? std::optional<int64_t>(minus ? *v - *r : *v + *r) : std::nullopt;
    }
    return v;
  }
  std::optional<int64_t> product() {
    std::optional<int64_t> v = term();
    while (v && take('*')) {
      std::optional<int64_t> r = term();
      v = r ? std::optional<int64_t>(*v * *r) : std::nullopt;
    }
    return v;
  }
  std::optional<int64_t> term() {
    if (take('(')) {
      std::optional<int64_t> v = sum();
      return v && take(')') ? v : std::nullopt;
    }
    skipSpaces();
    size_t n = 0;
    while (n < rest.size() && (llvm::isAlnum(rest[n]) || rest[n] == '_'))
      ++n;
    llvm::StringRef word = rest.take_front(n);
    rest = rest.drop_front(n);
    if (word.empty())
      return std::nullopt;
    if (llvm::isDigit(word[0])) {
      int64_t number = 0;
      return word.getAsInteger(10, number) ? std::nullopt : std::optional<int64_t>(number);
    }
    for (const auto &[name, value] : dims)
      if (word == name)
        return value;
    return std::nullopt;
  }
  void skipSpaces() { rest = rest.ltrim(); }
  bool peek(char c) {
    skipSpaces();
    return rest.startswith(std::string(1, c));
  }
  bool take(char c) {
    if (!peek(c))
      return false;
    rest = rest.drop_front();
    return true;
  }

  llvm::StringRef rest;
  const DimValues &dims;
};
} // namespace

std::vector<std::string> graph::inputDimNames(const Model &m) {
  std::vector<std::string> names;
  for (const Value *v : m.graph.inputs())
    if (!v->isInitializer && v->type.shape)
      for (const Dim &d : *v->type.shape)
        if (!d.param.empty() && std::find(names.begin(), names.end(), d.param) == names.end())
          names.push_back(d.param);
  return names;
}

LogicalResult graph::bindDims(Model &m, const DimValues &dims, DiagnosticEngine &diags) {
  std::vector<std::string> names = inputDimNames(m);
  for (const auto &[name, value] : dims) {
    if (std::find(names.begin(), names.end(), name) != names.end())
      continue;
    std::string known;
    for (const std::string &n : names)
      known += (known.empty() ? "`" : ", `") + n + "`";
    return diags.emitAt(m.path, diag::err_model_dim, name,
                        fmt::format("no input of the model has a dimension named `{}`{} ({})", name,
                                    didYouMean(name, names),
                                    known.empty() ? "its inputs have no symbolic dimensions"
                                                  : "its inputs' symbolic dimensions: " + known));
  }
  for (const std::unique_ptr<Value> &v : m.graph.values())
    if (v->type.shape)
      for (Dim &d : *v->type.shape)
        if (std::optional<int64_t> value = DimExpression(d.param, dims).value();
            !d.known() && value && *value >= 0)
          d.value = *value;
  inferShapes(m, /*propagateData=*/true);
  return success();
}

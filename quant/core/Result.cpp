//===- Result.cpp - Report rows as text -------------------------------------===//
#include "quant/core/Result.h"

#include <fmt/format.h>

using namespace tpcc;
using namespace tpcc::quant;

std::string quant::formatDb(double v) {
  return std::isinf(v) ? (v > 0 ? "inf" : "-inf") : fmt::format("{:.1f}", v);
}

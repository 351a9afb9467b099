//===- Literals.h - Decoding literal tokens ----------------------*- C++ -*-===//
//
// The values of number and version tokens. The lexical check (Parser.cpp)
// reports every token these reject, before parsing, so that such errors are
// reported together with syntax errors; the AST builder then only decodes.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_FRONTEND_LITERALS_H
#define TPCC_FRONTEND_LITERALS_H

#include "llvm/ADT/StringRef.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace tpcc::literals {

/// An INT token; false when it does not fit in 64 bits.
inline bool decodeInt(llvm::StringRef text, int64_t &out) {
  std::string s = text.str();
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno == ERANGE || *end)
    return false;
  out = v;
  return true;
}

/// A FLOAT token; false when it is beyond a double.
inline bool decodeFloat(llvm::StringRef text, double &out) {
  out = std::strtod(text.str().c_str(), nullptr);
  return std::isfinite(out);
}

enum class Pow2Status { OK, NotBase2, OutOfRange };

/// A POW2 token `B^E`: only B = 2 and exponents a double can hold.
inline Pow2Status decodePow2(llvm::StringRef text, int &exponent) {
  auto [base, exp] = text.split('^');
  if (base != "2")
    return Pow2Status::NotBase2;
  if (exp.getAsInteger(10, exponent) || exponent < -1074 || exponent > 1023)
    return Pow2Status::OutOfRange;
  return Pow2Status::OK;
}

/// The number after `version`: `MINOR.PATCH`, two non-negative integers.
inline bool decodeVersion(llvm::StringRef text, int64_t &minor, int64_t &patch) {
  auto [mi, pa] = text.split('.');
  return !pa.empty() && !mi.startswith("-") && !mi.getAsInteger(10, minor) &&
         !pa.getAsInteger(10, patch);
}

} // namespace tpcc::literals

#endif

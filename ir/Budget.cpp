//===- Budget.cpp - Budgets and amounts of memory as people write them ----===//
//
// ir::parseBudget reads a budget the way recipes (`mixed_precision`), the
// quantizer's flags (`--weights-memory 64KiB`) and a platform's `resources`
// write it, so that all of them share one definition; ir::formatBytes writes
// an amount of memory back.
//
// Accepted (after trimming surrounding whitespace), with optional whitespace
// between the number and its unit:
//   memory   NUMBER [UNIT]   UNIT: B, kB = KB = 1000 B, MB = 1000^2 B,
//                            GB = 1000^3 B, KiB = 1024 B, MiB = 1024^2 B,
//                            GiB = 1024^3 B; no unit: bytes
//   BOPs     NUMBER [MULT]   MULT: k, M, G, T (powers of 1000)
//   both     NUMBER %        a fraction of what the base configuration uses:
//                            any positive percentage (150% loosens)
// NUMBER is `[-]DIGITS[.DIGITS][e[+-]DIGITS]`. Units are case-sensitive: `Kb`
// (kilobits), `kib`, `KB/s`, `KiBs` are errors.
//
// Absolute amounts are computed exactly: the number is read as a decimal
// (its significant digits and a power of ten) and scaled by the unit's
// integer factor in 128-bit integers, so `2.5 MB` is 2,500,000 bytes and
// `1.0005 kB` (1000.5 bytes) is refused as not a whole number, whatever the
// binary rounding of the decimal would do. An absolute amount must be a whole
// number of bytes / BOPs from 1 to 2^53 (every such count is exact in the
// double of ir::Budget).
//
//===----------------------------------------------------------------------===//
#include "ir/TpcIR.h"

#include "llvm/ADT/ArrayRef.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <iterator>

using namespace tpcc;
using namespace tpcc::ir;

namespace {

__extension__ typedef unsigned __int128 u128;

/// The largest absolute amount: every integer up to it is exact in a double.
constexpr uint64_t kMaxAmount = uint64_t(1) << 53;
/// Significant digits a number may have: digits x the largest factor (10^12,
/// `T`) stays below 10^38, which u128 holds.
constexpr size_t kMaxDigits = 26;

/// A decimal number: `digits` x 10^exp10, `digits` without leading or
/// trailing zeros (empty for zero).
struct Decimal {
  bool negative = false;
  std::string digits;
  int64_t exp10 = 0;
};

bool isDigit(char c) { return c >= '0' && c <= '9'; }

/// Reads `[-]DIGITS[.DIGITS][(e|E)[+-]DIGITS]` at the start of `s`; returns
/// the number of characters read (0 when `s` does not start with a number).
size_t readDecimal(llvm::StringRef s, Decimal &d) {
  size_t i = 0;
  if (i < s.size() && s[i] == '-') {
    d.negative = true;
    ++i;
  }
  size_t intBegin = i;
  while (i < s.size() && isDigit(s[i]))
    ++i;
  if (i == intBegin)
    return 0;
  std::string all = s.slice(intBegin, i).str();
  int64_t exp10 = 0;
  if (i + 1 < s.size() && s[i] == '.' && isDigit(s[i + 1])) {
    size_t fracBegin = ++i;
    while (i < s.size() && isDigit(s[i]))
      ++i;
    all += s.slice(fracBegin, i).str();
    exp10 -= static_cast<int64_t>(i - fracBegin);
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    bool negExp = false;
    if (j < s.size() && (s[j] == '+' || s[j] == '-'))
      negExp = s[j++] == '-';
    if (j < s.size() && isDigit(s[j])) {
      int64_t e = 0;
      for (; j < s.size() && isDigit(s[j]); ++j)
        e = std::min<int64_t>(e * 10 + (s[j] - '0'), 1000000); // far beyond any limit
      exp10 += negExp ? -e : e;
      i = j;
    }
  }
  size_t first = all.find_first_not_of('0');
  if (first == std::string::npos)
    return i; // zero
  size_t last = all.find_last_not_of('0');
  d.digits = all.substr(first, last - first + 1);
  d.exp10 = exp10 + static_cast<int64_t>(all.size() - 1 - last);
  return i;
}

std::string toDecimalString(u128 v) {
  std::string s;
  do {
    s.insert(s.begin(), char('0' + int(v % 10)));
    v /= 10;
  } while (v);
  return s;
}

/// `n / 10^k` written exactly ("1000.5").
std::string spellScaled(u128 n, unsigned k) {
  std::string s = toDecimalString(n);
  if (k == 0)
    return s;
  if (s.size() <= k)
    s.insert(0, k + 1 - s.size(), '0');
  s.insert(s.size() - k, ".");
  while (s.back() == '0')
    s.pop_back();
  if (s.back() == '.')
    s.pop_back();
  return s;
}

struct Unit {
  const char *name;
  uint64_t factor;
};

const Unit memoryUnits[] = {{"B", 1},
                            {"kB", 1000},
                            {"KB", 1000},
                            {"MB", 1000 * 1000},
                            {"GB", 1000 * 1000 * 1000},
                            {"KiB", 1024},
                            {"MiB", 1024 * 1024},
                            {"GiB", 1024 * 1024 * 1024}};
const Unit bopsUnits[] = {{"k", 1000},
                          {"M", 1000 * 1000},
                          {"G", 1000 * 1000 * 1000},
                          {"T", uint64_t(1000) * 1000 * 1000 * 1000}};

const char *const memoryHint =
    "memory is a number of bytes with a unit (B; kB or KB, MB, GB: powers of 1000; KiB, MiB, "
    "GiB: powers of 1024; none: bytes) or a percentage of the base configuration (`75%`)";
const char *const bopsHint = "BOPs are a number (`1500000000`, `1.5e9`), optionally with a "
                             "multiplier (k, M, G, T: powers of 1000), or a percentage of the "
                             "base configuration (`75%`)";

bool startsWithNonFinite(llvm::StringRef s) {
  s.consume_front("-");
  s.consume_front("+");
  return s.startswith_insensitive("inf") || s.startswith_insensitive("nan");
}

} // namespace

std::optional<Budget> ir::parseBudget(llvm::StringRef text, Resource r, std::string &error) {
  const bool memory = r != Resource::Bops;
  const char *hint = memory ? memoryHint : bopsHint;
  const char *what = memory ? "bytes" : "BOPs";
  llvm::StringRef s = text.trim();
  if (s.empty()) {
    error = fmt::format("the amount is empty; {}", hint);
    return std::nullopt;
  }
  if (startsWithNonFinite(s)) {
    error = "the amount must be a finite number";
    return std::nullopt;
  }
  Decimal d;
  size_t len = readDecimal(s, d);
  if (len == 0) {
    error = fmt::format("expected a number, found `{}`; {}", s, hint);
    return std::nullopt;
  }
  llvm::StringRef number = s.take_front(len);
  llvm::StringRef unit = s.drop_front(len).ltrim();

  Budget b;
  b.text = s.str();
  if (unit == "%") {
    if (d.digits.empty() || d.negative) {
      error = fmt::format("a percentage must be positive, found {}%", number);
      return std::nullopt;
    }
    double v = std::strtod(number.str().c_str(), nullptr) / 100;
    if (!std::isfinite(v) || v <= 0) {
      error = fmt::format("the percentage {}% is out of range", number);
      return std::nullopt;
    }
    b.relative = true;
    b.value = v;
    return b;
  }

  uint64_t factor = 0;
  if (unit.empty())
    factor = 1;
  for (const Unit &u : memory ? llvm::ArrayRef<Unit>(memoryUnits) : llvm::ArrayRef<Unit>(bopsUnits))
    if (unit == u.name)
      factor = u.factor;
  if (!factor) {
    error = fmt::format("unknown unit `{}`; {}", unit, hint);
    return std::nullopt;
  }
  if (d.digits.empty() || d.negative) {
    error = fmt::format("the amount must be positive, found {}", s);
    return std::nullopt;
  }
  std::string tooLarge =
      fmt::format("the amount is too large: the limit is {} {} (2^53)", kMaxAmount, what);
  if (d.digits.size() > kMaxDigits) {
    error = fmt::format("the number has more than {} significant digits", kMaxDigits);
    return std::nullopt;
  }
  u128 n = 0;
  for (char c : d.digits)
    n = n * 10 + u128(c - '0');
  n *= factor; // < 10^26 x 10^12
  if (d.exp10 >= 0) {
    for (int64_t i = 0; i < d.exp10; ++i) {
      if (n > kMaxAmount / 10) {
        error = tooLarge;
        return std::nullopt;
      }
      n *= 10;
    }
  } else {
    // A whole number only when 10^k divides n; 0 < n < 10^38, so k > 38 never
    // does (and 10^38 fits u128).
    if (d.exp10 < -38) {
      error = fmt::format("that is not a whole number of {}", what);
      return std::nullopt;
    }
    unsigned k = static_cast<unsigned>(-d.exp10);
    u128 p = 1;
    for (unsigned i = 0; i < k; ++i)
      p *= 10;
    if (n % p != 0) {
      error = fmt::format("that is {} {}, not a whole number of {}", spellScaled(n, k), what, what);
      return std::nullopt;
    }
    n /= p;
  }
  if (n > kMaxAmount) {
    error = tooLarge;
    return std::nullopt;
  }
  b.value = static_cast<double>(static_cast<uint64_t>(n));
  return b;
}

std::string ir::formatBytes(double bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  auto round2 = [](double x) { return std::round(x * 100) / 100; };
  double v = bytes;
  size_t u = 0;
  while (u + 1 < std::size(units) && std::fabs(round2(v)) >= 1024) {
    v /= 1024;
    ++u;
  }
  std::string s = fmt::format("{:.2f}", round2(v));
  while (s.back() == '0')
    s.pop_back();
  if (s.back() == '.')
    s.pop_back();
  if (s == "-0")
    s = "0";
  return s + " " + units[u];
}

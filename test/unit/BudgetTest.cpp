//===- BudgetTest.cpp - Budgets as recipes, flags and platforms write them -===//
//
// ir::parseBudget against hand-computed byte and BOP counts for every unit,
// percentages, and every class of error (empty, junk, non-finite, zero,
// negative, unknown unit, fractional amount, too large); ir::formatBytes;
// the Resource / MixedDistance spellings and MixedPrecision::budget.
//
//===----------------------------------------------------------------------===//
#include "ir/TpcIR.h"

#include <gtest/gtest.h>

using namespace tpcc::ir;

namespace {

/// The absolute amount `text` parses to; fails the test on an error.
double absolute(const char *text, Resource r = Resource::WeightsMemory) {
  std::string error;
  std::optional<Budget> b = parseBudget(text, r, error);
  EXPECT_TRUE(b) << text << ": " << error;
  if (!b)
    return -1;
  EXPECT_FALSE(b->relative) << text;
  EXPECT_EQ(error, "") << text;
  return b->value;
}

/// The fraction `text` parses to; fails the test on an error.
double relative(const char *text, Resource r = Resource::WeightsMemory) {
  std::string error;
  std::optional<Budget> b = parseBudget(text, r, error);
  EXPECT_TRUE(b) << text << ": " << error;
  if (!b)
    return -1;
  EXPECT_TRUE(b->relative) << text;
  return b->value;
}

/// The error text for `text`, which must not parse.
std::string failure(const char *text, Resource r = Resource::WeightsMemory) {
  std::string error;
  std::optional<Budget> b = parseBudget(text, r, error);
  EXPECT_FALSE(b) << text << " parsed as " << (b ? b->value : 0);
  EXPECT_NE(error, "") << text;
  return error;
}

TEST(BudgetParse, MemoryUnits) {
  EXPECT_EQ(absolute("512 B"), 512);
  EXPECT_EQ(absolute("1 kB"), 1000);
  EXPECT_EQ(absolute("1 KB"), 1000);
  EXPECT_EQ(absolute("2.5 MB"), 2500000);
  EXPECT_EQ(absolute("3 GB"), 3000000000.0);
  EXPECT_EQ(absolute("41 KiB"), 41984);    // 41 x 1024
  EXPECT_EQ(absolute("1.5 MiB"), 1572864); // 1.5 x 1048576
  EXPECT_EQ(absolute("2 GiB"), 2147483648.0);
  EXPECT_EQ(absolute("0.5 KiB"), 512);
  EXPECT_EQ(absolute("11.55 kB"), 11550);
  EXPECT_EQ(absolute("1.1 kB"), 1100); // exact, not 1100.0000000000002
  // Activation and total memory read the same units.
  EXPECT_EQ(absolute("64 KiB", Resource::ActivationMemory), 65536);
  EXPECT_EQ(absolute("1 MB", Resource::TotalMemory), 1000000);
}

TEST(BudgetParse, MemorySpellings) {
  EXPECT_EQ(absolute("41KiB"), 41984);      // no space
  EXPECT_EQ(absolute("41 \t KiB"), 41984);  // any whitespace
  EXPECT_EQ(absolute("  41 KiB  "), 41984); // trimmed
  EXPECT_EQ(absolute("4096"), 4096);        // a bare integer is bytes
  EXPECT_EQ(absolute("1e3"), 1000);         // so is a whole decimal
  EXPECT_EQ(absolute("1.25e3 B"), 1250);
  EXPECT_EQ(absolute("2.0e-3 MB"), 2000);
  EXPECT_EQ(absolute("007 KiB"), 7168);
  EXPECT_EQ(absolute("9007199254740992"), 9007199254740992.0); // 2^53, the limit
  std::string error;
  std::optional<Budget> b = parseBudget("  41 KiB ", Resource::WeightsMemory, error);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->text, "41 KiB");
  EXPECT_FALSE(b->loc.isValid());
}

TEST(BudgetParse, Percentages) {
  EXPECT_DOUBLE_EQ(relative("75%"), 0.75);
  EXPECT_DOUBLE_EQ(relative("75 %"), 0.75);
  EXPECT_DOUBLE_EQ(relative("150%"), 1.5); // loosening is allowed
  EXPECT_DOUBLE_EQ(relative("0.5%"), 0.005);
  EXPECT_DOUBLE_EQ(relative("1e1%"), 0.1);
  EXPECT_DOUBLE_EQ(relative("50%", Resource::Bops), 0.5);
  EXPECT_DOUBLE_EQ(relative("12.5%", Resource::TotalMemory), 0.125);
}

TEST(BudgetParse, Bops) {
  EXPECT_EQ(absolute("1500000000", Resource::Bops), 1.5e9);
  EXPECT_EQ(absolute("1.5e9", Resource::Bops), 1.5e9);
  EXPECT_EQ(absolute("3 k", Resource::Bops), 3000);
  EXPECT_EQ(absolute("4M", Resource::Bops), 4e6);
  EXPECT_EQ(absolute("2 G", Resource::Bops), 2e9);
  EXPECT_EQ(absolute("1.2 G", Resource::Bops), 1.2e9);
  EXPECT_EQ(absolute("1.5 T", Resource::Bops), 1.5e12);
}

TEST(BudgetParse, EmptyAndJunk) {
  EXPECT_NE(failure("").find("empty"), std::string::npos);
  EXPECT_NE(failure("   ").find("empty"), std::string::npos);
  std::string junk = failure("lots");
  EXPECT_NE(junk.find("expected a number, found `lots`"), std::string::npos) << junk;
  EXPECT_NE(junk.find("KiB, MiB"), std::string::npos) << junk; // lists the units
  EXPECT_NE(failure("KiB").find("expected a number"), std::string::npos);
  EXPECT_NE(failure("+5 KiB").find("expected a number"), std::string::npos);
  EXPECT_NE(failure(".5 MB").find("expected a number"), std::string::npos);
  EXPECT_NE(failure("%").find("expected a number"), std::string::npos);
  std::string bops = failure("many", Resource::Bops);
  EXPECT_NE(bops.find("k, M, G, T"), std::string::npos) << bops;
}

TEST(BudgetParse, NonFinite) {
  EXPECT_EQ(failure("inf"), "the amount must be a finite number");
  EXPECT_EQ(failure("-inf KiB"), "the amount must be a finite number");
  EXPECT_EQ(failure("NaN"), "the amount must be a finite number");
  EXPECT_EQ(failure("nan%", Resource::Bops), "the amount must be a finite number");
  EXPECT_EQ(failure("1e999%"), "the percentage 1e999% is out of range");
}

TEST(BudgetParse, ZeroAndNegative) {
  EXPECT_EQ(failure("0"), "the amount must be positive, found 0");
  EXPECT_EQ(failure("0 KiB"), "the amount must be positive, found 0 KiB");
  EXPECT_EQ(failure("0.0e5 MB"), "the amount must be positive, found 0.0e5 MB");
  EXPECT_EQ(failure("-5 KiB"), "the amount must be positive, found -5 KiB");
  EXPECT_EQ(failure("-1"), "the amount must be positive, found -1");
  EXPECT_EQ(failure("-2 G", Resource::Bops), "the amount must be positive, found -2 G");
  EXPECT_EQ(failure("0%"), "a percentage must be positive, found 0%");
  EXPECT_EQ(failure("-5%"), "a percentage must be positive, found -5%");
  EXPECT_EQ(failure("-0 %"), "a percentage must be positive, found -0%");
}

TEST(BudgetParse, UnknownUnits) {
  for (const char *text : {"41 Kb", "41 kib", "41 KB/s", "41 KiBs", "41 k", "41 TB", "4 b"}) {
    std::string e = failure(text);
    EXPECT_EQ(e.rfind("unknown unit `", 0), 0u) << text << ": " << e;
    EXPECT_NE(e.find("KiB, MiB, GiB"), std::string::npos) << e;
  }
  EXPECT_EQ(failure("41 Kb").substr(0, 20), "unknown unit `Kb`; m");
  EXPECT_EQ(failure("41 KB/s").substr(0, 20), "unknown unit `KB/s`;");
  EXPECT_EQ(failure("75%%").substr(0, 18), "unknown unit `%%`;");
  EXPECT_EQ(failure("75 % x").substr(0, 19), "unknown unit `% x`;");
  EXPECT_EQ(failure("1.e5").substr(0, 19), "unknown unit `.e5`;");
  // BOPs take multipliers, not memory units (and no `m` for milli).
  for (const char *text : {"2 GB", "2 B", "2 m", "2 g", "2 KiB"}) {
    std::string e = failure(text, Resource::Bops);
    EXPECT_EQ(e.rfind("unknown unit `", 0), 0u) << text << ": " << e;
    EXPECT_NE(e.find("k, M, G, T"), std::string::npos) << e;
  }
}

TEST(BudgetParse, WholeAmounts) {
  EXPECT_EQ(failure("0.5 B"), "that is 0.5 bytes, not a whole number of bytes");
  EXPECT_EQ(failure("1.0005 kB"), "that is 1000.5 bytes, not a whole number of bytes");
  EXPECT_EQ(failure("2.5"), "that is 2.5 bytes, not a whole number of bytes");
  EXPECT_EQ(failure("0.001 KiB"), "that is 1.024 bytes, not a whole number of bytes");
  EXPECT_EQ(failure("1e-3"), "that is 0.001 bytes, not a whole number of bytes");
  EXPECT_EQ(failure("1e-40 GiB"), "that is not a whole number of bytes");
  EXPECT_EQ(failure("1.5", Resource::Bops), "that is 1.5 BOPs, not a whole number of BOPs");
  EXPECT_EQ(failure("1.0000000001 k", Resource::Bops),
            "that is 1000.0000001 BOPs, not a whole number of BOPs");
}

TEST(BudgetParse, TooLargeAndDigits) {
  const std::string bytes = "the amount is too large: the limit is 9007199254740992 bytes (2^53)";
  EXPECT_EQ(absolute("8388608 GiB"), 9007199254740992.0); // 2^23 x 2^30 = 2^53
  EXPECT_EQ(failure("8388609 GiB"), bytes);
  EXPECT_EQ(failure("9.1e15"), bytes);
  EXPECT_EQ(failure("1e1000000 B"), bytes);
  EXPECT_EQ(failure("10000 T", Resource::Bops),
            "the amount is too large: the limit is 9007199254740992 BOPs (2^53)");
  EXPECT_EQ(failure("123456789012345678901234567"), // 27 digits
            "the number has more than 26 significant digits");
  // 26 digits times the largest factor: no overflow, just too large.
  EXPECT_EQ(failure("99999999999999999999999999 T", Resource::Bops),
            "the amount is too large: the limit is 9007199254740992 BOPs (2^53)");
  EXPECT_EQ(failure("9999999999999999999999999.0 GiB"), bytes);
  // ... or a whole number far below one unit.
  EXPECT_EQ(failure("0.00000000000000000000000001 T", Resource::Bops),
            "that is 0.00000000000001 BOPs, not a whole number of BOPs");
  // Leading and trailing zeros are not significant digits.
  EXPECT_EQ(absolute("000000000000000000000000000001000000000000000000000000000000e-27"), 1000);
}

TEST(BudgetFormat, Bytes) {
  EXPECT_EQ(formatBytes(0), "0 B");
  EXPECT_EQ(formatBytes(512), "512 B");
  EXPECT_EQ(formatBytes(1023), "1023 B");
  EXPECT_EQ(formatBytes(11.5), "11.5 B");
  EXPECT_EQ(formatBytes(1024), "1 KiB");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatBytes(41984), "41 KiB");
  EXPECT_EQ(formatBytes(11824), "11.55 KiB"); // 11.546875
  EXPECT_EQ(formatBytes(23824), "23.27 KiB"); // 23.265625
  EXPECT_EQ(formatBytes(1048575), "1 MiB");   // 1023.999 KiB rounds up to the next unit
  EXPECT_EQ(formatBytes(2621440), "2.5 MiB");
  EXPECT_EQ(formatBytes(3221225472.0), "3 GiB");
  EXPECT_EQ(formatBytes(1099511627776.0 * 2), "2 TiB");
}

TEST(BudgetSpelling, Enums) {
  EXPECT_STREQ(toString(Resource::WeightsMemory), "weights_memory");
  EXPECT_STREQ(toString(Resource::ActivationMemory), "activation_memory");
  EXPECT_STREQ(toString(Resource::TotalMemory), "total_memory");
  EXPECT_STREQ(toString(Resource::Bops), "bops");
  for (MixedDistance d : {MixedDistance::Avg, MixedDistance::LastLayer, MixedDistance::Hessian})
    EXPECT_EQ(parseMixedDistance(toString(d)), d);
  EXPECT_STREQ(toString(MixedDistance::LastLayer), "last_layer");
  EXPECT_EQ(parseMixedDistance("Avg"), std::nullopt);
  EXPECT_EQ(parseMixedDistance("last-layer"), std::nullopt);
}

TEST(BudgetSpelling, MixedPrecisionAccessors) {
  MixedPrecision mp;
  EXPECT_FALSE(mp.anyBudget());
  for (Resource r : {Resource::WeightsMemory, Resource::ActivationMemory, Resource::TotalMemory,
                     Resource::Bops}) {
    Budget b;
    b.value = static_cast<double>(r) + 1;
    mp.budget(r) = b;
  }
  ASSERT_TRUE(mp.weightsMemory && mp.activationMemory && mp.totalMemory && mp.bops);
  EXPECT_EQ(mp.weightsMemory->value, 1);
  EXPECT_EQ(mp.activationMemory->value, 2);
  EXPECT_EQ(mp.totalMemory->value, 3);
  EXPECT_EQ(mp.bops->value, 4);
  const MixedPrecision &cmp = mp;
  EXPECT_EQ(&*cmp.budget(Resource::TotalMemory), &*mp.totalMemory);
  EXPECT_TRUE(mp.anyBudget());
  // The defaults of docs/language.md §8.1.
  MixedPrecision d;
  EXPECT_FALSE(d.enabled);
  EXPECT_EQ(d.images, 32);
  EXPECT_EQ(d.distance, MixedDistance::Avg);
  EXPECT_TRUE(d.refine);
  EXPECT_EQ(d.timeLimit, 60);
}

} // namespace

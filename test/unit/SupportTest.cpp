//===- SupportTest.cpp - Source locations, diagnostics, atomic files ------===//
#include "support/AtomicFile.h"
#include "support/Diagnostics.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

using namespace tpcc;

TEST(SourceManager, LineAndColumnCountCodePoints) {
  SourceManager sm;
  // "é" is two bytes; the column after it is 2 (code points), not 3.
  uint32_t id = sm.addBuffer("t.tpc", "ab\n\xC3\xA9x\r\nlast");
  EXPECT_EQ(sm.getLineCol({id, 0}).line, 1u);
  EXPECT_EQ(sm.getLineCol({id, 1}).col, 2u);
  LineCol x = sm.getLineCol({id, 5});
  EXPECT_EQ(x.line, 2u);
  EXPECT_EQ(x.col, 2u);
  EXPECT_EQ(sm.getLineText({id, 5}).str(), "\xC3\xA9x");
  EXPECT_EQ(sm.getLineCol({id, 8}).line, 3u);
  // Code point 4 is 'x' (byte 5): a, b, \n, é, x.
  EXPECT_EQ(sm.getLocForCodePoint(id, 4).offset, 5u);
  EXPECT_EQ(sm.getLineStart(id, 3).offset, 8u);
  EXPECT_FALSE(sm.getLineStart(id, 9).isValid());
}

TEST(SourceManager, FindsInvalidUTF8) {
  const size_t npos = static_cast<size_t>(llvm::StringRef::npos);
  EXPECT_EQ(findInvalidUTF8("plain"), npos);
  EXPECT_EQ(findInvalidUTF8("\xE2\x82\xAC ok"), npos);
  EXPECT_EQ(findInvalidUTF8("ab\xFFz"), 2u);
  EXPECT_EQ(findInvalidUTF8("a\xC3"), 1u);            // truncated
  EXPECT_EQ(findInvalidUTF8("\xC0\x80"), 0u);         // overlong NUL
  EXPECT_EQ(findInvalidUTF8("\xED\xA0\x80"), 0u);     // surrogate
  EXPECT_EQ(findInvalidUTF8("\xF4\x90\x80\x80"), 0u); // > U+10FFFF
}

TEST(Diagnostics, PrintsLocationLineAndCaret) {
  SourceManager sm;
  uint32_t id = sm.addBuffer("f.tpc", "platform p {\n  opset A\n}\n");
  DiagnosticEngine diags(sm);
  {
    auto d = diags.emit(SourceRange({id, 21}, {id, 22}), diag::err_redefinition, "A");
    d.note(SourceLoc{id, 9}, diag::note_previous_definition);
  }
  EXPECT_EQ(diags.getNumErrors(), 1u);
  std::string out;
  llvm::raw_string_ostream os(out);
  diags.print(os);
  EXPECT_EQ(os.str(), "f.tpc:2:9: error: redefinition of `A`\n"
                      "  opset A\n"
                      "        ^\n"
                      "f.tpc:1:10: note: previous definition is here\n"
                      "platform p {\n"
                      "         ^\n");
}

TEST(Diagnostics, DropsExactDuplicatesAndCountsWarnings) {
  SourceManager sm;
  uint32_t id = sm.addBuffer("f.tpc", "x\n");
  DiagnosticEngine diags(sm);
  diags.emit(SourceLoc{id, 0}, diag::err_redefinition, "x").report();
  diags.emit(SourceLoc{id, 0}, diag::err_redefinition, "x").report();
  diags.emit(SourceLoc{id, 0}, diag::warn_duplicate_fuse, "A->B").report();
  EXPECT_EQ(diags.getNumErrors(), 1u);
  EXPECT_EQ(diags.getNumWarnings(), 1u);
  EXPECT_EQ(diags.getDiagnostics().size(), 2u);
}

TEST(Diagnostics, WarningsAsErrors) {
  SourceManager sm;
  uint32_t id = sm.addBuffer("f.tpc", "x\n");
  DiagnosticEngine diags(sm);
  diags.setWarningsAsErrors(true);
  diags.emit(SourceLoc{id, 0}, diag::warn_duplicate_fuse, "A->B").report();
  EXPECT_TRUE(diags.hasErrors());
}

TEST(Diagnostics, EmitConvertsToFailure) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto f = [&]() -> LogicalResult { return diags.emit(SourceRange(), diag::err_syntax, "boom"); };
  EXPECT_TRUE(failed(f()));
  EXPECT_EQ(diags.getNumErrors(), 1u);
}

TEST(Diagnostics, DidYouMean) {
  std::vector<std::string> names = {"FullyConnected", "Conv", "AnyReLU"};
  EXPECT_EQ(findClosest("Cnv", names), "Conv");
  EXPECT_EQ(findClosest("anyrelu", names), "AnyReLU");
  EXPECT_EQ(findClosest("Softmax", names), "");
  EXPECT_EQ(didYouMean("FullyConected", names), "; did you mean `FullyConnected`?");
}

TEST(AtomicFile, WritesAndReplacesWithoutTemporaries) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("tpcc-test", dir));
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, "out.json");
  std::string err, back;
  ASSERT_TRUE(writeFileAtomically(path, "one", err)) << err;
  ASSERT_TRUE(writeFileAtomically(path, "two", err)) << err;
  ASSERT_TRUE(readFile(path, back, err, 1 << 20)) << err;
  EXPECT_EQ(back, "two");
  std::error_code ec;
  int entries = 0;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec))
    ++entries;
  EXPECT_EQ(entries, 1);
  EXPECT_FALSE(readFile(path, back, err, 2)); // over the size limit
  llvm::SmallString<128> missing(dir);
  llvm::sys::path::append(missing, "nope", "x.json");
  EXPECT_FALSE(writeFileAtomically(missing, "x", err));
  llvm::sys::fs::remove_directories(dir);
}

TEST(Diagnostics, DidYouMeanPrefersCaseInsensitiveMatch) {
  std::vector<std::string> attrs = {"transA", "transB", "alpha", "beta"};
  EXPECT_EQ(findClosest("trans_b", attrs), "transB");
  EXPECT_EQ(findClosest("TRANSA", attrs), "transA");
}

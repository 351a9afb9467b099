//===- SourceManager.h - Source buffers and locations ------------*- C++ -*-===//
//
// Owns the text of every file a compilation reads and maps byte offsets to
// line/column positions (columns count code points, so carets line up under
// non-ASCII text).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_SUPPORT_SOURCEMANAGER_H
#define TPCC_SUPPORT_SOURCEMANAGER_H

#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tpcc {

/// A position in a source buffer: buffer id (0 = no location) and byte offset.
struct SourceLoc {
  uint32_t file = 0;
  uint32_t offset = 0;
  bool isValid() const { return file != 0; }
  bool operator==(const SourceLoc &o) const { return file == o.file && offset == o.offset; }
  bool operator!=(const SourceLoc &o) const { return !(*this == o); }
  bool operator<(const SourceLoc &o) const {
    return file != o.file ? file < o.file : offset < o.offset;
  }
};

/// A half-open byte range [begin, end) in one buffer.
struct SourceRange {
  SourceLoc begin, end;
  SourceRange() = default;
  SourceRange(SourceLoc b, SourceLoc e) : begin(b), end(e) {}
  explicit SourceRange(SourceLoc b) : begin(b), end(b) {}
  bool isValid() const { return begin.isValid(); }
};

struct LineCol {
  unsigned line = 0; ///< 1-based
  unsigned col = 0;  ///< 1-based, in code points
};

class SourceManager {
public:
  SourceManager();
  ~SourceManager();
  SourceManager(const SourceManager &) = delete;
  SourceManager &operator=(const SourceManager &) = delete;

  /// Adds a buffer; `name` is what diagnostics print. Returns its id (>= 1).
  uint32_t addBuffer(std::string name, std::string contents);

  llvm::StringRef getBuffer(uint32_t id) const;
  llvm::StringRef getName(uint32_t id) const;
  unsigned getNumBuffers() const { return buffers.size(); }

  LineCol getLineCol(SourceLoc loc) const;
  /// The text of the line holding `loc`, without its line terminator.
  llvm::StringRef getLineText(SourceLoc loc) const;
  /// The location of 1-based `line`, column 1, or an invalid location.
  SourceLoc getLineStart(uint32_t file, unsigned line) const;
  /// Converts a code-point index in the buffer into a location.
  SourceLoc getLocForCodePoint(uint32_t file, size_t codePoint) const;

private:
  struct Buffer;
  const Buffer &get(uint32_t id) const;
  std::vector<std::unique_ptr<Buffer>> buffers;
};

/// Returns the byte offset of the first invalid UTF-8 sequence, or npos.
size_t findInvalidUTF8(llvm::StringRef text);

} // namespace tpcc

#endif

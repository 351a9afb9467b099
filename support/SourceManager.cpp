//===- SourceManager.cpp - Source buffers and locations -------------------===//
#include "support/SourceManager.h"

#include <algorithm>
#include <cassert>

using namespace tpcc;

struct SourceManager::Buffer {
  std::string name;
  std::string text;
  std::vector<uint32_t> lineStarts;     ///< byte offset of every line
  std::vector<uint32_t> codePointStart; ///< byte offset of every code point
                                        ///< (empty when the text is ASCII)
  bool ascii = true;
};

SourceManager::SourceManager() = default;
SourceManager::~SourceManager() = default;

static bool isContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

uint32_t SourceManager::addBuffer(std::string name, std::string contents) {
  auto buf = std::make_unique<Buffer>();
  buf->name = std::move(name);
  buf->text = std::move(contents);
  const std::string &t = buf->text;
  buf->lineStarts.push_back(0);
  for (size_t i = 0; i < t.size(); ++i) {
    unsigned char c = t[i];
    if (c == '\n')
      buf->lineStarts.push_back(i + 1);
    else if (c == '\r' && (i + 1 >= t.size() || t[i + 1] != '\n'))
      buf->lineStarts.push_back(i + 1);
    if (c >= 0x80)
      buf->ascii = false;
  }
  if (!buf->ascii) {
    buf->codePointStart.reserve(t.size());
    for (size_t i = 0; i < t.size(); ++i)
      if (!isContinuation(t[i]))
        buf->codePointStart.push_back(i);
  }
  buffers.push_back(std::move(buf));
  return buffers.size();
}

const SourceManager::Buffer &SourceManager::get(uint32_t id) const {
  assert(id >= 1 && id <= buffers.size() && "invalid buffer id");
  return *buffers[id - 1];
}

llvm::StringRef SourceManager::getBuffer(uint32_t id) const { return get(id).text; }
llvm::StringRef SourceManager::getName(uint32_t id) const { return get(id).name; }

LineCol SourceManager::getLineCol(SourceLoc loc) const {
  if (!loc.isValid())
    return {};
  const Buffer &b = get(loc.file);
  uint32_t off = std::min<uint32_t>(loc.offset, b.text.size());
  auto it = std::upper_bound(b.lineStarts.begin(), b.lineStarts.end(), off);
  unsigned line = it - b.lineStarts.begin();
  uint32_t start = b.lineStarts[line - 1];
  unsigned col = 1;
  for (uint32_t i = start; i < off; ++i)
    if (!isContinuation(b.text[i]))
      ++col;
  return {line, col};
}

llvm::StringRef SourceManager::getLineText(SourceLoc loc) const {
  if (!loc.isValid())
    return {};
  const Buffer &b = get(loc.file);
  uint32_t off = std::min<uint32_t>(loc.offset, b.text.size());
  auto it = std::upper_bound(b.lineStarts.begin(), b.lineStarts.end(), off);
  uint32_t start = *(it - 1);
  uint32_t end = start;
  while (end < b.text.size() && b.text[end] != '\n' && b.text[end] != '\r')
    ++end;
  return llvm::StringRef(b.text).slice(start, end);
}

SourceLoc SourceManager::getLineStart(uint32_t file, unsigned line) const {
  const Buffer &b = get(file);
  if (line == 0 || line > b.lineStarts.size())
    return {};
  return {file, b.lineStarts[line - 1]};
}

SourceLoc SourceManager::getLocForCodePoint(uint32_t file, size_t codePoint) const {
  const Buffer &b = get(file);
  if (b.ascii)
    return {file, static_cast<uint32_t>(std::min(codePoint, b.text.size()))};
  if (codePoint >= b.codePointStart.size())
    return {file, static_cast<uint32_t>(b.text.size())};
  return {file, b.codePointStart[codePoint]};
}

size_t tpcc::findInvalidUTF8(llvm::StringRef text) {
  const auto *s = reinterpret_cast<const unsigned char *>(text.data());
  size_t n = text.size(), i = 0;
  while (i < n) {
    unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (i + len > n)
      return i;
    for (size_t k = 1; k < len; ++k) {
      if (!isContinuation(s[i + k]))
        return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    // Reject overlong forms, surrogates and values past U+10FFFF.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += len;
  }
  return llvm::StringRef::npos;
}

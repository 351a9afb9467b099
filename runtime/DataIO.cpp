//===- DataIO.cpp - Tensors from and to .npy and .pb files ------------------===//
#include "runtime/DataIO.h"

#include "ir/graph/OnnxIO.h"
#include "support/AtomicFile.h"
#include "support/SourceManager.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <fmt/format.h>

#include <cstring>

using namespace tpcc;
using namespace tpcc::rt;

static const char kMagic[] = "\x93NUMPY";

namespace {
struct Descr {
  const char *code;
  ElemType elem;
};
} // namespace

// '|' (not applicable) and '<' (little-endian) spellings numpy writes.
static const Descr kDescrs[] = {
    {"<f4", ElemType::Float},  {"<f8", ElemType::Double}, {"<f2", ElemType::Float16},
    {"|u1", ElemType::UInt8},  {"|i1", ElemType::Int8},   {"<u2", ElemType::UInt16},
    {"<i2", ElemType::Int16},  {"<u4", ElemType::UInt32}, {"<i4", ElemType::Int32},
    {"<u8", ElemType::UInt64}, {"<i8", ElemType::Int64},  {"|b1", ElemType::Bool},
};

/// The value of `'key': ...` in the header dictionary, up to the next
/// top-level comma or the closing brace.
static bool dictValue(llvm::StringRef header, llvm::StringRef key, llvm::StringRef &value) {
  for (const char *q : {"'", "\""}) {
    std::string k = std::string(q) + key.str() + q;
    size_t at = header.find(k);
    if (at == llvm::StringRef::npos)
      continue;
    llvm::StringRef rest = header.drop_front(at + k.size()).ltrim();
    if (!rest.consume_front(":"))
      return false;
    rest = rest.ltrim();
    size_t end = rest.startswith("(") ? rest.find(')') + 1 : rest.find_first_of(",}");
    if (end == llvm::StringRef::npos || end == 0)
      return false;
    value = rest.take_front(end).trim();
    return true;
  }
  return false;
}

bool rt::parseNpy(llvm::StringRef bytes, Tensor &t, std::string &error) {
  auto fail = [&](const std::string &m) {
    error = m;
    return false;
  };
  if (!bytes.startswith(llvm::StringRef(kMagic, 6)) || bytes.size() < 10)
    return fail("not a .npy file (no \\x93NUMPY magic)");
  unsigned major = uint8_t(bytes[6]);
  size_t headerLen, offset;
  if (major == 1) {
    headerLen = uint8_t(bytes[8]) | size_t(uint8_t(bytes[9])) << 8;
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return fail("truncated .npy header");
    headerLen = 0;
    for (int k = 0; k < 4; ++k)
      headerLen |= size_t(uint8_t(bytes[8 + k])) << (8 * k);
    offset = 12;
  } else {
    return fail(fmt::format(".npy format version {} is not supported (1, 2 and 3 are)", major));
  }
  if (bytes.size() - offset < headerLen)
    return fail("truncated .npy header");
  llvm::StringRef header = bytes.substr(offset, headerLen);
  llvm::StringRef descr, fortran, shapeText;
  if (!dictValue(header, "descr", descr) || !dictValue(header, "fortran_order", fortran) ||
      !dictValue(header, "shape", shapeText))
    return fail("malformed .npy header: " + header.trim().str());
  descr = descr.trim("'\"");
  const Descr *d = nullptr;
  for (const Descr &c : kDescrs)
    if (descr == c.code || (descr.size() == 3 && descr[0] == '=' &&
                            descr.substr(1) == llvm::StringRef(c.code).substr(1)))
      d = &c;
  if (!d) {
    if (descr.startswith(">"))
      return fail(
          fmt::format("big-endian data ('{}') is not supported; save little-endian", descr.str()));
    return fail(fmt::format("the data type '{}' is not supported (float32, float64, float16, "
                            "int8..int64, uint8..uint64 and bool are)",
                            descr.str()));
  }
  if (fortran != "False")
    return fail("Fortran-ordered arrays are not supported; save a C-ordered array");
  if (!shapeText.consume_front("(") || !shapeText.consume_back(")"))
    return fail("malformed .npy shape: " + shapeText.str());
  Shape shape;
  int64_t n = 1;
  llvm::SmallVector<llvm::StringRef, 8> parts;
  shapeText.split(parts, ',');
  for (llvm::StringRef p : parts) {
    p = p.trim();
    if (p.empty())
      continue;
    int64_t dim;
    if (p.getAsInteger(10, dim) || dim < 0)
      return fail("malformed .npy shape: (" + shapeText.str() + ")");
    if (__builtin_mul_overflow(n, dim, &n))
      return fail("the .npy shape's element count overflows");
    shape.push_back(dim);
  }
  size_t esize = graph::elemSize(d->elem);
  uint64_t need;
  if (__builtin_mul_overflow(uint64_t(n), uint64_t(esize), &need))
    return fail("the .npy shape's size overflows");
  uint64_t have = bytes.size() - offset - headerLen;
  if (have != need)
    return fail(fmt::format("shape {} of {} needs {} bytes of data but the file holds {}",
                            shapeStr(shape), graph::toString(d->elem), need, have));
  t = Tensor(d->elem, shape);
  if (need)
    std::memcpy(t.raw(), bytes.data() + offset + headerLen, size_t(need));
  return true;
}

std::string rt::npyBytes(const Tensor &t) {
  const char *code = "<f4";
  for (const Descr &c : kDescrs)
    if (c.elem == t.elem())
      code = c.code;
  std::string shape = "(";
  for (int64_t d : t.shape())
    shape += std::to_string(d) + ", ";
  if (t.rank() == 1)
    shape.pop_back(); // "(3,)"
  else if (t.rank() > 1)
    shape.resize(shape.size() - 2);
  shape += ")";
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", code, shape);
  // Pad with spaces so that the data starts on a 64-byte boundary; end with \n.
  bool v3 = header.size() + 11 > 65535;
  size_t prefix = v3 ? 12 : 10;
  size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += char(v3 ? 3 : 1);
  out += char(0);
  size_t len = header.size();
  for (size_t k = 0; k < (v3 ? 4u : 2u); ++k)
    out += char((len >> (8 * k)) & 0xff);
  out += header;
  out.append(reinterpret_cast<const char *>(t.raw()), t.bytes());
  return out;
}

bool rt::readTensorFile(llvm::StringRef path, Tensor &t, std::string &error) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf) {
    error = buf.getError().message();
    return false;
  }
  llvm::StringRef bytes = (*buf)->getBuffer();
  if (bytes.startswith(llvm::StringRef(kMagic, 6)))
    return parseNpy(bytes, t, error);
  // Otherwise a TensorProto; its decoder says when it is not one.
  SourceManager sm;
  DiagnosticEngine diags(sm);
  graph::Tensor g;
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  if (!graph::loadTensorFromBuffer(bytes, path, dir.empty() ? "." : dir, g, diags)) {
    error = diags.getDiagnostics().empty() ? "not a tensor file"
                                           : diags.getDiagnostics().front().message;
    return false;
  }
  if (g.elem == ElemType::String) {
    error = "string tensors are not model inputs tpcc runs";
    return false;
  }
  t = Tensor::fromGraph(g);
  return true;
}

bool rt::writeTensorFile(llvm::StringRef path, const Tensor &t, std::string &error) {
  std::string bytes = path.endswith(".pb") ? graph::serializeTensor(t.toGraph("")) : npyBytes(t);
  return writeFileAtomically(path, bytes, error);
}

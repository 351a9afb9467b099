//===- JSONWriter.h - Streaming canonical-JSON writer for backends -*- C++ -*-===//
//
// The writer every JSON backend streams through (tpcc's canonical JSON, MCT's
// serialized TPC, AIMET's quantsim config): llvm::json::OStream for layout,
// `object()` sorting its fields by key, strings escaped and doubles spelled as
// Python's json.dumps(..., sort_keys=True, ensure_ascii=False) does, so every
// output is byte-for-byte deterministic. See JSONBackend.cpp for the rules.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_IR_JSONWRITER_H
#define TPCC_IR_JSONWRITER_H

#include "ir/TpcIR.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tpcc {

class JSONWriter {
public:
  /// `indent` 0 writes everything on one line.
  explicit JSONWriter(llvm::raw_ostream &os, unsigned indent = 2) : j(os, indent) {}

  /// A key and the callback that writes its value. The callback is owned
  /// (std::function), so a list of fields may be built in one statement and
  /// written in a later one.
  using Field = std::pair<llvm::StringRef, std::function<void()>>;

  /// Writes an object whose fields are written by the callbacks, in key
  /// (byte) order, whatever order they are listed in.
  void object(llvm::ArrayRef<Field> fields);
  void object(std::initializer_list<Field> fields) {
    object(llvm::ArrayRef<Field>(fields.begin(), fields.size()));
  }
  template <typename Range, typename Fn> void array(const Range &r, Fn each) {
    j.arrayBegin();
    for (const auto &e : r)
      each(e);
    j.arrayEnd();
  }

  // Scalars.
  void string(llvm::StringRef s);
  /// Infinities as "inf" / "-inf", integral values as integers, others as the
  /// shortest round-trip decimal in Python's layout.
  void number(double d);
  void integer(int64_t i) { j.value(i); }
  void boolean(bool b) { j.value(b); }
  void null() { j.value(nullptr); }
  void nameOrNull(const std::string &s) { s.empty() ? null() : string(s); }
  void stringOrNull(const std::optional<std::string> &s) { s ? string(*s) : null(); }
  template <typename T> void integerOrNull(const std::optional<T> &v) { v ? integer(*v) : null(); }
  void booleanOrNull(const std::optional<bool> &v) { v ? boolean(*v) : null(); }
  void strings(const std::vector<std::string> &v) {
    array(v, [&](const std::string &s) { string(s); });
  }

  /// The underlying stream, for objects whose keys are data (tensor names).
  llvm::json::OStream &raw() { return j; }

  // Configs, as the canonical JSON spells them (also in plans). A number
  // format other than plain integers with float32 scales is a `format`
  // object (`block_axis` only for attrs); a plain one writes no key.
  void formatConfig(const ir::FormatConfig &f, bool withAxis);
  void attrConfig(const ir::AttrConfig &a);
  void opConfig(const ir::OpConfig &c);

protected:
  llvm::json::OStream j;
};

} // namespace tpcc

#endif

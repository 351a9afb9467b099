//===- LogicalResult.h - Success/failure results -----------------*- C++ -*-===//
#ifndef TPCC_SUPPORT_LOGICALRESULT_H
#define TPCC_SUPPORT_LOGICALRESULT_H

namespace tpcc {

/// The result of an operation that reports its own errors: success or failure.
/// (Unlike `bool`, a true value never means "error".)
class [[nodiscard]] LogicalResult {
public:
  static LogicalResult success(bool ok = true) { return LogicalResult(ok); }
  static LogicalResult failure(bool fail = true) { return LogicalResult(!fail); }
  bool succeeded() const { return ok; }
  bool failed() const { return !ok; }

private:
  explicit LogicalResult(bool ok) : ok(ok) {}
  bool ok;
};

inline LogicalResult success(bool ok = true) { return LogicalResult::success(ok); }
inline LogicalResult failure(bool fail = true) { return LogicalResult::failure(fail); }
inline bool succeeded(LogicalResult r) { return r.succeeded(); }
inline bool failed(LogicalResult r) { return r.failed(); }

} // namespace tpcc

#endif

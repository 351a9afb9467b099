//===- DataIO.h - Tensors from and to .npy and .pb files --------*- C++ -*-===//
//
// Input data for `tpcc run`, `tpcc eval` and calibration: NumPy `.npy` files
// (format versions 1-3, little-endian, C order; float32/64, float16, ints,
// uint8, bool) and ONNX `TensorProto` `.pb` files (the ONNX test suite's
// format). The format is told by the file's magic bytes, not its name.
// Hostile files (a truncated body, a header that lies about the shape, an
// absurd shape) get an error, never a crash or an allocation the file does
// not justify.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_DATAIO_H
#define TPCC_RUNTIME_DATAIO_H

#include "runtime/Tensor.h"

#include "llvm/ADT/StringRef.h"

#include <string>

namespace tpcc::rt {

/// Decodes a `.npy` file's bytes.
bool parseNpy(llvm::StringRef bytes, Tensor &t, std::string &error);
/// Encodes `t` as `.npy` (format 1.0; 3.0 only for headers over 64 KiB).
std::string npyBytes(const Tensor &t);

/// Reads a `.npy` or `.pb` tensor file. `error` says what is wrong (without
/// the path, which the caller puts in its diagnostic).
bool readTensorFile(llvm::StringRef path, Tensor &t, std::string &error);
/// Writes `t` atomically, as `.pb` when `path` ends in `.pb`, else `.npy`.
bool writeTensorFile(llvm::StringRef path, const Tensor &t, std::string &error);

} // namespace tpcc::rt

#endif

//===- HalfFloat.h - binary16 and bfloat16 conversions -----------*- C++ -*-===//
//
// IEEE binary16 and bfloat16 to and from float, rounding to nearest even;
// used by the model loader (float16 models computed in float32) and the
// executor's kernels.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_SUPPORT_HALFFLOAT_H
#define TPCC_SUPPORT_HALFFLOAT_H

#include <cstdint>

namespace tpcc {

float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
float bfloat16ToFloat(uint16_t h);
uint16_t floatToBfloat16(float f);

} // namespace tpcc

#endif

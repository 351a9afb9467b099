//===- Stage.cpp - The stage interfaces' anchors ----------------------------===//
#include "quant/core/Stage.h"

using namespace tpcc::quant;

StageReport::~StageReport() = default;
Stage::~Stage() = default;

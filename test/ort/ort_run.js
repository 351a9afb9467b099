// ort_run.js - runs an ONNX model with ONNX Runtime (onnxruntime-node) on .npy
// inputs and writes each output as .npy: the independent reference the
// executor's cross-check (test/tools/ort_crosscheck.py) compares tpcc with.
//
// usage: node ort_run.js MODEL.onnx OUT_PREFIX NAME=INPUT.npy...
//   writes OUT_PREFIX<k>.npy for output k and prints the output names.
'use strict';
const ort = require('onnxruntime-node');
const { readFeeds, writeOutputs } = require('./npy');

async function main() {
  const [model, prefix, ...pairs] = process.argv.slice(2);
  // One thread and no graph rewrites beyond the basic ones: a plain reference.
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1, graphOptimizationLevel: 'basic',
  });
  writeOutputs(session, await session.run(readFeeds(pairs)), prefix);
}

main().catch((e) => { console.error('ort_run: ' + e.message); process.exit(1); });

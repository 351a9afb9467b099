// ort_run.js - runs an ONNX model with ONNX Runtime (onnxruntime-node) on .npy
// inputs and writes each output as .npy: the independent reference the
// executor's cross-check (test/tools/ort_crosscheck.py) compares tpcc with.
//
// usage: node ort_run.js [--level disabled|basic|extended|all] MODEL.onnx OUT_PREFIX
//             NAME=INPUT.npy...
//   writes OUT_PREFIX<k>.npy for output k and prints the output names. The
//   graph optimization level defaults to basic; the real-model corpus check
//   also runs `disabled` to see how far ORT's own levels differ.
'use strict';
const ort = require('onnxruntime-node');
const { readFeeds, writeOutputs } = require('./npy');

async function main() {
  let args = process.argv.slice(2), level = 'basic';
  if (args[0] === '--level') {
    level = args[1];
    args = args.slice(2);
  }
  const [model, prefix, ...pairs] = args;
  // One thread and no graph rewrites beyond the basic ones: a plain reference.
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1, graphOptimizationLevel: level,
  });
  writeOutputs(session, await session.run(readFeeds(pairs)), prefix);
}

main().catch((e) => { console.error('ort_run: ' + e.message); process.exit(1); });

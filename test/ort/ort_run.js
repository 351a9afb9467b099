// ort_run.js - runs an ONNX model with ONNX Runtime (onnxruntime-node) on .npy
// inputs and writes each output as .npy: the independent reference the
// executor's cross-check (test/tools/ort_crosscheck.py) compares tpcc with.
//
// usage: node ort_run.js [--level disabled|basic|extended|all]
//             [--stream STEPS IN=OUT[,IN=OUT...]] MODEL.onnx OUT_PREFIX NAME=INPUT.npy...
//   writes OUT_PREFIX<k>.npy for output k and prints the output names. The
//   graph optimization level defaults to basic; the real-model corpus check
//   also runs `disabled` to see how far ORT's own levels differ.
//   --stream runs the model STEPS times, as a streaming model (a voice activity
//   detector) runs: every input of rank 1 or more other than the states holds
//   one slice per step along its first axis; each state IN starts from its
//   file and then takes output OUT of the step before. Each output is written
//   with the steps stacked along a new first axis.
'use strict';
const ort = require('onnxruntime-node');
const { readFeeds, writeOutputs } = require('./npy');

// Slice `step` of `t` along its first axis.
function slice(t, step) {
  const inner = t.dims.slice(1).reduce((a, b) => a * b, 1);
  return new ort.Tensor(t.type, t.data.slice(step * inner, (step + 1) * inner), t.dims.slice(1));
}

// The tensors of `list` stacked along a new first axis.
function stack(list) {
  const first = list[0];
  const data = new first.data.constructor(first.data.length * list.length);
  list.forEach((t, k) => data.set(t.data, k * first.data.length));
  return new ort.Tensor(first.type, data, [list.length, ...first.dims]);
}

async function main() {
  let args = process.argv.slice(2), level = 'basic', steps = 0, states = [];
  for (;;) {
    if (args[0] === '--level') {
      level = args[1];
    } else if (args[0] === '--stream') {
      steps = Number(args[1]);
      states = args[2].split(',').map((p) => p.split('='));
    } else {
      break;
    }
    args = args.slice(args[0] === '--level' ? 2 : 3);
  }
  const [model, prefix, ...pairs] = args;
  // One thread and no graph rewrites beyond the basic ones: a plain reference.
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1, graphOptimizationLevel: level,
  });
  const feeds = readFeeds(pairs);
  if (!steps) {
    writeOutputs(session, await session.run(feeds), prefix);
    return;
  }
  const isState = new Map(states);
  const current = {};
  for (const [name, t] of Object.entries(feeds))
    current[name] = isState.has(name) || t.dims.length === 0 ? t : null;
  const outs = {};
  for (let step = 0; step < steps; ++step) {
    const now = {};
    for (const [name, t] of Object.entries(feeds))
      now[name] = current[name] || slice(t, step);
    const results = await session.run(now);
    for (const name of session.outputNames)
      (outs[name] = outs[name] || []).push(results[name]);
    for (const [input, output] of states)
      current[input] = results[output];
  }
  const stacked = {};
  for (const name of session.outputNames)
    stacked[name] = stack(outs[name]);
  writeOutputs(session, stacked, prefix);
}

main().catch((e) => { console.error('ort_run: ' + e.message); process.exit(1); });

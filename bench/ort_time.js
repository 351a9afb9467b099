// ort_time.js - ONNX Runtime (onnxruntime-node) on inputs from .npy files.
// usage: node ort_time.js MODEL.onnx THREADS RUNS NAME=FILE.npy...
// Loads MODEL (intraOpNumThreads THREADS, inter-op 1), reads each input from
// its .npy file (test/ort/npy.js), then runs it RUNS times.
// RUNS 0: one run, nothing timed (the whole process is timed by the caller).
// Otherwise 3 warm-up runs, then RUNS timed runs; prints the seconds per run
// of the best of 3 passes.
'use strict';
const ort = require('onnxruntime-node');
const { readFeeds } = require('../test/ort/npy');

async function main() {
  const [model, threadsS, runsS, ...inputs] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threadsS), interOpNumThreads: 1,
  });
  const feeds = readFeeds(inputs);
  const runs = Number(runsS);
  if (runs === 0) {
    await session.run(feeds);
    return;
  }
  for (let i = 0; i < 3; ++i) await session.run(feeds);
  let best = Infinity;
  for (let pass = 0; pass < 3; ++pass) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < runs; ++i) await session.run(feeds);
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9 / runs);
  }
  console.log(best.toPrecision(6));
}
main().catch((e) => { console.error('ort_run: ' + e.message); process.exit(1); });

// ort_bench.js - ONNX Runtime (onnxruntime-node) throughput on random input.
// usage: node ort_bench.js MODEL.onnx BATCH SAMPLES THREADS [REPEATS]
// Three warm-up runs, then REPEATS (default 1) timed passes of SAMPLES / BATCH
// runs each; THREADS is intraOpNumThreads (inter-op 1, spinning as ORT defaults).
// prints: samples/s of the best pass
'use strict';
const ort = require('onnxruntime-node');

async function main() {
  const [model, batchS, samplesS, threadsS, repeatsS] = process.argv.slice(2);
  const batch = Number(batchS), samples = Number(samplesS);
  const repeats = Math.max(1, Number(repeatsS || 1));
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threadsS), interOpNumThreads: 1,
  });
  const meta = session.inputMetadata[0];
  const dims = meta.shape.map((d, k) => (k === 0 ? batch : Number(d)));
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; ++i) data[i] = Math.sin(i) * 0.5;
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', data, dims) };
  for (let i = 0; i < 3; ++i) await session.run(feeds); // warm-up
  const runs = Math.max(1, Math.round(samples / batch));
  let best = 0;
  for (let r = 0; r < repeats; ++r) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < runs; ++i) await session.run(feeds);
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    best = Math.max(best, runs * batch / s);
  }
  console.log(best.toFixed(1));
}
main().catch((e) => { console.error('ort_bench: ' + e.message); process.exit(1); });

// ort_optimized.js - loads an ONNX model into ONNX Runtime (onnxruntime-node)
// with graph optimizations on, saves the model ORT actually runs and prints
// its operators: whether ORT fused a QDQ model into integer kernels
// (QLinearConv, QGemm, QLinearMatMul, ...). Optionally runs the optimized
// session on .npy inputs and writes each output as .npy.
//
// usage: node ort_optimized.js MODEL.onnx [--level basic|extended|all]
//            [--save OPTIMIZED.onnx] [--out PREFIX NAME=INPUT.npy...]
//   prints `ops: OP OP ...` (the optimized graph's nodes in order; operators
//   outside the default domain as `domain:OP`), then, with --out, the output
//   names (output k written to PREFIX<k>.npy). The level defaults to
//   `extended` (ORT's QDQ fusions run there; `all` adds layout rewrites).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const ort = require('onnxruntime-node');
const { readFeeds, writeOutputs } = require('./npy');

// A minimal protobuf reader: the fields of one message as [number, wire type,
// value] (varints as Numbers, length-delimited fields as Buffers).
function* fields(buf) {
  let pos = 0;
  const varint = () => {
    let v = 0, mul = 1, b;
    do {
      if (pos >= buf.length) throw new Error('truncated protobuf');
      b = buf[pos++];
      v += (b & 0x7f) * mul;
      mul *= 128;
    } while (b & 0x80);
    return v;
  };
  while (pos < buf.length) {
    const key = varint();
    const wire = key % 8, num = Math.floor(key / 8);
    if (wire === 0) yield [num, wire, varint()];
    else if (wire === 1) { yield [num, wire, buf.subarray(pos, pos + 8)]; pos += 8; }
    else if (wire === 5) { yield [num, wire, buf.subarray(pos, pos + 4)]; pos += 4; }
    else if (wire === 2) {
      const len = varint();
      yield [num, wire, buf.subarray(pos, pos + len)];
      pos += len;
    } else throw new Error('unsupported protobuf wire type ' + wire);
  }
}

// ModelProto.graph = 7; GraphProto.node = 1; NodeProto.op_type = 4, domain = 7.
function opTypes(modelBytes) {
  const ops = [];
  for (const [num, wire, graph] of fields(modelBytes)) {
    if (num !== 7 || wire !== 2) continue;
    for (const [gnum, gwire, node] of fields(graph)) {
      if (gnum !== 1 || gwire !== 2) continue;
      let op = '', domain = '';
      for (const [nnum, nwire, v] of fields(node)) {
        if (nnum === 4 && nwire === 2) op = v.toString('utf8');
        if (nnum === 7 && nwire === 2) domain = v.toString('utf8');
      }
      ops.push(domain && domain !== 'ai.onnx' ? `${domain}:${op}` : op);
    }
  }
  return ops;
}

async function main() {
  const args = process.argv.slice(2);
  let model, level = 'extended', save, prefix;
  const pairs = [];
  for (let k = 0; k < args.length; ++k) {
    if (args[k] === '--level') level = args[++k];
    else if (args[k] === '--save') save = args[++k];
    else if (args[k] === '--out') prefix = args[++k];
    else if (args[k].includes('=')) pairs.push(args[k]);
    else model = args[k];
  }
  if (!model) throw new Error('usage: ort_optimized.js MODEL.onnx [--level L] [--save F] [--out P N=F.npy...]');
  const tmp = save ? null : fs.mkdtempSync(path.join(os.tmpdir(), 'ort-opt-'));
  const optimized = save || path.join(tmp, 'optimized.onnx');
  try {
    const session = await ort.InferenceSession.create(model, {
      intraOpNumThreads: 1, graphOptimizationLevel: level, optimizedModelFilePath: optimized,
    });
    console.log('ops: ' + opTypes(fs.readFileSync(optimized)).join(' '));
    if (prefix !== undefined)
      writeOutputs(session, await session.run(readFeeds(pairs)), prefix);
  } finally {
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((e) => { console.error('ort_optimized: ' + e.message); process.exit(1); });

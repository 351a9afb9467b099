// npy.js - .npy files to and from ONNX Runtime tensors, for the Node scripts
// beside it (little-endian numeric dtypes, C order; what numpy.save writes),
// and the NAME=FILE.npy feeds / PREFIX<k>.npy outputs they share.
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

const DTYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
  '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array],
  '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array],
  '<i2': ['int16', Int16Array], '<u2': ['uint16', Uint16Array],
};

function readNpy(path) {
  const buf = fs.readFileSync(path);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(path + ': not a .npy file');
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',')
    .map((s) => s.trim()).filter((s) => s.length).map(Number);
  if (!DTYPES[descr]) throw new Error(path + ': unsupported dtype ' + descr);
  const [type, Ctor] = DTYPES[descr];
  const body = buf.subarray(start + hlen);
  const data = new Ctor(body.buffer.slice(body.byteOffset, body.byteOffset + body.length));
  return new ort.Tensor(type, data, shape);
}

function writeNpy(path, tensor) {
  const descr = Object.keys(DTYPES).find((k) => DTYPES[k][0] === tensor.type);
  if (!descr) throw new Error('cannot write output of type ' + tensor.type);
  const dims = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${dims}, }`;
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header.padEnd(total - 10 - 1, ' ') + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const data = Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  fs.writeFileSync(path, Buffer.concat([pre, Buffer.from(header, 'latin1'), data]));
}

// Session feeds from NAME=FILE.npy arguments.
function readFeeds(pairs) {
  const feeds = {};
  for (const p of pairs) {
    const eq = p.indexOf('=');
    feeds[p.slice(0, eq)] = readNpy(p.slice(eq + 1));
  }
  return feeds;
}

// Writes output k of `session` to PREFIX<k>.npy and prints its name.
function writeOutputs(session, results, prefix) {
  session.outputNames.forEach((name, k) => {
    writeNpy(`${prefix}${k}.npy`, results[name]);
    console.log(name);
  });
}

module.exports = { readNpy, writeNpy, readFeeds, writeOutputs };

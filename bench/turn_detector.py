#!/usr/bin/python3
"""turn_detector.py - tpcc's static quantization of a real transformer against the
ONNX Runtime-dynamic int8 model its npm package ships.

The model: `@livekit/agents-plugin-livekit@0.1.3`'s turn detector, a 4-layer
Llama-style decoder (RMSNorm, rotary embeddings, a causal mask built in the graph, a
49,155-token vocabulary). The package ships it quantized by ONNX Runtime's
quantize_dynamic (DynamicQuantizeLinear -> MatMulInteger, a uint8 embedding table);
scripts/corpus/dequantize_dynamic.py recovers the float model, W = (Wq - zero) * scale.
Both get a second output, `logits`: the input of the final Softmax, the vocabulary's
logits at the last position.

Inputs: token ids drawn uniformly from the vocabulary's 49,152 ordinary tokens
(numpy default_rng(47)), `--length` tokens each: the package's tokenizer comes from
the Hugging Face hub at run time, which is out of reach here, so the sequences are not
text. `--calib` of them calibrate, `--sequences` others are held out.

Each candidate runs the held-out sequences through `tpcc eval --batch 1` against the
float model: SQNR of the logits and of the end-of-turn probability, and the largest
probability error. The candidates: the package's own dynamic model (tpcc computes it
as ONNX Runtime does, bit for bit: ctest ort_dynamic), and `tpcc quantize --platform
ort_cpu` (or `--platform`'s) with each set of `--flags` (default: none, and --min-sqnr
33), timed. `--platform test/lit/quantize/Inputs/vit_w4.tpc --flags "" --flags "--gptq
second_order"` measures 4-bit weight-only blocks of 32 (issue 48).

usage: turn_detector.py --tpcc BIN --work DIR [--sequences 64] [--calib 32]
                        [--length 48] [--platform NAME|FILE.tpc] [--flags "--min-sqnr 33"]...
"""
import argparse
import importlib.machinery
import importlib.util
import os
import re
import subprocess
import sys
import tarfile
import time

import numpy as np
import onnx
from onnx import helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE, VERSION = "@livekit/agents-plugin-livekit", "0.1.3"
LOGITS = "/Gather_output_0"  # the last position's logits, the final Softmax's input


def fetch_corpus():
    """scripts/fetch-corpus as a module (its tarball() downloads and checks)."""
    path = os.path.join(ROOT, "scripts", "fetch-corpus")
    loader = importlib.machinery.SourceFileLoader("fetch_corpus", path)
    spec = importlib.util.spec_from_loader("fetch_corpus", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def with_logits(src, dst):
    m = onnx.load(src)
    if LOGITS not in {o.name for o in m.graph.output}:
        m.graph.output.append(helper.make_tensor_value_info(LOGITS, onnx.TensorProto.FLOAT,
                                                            [1, "vocabulary"]))
    onnx.save(m, dst)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(" ".join(cmd) + " failed:\n" + p.stderr[-3000:])
    return p.stdout


def evaluate(args, model, reference, data):
    out = run([args.tpcc, "eval", model, "--data", data, "--reference", reference, "--batch",
               "1", "--progress=never"])
    got = {}
    for name, db, err in re.findall(r"SQNR `([^`]+)`\s+([-\d.]+|inf) dB(?: \(largest error ([^)]+)\))?",
                                    out):
        got[name] = (float(db), float(err) if err else 0.0)
    return got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpcc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--sequences", type=int, default=64)
    ap.add_argument("--calib", type=int, default=32)
    ap.add_argument("--length", type=int, default=48)
    ap.add_argument("--flags", action="append")
    ap.add_argument("--platform", default="ort_cpu",
                    help="the platform (a stdlib name or a .tpc file) tpcc quantizes for")
    args = ap.parse_args()
    flags = args.flags or ["", "--min-sqnr 33"]
    os.makedirs(args.work, exist_ok=True)
    w = lambda name: os.path.join(args.work, name)  # noqa: E731

    if not os.path.exists(w("float.onnx")):
        tgz = fetch_corpus().tarball(PACKAGE, VERSION)
        with tarfile.open(tgz) as t:
            with open(w("package.onnx"), "wb") as f:
                f.write(t.extractfile("package/src/turn_detector.onnx").read())
        run([sys.executable, os.path.join(ROOT, "scripts", "corpus", "dequantize_dynamic.py"),
             w("package.onnx"), w("float_plain.onnx")])
        with_logits(w("package.onnx"), w("dynamic.onnx"))
        with_logits(w("float_plain.onnx"), w("float.onnx"))
    rng = np.random.default_rng(47)
    ids = rng.integers(0, 49152, size=(args.calib + args.sequences, args.length))
    np.save(w("calib.npy"), ids[:args.calib].astype(np.int64))
    np.save(w("test.npy"), ids[args.calib:].astype(np.int64))

    rows = [("package's ORT-dynamic int8", evaluate(args, w("dynamic.onnx"), w("float.onnx"),
                                                    w("test.npy")), None)]
    for i, f in enumerate(flags):
        out = w(f"static{i}.onnx")
        t0 = time.time()
        run([args.tpcc, "quantize", "--platform", args.platform, "--calib", w("calib.npy"),
             w("float.onnx"), "-o", out, "--progress=never"] + f.split())
        took = time.time() - t0
        label = os.path.basename(args.platform).replace(".tpc", "")
        rows.append((f"tpcc {label} {f}".strip(), evaluate(args, out, w("float.onnx"),
                                                             w("test.npy")), took))
    print(f"turn detector, {args.sequences} held-out sequences of {args.length} random tokens "
          f"(calibration: {args.calib})")
    print(f"  {'model':40s} {'logits SQNR':>12s} {'prob SQNR':>10s} {'largest prob error':>19s} "
          f"{'quantize s':>11s}")
    for name, got, took in rows:
        lg, pr = got.get(LOGITS, (float("nan"), 0)), got.get("prob", (float("nan"), 0))
        print(f"  {name:40s} {lg[0]:12.2f} {pr[0]:10.2f} {pr[1]:19.4f} "
              f"{'' if took is None else f'{took:11.1f}'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

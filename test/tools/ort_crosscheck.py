#!/usr/bin/python3
"""ort_crosscheck.py - runs models through ONNX Runtime and through tpcc, compares.

Every model in ../shared/models (and its zoo/) and in examples/ runs on the
same inputs through ONNX Runtime (onnxruntime-node, via test/ort/ort_run.js)
and through `tpcc run`; each output must agree to a relative error of 1e-4
(max |tpcc - ort| / max |ort|). Inputs: the models' own calibration data where
it exists, else fixed pseudo-random data (numpy's legacy generator, seeded) of
the model's input shape, with symbolic batch dimensions set to 8.

usage: ort_crosscheck.py --tpcc BIN --node-modules DIR --work DIR MODEL_DIR...
Exit 0: all agree; 1: a disagreement or a failure; 77 (ctest's "skipped"):
Node.js or onnxruntime-node is missing, with the reason printed.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ORT_RUN = os.path.join(HERE, "..", "ort", "ort_run.js")
TOLERANCE = 1e-4
# Calibration data that goes with a model (the first 64 samples are used).
DATA = {"fashion_cnn.onnx": "fashion_calib_x.npy", "digits_cnn.onnx": "digits_calib_x.npy"}


def inputs_of(path):
    m = onnx.load(path)
    inits = {i.name for i in m.graph.initializer}
    for i in m.graph.input:
        if i.name in inits:
            continue
        t = i.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else 8 for d in t.shape.dim]
        yield i.name, t.elem_type, shape


def make_inputs(path, work, models_dir):
    feeds = []
    rng = np.random.RandomState(1234)
    data = DATA.get(os.path.basename(path))
    for k, (name, elem, shape) in enumerate(inputs_of(path)):
        if elem != onnx.TensorProto.FLOAT:
            raise RuntimeError(f"input `{name}` is not float")
        if data and os.path.exists(os.path.join(models_dir, data)):
            x = np.load(os.path.join(models_dir, data))[:64].astype(np.float32)
        else:
            x = rng.uniform(-1, 1, shape).astype(np.float32)
        f = os.path.join(work, f"in{k}.npy")
        np.save(f, x)
        feeds.append((name, f))
    return feeds


def ort_missing(node_modules):
    """Why ONNX Runtime cannot run here (Node.js or onnxruntime-node missing), or None."""
    if not shutil.which("node"):
        return "Node.js is not installed (scripts/setup installs it)"
    if not os.path.isdir(os.path.join(node_modules, "onnxruntime-node")):
        return f"onnxruntime-node is not installed in {node_modules} (scripts/setup installs it)"
    return None


def run_both(path, feeds, args, work, ort_cmd=None, tpcc_flags=()):
    """Runs `path` through ORT (test/ort/ort_run.js, or `ort_cmd` + [path, "--out",
    prefix]: a script that prints its lines, then the output names) and `tpcc run
    *tpcc_flags` on `feeds`; returns (output names, ORT outputs, tpcc outputs, the
    lines ORT printed before the names) or a string saying what failed."""
    env = dict(os.environ, NODE_PATH=args.node_modules)
    cmd = (ort_cmd + [path, "--out"]) if ort_cmd else ["node", ORT_RUN, path]
    ort = subprocess.run(cmd + [os.path.join(work, "ort")] + [f"{n}={f}" for n, f in feeds],
                         env=env, capture_output=True, text=True)
    if ort.returncode:
        return f"ONNX Runtime failed: {ort.stderr.strip()[-2000:]}"
    lines = ort.stdout.splitlines()
    head = [l for l in lines if l.startswith("ops:")]
    names = [l for l in lines if not l.startswith("ops:")]
    cmd = [args.tpcc, "run", path, *tpcc_flags] + [a for n, f in feeds for a in ("--input", f"{n}={f}")]
    for k, n in enumerate(names):
        cmd += ["--output", f"{n}={os.path.join(work, f'tpcc{k}.npy')}"]
    tp = subprocess.run(cmd, capture_output=True, text=True)
    if tp.returncode:
        return f"tpcc run failed: {tp.stderr.strip()}"
    want = [np.load(os.path.join(work, f"ort{k}.npy")) for k in range(len(names))]
    got = [np.load(os.path.join(work, f"tpcc{k}.npy")) for k in range(len(names))]
    for n, w, g in zip(names, want, got):
        if w.shape != g.shape or w.dtype != g.dtype:
            return f"output `{n}`: tpcc gives {g.dtype}{list(g.shape)}, ORT {w.dtype}{list(w.shape)}"
    return names, want, got, head


def check(path, args, models_dir):
    base = os.path.basename(path)
    work = os.path.join(args.work, base.replace(".onnx", ""))
    os.makedirs(work, exist_ok=True)
    feeds = make_inputs(path, work, models_dir)
    r = run_both(path, feeds, args, work)
    if isinstance(r, str):
        return r
    names, wants, gots, _ = r
    worst = []
    for n, want, got in zip(names, wants, gots):
        scale = max(float(np.max(np.abs(want))), 1e-6) if want.size else 1.0
        rel = float(np.max(np.abs(got.astype(np.float64) - want))) / scale if want.size else 0.0
        worst.append(f"{n} {rel:.2e}")
        if not rel <= TOLERANCE:
            return f"output `{n}`: relative error {rel:.3e} > {TOLERANCE:g}"
    print(f"ok   {base}: " + ", ".join(worst) + f"  (batch {np.load(feeds[0][1]).shape[0]})")
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tpcc", required=True)
    p.add_argument("--node-modules", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("dirs", nargs="+")
    args = p.parse_args()
    missing = ort_missing(args.node_modules)
    if missing:
        print("SKIPPED: " + missing)
        return 77
    models = []
    for d in args.dirs:
        models += sorted(glob.glob(os.path.join(d, "*.onnx"))) + sorted(glob.glob(os.path.join(d, "zoo", "*.onnx")))
    if not models:
        print("no models found in " + ", ".join(args.dirs))
        return 1
    failed = 0
    for m in models:
        why = check(m, args, os.path.dirname(m) if "zoo" not in m else os.path.dirname(os.path.dirname(m)))
        if why:
            print(f"FAIL {os.path.basename(m)}: {why}")
            failed += 1
    print(f"ort cross-check: {len(models) - failed} agree, {failed} differ, of {len(models)} models")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

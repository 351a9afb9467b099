#!/usr/bin/python3
"""corpus_check.py - the real-model corpus (issue 18) through tpcc and ONNX Runtime.

For each model of test/corpus/manifest.json (fetched by scripts/fetch-corpus into
.deps/corpus/models/): test inputs are made as the manifest's recipe says
(corpus_inputs.py: speech, photos and rendered text from the manifest's sample files,
or seeded values; the same bytes on every machine); `tpcc plan` must succeed for
imx500, imx500_v4, tflite and default; `tpcc run` and ONNX Runtime (onnxruntime-node, optimization level
basic) run the inputs, and every output must agree: max |tpcc - ort| at most 1e-4 of
max |ort| plus 1e-6 (ORT's Sigmoid approximation is 7e-8 off in its tail, which a
single small probability turns into 2e-4 relative), or at most twice ONNX Runtime's
own difference between its `disabled` and `basic` levels where that is larger (deep
networks whose outputs ORT itself does not pin down). A model whose outputs a
last-bit difference changes (the manifest's `float_as_ort`, with the reason: peak
picking by Equal) runs with `--ort-cpu` and must give ORT's bits. A streaming model
(the manifest's `stream`: the six VADs) also runs quantized over 48 windows of speech,
feeding its own state back, and its figure is that stream's; it calibrates on
streamed states. A model whose package does not read its outputs whole (the
manifest's `task`: M-LSD's peak picking, BlazeFace's logits and anchors) is measured
as the package reads them (corpus_tasks.py), and what the package would detect is
compared with the float model's. A model that needs an operator
the executor lacks (the manifest's `needs`) is listed as blocked, with the error; a
model the manifest marks `xfail` (with the reason) is listed as a known gap. A model
the manifest marks `run_only` (with the reason: a model its package ships quantized,
which tpcc runs as shipped) is planned and run with `--ort-cpu` (ORT's integer
arithmetic on this CPU), within the tolerance, and not quantized again. Neither
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
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MANIFEST = os.path.join(ROOT, "test", "corpus", "manifest.json")
MODELS = os.path.join(ROOT, ".deps", "corpus", "models")
PLATFORMS = ("imx500", "imx500_v4", "tflite", "default")
TOLERANCE = 1e-4  # of max |ort|
FLOOR = 1e-6  # absolute
CALIB_SAMPLES = 8
STREAM_CALIB_STEPS = 65
# A quantized model's outputs left float (after the last DequantizeLinear): tpcc and
# ORT agree on the integer groups; the float ops after them round apart.
Q_TOLERANCE = 1e-3
sys.path.insert(0, HERE)
from corpus_inputs import FONT, make_input, sample_file, speech_stream  # noqa: E402
from ort_crosscheck import ORT_RUN, ort_missing  # noqa: E402
from corpus_tasks import sqnr_db, task_check  # noqa: E402
from ort_quantized import host_has_vnni  # noqa: E402

VNNI = host_has_vnni() and os.environ.get("TPCC_TEST_HOST_CPU") != "haswell"


def path_of(m):
    return os.path.join(MODELS, m["id"] + ".onnx")


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return r.returncode, r.stdout, r.stderr.strip()


def ort(args, level, model, prefix, feeds, stream=()):
    """ONNX Runtime (`ort_run.js`) on `feeds`: ([(output name, array)], None), or (None,
    why). `stream`: ort_run.js's `--stream STEPS IN=OUT,...` arguments."""
    env = dict(os.environ, NODE_PATH=args.node_modules)
    code, out, err = run([shutil.which("node"), ORT_RUN, "--level", level, *stream, model, prefix]
                         + [f"{n}={f}" for n, f in feeds], env)
    if code:
        return None, f"ONNX Runtime fails: {err.splitlines()[-1] if err else code}"
    names = out.splitlines()
    return [(n, np.load(f"{prefix}{k}.npy")) for k, n in enumerate(names)], None


def tpcc_run(args, model, flags, feeds, outputs, work, prefix):
    """`tpcc run` of `model` on `feeds`, output k (named as in `outputs`) written to
    work/<prefix>k.npy; (exit code, stderr)."""
    cmd = [args.tpcc, "run", model, *flags]
    for n, f in feeds:
        cmd += ["--input", f"{n}={f}"]
    for k, (n, _) in enumerate(outputs):
        cmd += ["--output", f"{n}={os.path.join(work, f'{prefix}{k}.npy')}"]
    code, _, err = run(cmd)
    return code, err


def test_inputs(m, work, sets):
    feeds = []
    for k, (name, recipe) in enumerate(m["inputs"].items()):
        f = os.path.join(work, f"input{k}.npy")
        np.save(f, make_input(sets, recipe, k))
        feeds.append((name, f))
    return feeds


def check(args, m, work, feeds):
    """(status, detail, worst relative error or None, ORT's outputs or None)."""
    path = path_of(m)
    for p in PLATFORMS:
        code, _, err = run([args.tpcc, "plan", "--platform", p, path])
        if code:
            return "FAIL", f"tpcc plan --platform {p}: {err.splitlines()[-1] if err else code}", None, None
    want, err = ort(args, "basic", path, os.path.join(work, "ort"), feeds)
    if err:
        return "FAIL", err, None, None
    # A model whose outputs a last-bit difference changes (the manifest's
    # `float_as_ort`, with the reason) runs as ORT computes, and must give its bits.
    exact = bool(m.get("float_as_ort"))
    # A model shipped quantized (`run_only`: ORT's MatMulInteger) runs as this CPU's
    # ORT computes its integer kernels (int16 pairs without VNNI), within the tolerance.
    as_ort = exact or bool(m.get("run_only"))
    code, err = tpcc_run(args, path, ["--ort-cpu", "vnni" if VNNI else "no-vnni"] if as_ort else [],
                         feeds, want, work, "tpcc")
    if code:
        status = "blocked" if m["needs"] else "FAIL"
        last = err.splitlines()[-1] if err else f"exit {code}"
        return status, last.replace(path + ": ", ""), None, None
    if m["needs"]:
        return ("FAIL", f"runs although the manifest says it needs {', '.join(m['needs'])}",
                None, None)
    plain, err = ort(args, "disabled", path, os.path.join(work, "ort_plain"), feeds)
    if err:
        return "FAIL", err, None, None
    worst, notes = 0.0, []
    for k, ((name, w), (_, p)) in enumerate(zip(want, plain)):
        got = np.load(os.path.join(work, f"tpcc{k}.npy"))
        if got.shape != w.shape:
            return "FAIL", f"output `{name}`: shape {got.shape}, ORT {w.shape}", None, None
        scale = float(np.max(np.abs(w))) or 1.0
        diff = float(np.max(np.abs(got.astype(np.float64) - w))) if w.size else 0.0
        own = float(np.max(np.abs(p.astype(np.float64) - w))) if w.size else 0.0
        rel = diff / scale
        worst = max(worst, rel)
        if exact and diff:
            detail = f"output `{name}`: {rel:.2e} of its range from ORT, computed as ORT computes"
            return ("known gap" if m.get("xfail") else "FAIL"), detail, worst, want
        if diff > max(TOLERANCE * scale + FLOOR, 2 * own):
            detail = (f"output `{name}`: relative error {rel:.2e} (ORT's own levels differ by "
                      f"{own / scale:.2e})")
            return ("known gap" if m.get("xfail") else "FAIL"), detail, worst, want
        if diff > TOLERANCE * scale + FLOOR:
            notes.append(f"`{name}` {rel:.1e}, within ORT's own {own / scale:.1e}")
    if m.get("xfail"): # not strict: the gap may close on another CPU
        notes.append("passes here although the manifest marks it xfail")
    return "ok", "; ".join(notes), worst, want


def calibration_set(m, work, sets):
    """The calibration files of a model: CALIB_SAMPLES samples of each input's recipe
    (other seeds than the test input's) stacked on axis 0; a `zeros` or `constant`
    input (a recurrent state, a sample rate) is one whole tensor fed with every batch;
    an input the manifest fixes (`fix`) takes none."""
    feeds = []
    for k, (name, recipe) in enumerate(m["inputs"].items()):
        if recipe.get("fix"):
            continue
        if recipe["data"] in ("zeros", "constant"):
            x = make_input(sets, recipe, k)
        else:
            x = np.concatenate([make_input(sets, recipe, 1000 + 100 * k + s, s, CALIB_SAMPLES)
                                for s in range(CALIB_SAMPLES)], axis=0)
        f = os.path.join(work, f"calib{k}.npy")
        np.save(f, x)
        feeds.append((name, f))
    return feeds


def quantize_check(args, m, work, feeds, floats, platform, sets):
    """`tpcc quantize` for the model's platform on a small calibration set; the QDQ
    model must pass the ONNX checker, run in ONNX Runtime (its integer kernels) and
    agree with `tpcc run` computing them as ORT does on this CPU: within one step of
    each quantized output, or the float-run tolerance for outputs left float.
    Returns (status, detail, min output SQNR in dB against the float model or None)."""
    import onnx
    out, report = os.path.join(work, "q.onnx"), os.path.join(work, "report.json")
    cmd = [args.tpcc, "quantize", "--platform", platform, path_of(m), "-o", out,
           "--report", report, "--progress=never"]
    # `{corpus}` in the manifest's flags: test/corpus (its recipes).
    flags = args.quantize_flags or m.get("quantize_flags", "")
    cmd += flags.replace("{corpus}", os.path.dirname(MANIFEST)).split()
    calib = stream_calibration(args, m, work, sets) if m.get("stream") else \
        (calibration_set(m, work, sets), None)
    if calib[0] is None:
        return "FAIL", calib[1], None
    for n, f in calib[0]:
        cmd += ["--calib", f"{n}={f}"]
    # An input the deployment never varies (a sample rate) is fixed: the If it
    # decides takes its branch, which is quantized, and the QDQ model has no such input.
    fixed = {n: r["value"] for n, r in m["inputs"].items() if r.get("fix")}
    for n, v in fixed.items():
        cmd += ["--fix-input", f"{n}={v}"]
    feeds = [(n, f) for n, f in feeds if n not in fixed]
    code, _, err = run(cmd)
    if code:
        return "FAIL", f"tpcc quantize --platform {platform}: {err.splitlines()[-1] if err else code}", None
    qmodel = onnx.load(out)
    notes = []
    if qmodel.ir_version > onnx.IR_VERSION:
        notes.append(f"IR version {qmodel.ir_version} is newer than this onnx's checker")
    else:
        try:
            onnx.checker.check_model(qmodel, full_check=True)
        except Exception as e:  # the checker's own exceptions
            return "FAIL", f"the QDQ model fails the ONNX checker: {str(e).splitlines()[0]}", None
    steps = {t["name"]: t["scale"] for t in json.load(open(report))["tensors"]
             if t["kind"] == "activation" and t.get("scale")}
    got, err = ort(args, "extended", out, os.path.join(work, "ortq"), feeds)
    if err:
        return "FAIL", err, None
    code, err = tpcc_run(args, out, ["--ort-cpu", "vnni" if VNNI else "no-vnni"], feeds, got, work,
                         "tpccq")
    if code:
        return "FAIL", f"tpcc run of the QDQ model: {err.splitlines()[-1] if err else code}", None
    sqnrs, gap = [], None
    for k, ((name, q), (_, f)) in enumerate(zip(got, floats)):
        mine = np.load(os.path.join(work, f"tpccq{k}.npy"))
        diff = float(np.max(np.abs(mine.astype(np.float64) - q))) if q.size else 0.0
        if name in steps and diff / steps[name] > 1.001:
            gap = gap or f"output `{name}`: tpcc and ORT differ by {diff / steps[name]:.2f} steps"
        elif name not in steps and diff > Q_TOLERANCE * (float(np.max(np.abs(q))) or 1.0) + FLOOR:
            gap = gap or (f"float output `{name}`: tpcc and ORT differ by "
                          f"{diff / (float(np.max(np.abs(q))) or 1.0):.2e} of its range")
        sqnrs.append(sqnr_db(f, q))
        notes.append(f"`{name}` {sqnrs[-1]:.1f} dB")
    if m.get("task"):  # the outputs as the package reads them make the figure
        task = m["task"]
        if not VNNI and "min_iou_no_vnni" in task:  # ORT's saturating int16 pairs
            task = dict(task, min_iou=task["min_iou_no_vnni"])
        read, note, failure = task_check(task, dict(floats), dict(got))
        if failure:
            return "FAIL", failure, None
        sqnrs = [read.get(name, db) for (name, _), db in zip(got, sqnrs)]
        notes.append("as read: " + ", ".join(
            f"`{n}` " + ("left out" if d is None else f"{d:.1f} dB") for n, d in read.items()))
        notes.append(note)
        sqnrs = [d for d in sqnrs if d is not None]
    worst = min(sqnrs) if sqnrs else None
    if gap:
        # Why the deployed model cannot be matched (on every CPU, or without VNNI).
        why = m.get("quantized_xfail") or (not VNNI and m.get("quantized_xfail_no_vnni"))
        if why:
            return "known gap", f"{gap} ({why}); " + ", ".join(notes), worst
        return "FAIL", gap, None
    if m.get("stream"):
        figure, detail = stream_check(args, m, work, out, fixed, sets)
        if figure is None:
            return "FAIL", detail, None
        notes.append(detail)
        worst = figure
    return "ok", ", ".join(notes), worst


def stream_run(args, m, level, model, prefix, feeds, steps):
    """ONNX Runtime running `model` over `steps` steps of `feeds`, each state fed back;
    {output name: [steps, ...]} or an error string."""
    states = ",".join(f"{i}={o}" for i, o in m["stream"]["states"].items())
    outs, err = ort(args, level, model, prefix, feeds, ("--stream", str(steps), states))
    return err or dict(outs)


def stream_feeds(m, work, sets, name, steps, start=None):
    """The stream of a streaming model's inputs: the speech input's windows, the other
    inputs (initial states, constants) as their recipe makes them."""
    feeds = []
    for k, (n, recipe) in enumerate(m["inputs"].items()):
        f = os.path.join(work, f"{name}{k}.npy")
        np.save(f, speech_stream(sets, recipe, steps, start) if recipe["data"] == "speech"
                else make_input(sets, recipe, k))
        feeds.append((n, f))
    return feeds


def stream_calibration(args, m, work, sets):
    """A streaming model calibrates on what it sees deployed: every window of a stream
    elsewhere in the recording (STREAM_CALIB_STEPS windows from 55 % of it, about 2 s
    of speech and its pauses; a few windows picked from it can all fall between
    words, and calibrate the grids for a third of the loud words' range), each with
    the states the float model carries into it (a zero state only ever starts a
    stream). The states are stacked along their batch axis (Silero's: axis 1).
    Returns (feeds, None) or (None, why)."""
    steps = STREAM_CALIB_STEPS
    feeds = stream_feeds(m, work, sets, "cstream", steps, 0.55)
    out = stream_run(args, m, "basic", path_of(m), os.path.join(work, "cf"), feeds, steps)
    if isinstance(out, str):
        return None, out
    picks = list(range(1, steps))  # the state entering window j is window j - 1's
    calib = []
    for k, (n, f) in enumerate(feeds):
        recipe = m["inputs"][n]
        if recipe.get("fix"):
            continue
        x = np.load(f)
        if n in m["stream"]["states"]:  # the state entering step j: step j - 1's
            seq = out[m["stream"]["states"][n]]
            axis = recipe["shape"].index(1)
            x = np.concatenate([seq[j - 1] for j in picks], axis=axis)
        elif recipe["data"] == "speech":
            x = np.concatenate([x[j] for j in picks], axis=0)
        f = os.path.join(work, f"calib{k}.npy")
        np.save(f, x)
        calib.append((n, f))
    return calib, None


def stream_check(args, m, work, qmodel, fixed, sets):
    """A streaming model (the manifest's `stream`: steps and the state each output
    feeds back) runs as deployed: the float model and the QDQ model each over the
    same consecutive windows of speech, each feeding its own states back (ORT,
    `ort_run.js --stream`). The figure is the lowest SQNR of the outputs that are not
    states, over all the steps: the error the states carry from one call to the next
    counts. Returns (dB, note) or (None, why it failed)."""
    spec = m["stream"]
    feeds = stream_feeds(m, work, sets, "stream", spec["steps"])
    runs = []
    for level, model, prefix, use in (("basic", path_of(m), "sf", feeds),
                                      ("extended", qmodel, "sq",
                                       [(n, f) for n, f in feeds if n not in fixed])):
        out = stream_run(args, m, level, model, os.path.join(work, prefix), use, spec["steps"])
        if isinstance(out, str):
            return None, out
        runs.append(out)
    outs = [n for n in runs[0] if n not in spec["states"].values()]
    dbs = {n: sqnr_db(runs[0][n], runs[1][n]) for n in outs}
    return min(dbs.values()), (f"streamed {spec['steps']} windows: "
                               + ", ".join(f"`{n}` {d:.1f} dB" for n, d in dbs.items()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpcc", required=True)
    ap.add_argument("--node-modules", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--markdown")
    ap.add_argument("--only")
    ap.add_argument("--float-only", action="store_true", help="plan and run, no quantize")
    ap.add_argument("--platform", help="quantize for this platform instead of the manifest's")
    ap.add_argument("--quantize-flags", default="",
                    help="flags for tpcc quantize instead of the manifest's (`--min-sqnr 20`)")
    args = ap.parse_args()
    missing = ort_missing(args.node_modules)
    if missing:
        print(f"corpus_check: skipped, {missing}")
        return 77
    try:
        import PIL  # noqa: F401 (photos and rendered text)
    except ImportError:
        print("corpus_check: skipped, Pillow is not installed (python3-pil)")
        return 77
    if not os.path.exists(FONT):
        print(f"corpus_check: skipped, {FONT} is missing (fonts-dejavu-core)")
        return 77
    manifest = json.load(open(MANIFEST))
    models, sets = manifest["models"], {s["id"]: s for s in manifest.get("samples", [])}
    if args.only:
        models = [m for m in models if m["id"] in args.only.split(",")]
    missing = [m["id"] for m in models
               if not os.path.exists(os.path.join(MODELS, m["id"] + ".onnx"))]
    missing += [f["path"] for sid, st in sets.items() for f in st["files"]
                if not os.path.exists(sample_file(sid, f["path"]))]
    if missing:
        print(f"corpus_check: skipped, {len(missing)} models or samples are not fetched "
              f"(scripts/fetch-corpus): {', '.join(missing[:5])}")
        return 77
    rows, failed = [], 0
    began = time.monotonic()
    for m in models:
        start = time.monotonic()
        work = os.path.join(args.work, m["id"])
        os.makedirs(work, exist_ok=True)
        feeds = test_inputs(m, work, sets)
        status, detail, worst, want = check(args, m, work, feeds)
        failed += status == "FAIL"
        rel = f"{worst:.1e}" if worst is not None else "-"
        print(f"{status:9} {m['id']:45} {m['family']:20} {rel:>8}  {detail}", flush=True)
        q = ("-", "", None)
        # The model's platform, then the manifest's `also_platforms` (agreement with
        # ORT on other grids: tflite's are not powers of two).
        platforms = [args.platform or m.get("platform", "imx500")]
        platforms += [] if args.platform else m.get("also_platforms", [])
        if m.get("run_only"):  # shipped quantized: run as it is, not quantized again
            platforms = []
            q = ("run only", m["run_only"], None)
            print(f"  run only  {m['run_only']}", flush=True)
        for k, platform in enumerate(platforms if want is not None and not args.float_only else []):
            pwork = work if k == 0 else os.path.join(work, platform)
            os.makedirs(pwork, exist_ok=True)
            r = quantize_check(args, m, pwork, feeds, want, platform, sets)
            q = r if k == 0 else q
            failed += r[0] == "FAIL"
            db = f"{r[2]:.1f} dB" if r[2] is not None else "-"
            print(f"  {'quantized' if r[0] == 'ok' else r[0]:9} {platform:10} {db:>9}  {r[1]}",
                  flush=True)
        # What each model costs the suite (CI runs it on 2 cores).
        print(f"  {time.monotonic() - start:.0f} s", flush=True)
        rows.append((m, status, rel, detail, q))
    ok = sum(1 for r in rows if r[1] == "ok")
    blocked = sum(1 for r in rows if r[1] == "blocked")
    known = sum(1 for r in rows if r[1] == "known gap")
    quantized = [r[4] for r in rows if r[4][0] in ("ok", "known gap")]
    above = sum(1 for q in quantized if q[2] is not None and q[2] >= 20)
    qgaps = sum(1 for q in quantized if q[0] == "known gap")
    print(f"corpus: {ok} ok, {blocked} blocked, {known} known gaps, {failed} failed of "
          f"{len(rows)} models; {len(quantized)} quantized ({qgaps} a known gap against "
          f"ORT), {above} at 20 dB or more "
          f"({time.monotonic() - began:.0f} s)")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("| model | family | package | plan (4 platforms) | run vs ORT (max rel.) | "
                    "quantized for | output SQNR (dB) | note |\n|---|---|---|---|---|---|---|---|\n")
            for m, s, rel, d, q in rows:
                db = f"{q[2]:.1f}" if q[2] is not None else q[0]
                note = "; ".join(x for x in (d, q[1]) if x).replace("|", "/")
                source = (f"../shared/{m['shared']}" if "shared" in m
                          else f"{m['package']}@{m['version']}")
                f.write(f"| {m['id']} | {m['family']} | {source} | "
                        f"{'ok' if s != 'FAIL' or 'plan' not in d else 'FAIL'} | "
                        f"{rel if s == 'ok' else s} | "
                        f"{'-' if m.get('run_only') else m.get('platform', 'imx500')} | {db} | "
                        f"{note} |\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""isa_agreement.py - tpcc gives the same results whatever instruction set oneDNN picks.

oneDNN chooses its kernels from the CPU (AVX-512, AVX2, SSE4.1...); CI machines vary.
Its ISA cap (ONEDNN_MAX_CPU_ISA, and DNNL_MAX_CPU_ISA that oneDNN 2.6 reads) lets one
machine run what another would. For each shared model and each cap (none, AVX2,
SSE41), this runs:

  tpcc run        64 samples: every output within a relative error of 1e-5 (max |a - b| /
                  max |a|) of the uncapped run (float sums in another order; measured
                  5.2e-7 on fashion_cnn AVX2 vs AVX-512);
  tpcc quantize   imx500 on the model's calibration set: every tensor's scale within a
                  relative 1e-5 of the uncapped run, and the written model the same bytes
                  when run twice (same machine, same inputs);
  tpcc eval       the quantized model on the 64 samples: the same top-1 classes.

usage: isa_agreement.py --tpcc BIN --work DIR --models DIR
Exit 0: all agree; 1: a disagreement or a failure.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

ISAS = ["", "AVX2", "SSE41"]
MODELS = {"fashion_cnn.onnx": "fashion_calib_x.npy", "digits_cnn.onnx": "digits_calib_x.npy",
          "fashion_mbv2.onnx": "fashion_calib_x.npy"}
RUN_TOLERANCE = 1e-5
SCALE_TOLERANCE = 1e-5


def tpcc(args, isa, *cmd):
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA=isa, DNNL_MAX_CPU_ISA=isa)
    if not isa:
        env.pop("ONEDNN_MAX_CPU_ISA")
        env.pop("DNNL_MAX_CPU_ISA")
    r = subprocess.run([args.tpcc, *cmd], env=env, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"tpcc {' '.join(cmd[:1])} under cap `{isa or 'none'}` failed: "
                           f"{r.stderr.strip()}")
    return r.stdout


def check(model, calib, args):
    work = os.path.join(args.work, model.replace(".onnx", ""))
    os.makedirs(work, exist_ok=True)
    path, calib = os.path.join(args.models, model), os.path.join(args.models, calib)
    x = os.path.join(work, "x.npy")
    np.save(x, np.load(calib)[:64].astype(np.float32))
    outs, scales, models, classes = {}, {}, {}, {}
    for isa in ISAS:
        tag = isa or "none"
        y = os.path.join(work, f"y.{tag}.npy")
        tpcc(args, isa, "run", path, "--input", x, "--output", y)
        outs[isa] = np.load(y)
        for k in range(1 if isa else 2):
            q, rep = os.path.join(work, f"q.{tag}.{k}.onnx"), os.path.join(work, f"r.{tag}.json")
            tpcc(args, isa, "quantize", "--platform", "imx500", "--calib", calib, path, "-o", q,
                 "--report", rep, "--progress=never")
            with open(q, "rb") as f:
                models.setdefault(isa, []).append(f.read())
        scales[isa] = {t["name"]: t["scale"] for t in json.load(open(rep))["tensors"]
                       if t.get("scale")}
        yq = os.path.join(work, f"yq.{tag}.npy")
        tpcc(args, isa, "run", os.path.join(work, f"q.{tag}.0.onnx"), "--input", x, "--output", yq)
        classes[isa] = np.load(yq).reshape(64, -1).argmax(1)
    notes = []
    base = outs[""]
    for isa in ISAS[1:]:
        rel = float(np.max(np.abs(outs[isa].astype(np.float64) - base))) / max(float(np.max(np.abs(base))), 1e-12)
        notes.append(f"run {isa} {rel:.1e}")
        if not rel <= RUN_TOLERANCE:
            return f"tpcc run under {isa}: relative error {rel:.2e} > {RUN_TOLERANCE:g}"
        if scales[isa].keys() != scales[""].keys():
            return f"tpcc quantize under {isa} quantizes other tensors"
        worst = max(abs(scales[isa][t] - s) / s for t, s in scales[""].items())
        if worst > SCALE_TOLERANCE:
            return f"tpcc quantize under {isa}: a scale differs by {worst:.2e} (relative)"
        same = models[isa][0] == models[""][0]
        notes.append(f"quantize {isa} scales {worst:.1e}, {'same bytes' if same else 'other bytes'}")
        if (classes[isa] != classes[""]).any():
            return f"the quantized model under {isa}: other top-1 classes"
    if models[""][0] != models[""][1]:
        return "tpcc quantize wrote other bytes on a second run"
    return "; ".join(notes)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tpcc", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--models", required=True)
    args = p.parse_args()
    failed = 0
    for model, calib in MODELS.items():
        try:
            note = check(model, calib, args)
        except RuntimeError as e:
            note = str(e)
        ok = not note.startswith(("tpcc", "the quantized"))
        print(f"{'ok  ' if ok else 'FAIL'} {model}: {note}")
        failed += not ok
    print(f"isa agreement: {len(MODELS) - failed} agree, {failed} differ, of {len(MODELS)} models "
          f"(caps: none, {', '.join(ISAS[1:])})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""ort_quantized.py - quantized models through ONNX Runtime and through tpcc.

Each shared model (fashion_cnn, digits_cnn) is quantized with `tpcc quantize` for
each shipped platform (imx500, tflite, qnnpack, default, ort_cpu, ort_cpu_no_vnni;
imx500 also with 4-bit weights, imx500_v4 with a 16-bit output through com.microsoft
Q/DQ) on its calibration set; fashion_mbv2 (SiLU and HardSwish spelled out, planned
as composite chains, float inside) for imx500 with and without shift_negative and for
tflite (its residual Adds become QLinearAdd, computed as ORT's kernel does); the
public zoo models (mnist-8, squeezenet_cifar10,
HAR-CNN, KWS-DNN_S: old opsets and IR versions, NHWC with Transposes, Concat,
Softmax) for imx500, default and ort_cpu_no_vnni on 32 random samples, as their
data sets are not here. The QDQ model then runs on 64 calibration samples through
ONNX Runtime (onnxruntime-node, graph optimizations 'extended': its integer
kernels, whose optimized graph must contain QLinearConv, QGemm, QLinearMatMul...)
and through `tpcc run --ort-cpu vnni|no-vnni` (the integer groups computed as
ORT's kernels on this CPU): every output element must agree to 0 quantization
steps of that output (its scale, from the --report JSON; one step for a 16-bit
output, which a float op computes).

ORT runs twice: on this CPU, and under qemu-user as a Haswell (AVX2, no VNNI), so
both arithmetics are checked on any machine. Without VNNI ORT adds pairs of u8 x s8
products in int16 with saturation: tpcc runs with `--ort-cpu no-vnni`, which
computes that.

The float QDQ model (`tpcc run --qdq=emulate`, what the quantizer measures) is checked
one QuantizeLinear at a time, on every CPU: the model cut at each activation's
QuantizeLinear (its codes an input) and fed with the float model's own codes runs in
float and as ORT computes it (`--ort-cpu vnni`), and each QuantizeLinear must agree within
one code; where it requantizes a sum (Conv, Gemm, MatMul, a Relu or Clip after it), on at
most 1 + 1% of the tensor's codes. End to end it is not held to a step: float sums differ
from exact ones in the last bits, and the last bits with oneDNN's kernels (AVX-512 or
AVX2, ONEDNN_MAX_CPU_ISA), and so do the quantizer's grids; a value within that of a
rounding boundary lands a code apart, and such flips compound through the layers
(squeezenet_cifar10 for `default`, quantized under an AVX2 cap: 3 steps at its softmax
output, from one code of 115,200 at its first convolution). The end-to-end difference
on a VNNI CPU is printed, not judged.

usage: ort_quantized.py --tpcc BIN --node-modules DIR --work DIR --models DIR
                         [--native-only] [--quick] [--only TEXT]...
Exit 0: all agree; 1: a disagreement or a failure; 77: Node.js or onnxruntime-node
is missing (the reason printed).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ort_crosscheck import inputs_of, ort_missing, run_both  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ORT_OPTIMIZED = os.path.join(HERE, "..", "ort", "ort_optimized.js")
QEMU_HASWELL = ["qemu-x86_64", "-cpu", "Haswell"]
INTEGER_OPS = {"QLinearConv", "QGemm", "QLinearMatMul", "MatMulInteger", "ConvInteger",
               "MatMulIntegerToFloat", "DynamicQuantizeMatMul"}
EMULATE = ["--qdq=emulate"]

# The integer kernels `tpcc run --ort-cpu` computes as ORT does; other QLinear
# ops (QLinearConcat, QLinearSoftmax, ...) requantize in float arithmetic of
# their own: one step where they appear.
EMULATED_OPS = {"QLinearConv", "QGemm", "QLinearMatMul", "QLinearAdd", "QLinearMul"}
# The float model quantizer by quantizer: where a QuantizeLinear requantizes one of these
# sums (a Relu or Clip between), the float value and ORT's exact one differ by float
# rounding only, and a code flips only within that of a rounding boundary (measured: at
# most 0.05% of a tensor's codes, fashion_cnn's first Conv for tflite). A systematic error
# of d codes (a scale or zero point off) flips about a share d of them: more than 1% of a
# tensor's codes (and one) a code apart fails. Other ops (Softmax, the pools, Concat,
# QLinearAdd's arithmetic...) round their own way in ORT: up to 9% of a softmax's codes
# measured, one code each.
SUM_OPS = {"Conv", "ConvTranspose", "Gemm", "MatMul"}
FLIP_SHARE = 0.01
MODELS = ["fashion_cnn.onnx", "digits_cnn.onnx"]
# (platform, recipe, the last Gemm's candidate config or None, tag suffix)
CASES = [("imx500", None, None, ""), ("tflite", None, None, ""), ("qnnpack", None, None, ""),
         ("default", None, None, ""), ("imx500", "recipe w4 { weights_bits: 4 }", None, ".w4"),
         ("imx500_v4", None, "FullyConnected.3", ".a16out"), ("ort_cpu", None, None, ""),
         ("ort_cpu_no_vnni", None, None, ""), ("ort_cpu", None, "FullyConnected.3", ".w16out")]
LAST_GEMM = {"fashion_cnn.onnx": "/13/Gemm", "digits_cnn.onnx": "/f/f.11/Gemm"}
# fashion_mbv2 spells SiLU and HardSwish out: composite chains (float inside) between
# integer convolutions, with and without shift_negative on their outputs; for tflite
# (grids that are not powers of two) its residual Adds are QLinearAdd in ORT, whose
# arithmetic is not DQ -> Add -> Q in float.
MBV2_CASES = [("imx500", None, None, ""),
              ("imx500", "recipe mct { shift_negative: { enabled: true, ratio: 0.05 } }", None,
               ".snc"), ("tflite", None, None, "")]
# fashion_vit (a torch-exported ViT: LayerNormalization, GELU spelled out with Erf,
# attention MatMuls of two activations, Softmax) for imx500: ORT runs its MatMuls as
# MatMulIntegerToFloat and QLinearMatMul (weights or two activations), which tpcc computes
# as ORT does; a step at the logits remains (measured 1.00, with and without VNNI), not
# traced: the float ops between them (LayerNormalization, Erf, Div) are the candidates. (ort_cpu agrees end to end within that step too,
# but its float QDQ model's head is 2 codes from ORT's QGemm from the same codes.)
VIT_CASES = [("imx500", None, None, "")]
# Without VNNI, ORT adds u8 x s8 products in saturating int16 pairs, which `--ort-cpu
# no-vnni` emulates. On fashion_mbv2 (signed SiLU/HardSwish outputs into convs) the
# emulation is close but not exact: measured on 64 samples, up to 2 logit steps (251 of
# 640 logits differ by a step or two), where plain arithmetic is 8 steps off. Until the
# emulation covers that case, its no-VNNI comparison allows 2 steps.
NO_VNNI_STEPS = {"fashion_mbv2.onnx": 2.001}
ZOO = ["mnist-8.onnx", "squeezenet_cifar10.onnx", "HAR-CNN.onnx", "KWS-DNN_S.onnx"]
ZOO_CASES = [("imx500", None, None, ""), ("default", None, None, ""),
             ("ort_cpu_no_vnni", None, None, "")]

# Small models of the lit tests, each with its calibration data (also the input) and
# the platforms to check: constant operands (imx500_v4's const8 / const8_pt, and a
# spec of the lit test's: per-channel and per-tensor constants of Mul, Add, Concat);
# an embedding (ort_cpu stores the table as uint8 codes on the grid the Gather's output
# keeps: ORT gathers the codes).
LIT_DIR = os.path.join(HERE, "..", "lit", "quantize", "Inputs")
LIT = {"constant_operands.onnx": ("x4.npy", [("imx500_v4", None, None, ""),
                                             ("cops", None, None, "")]),
       "embedding.onnx": ("ids.npy", [("ort_cpu", None, None, "")])}
PLATFORM_FILES = {"cops": os.path.join(LIT_DIR, "constant_operands.tpc")}


def host_has_vnni():
    """Whether this CPU has VNNI (AVX512-VNNI or AVX-VNNI): ORT's u8 x s8 kernels
    then add every product exactly."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(" ".join(l for l in f if l.startswith("flags")).split())
    except OSError:
        return False
    return bool(flags & {"avx512_vnni", "avx_vnni"})


NATIVE_ONLY = False  # --native-only


def cpus():
    """Where ORT runs: [(label, command prefix, exact arithmetic)].
    TPCC_TEST_HOST_CPU=haswell runs "this CPU" under qemu's Haswell too: a VNNI
    machine then runs what a machine without VNNI runs."""
    as_haswell = os.environ.get("TPCC_TEST_HOST_CPU") == "haswell"
    vnni = host_has_vnni() and not as_haswell
    out = [(f"this CPU ({'VNNI' if vnni else 'no VNNI'})", QEMU_HASWELL if as_haswell else [], vnni)]
    if shutil.which(QEMU_HASWELL[0]) and not NATIVE_ONLY:
        out.append(("qemu Haswell (no VNNI)", QEMU_HASWELL, False))
    return out


def shared_data(model, args, work):
    """The model's calibration file, and its first 64 samples as the input."""
    calib = os.path.join(args.models, model.split("_")[0] + "_calib_x.npy")
    feed = os.path.join(work, "x.npy")
    np.save(feed, np.load(calib)[:64].astype(np.float32))
    return calib, [("input", feed)]


def zoo_data(model, args, work):
    """32 random samples in [0, 1) to calibrate on; the model's own batch of
    them (batch 8 when symbolic) as the input."""
    (name, _, shape), = inputs_of(os.path.join(args.models, "zoo", model))
    x = np.random.RandomState(7).uniform(0, 1, [32] + shape[1:]).astype(np.float32)
    calib, feed = os.path.join(work, "calib.npy"), os.path.join(work, "x.npy")
    np.save(calib, x)
    np.save(feed, x[:shape[0]])
    return calib, [(name, feed)]


def lit_data(model, args, work):
    """The lit model's calibration data, and its first sample as the input (the
    models have batch 1)."""
    calib = os.path.join(LIT_DIR, LIT[model][0])
    (name, _, _), = inputs_of(os.path.join(LIT_DIR, model))
    feed = os.path.join(work, "x.npy")
    np.save(feed, np.load(calib)[:1])
    return calib, [(name, feed)]


def ort_quantizes_weights(path):
    """Whether ORT's WeightBiasQuantization rewrites the QDQ model at `path`: a
    Conv, ConvTranspose or Gemm reading a DequantizeLinear, with a float constant
    weight (qnnpack leaves every kernel in float). `tpcc --ort-cpu` makes the same
    rewrite; the float QDQ model (`--qdq=emulate`) is not ORT's model then."""
    import onnx
    m = onnx.load(path)
    produced = {o: n.op_type for n in m.graph.node for o in n.output}
    floats = {t.name for t in m.graph.initializer if t.data_type == onnx.TensorProto.FLOAT}
    return any(n.op_type in ("Conv", "ConvTranspose", "Gemm") and len(n.input) > 1 and
               produced.get(n.input[0]) == "DequantizeLinear" and n.input[1] in floats
               for n in m.graph.node)


def check(model, data, platform, recipe, choose, suffix, args):
    tag = f"{model.replace('.onnx', '')}.{platform}{suffix}"
    work = os.path.join(args.work, tag)
    os.makedirs(work, exist_ok=True)
    calib, feeds = data(model, args, work)
    path = os.path.join(LIT_DIR, model) if data is lit_data else \
        os.path.join(args.models, "zoo" if data is zoo_data else "", model)
    out, report = os.path.join(work, "q.onnx"), os.path.join(work, "report.json")
    cmd = [args.tpcc, "quantize", "--platform", platform, "--calib", calib, path, "-o", out,
           "--report", report, "--progress=never"] + \
        ([PLATFORM_FILES[platform]] if platform in PLATFORM_FILES else [])
    if choose:
        cmd += ["--choose", f"{LAST_GEMM[model]}={choose}"]
    if recipe:
        rfile = os.path.join(work, "recipe.tpc")
        with open(rfile, "w") as f:
            f.write(recipe + "\n")
        cmd += ["--recipe", rfile]
    q = subprocess.run(cmd, capture_output=True, text=True)
    if q.returncode:
        return tag, f"tpcc quantize failed: {q.stderr.strip()}"
    steps = {t["name"]: t["scale"] for t in json.load(open(report))["tensors"]
             if t["kind"] == "activation"}
    # A 16-bit output comes from a float op in ORT: float rounding, one step.
    limit = 1.001 if suffix == ".a16out" else 0.5
    notes = []
    # ORT quantizes float weights itself: only `--ort-cpu`, which does so too, is
    # ORT's model.
    rewritten = ort_quantizes_weights(out)
    integer = []
    for label, prefix, exact in cpus():
        if rewritten and not exact:
            # ORT's own int8 weights are asymmetric (a zero point); the int16-pair
            # emulation covers symmetric weights only (a known gap, issue 19's note).
            notes.append(f"{label}: skipped, ORT's own asymmetric int8 weights saturate "
                         "in pairs as tpcc does not emulate yet")
            continue
        flag = ["--ort-cpu", "vnni" if exact else "no-vnni"]
        # The float model end to end, for the record: its flips compound (the docstring).
        runs = [flag] + ([EMULATE] if exact and not rewritten else [])
        for tpcc_flags in runs:
            r = run_both(out, feeds, args, work, prefix + [shutil.which("node"), ORT_OPTIMIZED],
                         tpcc_flags)
            if isinstance(r, str):
                return tag, r
            names, want, got, head = r
            worst = 0.0
            for name, w, g in zip(names, want, got):
                if name not in steps:
                    return tag, f"output `{name}` is not quantized; no step to compare within"
                worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - w))) / steps[name])
            if tpcc_flags == EMULATE:
                notes.append(f"{label} vs tpcc (float), end to end: {worst:.2f} steps (not judged)")
                continue
            ops = {op.split(":")[-1] for op in head[0].split()[1:]} if head else set()
            others = sorted(o for o in ops if o.startswith("QLinear") and o not in EMULATED_OPS)
            # The ort_cpu platforms on the shared models: 0 steps, whatever ORT runs.
            strict = platform.startswith("ort_cpu") and data is shared_data and model in MODELS
            allowed = 1.001 if others and not strict else limit
            if not exact:
                allowed = max(allowed, NO_VNNI_STEPS.get(model, 0))
            against = "tpcc " + " ".join(tpcc_flags)
            notes.append(f"{label} vs {against}: {worst:.2f} steps" +
                         (f" ({int(allowed)} allowed: {' '.join(others) or 'no-VNNI emulation'})"
                          if allowed >= 1 else ""))
            if worst > allowed:
                return tag, f"output ORT on {label} and {against} differ by {worst:.2f} steps"
            integer = sorted(ops & INTEGER_OPS)
            if not integer:
                return tag, f"ORT ran no integer kernel; its optimized graph has {' '.join(sorted(ops))}"
    if rewritten:
        notes.append("tpcc (float): skipped, ORT quantizes the float weights")
    else:
        why, note = float_by_quantizer(out, feeds, args, work)
        if why:
            return tag, why
        notes.append(note)
    if integer:
        notes.append("ORT kernels " + " ".join(integer))
    return tag, "; ".join(notes)


def tpcc_run(path, flags, feeds, outputs, args, work, prefix):
    """`tpcc run path *flags` on `feeds`: the arrays of `outputs`, or what failed."""
    cmd = [args.tpcc, "run", path, *flags] + [a for n, f in feeds for a in ("--input", f"{n}={f}")]
    files = [os.path.join(work, f"{prefix}{k}.npy") for k in range(len(outputs))]
    for n, f in zip(outputs, files):
        cmd += ["--output", f"{n}={f}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        return f"tpcc run {' '.join(flags)} failed: {r.stderr.strip()}"
    return [np.load(f) for f in files]


def float_by_quantizer(out, feeds, args, work):
    """The float QDQ model (`--qdq=emulate`) one QuantizeLinear at a time, against ORT's
    arithmetic (`--ort-cpu vnni`) from the same codes: the model cut at every
    QuantizeLinear of an activation (its codes an input, its own output an output), fed
    with the codes the float model computes, runs both ways. int8 codes become uint8 (zero
    point + 128, the same values), as ORT's QDQS8ToU8 makes them, so that every group is
    an integer kernel in the cut model too. Returns (why it fails or None, the note)."""
    import onnx
    from onnx import helper, numpy_helper
    m = onnx.load(out)
    inits = {t.name: t for t in m.graph.initializer}
    consts = set(inits) | {o for n in m.graph.node if n.op_type == "Constant" for o in n.output}
    quants = [n for n in m.graph.node if n.op_type == "QuantizeLinear" and n.input[0] not in consts]
    codes = [q.output[0] for q in quants]
    producer = {o: n for n in m.graph.node for o in n.output}
    readers = {}
    for n in m.graph.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)

    def requantizes_sum(q):
        n = producer.get(q.input[0])
        while n is not None and n.op_type in ("Relu", "Clip"):
            n = producer.get(n.input[0])
        return n is not None and n.op_type in SUM_OPS

    # The float model's codes: every QuantizeLinear's output an output too. Codes whose
    # shape ONNX's inference cannot tell (a Slice of a computed range, as PyTorch splits
    # attention heads) cannot be outputs of the checked model; they are not probed (the
    # end-to-end comparison covers them).
    probe = onnx.ModelProto()
    probe.CopyFrom(m)
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(m).graph.value_info}
    outputs = {o.name for o in m.graph.output}
    for t in codes:
        if t not in outputs and t not in inferred:
            return f"float QDQ model: ONNX's shape inference gives no type for `{t}`", ""
    shaped = [t in outputs or inferred[t].type.tensor_type.HasField("shape") for t in codes]
    unprobed = shaped.count(False)
    quants = [q for q, k in zip(quants, shaped) if k]
    codes = [t for t, k in zip(codes, shaped) if k]
    for t in codes:
        if t not in outputs:
            probe.graph.output.append(inferred[t])
    onnx.save(probe, os.path.join(work, "probe.onnx"))
    seen = tpcc_run(os.path.join(work, "probe.onnx"), EMULATE, feeds, codes, args, work, "seen")
    if isinstance(seen, str):
        return seen, ""

    def zero_point(n):
        z = inits.get(n.input[2]) if len(n.input) > 2 else None
        return numpy_helper.to_array(z) if z is not None else None

    cut = onnx.ModelProto()
    cut.CopyFrom(m)

    def uint8_zero(n, z):
        name = f"{n.input[2]}.u8"
        if name not in inits:
            inits[name] = numpy_helper.from_array((z.astype(np.int16) + 128).astype(np.uint8), name)
            cut.graph.initializer.append(inits[name])
            if cut.ir_version < 4:  # IR 3 lists every initializer among the inputs
                cut.graph.input.append(helper.make_tensor_value_info(
                    name, onnx.TensorProto.UINT8, list(z.shape)))
        n.input[2] = name

    del cut.graph.output[:]
    del cut.graph.value_info[:]
    inputs = list(feeds)
    nodes = {id(n): c for n, c in zip(m.graph.node, cut.graph.node)}
    for q, a in zip(quants, seen):
        t, cq = q.output[0], nodes[id(q)]
        z = zero_point(q)
        # int8 codes read by DequantizeLinears only, on a constant grid: uint8 ones.
        if a.dtype == np.int8 and z is not None and z.size == 1 and all(
                r.op_type == "DequantizeLinear" and r.input[0] == t and zero_point(r) is not None
                for r in readers.get(t, [])):
            a = (a.astype(np.int16) + 128).astype(np.uint8)
            uint8_zero(cq, z)
            for r in readers.get(t, []):
                uint8_zero(nodes[id(r)], zero_point(r))
        elem = helper.np_dtype_to_tensor_dtype(a.dtype) if hasattr(
            helper, "np_dtype_to_tensor_dtype") else onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype]
        cq.output[0] = t + ".requantized"
        cut.graph.input.append(helper.make_tensor_value_info(t, elem, list(a.shape)))
        cut.graph.output.append(helper.make_tensor_value_info(cq.output[0], elem, list(a.shape)))
        f = os.path.join(work, f"codes{len(inputs)}.npy")
        np.save(f, a)
        inputs.append((t, f))
    cut_path = os.path.join(work, "by_quantizer.onnx")
    onnx.save(cut, cut_path)
    names = [t + ".requantized" for t in codes]
    emulated = tpcc_run(cut_path, EMULATE, inputs, names, args, work, "float")
    if isinstance(emulated, str):
        return emulated, ""
    exact = tpcc_run(cut_path, ["--ort-cpu", "vnni"], inputs, names, args, work, "exact")
    if isinstance(exact, str):
        return exact, ""
    worst = apart = total = 0
    share = 0.0
    for q, e, x in zip(quants, emulated, exact):
        t = q.output[0]
        d = np.abs(e.astype(np.int64) - x.astype(np.int64))
        n = int(np.count_nonzero(d))
        worst, apart, total = max(worst, int(d.max(initial=0))), apart + n, total + d.size
        if d.max(initial=0) > 1:
            return (f"float QDQ model: `{t}` from the same codes is {int(d.max())} codes "
                    f"apart from ORT's arithmetic ({n} of {d.size} apart)"), ""
        if requantizes_sum(q):
            share = max(share, n / max(d.size, 1))
            if n > 1 + FLIP_SHARE * d.size:
                return (f"float QDQ model: `{t}` from the same codes has {n} of {d.size} "
                        f"codes apart from ORT's arithmetic (a sum: at most 1 + "
                        f"{FLIP_SHARE:.0%})"), ""
    return None, (f"tpcc (float) by quantizer: {worst} code apart at most, {apart} of {total} "
                  f"codes (sums: {share:.3%} of a tensor at most, {FLIP_SHARE:.0%} allowed)" +
                  (f"; {unprobed} of unknown shape not probed" if unprobed else ""))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tpcc", required=True)
    p.add_argument("--node-modules", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--models", required=True)
    p.add_argument("--native-only", action="store_true",
                   help="run ORT on this CPU only, not also under qemu's Haswell")
    p.add_argument("--quick", action="store_true",
                   help="a few models and platforms (the sanitizer build: tpcc's memory, "
                        "not every arithmetic again)")
    p.add_argument("--only", action="append", metavar="TEXT",
                   help="run only the cases whose tag (e.g. squeezenet_cifar10.default) "
                        "contains TEXT; repeatable")
    args = p.parse_args()
    global NATIVE_ONLY
    NATIVE_ONLY = args.native_only
    missing = ort_missing(args.node_modules)
    if missing:
        print("SKIPPED: " + missing)
        return 77
    print("ORT runs on: " + ", ".join(label for label, _, _ in cpus()) +
          (" (--native-only)" if NATIVE_ONLY else "" if shutil.which(QEMU_HASWELL[0]) else
           " (qemu-x86_64 is missing: scripts/setup installs qemu-user)"))
    failed = total = 0
    runs = [(m, shared_data, c) for m in MODELS for c in CASES] + \
           [("fashion_mbv2.onnx", shared_data, c) for c in MBV2_CASES] + \
           [("fashion_vit.onnx", shared_data, c) for c in VIT_CASES] + \
           [(m, zoo_data, c) for m in ZOO for c in ZOO_CASES] + \
           [(m, lit_data, c) for m, (_, cases) in LIT.items() for c in cases]
    if args.quick:  # per-tensor, per-channel 4-bit, composite chains, an old-opset zoo model
        runs = [(m, shared_data, c) for m in MODELS[:1] for c in (CASES[0], CASES[4])] + \
               [("fashion_mbv2.onnx", shared_data, MBV2_CASES[0])] + \
               [(ZOO[0], zoo_data, ZOO_CASES[0])]
    if args.only:
        runs = [(m, d, c) for m, d, c in runs
                if any(t in f"{m.replace('.onnx', '')}.{c[0]}{c[3]}" for t in args.only)]
    for model, data, case in runs:
        total += 1
        tag, note = check(model, data, *case, args)
        ok = not note.startswith(("tpcc", "ONNX", "output", "ORT ran", "ORT opt", "float QDQ"))
        print(f"{'ok  ' if ok else 'FAIL'} {tag}: {note}")
        failed += not ok
    print(f"ort quantized check: {total - failed} agree, {failed} differ, of {total} models")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

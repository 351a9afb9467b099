#!/usr/bin/python3
"""executor_bench.py - inference throughput of tpcc's executor against ONNX Runtime.

Issue 15's measurements, in one run:
  float      fashion_cnn (../shared/models, 1x28x28), fashion_mbv2 (1x28x28,
             MobileNetV2/V3-style) and mobilenet_v2_96 (MobileNetV2, 3x96x96, BN
             folded, exported here with PyTorch) at batch 1 and 64 on 1 and 2 threads:
             `tpcc eval` (OMP_NUM_THREADS) against ONNX Runtime (onnxruntime-node,
             intraOpNumThreads) and PyTorch eager (the same architectures, random
             weights, BN fused); tpcc's GFLOP/s (Conv, Gemm and MatMul multiply-adds)
             and their share of the attainable peak: the float32 FMA throughput a
             small kernel compiled here with -march=native reaches on that many
             threads (GEMM rates of ONNX Runtime and PyTorch are printed beside it).
  quantized  each model quantized by `tpcc quantize` for imx500 and tflite
             (fashion_calib_x.npy for the 28x28 models, 32 uniform random images
             for mobilenet_v2_96), the QDQ file run by `tpcc eval` (--qdq=integer
             when this tpcc has that flag, otherwise its float emulation; the mode is
             printed) and by ONNX Runtime, same cells.
  quantize   `tpcc quantize` wall time end to end (process start to exit) and peak
             memory; fashion_mbv2 with its 500 calibration images best of 3.
  loaded     fashion_mbv2 float at batch 1 and 64 on 2 threads (every cell with
             --loaded) again while a busy Python loop spins on the last CPU, which
             shows OpenMP spin-waiting.
Samples/s exclude warm-up: tpcc's rate is (N - W) / (t(N) - t(W)) from the
executor seconds `tpcc eval` prints for N and for W samples (W: the first 3
batches at batch 1, the first batch otherwise; the best t of each of 2-3 runs);
N is sized so that t(N) - t(W) is about 0.25-1 s. ONNX Runtime and PyTorch run 3
warm-up batches, then the same N - W samples, best pass. Peak memory is tpcc's
maximum RSS (GNU time), input samples included. Each measurement also records
the CPU share other processes took meanwhile (from /proc/stat); before each one
the run waits for quiet (--wait-idle seconds in all), and at the end it repeats
the disturbed ones while the machine is quiet and --budget lasts, keeping the
quieter result. Tables go to stdout at the end, progress to stderr. Without
PyTorch the run goes on without its column and without mobilenet_v2_96.

usage: executor_bench.py --tpcc BIN --node-modules DIR --work DIR --models DIR
                         [--threads 1,2] [--loaded] [--no-torch] [--wait-idle S]
                         [--budget S]
"""
import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference, TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
TIMED_SECONDS = 0.25  # the least executor time of a timed tpcc pass
MAX_DATA_BYTES = 200 << 20
PLATFORMS = ("imx500", "tflite")
QUANTIZE_TARGET = 0.3  # seconds, fashion_mbv2 with 500 calibration images
BUSY_SHARE = 0.10  # a cell where other processes took more of the CPUs is flagged
WORK = None
TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None

torch = nn = None


def import_torch(disabled):
    global torch, nn
    if disabled:
        return "disabled (--no-torch)"
    try:
        import torch as t
        import torch.nn as tnn
    except ImportError as e:
        return f"not importable ({e})"
    torch, nn = t, tnn
    return None


# --- PyTorch architectures (eager baseline, and the export of mobilenet_v2_96) ----------

def fashion_cnn_torch():
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(64, 10))


def fashion_mbv2_torch():
    """The architecture of ../shared/models/train_fashion_mbv2.py."""
    def cbn(cin, cout, k, s=1, g=1, act=None):
        m = [nn.Conv2d(cin, cout, k, s, k // 2, groups=g, bias=False), nn.BatchNorm2d(cout)]
        return nn.Sequential(*(m + ([act()] if act else [])))

    class IR(nn.Module):
        def __init__(self, cin, cout, s, t, act, k=3):
            super().__init__()
            h = cin * t
            self.res = s == 1 and cin == cout
            layers = ([cbn(cin, h, 1, act=act)] if t != 1 else []) + [cbn(h, h, k, s, h, act), cbn(h, cout, 1)]
            self.body = nn.Sequential(*layers)

        def forward(self, x):
            y = self.body(x)
            return x + y if self.res else y

    return nn.Sequential(cbn(1, 24, 3, act=nn.ReLU6), IR(24, 32, 2, 1, nn.ReLU6), IR(32, 32, 1, 3, nn.ReLU6),
                         IR(32, 48, 2, 3, nn.SiLU, 5), IR(48, 48, 1, 3, nn.Hardswish),
                         IR(48, 64, 1, 3, nn.Hardswish), cbn(64, 160, 1, act=nn.Hardswish),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(160, 10))


def mobilenet_v2(num_classes=10):
    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            hidden = cin * expand
            layers = []
            if expand != 1:
                layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6()]
            layers += [nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
                       nn.BatchNorm2d(hidden), nn.ReLU6(),
                       nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
            self.conv = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.conv(x) if self.residual else self.conv(x)

    cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
           (6, 160, 3, 2), (6, 320, 1, 1)]
    layers = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()]
    cin = 32
    for t, c, n, s in cfg:
        for i in range(n):
            layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
            cin = c
    layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6(),
               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1280, num_classes)]
    return nn.Sequential(*layers)


def fuse_bn(module):
    """Conv+BN pairs fused (what the ONNX export does), for a fair eager baseline."""
    from torch.nn.utils.fusion import fuse_conv_bn_eval
    for name, child in module.named_children():
        if isinstance(child, nn.Sequential):
            items = list(child)
            out, i = [], 0
            while i < len(items):
                if i + 1 < len(items) and isinstance(items[i], nn.Conv2d) and isinstance(items[i + 1], nn.BatchNorm2d):
                    out.append(fuse_conv_bn_eval(items[i], items[i + 1]))
                    i += 2
                else:
                    out.append(fuse_bn(items[i]))
                    i += 1
            setattr(module, name, nn.Sequential(*out))
        else:
            fuse_bn(child)
    return module


# --- measuring ---------------------------------------------------------------------------

def flops_per_sample(path):
    """2 x multiply-adds of Conv, Gemm and MatMul, from shapes at batch 1."""
    m = onnx.load(path)
    for i in m.graph.input:
        d = i.type.tensor_type.shape.dim
        if d and not d[0].HasField("dim_value"):
            d[0].dim_value = 1
    m = shape_inference.infer_shapes(m)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(m.graph.value_info) + list(m.graph.output) + list(m.graph.input)}
    for t in m.graph.initializer:
        shapes[t.name] = list(t.dims)
    total = 0
    for n in m.graph.node:
        if n.op_type == "Conv":
            w, out = shapes[n.input[1]], shapes[n.output[0]]
            total += 2 * int(np.prod(out)) * int(np.prod(w[1:]))
        elif n.op_type in ("Gemm", "MatMul"):
            a, out = shapes[n.input[0]], shapes[n.output[0]]
            total += 2 * int(np.prod(out)) * a[-1]
    return total


class ToolError(Exception):
    pass


def run_measured(cmd, env=None):
    """Runs cmd; (stdout, wall seconds, peak RSS in MB). The peak comes from GNU time
    (a Python parent's os.wait4 would report the forked interpreter's RSS when that is
    larger). Exits on failure."""
    with tempfile.TemporaryDirectory(dir=WORK) as d:
        rss, out, err = (os.path.join(d, f) for f in ("rss", "out", "err"))
        timed = [TIME, "-f", "%M", "-o", rss, *cmd] if TIME else cmd
        with open(out, "w") as fo, open(err, "w") as fe:
            t0 = time.perf_counter()
            proc = subprocess.Popen(timed, stdout=fo, stderr=fe, env=env)
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status)
        if code:
            raise ToolError(f"`{' '.join(os.path.basename(c) for c in cmd[:2])}` failed ({code}): "
                            f"{open(err).read().strip()}")
        kb = int(open(rss).read().split()[-1]) if TIME else usage.ru_maxrss
        return open(out).read(), wall, kb / 1024


class CpuMeter:
    """The share of the machine's CPU time that other processes (not this script
    and its children) took between start() and share(), from /proc/stat."""

    @staticmethod
    def snapshot():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        busy = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / os.sysconf("SC_CLK_TCK")  # not idle, iowait
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        ours = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
        return busy, ours, time.perf_counter()

    def start(self):
        self.t0 = self.snapshot()
        return self

    def share(self):
        b1, o1, w1 = self.snapshot()
        b0, o0, w0 = self.t0
        return max(0.0, (b1 - b0) - (o1 - o0)) / max(1e-9, (w1 - w0) * os.cpu_count())


def wait_idle(budget):
    """Waits (at most budget[0] seconds, a budget shared by the calls) until other
    processes take under 15 % of the CPUs over half a second; True when they do."""
    while budget[0] > 0:
        m = CpuMeter().start()
        time.sleep(0.5)
        budget[0] -= 0.5
        if m.share() < 0.15:
            return True
    return False


@contextlib.contextmanager
def busy_core(active):
    """A Python busy loop pinned to the last CPU while the block runs."""
    if not active:
        yield
        return
    cpu = max(os.sched_getaffinity(0))
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"],
                            preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    try:
        time.sleep(0.2)
        yield
    finally:
        proc.kill()
        proc.wait()


class Bench:
    def __init__(self, args):
        self.args = args
        self.data_cache = {}
        self.calib = np.load(os.path.join(args.models, "fashion_calib_x.npy"))

    def data(self, shape, n):
        """A .npy of n samples of shape: Fashion-MNIST calibration images for 1x28x28,
        uniform [0, 1) otherwise. Shared prefixes, so W and N runs see the same samples."""
        key = (shape, n)
        if key not in self.data_cache:
            if shape == tuple(self.calib.shape[1:]):
                x = np.resize(self.calib, (n,) + shape)
            else:
                x = np.random.RandomState(0).uniform(0, 1, (n,) + shape).astype(np.float32)
            path = os.path.join(self.args.work, f"data_{'x'.join(map(str, shape))}_{n}.npy")
            np.save(path, x)
            self.data_cache[key] = path
        return self.data_cache[key]

    def tpcc_eval(self, model, shape, n, batch, threads, extra):
        """(executor seconds, peak MB) of `tpcc eval` on n samples."""
        out, _, mb = run_measured([self.args.tpcc, "eval", model, "--data", self.data(shape, n),
                                   "--batch", str(batch), "--progress=never", *extra],
                                  env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
        m = re.search(r"throughput\s+[\d.]+ samples/s \(([\d.]+) s in the executor[,)]", out)
        if not m:
            raise ToolError(f"no throughput line in `tpcc eval` output: {out.strip()}")
        return float(m.group(1)), mb

    def tpcc_rate(self, model, shape, batch, threads, extra, sized=None):
        """(samples/s past warm-up, (W, N, repeats), peak MB, exact). With sized from
        an earlier call, measures those sizes again. exact is False when the warm-up
        run was not clearly shorter than the full one (noise): the rate is then
        N / t(N), warm-up included, a lower bound."""
        cap = max(batch, MAX_DATA_BYTES // (4 * int(np.prod(shape))) // batch * batch)
        if sized:
            w, n, repeats = sized
            tw, mb = self.tpcc_eval(model, shape, w, batch, threads, extra)
            tn, mb2 = self.tpcc_eval(model, shape, n, batch, threads, extra)
        else:
            w = 3 * batch if batch == 1 else batch
            tw, mb = self.tpcc_eval(model, shape, w, batch, threads, extra)
            p = 16 * batch if batch == 1 else batch
            while True:
                tn, mb2 = self.tpcc_eval(model, shape, w + p, batch, threads, extra)
                d = tn - tw
                if d >= TIMED_SECONDS or w + p >= cap or tn >= 8 * TIMED_SECONDS:
                    break
                # Seconds per sample; when noise hides the warm-up, the pessimistic whole-run figure.
                per = d / p if d > 0.3 * tn else tn / (w + p)
                p = int(min(16 * p, max(2 * p, 1.3 * TIMED_SECONDS / per)))
                p = max(batch, min(cap - w, p // batch * batch))
            n = w + p
            repeats = 3 if d < 0.5 else 2
        mb = max(mb, mb2)
        for _ in range(repeats - 1):
            t, m1 = self.tpcc_eval(model, shape, w, batch, threads, extra)
            tw = min(tw, t)
            t, m2 = self.tpcc_eval(model, shape, n, batch, threads, extra)
            tn = min(tn, t)
            mb = max(mb, m1, m2)
        if tn - tw >= 0.25 * tn:
            return (n - w) / (tn - tw), (w, n, repeats), mb, True
        return n / tn, (w, n, repeats), mb, False

    def ort_rate(self, model, batch, samples, threads, repeats):
        out = subprocess.run(["node", os.path.join(HERE, "ort_bench.js"), model, str(batch), str(samples),
                              str(threads), str(repeats)], capture_output=True, text=True,
                             env=dict(os.environ, NODE_PATH=self.args.node_modules))
        if out.returncode:
            print(f"  (ONNX Runtime failed on {os.path.basename(model)}: {out.stderr.strip()})")
            return None
        return float(out.stdout.strip())


def torch_rate(net, shape, batch, samples, threads):
    """Samples/s of net after 3 warm-up batches: the best of 2 passes over the
    samples, a pass stopping after 0.5 s (PyTorch eager can be slow)."""
    torch.set_num_threads(threads)
    x = torch.from_numpy(np.random.RandomState(0).uniform(0, 1, (batch,) + shape).astype(np.float32))
    runs = max(1, samples // batch)
    with torch.no_grad():
        for _ in range(3):
            net(x)
        best = 0.0
        for _ in range(2):
            t0 = time.perf_counter()
            done = 0
            while done < runs and (done == 0 or time.perf_counter() - t0 < 0.5):
                net(x)
                done += 1
            best = max(best, done * batch / (time.perf_counter() - t0))
    return best


FMA_SOURCE = r"""
// The machine's float32 compute ceiling: 12 independent FMA chains per thread
// in the widest vectors -march=native offers. usage: fma_peak ITERATIONS
#include <cstdio>
#include <cstdlib>
#include <omp.h>
#if defined(__AVX512F__)
constexpr int W = 16;
#else
constexpr int W = 8;
#endif
typedef float vf __attribute__((vector_size(W * 4)));
int main(int argc, char **argv) {
  long iters = std::atol(argv[1]);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = omp_get_wtime(), sink = 0;
#pragma omp parallel reduction(+ : sink)
    {
      vf m, c, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11;
      for (int k = 0; k < W; ++k)
        m[k] = 0.999999f, c[k] = 1e-7f * argc; // distinct chains, not folded
      a0 = m, a1 = a0 + c, a2 = a1 + c, a3 = a2 + c, a4 = a3 + c, a5 = a4 + c, a6 = a5 + c;
      a7 = a6 + c, a8 = a7 + c, a9 = a8 + c, a10 = a9 + c, a11 = a10 + c;
      for (long i = 0; i < iters; ++i) {
#define F(x) x = x * m + c;
        F(a0) F(a1) F(a2) F(a3) F(a4) F(a5) F(a6) F(a7) F(a8) F(a9) F(a10) F(a11)
      }
      vf s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
      sink += s[0];
    }
    double flops = 2.0 * 12 * W * iters * omp_get_max_threads();
    if (flops / (omp_get_wtime() - t0) > best)
      best = flops / (omp_get_wtime() - t0);
    if (sink == 42)
      std::puts("");
  }
  std::printf("%.3f\n", best / 1e9);
}
"""


def fma_peaks(threads_list):
    """{threads: GFLOP/s} of FMA_SOURCE, or None without a C++ compiler."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if not cxx:
        return None
    src, exe = os.path.join(WORK, "fma_peak.cpp"), os.path.join(WORK, "fma_peak")
    with open(src, "w") as f:
        f.write(FMA_SOURCE)
    if subprocess.run([cxx, "-O2", "-march=native", "-ffp-contract=fast", "-fopenmp", src, "-o", exe],
                      capture_output=True).returncode:
        return None
    return {t: float(subprocess.run([exe, "50000000"], capture_output=True, text=True, check=True,
                                    env=dict(os.environ, OMP_NUM_THREADS=str(t))).stdout)
            for t in threads_list}


def gemm_rates(bench, threads_list):
    """{threads: {library: GFLOP/s}}: float32 2048^3 GEMM in ONNX Runtime (MLAS,
    through a MatMul model) and PyTorch (when present), best of 3-4."""
    k = 2048
    path = os.path.join(bench.args.work, "matmul_2048.onnx")
    b = numpy_helper.from_array(np.random.RandomState(1).uniform(-1, 1, (k, k)).astype(np.float32), "B")
    g = helper.make_graph([helper.make_node("MatMul", ["A", "B"], ["Y"])], "gemm",
                          [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["N", k])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", k])], [b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, path)
    rates = {}
    for t in threads_list:
        rates[t] = {"ONNX Runtime": (bench.ort_rate(path, k, 2 * k, t, 3) or 0) * 2 * k * k / 1e9}
        if torch is not None:
            torch.set_num_threads(t)
            a, bb = torch.randn(k, k), torch.randn(k, k)
            torch.mm(a, bb)
            best = 0.0
            for _ in range(4):
                t0 = time.perf_counter()
                torch.mm(a, bb)
                best = max(best, 2 * k ** 3 / (time.perf_counter() - t0))
            rates[t]["PyTorch"] = best / 1e9
    return rates


def ratio(a, b):
    return a / b if a and b else float("nan")


def rate_str(x, width=9):
    return f"{x:>{width}.1f}" if x is not None else f"{'-':>{width}}"


def plural(t):
    return f"{t} thread{'s' if t > 1 else ''}"


class Cell:
    """One throughput measurement: kind "float" or a platform (the QDQ model), with
    or without a busy core; the results of its quietest measurement."""

    def __init__(self, kind, name, path, shape, batch, threads, extra=(), net=None, idle=None):
        self.kind, self.name, self.path, self.shape = kind, name, path, shape
        self.batch, self.threads, self.extra, self.net = batch, threads, list(extra), net
        self.idle = idle  # for a loaded cell: the idle cell it repeats
        self.rate = self.ort = self.torch = self.sized = self.error = None
        self.exact, self.mb, self.share, self.cost = True, 0.0, 1.0, 0.0

    def what(self):
        kind = "" if self.kind == "float" else f" {self.kind}"
        return f"{self.name}{kind} batch {self.batch}, {plural(self.threads)}" + (" loaded" if self.idle else "")

    def measure(self, bench):
        t0 = time.perf_counter()
        meter = CpuMeter().start()
        r = {}
        try:
            with busy_core(self.idle is not None):
                sized = self.idle.sized if self.idle else self.sized  # None: size it now
                r["rate"], r["sized"], r["mb"], r["exact"] = bench.tpcc_rate(
                    self.path, self.shape, self.batch, self.threads, self.extra, sized)
                timed, repeats = r["sized"][1] - r["sized"][0], r["sized"][2]
                r["ort"] = bench.ort_rate(self.path, self.batch, timed, self.threads, repeats)
                if self.net is not None and not self.idle:
                    r["torch"] = torch_rate(self.net, self.shape, self.batch, timed, self.threads)
            r["error"] = None
        except ToolError as e:
            r = {"error": str(e)}
        r["share"] = meter.share()  # a busy loop, reaped by now, counts as ours
        self.cost = time.perf_counter() - t0
        if self.rate is None or r["share"] < self.share:
            self.__dict__.update(r)
        print(f"  {self.what()}: " + (r["error"] or f"tpcc {r['rate']:.1f}/s, ORT {rate_str(r['ort'], 0)}/s, "
                                                   f"others {100 * r['share']:.0f} %"), file=sys.stderr, flush=True)


class QuantizeRun:
    """`tpcc quantize` of one model for one platform: the fastest of runs."""

    def __init__(self, name, platform, path, calib, out, runs, env):
        self.name, self.platform, self.path, self.calib, self.out = name, platform, path, calib, out
        self.runs, self.env = runs, env
        self.nsamples = np.load(calib, mmap_mode="r").shape[0]
        self.wall, self.mb, self.phases, self.share, self.error, self.cost = None, 0.0, "-", 1.0, None, 0.0

    def measure(self, bench, idle_budget):
        t0 = time.perf_counter()
        for _ in range(self.runs):
            wait_idle(idle_budget)
            meter = CpuMeter().start()
            try:
                text, wall, mb = run_measured([bench.args.tpcc, "quantize", "--platform", self.platform, "--calib",
                                               self.calib, self.path, "-o", self.out, "--progress=never"], self.env)
            except ToolError as e:
                self.error = str(e)
                break
            share = meter.share()
            if self.wall is None or wall < self.wall:
                phases = re.search(r"time: (.*)", text)
                self.wall, self.mb, self.phases = wall, mb, phases.group(1) if phases else "-"
                self.share = share
        self.cost = time.perf_counter() - t0
        print(f"  quantize {self.name} {self.platform}: " +
              (self.error or f"{self.wall:.2f} s, others {100 * self.share:.0f} %"), file=sys.stderr, flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tpcc", required=True)
    p.add_argument("--node-modules", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--models", required=True)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--loaded", action="store_true", help="measure every cell with a busy core too")
    p.add_argument("--no-torch", action="store_true", help="leave PyTorch out")
    p.add_argument("--wait-idle", type=float, default=60,
                   help="seconds the first pass may wait in all for other processes to go quiet")
    p.add_argument("--budget", type=float, default=540,
                   help="seconds after which no busy measurement is repeated")
    args = p.parse_args()
    global WORK
    WORK = args.work
    threads_list = [int(t) for t in args.threads.split(",")]
    t_start = time.perf_counter()
    idle_budget = [args.wait_idle]
    # One binary for the whole run, even if the build tree is relinked meanwhile.
    tpcc_copy = os.path.join(args.work, "tpcc")
    shutil.copy2(args.tpcc, tpcc_copy)
    tpcc_src, args.tpcc = args.tpcc, tpcc_copy
    why_no_torch = import_torch(args.no_torch)
    bench = Bench(args)
    models = args.models

    help_text = subprocess.run([args.tpcc, "eval", "--help"], capture_output=True, text=True)
    qdq_extra = ["--qdq=integer"] if "--qdq" in help_text.stdout + help_text.stderr else []
    qdq_mode = ("integer kernels (--qdq=integer)" if qdq_extra else
                "float emulation (this tpcc's `eval --help` has no --qdq: its only mode)")

    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    ort_version = "?"
    with contextlib.suppress(OSError, ValueError, KeyError):
        with open(os.path.join(args.node_modules, "onnxruntime-node", "package.json")) as f:
            ort_version = json.load(f)["version"]
    print(f"machine: {cpu}, {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}")
    print(f"tpcc: {tpcc_src} (copied for the run); ONNX Runtime {ort_version} (onnxruntime-node); "
          f"PyTorch {torch.__version__ if torch else 'absent: ' + why_no_torch}; peak memory from "
          f"{'GNU time' if TIME else 'os.wait4 (no /usr/bin/time: includes the forked Python)'}", flush=True)

    cases = [("fashion_cnn", os.path.join(models, "fashion_cnn.onnx"), (1, 28, 28)),
             ("fashion_mbv2", os.path.join(models, "fashion_mbv2.onnx"), (1, 28, 28))]
    nets = {}
    if torch is not None:
        torch.manual_seed(0)
        mpath = os.path.join(args.work, "mobilenet_v2_96.onnx")
        torch.onnx.export(mobilenet_v2().eval(), torch.zeros(1, 3, 96, 96), mpath, input_names=["input"],
                          output_names=["logits"], dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}},
                          opset_version=13)
        cases.append(("mobilenet_v2_96", mpath, (3, 96, 96)))
        nets = {"fashion_cnn": fuse_bn(fashion_cnn_torch().eval()),
                "fashion_mbv2": fuse_bn(fashion_mbv2_torch().eval()),
                "mobilenet_v2_96": fuse_bn(mobilenet_v2().eval())}
    else:
        print(f"PyTorch {why_no_torch}: no PyTorch column and no mobilenet_v2_96 (exported with PyTorch)")

    wait_idle(idle_budget)
    fma, gemm = fma_peaks(threads_list), gemm_rates(bench, threads_list)
    if fma:
        peaks = fma
        print("attainable peak (float32 FMA throughput, 12 chains per thread, -march=native): " +
              ", ".join(f"{plural(t)} {g:.1f} GFLOP/s" for t, g in peaks.items()))
    else:
        peaks = {t: max(r.values()) for t, r in gemm.items()}
        print("no C++ compiler for the FMA ceiling: the peak is the best GEMM below")
    for t, r in gemm.items():
        print(f"  float32 2048^3 GEMM, {plural(t)}: " +
              ", ".join(f"{lib} {g:.1f} GFLOP/s ({100 * g / peaks[t]:.0f} %)" for lib, g in r.items()))
    if torch is not None and min(r["PyTorch"] / peaks[t] for t, r in gemm.items()) < 0.1:
        print("  (Debian's PyTorch multiplies matrices through the libblas.so.3 alternative, the "
              "reference BLAS here: its Linear layers and GEMM-based convolutions are slow; "
              "libopenblas0 would speed them up)")
    sys.stdout.flush()

    # --- first pass: every measurement in order (progress on stderr) ---
    cells = [(b, t) for b in (1, 64) for t in threads_list]
    float_cells, quant_cells, loaded_cells = [], [], []

    def add_loaded(cell):
        if (cell.kind == "float" and cell.name == "fashion_mbv2" and cell.threads == 2) or args.loaded:
            lc = Cell(cell.kind, cell.name, cell.path, cell.shape, cell.batch, cell.threads, cell.extra,
                      idle=cell)
            wait_idle(idle_budget)
            lc.measure(bench)
            loaded_cells.append(lc)

    flops = {}
    for name, path, shape in cases:
        flops[name] = flops_per_sample(path)
        for b, t in cells:
            c = Cell("float", name, path, shape, b, t, net=nets.get(name))
            wait_idle(idle_budget)
            c.measure(bench)
            float_cells.append(c)
            if not c.error:
                add_loaded(c)

    calib28 = os.path.join(models, "fashion_calib_x.npy")
    calib = {"fashion_cnn": calib28, "fashion_mbv2": calib28}
    if torch is not None:
        calib["mobilenet_v2_96"] = os.path.join(args.work, "mobilenet_v2_96_calib.npy")
        np.save(calib["mobilenet_v2_96"],
                np.random.RandomState(2).uniform(0, 1, (32, 3, 96, 96)).astype(np.float32))
    qenv = dict(os.environ, OMP_NUM_THREADS=str(max(threads_list)))
    qruns = []
    for name, path, shape in cases:
        for platform in PLATFORMS:
            q = QuantizeRun(name, platform, path, calib[name], os.path.join(args.work, f"{name}.{platform}.onnx"),
                            3 if name == "fashion_mbv2" else 1, qenv)
            q.measure(bench, idle_budget)
            qruns.append(q)
            if q.error:
                continue
            for b, t in cells:
                c = Cell(platform, name, q.out, shape, b, t, qdq_extra)
                wait_idle(idle_budget)
                c.measure(bench)
                quant_cells.append(c)
                if not c.error:
                    add_loaded(c)

    # --- second pass: measurements other processes disturbed, again while time allows ---
    busy = [r for r in float_cells + quant_cells + loaded_cells + qruns
            if r.share > BUSY_SHARE and not r.error]
    retried = 0
    for r in sorted(busy, key=lambda r: -r.share):
        left = args.budget - (time.perf_counter() - t_start) - r.cost
        if left <= 0:
            continue
        if not wait_idle([min(left, 30.0)]):
            break
        retried += 1
        if isinstance(r, QuantizeRun):
            r.measure(bench, [0.0])
        else:
            r.measure(bench)

    # --- tables ---
    busy_cells = []

    def busy_mark(share, what):
        if share > BUSY_SHARE:
            busy_cells.append(what)
            return f"{100 * share:>4.0f}%!"
        return f"{100 * share:>4.0f}% "

    def worst(cells):
        """(tpcc/ORT, cell) of the slowest cell; a failed tpcc counts 0, a failed ORT nan."""
        w = min(cells, key=lambda c: -1.0 if c.error or not c.ort else ratio(c.rate, c.ort), default=None)
        return (0.0 if w.error else ratio(w.rate, w.ort), w.what()) if w else (float("nan"), "none")

    print(f"\nbusy%: the CPU share other processes took during the cell (flagged `!` above "
          f"{100 * BUSY_SHARE:.0f} %; {retried} disturbed measurement(s) repeated, the quieter one kept); "
          f"`~`: warm-up not separable from noise, the rate includes it")
    print("\nfloat: samples/s past warm-up (best of 2-3); GFLOP/s and share of the peak are tpcc's")
    torch_cols = f" {'torch/s':>9} {'tpcc/torch':>10}" if torch else ""
    print(f"{'model':<16} {'batch':>5} {'thr':>3} {'tpcc/s':>10} {'ort/s':>9} {'tpcc/ort':>8}{torch_cols} "
          f"{'GFLOP/s':>8} {'of peak':>7} {'tpcc MB':>7} {'busy%':>6}")
    for c in float_cells:
        head = f"{c.name:<16} {c.batch:>5} {c.threads:>3}"
        if c.error:
            print(f"{head} {c.error}")
            continue
        line = f"{head} {c.rate:>9.1f}{' ' if c.exact else '~'} {rate_str(c.ort)} {ratio(c.rate, c.ort):>8.2f}"
        if torch:
            line += f" {rate_str(c.torch)} {ratio(c.rate, c.torch):>10.2f}"
        gf = c.rate * flops[c.name] / 1e9
        print(f"{line} {gf:>8.2f} {100 * gf / peaks[c.threads]:>6.1f}% {c.mb:>7.0f} "
              f"{busy_mark(c.share, 'float ' + c.what())}")

    print(f"\nquantized (QDQ files from `tpcc quantize`): tpcc eval mode: {qdq_mode}; "
          f"ONNX Runtime runs the same files")
    print(f"{'model':<16} {'platform':<8} {'batch':>5} {'thr':>3} {'tpcc/s':>10} {'ort/s':>9} {'tpcc/ort':>8} "
          f"{'tpcc MB':>7} {'busy%':>6}")
    for c in quant_cells:
        head = f"{c.name:<16} {c.kind:<8} {c.batch:>5} {c.threads:>3}"
        if c.error:
            print(f"{head} {c.error}")
            continue
        print(f"{head} {c.rate:>9.1f}{' ' if c.exact else '~'} {rate_str(c.ort)} {ratio(c.rate, c.ort):>8.2f} "
              f"{c.mb:>7.0f} {busy_mark(c.share, 'quantized ' + c.what())}")

    print(f"\nquantize end to end (wall from process start to exit, OMP_NUM_THREADS={max(threads_list)}; "
          f"peak RSS; tpcc's own phase times)")
    print(f"{'model':<16} {'platform':<8} {'calib':>5} {'runs':>4} {'wall s':>7} {'peak MB':>7} {'busy%':>6}  phases")
    for q in qruns:
        head = f"{q.name:<16} {q.platform:<8} {q.nsamples:>5} {q.runs:>4}"
        if q.error:
            print(f"{head} {q.error}")
            continue
        print(f"{head} {q.wall:>7.2f} {q.mb:>7.0f} {busy_mark(q.share, f'quantize {q.name} {q.platform}')}  "
              f"{q.phases}")

    print(f"\nloaded: the same cells while `python3 -c 'while True: pass'` spins on CPU "
          f"{max(os.sched_getaffinity(0))} (samples/s; slower = idle / loaded; busy% leaves the loop out)")
    print(f"{'model':<16} {'kind':<7} {'batch':>5} {'thr':>3} {'tpcc idle':>9} {'loaded':>10} {'slower':>7} "
          f"{'ort idle':>9} {'loaded':>9} {'slower':>7} {'tpcc/ort':>8} {'busy%':>6}")
    for c in loaded_cells:
        i = c.idle
        head = f"{c.name:<16} {c.kind:<7} {c.batch:>5} {c.threads:>3}"
        if c.error:
            print(f"{head} {c.error}")
            continue
        print(f"{head} {i.rate:>9.1f} {c.rate:>9.1f}{' ' if c.exact else '~'} {ratio(i.rate, c.rate):>6.1f}x "
              f"{rate_str(i.ort)} {rate_str(c.ort)} {ratio(i.ort, c.ort):>6.1f}x {ratio(c.rate, c.ort):>8.2f} "
              f"{busy_mark(c.share, 'loaded ' + c.what())}")

    # --- verdicts ---
    print()
    met = lambda ok: "MET" if ok else "NOT MET"
    wf, wq = worst(float_cells), worst(quant_cells)
    print(f"tpcc >= 1.0x ORT float in every cell: {met(wf[0] >= 1.0)} (worst cell {wf[1]}: {wf[0]:.2f}x)")
    print(f"tpcc >= 1.0x ORT quantized ({'integer' if qdq_extra else 'float emulation'}) in every cell: "
          f"{met(wq[0] >= 1.0 and len(quant_cells) == len(qruns) * len(cells))} "
          f"(worst cell {wq[1]}: {wq[0]:.2f}x)")
    mb = [q for q in qruns if q.name == "fashion_mbv2"]
    slow = max((q.wall if not q.error else float("inf") for q in mb), default=float("inf"))
    print(f"<{QUANTIZE_TARGET} s quantize (fashion_mbv2, {mb[0].nsamples} calibration images, best of 3, "
          f"{' and '.join(PLATFORMS)}): {met(slow < QUANTIZE_TARGET)} (" +
          ", ".join(f"{q.platform} " + ("failed" if q.error else f"{q.wall:.2f} s") for q in mb) + ")")
    if torch is None:
        print(f"(PyTorch {why_no_torch}: ran without the PyTorch column and mobilenet_v2_96)")
    if busy_cells:
        print(f"warning: other processes took over {100 * BUSY_SHARE:.0f} % of the CPUs during "
              f"{len(busy_cells)} measurement(s) (first: {busy_cells[0]}): rerun on a quiet machine")
    print(f"benchmark time: {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()

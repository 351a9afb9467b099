"""Writes a model whose output is logits read through a sigmoid, y = 12 * x - 30, and
calibration samples whose logits reach -30 (no detection) where most of them lie and
cross 0 at a few positions (the detections): make_logits.py MODEL X.npy"""
import sys

import numpy as np
from onnx import helper
from onnx import numpy_helper as nh

from one_graph import save

inits = [nh.from_array(np.array(12, np.float32), "gain"),
         nh.from_array(np.array(30, np.float32), "offset")]
nodes = [helper.make_node("Mul", ["x", "gain"], ["scaled"], name="scale"),
         helper.make_node("Sub", ["scaled", "offset"], ["y"], name="shift")]
save(sys.argv[1], "logits", nodes, ["N", 64], ["N", 64], inits)
rng = np.random.RandomState(0)
x = rng.uniform(0, 0.3, (16, 64))
x[:, :4] = rng.uniform(2.2, 2.8, (16, 4))  # the detections: logits around 0
np.save(sys.argv[2], x.astype(np.float32))

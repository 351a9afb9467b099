"""Checks gradient GPTQ's choice between its two bias candidates in a report:
the trained rounding with the trained biases or with bias correction's. The
kept one passes the never-worse guard (weighted layer loss and output error
at most nearest rounding's) and, when both pass, has the lower layer loss;
the report's after-figures are the kept candidate's."""
import json
import sys

g = json.load(open(sys.argv[1]))["gptq"]
layers = g["layers"]
before = sum(l["weight"] * l["loss_before"] for l in layers)
after = sum(l["weight"] * l["loss_after"] for l in layers)
trained, corrected = g["bias_candidates"]["trained"], g["bias_candidates"]["corrected"]


def passes(c):
    return c["layer_loss"] <= before and c["output_loss"] <= g["output_loss_before"]


use_corrected = passes(corrected) and (
    not passes(trained) or corrected["layer_loss"] < trained["layer_loss"])
kept = corrected if use_corrected else trained
ok = not g["reverted"] and g["biases_trained"] == (not use_corrected) and \
    abs(after - kept["layer_loss"]) <= 1e-9 * max(1.0, after) and \
    g["output_loss_after"] == kept["output_loss"]
if not ok:
    sys.exit(f"bias choice: {json.dumps(g['bias_candidates'])}, biases_trained "
             f"{g['biases_trained']}, reverted {g['reverted']}, after {after}")

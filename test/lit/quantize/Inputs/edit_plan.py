# Edits a calibrated plan the way a user might get it wrong (apply-edited-plan.test).
# usage: edit_plan.py PLAN.json unknown|wide|scale|zero|duplicate|grids|format|wformat OUT.json
import json, sys
p = json.load(open(sys.argv[1]))
what = sys.argv[2]
t = next(t for t in p["tensors"] if t["name"] == "logits")
if what == "unknown": t["name"] = "nosuch"
if what == "wide": t["bits"] = 17
if what == "scale": t["scale"] = -0.5
if what == "zero": t["zero_point"] = 300
if what == "duplicate": p["tensors"].append(dict(t))
if what == "grids":
    n = next(n for n in p["nodes"] if "weight_grids" in n)
    n["weight_grids"]["kernel"]["scales"].pop(); n["weight_grids"]["kernel"]["zero_points"].pop()
# Formats `tpcc quantize` does not write: a blocked activation, a blocked weight
# without the dimension its blocks run along.
fp8 = {"element": "fp8_e4m3", "block": 32, "scale": "e8m0", "block_scale": None}
if what == "format": t["format"] = fp8
if what == "wformat":
    n = next(n for n in p["nodes"] if "weight_grids" in n)
    n["weights"]["kernel"]["format"] = dict(fp8, block_axis="reduction")
json.dump(p, open(sys.argv[3], "w"))

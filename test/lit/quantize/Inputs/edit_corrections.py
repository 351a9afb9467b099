"""Edits the correction records of a calibrated plan the way a user might break them
(apply-correction-errors.test).
usage: edit_corrections.py PLAN.json OUT.json INDEX KEY JSON|delete|pop
         KEY may be dotted (kernel.values); `pop` drops the last element of a list
       edit_corrections.py PLAN.json OUT.json text
         the records as descriptions only, as plans of earlier tpcc versions held them"""
import json
import sys

p = json.load(open(sys.argv[1]))
if sys.argv[3] == "text":
    p["corrections"] = [c["description"] for c in p["corrections"]]
else:
    record = p["corrections"][int(sys.argv[3])]
    *path, key = sys.argv[4].split(".")
    for k in path:
        record = record[k]
    what = sys.argv[5]
    if what == "delete":
        del record[key]
    elif what == "pop":
        record[key].pop()
    else:
        record[key] = json.loads(what)
json.dump(p, open(sys.argv[2], "w"))

"""Parses an HTML page written by `tpcc doc` as XML (it uses no void elements
but <meta>, which is dropped first): exits 1 if it is not well-formed."""
import sys
import xml.etree.ElementTree as ET

text = open(sys.argv[1], encoding="utf-8").read()
text = text.replace("<!DOCTYPE html>", "").replace('<meta charset="utf-8">', "")
try:
    root = ET.fromstring(text)
except ET.ParseError as e:
    print(f"not well-formed: {e}")
    sys.exit(1)
assert root.tag == "html", root.tag
assert root.find("head/title") is not None and root.find("body") is not None
print(f"ok: {sum(1 for _ in root.iter())} elements")

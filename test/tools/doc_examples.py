#!/usr/bin/env python3
"""Compiles the `.tpc` examples of Markdown documents.

usage: doc_examples.py TPCC_BINARY MARKDOWN_FILE...

Every fenced code block whose info string starts with one of these tags is
an example, and is checked with `TPCC_BINARY check`:

  ```tpc            a complete file that compiles cleanly: exit status 0 and
                    nothing at all on stderr
  ```tpc-warning    a complete file that compiles with at least one warning:
                    exit status 0 and a `warning:` on stderr
  ```tpc-error      a complete file that shows a mistake: exit status 1 and
                    an `error:` on stderr

Blocks with any other info string (or none) are fragments and are skipped,
except output blocks:

  ```json emit=NAME.tpc
                    the exact output of `TPCC_BINARY emit --emit=json NAME.tpc`,
                    where NAME.tpc is an example of the same document

Each block is written to a temporary directory (one per Markdown file) as
`<document>-<index>.tpc` (`language-07.tpc` for the 7th example of
`language.md`). An example may give its own file name after the tag,
`tpc file=base_chip.tpc`, so that a later example can
`import "./base_chip.tpc"` (or an output block can name it); every block of a
document is written before any is checked. Examples may import the standard
library (`import "imx500"`, `import "onnx"`).

A block that holds `expected-error`, `expected-warning` or `expected-note`
annotations is also run with `check --verify`, which must succeed: the
annotations then pin down the exact diagnostics (line and text) the example
produces.

Prints one line per example and a final `N passed, M failed` line; exits 1
when any example fails (and 2 on a usage error). Python 3 standard library
only.
"""
import difflib
import os
import re
import subprocess
import sys
import tempfile

TAGS = ("tpc", "tpc-warning", "tpc-error")
TIMEOUT = 60  # seconds per tpcc run: a hang is a failure, not a stuck test
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
FILE_ATTR = re.compile(r"(?:^|\s)file=([A-Za-z0-9_.-]+\.tpc)(?:\s|$)")
EMIT_ATTR = re.compile(r"(?:^|\s)emit=([A-Za-z0-9_.-]+\.tpc)(?:\s|$)")
ANNOTATION = re.compile(r"expected-(error|warning|note)")


class Example:
    def __init__(self, doc, line, tag, name, text):
        self.doc = doc        # the Markdown file
        self.line = line      # line of the opening fence (1-based)
        self.tag = tag
        self.name = name      # file name in the temporary directory
        self.text = text


def extract(doc):
    """The tagged examples of one Markdown file, in order."""
    with open(doc, encoding="utf-8") as f:
        lines = f.read().split("\n")
    stem = os.path.splitext(os.path.basename(doc))[0]
    examples = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m.group(1)), m.group(2), m.group(3).strip()
        start = i
        body = []
        i += 1
        # The block ends at a fence of the same character, at least as long,
        # with nothing after it (CommonMark); an unclosed block runs to EOF.
        while i < len(lines):
            close = FENCE.match(lines[i])
            if (close and close.group(2)[0] == fence[0]
                    and len(close.group(2)) >= len(fence)
                    and not close.group(3).strip()):
                break
            line = lines[i]
            # Remove up to the opening fence's indentation.
            strip = len(line) - len(line.lstrip(" "))
            body.append(line[min(indent, strip):])
            i += 1
        i += 1
        words = info.split()
        tag = words[0] if words else ""
        emit = EMIT_ATTR.search(info)
        if tag == "json" and emit:
            examples.append(Example(doc, start + 1, "json", emit.group(1),
                                    "\n".join(body) + "\n"))
            continue
        if tag not in TAGS:
            continue
        index = sum(1 for e in examples if e.tag != "json") + 1
        m = FILE_ATTR.search(info)
        name = m.group(1) if m else "%s-%02d.tpc" % (stem, index)
        examples.append(Example(doc, start + 1, tag, name,
                                "\n".join(body) + "\n"))
    return examples


def run(tpcc, args, cwd):
    try:
        proc = subprocess.run([tpcc] + args, cwd=cwd, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % TIMEOUT
    return (proc.returncode, proc.stdout.decode("utf-8", "replace"),
            proc.stderr.decode("utf-8", "replace"))


def describe_exit(code):
    if code is None:
        return "no exit status (timed out)"
    if code < 0:
        return "killed by signal %d" % -code
    return "exit status %d" % code


def check_output(tpcc, ex, cwd):
    """An output block: it must be exactly what `emit --emit=json` writes."""
    if not os.path.exists(os.path.join(cwd, ex.name)):
        return ("no example of this document is named `%s`" % ex.name, "")
    code, out, err = run(tpcc, ["emit", "--emit=json", ex.name], cwd)
    if code != 0:
        return "`emit --emit=json` failed (%s)" % describe_exit(code), err
    if out != ex.text:
        diff = difflib.unified_diff(ex.text.split("\n"), out.split("\n"),
                                    "documented", "actual", lineterm="", n=1)
        return "the documented output differs from the compiler's", \
            "\n".join(list(diff)[:40])
    return None


def check(tpcc, ex, cwd):
    """None when the example behaves as its tag says, else the reason."""
    if ex.tag == "json":
        return check_output(tpcc, ex, cwd)
    code, _, err = run(tpcc, ["check", ex.name], cwd)
    if ex.tag == "tpc":
        if code != 0:
            return "expected a clean compile, got %s" % describe_exit(code), err
        if err.strip():
            return "expected a clean compile, got output on stderr", err
    elif ex.tag == "tpc-warning":
        if code != 0:
            return ("expected exit status 0 with a warning, got %s"
                    % describe_exit(code)), err
        if ": warning: " not in err:
            return "expected a warning, got none", err
    else:  # tpc-error
        if code != 1:
            return "expected exit status 1, got %s" % describe_exit(code), err
        if ": error: " not in err:
            return "expected an error message, got none", err
    if ANNOTATION.search(ex.text):
        code, out, verr = run(tpcc, ["check", "--verify", ex.name], cwd)
        if code != 0:
            return ("`check --verify` failed (%s)" % describe_exit(code),
                    out + verr)
    return None


def main(argv):
    if len(argv) < 3:
        sys.stderr.write("usage: doc_examples.py TPCC_BINARY MARKDOWN_FILE...\n")
        return 2
    tpcc = os.path.abspath(argv[1])
    if not os.access(tpcc, os.X_OK):
        sys.stderr.write("doc_examples.py: cannot run `%s`\n" % argv[1])
        return 2
    passed = failed = 0
    for doc in argv[2:]:
        try:
            examples = extract(doc)
        except OSError as e:
            sys.stderr.write("doc_examples.py: cannot read `%s`: %s\n"
                             % (doc, e.strerror))
            return 2
        names = {}
        for ex in (e for e in examples if e.tag != "json"):
            if ex.name in names:
                print("FAIL %s:%d: file name `%s` is already used by the "
                      "example at line %d" % (doc, ex.line, ex.name,
                                              names[ex.name]))
                failed += 1
            names.setdefault(ex.name, ex.line)
        with tempfile.TemporaryDirectory(prefix="tpcc-doc-") as tmp:
            for ex in (e for e in examples if e.tag != "json"):
                with open(os.path.join(tmp, ex.name), "w",
                          encoding="utf-8") as f:
                    f.write(ex.text)
            for ex in examples:
                problem = check(tpcc, ex, tmp)
                where = "%s:%d [%s] %s" % (doc, ex.line, ex.tag, ex.name)
                if problem is None:
                    print("PASS " + where)
                    passed += 1
                    continue
                print("FAIL %s: %s" % (where, problem[0]))
                for line in problem[1].rstrip("\n").split("\n"):
                    if line:
                        print("    | " + line)
                failed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

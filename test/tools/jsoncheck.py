#!/usr/bin/env python3
"""jsoncheck.py - check a JSON document by meaning, for lit tests.

Usage:
    jsoncheck.py [--canonical] FILE|- ASSERTION [ASSERTION ...]

(--canonical may also come after FILE.)

Each ASSERTION is one shell argument:

    PATH == VALUE          equal (numbers compare by value: 2 == 2.0; true != 1)
    PATH != VALUE          not equal
    PATH in VALUE          VALUE is a list holding the actual value, or a string
                           containing it (when the actual value is a string)
    PATH contains VALUE    the actual list holds VALUE / the actual string
                           contains VALUE / the actual object has key VALUE
    PATH < <= > >= VALUE   numeric order ("inf" / "-inf" count as infinities)
    len(PATH) OP N         the length of a list, object or string, OP any of
                           == != < <= > >=
    PATH exists            the path resolves
    PATH missing           the path does not resolve

VALUE is a JSON literal ("imx500", 8, true, null, [8, 16], {"out": 0}); the bare
words inf and -inf stand for the strings "inf" and "-inf", which is how tpcc
writes infinities (JSON has none).

PATH selects from the document root:

    platforms[0].default.configs[0].activation.bits
    platforms[name=imx500].opsets[name=Conv].options.base
    capabilities[0].bindings[opset=AnyReLU,op=Clip].where
    platforms[-1].fusings[name=null].pattern          last element; JSON values
    frameworks[0].weights[?slot=kernel].op            [?...] keeps every match
    platforms[*].name                                 [*] every element/value
    recipes[0]["shift_negative"].ratio                quoted key
    $                                                 the whole document

`.key` and `["key"]` index objects, `[N]` arrays (negative from the end).
`[k=v,...]` picks the one element (of an array, or value of an object) whose
fields match every condition; `k` may be a dotted path and `v` is a JSON
literal or else a bare string (quote it, `[name="a,b"]`, if it holds `,` or
`]`). It is an error if no element or more than one matches. After `[*]` or
`[?k=v]` the rest of the path applies to every selected element and the result
is the list of results.

--canonical also checks that the input is in tpcc's canonical form: valid UTF-8,
no duplicate keys, no NaN/Infinity tokens, and byte-identical to
json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\\n" (keys
sorted, 2-space indent, trailing newline, numbers spelled as Python spells
them; infinities are already the strings "inf"/"-inf", so they re-serialize
unchanged).

Every failed assertion is printed (to stderr) with the actual value. Exit
status: 0 when everything holds, 1 when an assertion or the canonical check
fails or the input is not JSON, 2 on a usage error (bad option or assertion
syntax). Python 3 standard library only.
"""

import json
import math
import re
import sys

USAGE = "usage: jsoncheck.py [--canonical] FILE|- ASSERTION [ASSERTION ...]"


class UsageError(Exception):
    pass


class PathError(Exception):
    pass


# --------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------


def parse_value(text):
    """A JSON literal; bare inf / -inf are the strings tpcc writes."""
    text = text.strip()
    if text in ("inf", "-inf"):
        return text
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError as e:
        raise UsageError(f"invalid JSON value {text!r}: {e}") from None


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON (write \"inf\" / \"-inf\")")


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def json_equal(a, b):
    """Equality of JSON values: booleans are not numbers, 2 == 2.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return a == b


def as_order_number(v):
    if v in ("inf", "-inf"):
        return float(v)
    if is_number(v):
        return v
    return None


def show(v, limit=None):
    text = json.dumps(v, sort_keys=True, ensure_ascii=False)
    if limit is not None and len(text) > limit:
        text = text[:limit] + " ..."
    return text


# --------------------------------------------------------------------------
# Paths
# --------------------------------------------------------------------------

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
INDEX = re.compile(r"-?[0-9]+")


def split_path(text):
    """Splits 'PATH rest' at the first character that cannot continue a path
    (whitespace or an operator character outside brackets and quotes)."""
    depth, quoted, i = 0, False, 0
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif depth == 0 and (c.isspace() or c in "=!<>"):
            break
        i += 1
    return text[:i], text[i:]


def parse_path(text):
    """Parses a path into steps: ('key', k), ('index', i), ('select', conds),
    ('filter', conds), ('all',)."""
    steps, i = [], 0
    if text.startswith("$"):
        i = 1
    elif text and text[0] not in ".[":
        text = "." + text
    while i < len(text):
        c = text[i]
        if c == ".":
            m = IDENT.match(text, i + 1)
            if not m:
                raise UsageError(f"bad path {text.lstrip('.')!r}: expected a key "
                                 f"after '.' at offset {i}")
            steps.append(("key", m.group()))
            i = m.end()
        elif c == "[":
            end = _closing_bracket(text, i)
            inner = text[i + 1:end].strip()
            i = end + 1
            if inner == "*":
                steps.append(("all",))
            elif INDEX.fullmatch(inner):
                steps.append(("index", int(inner)))
            elif inner.startswith('"'):
                try:
                    steps.append(("key", json.loads(inner)))
                except ValueError:
                    raise UsageError(f"bad quoted key {inner!r}") from None
            elif inner.startswith("?"):
                steps.append(("filter", _parse_conditions(inner[1:])))
            else:
                steps.append(("select", _parse_conditions(inner)))
        else:
            raise UsageError(f"bad path {text.lstrip('.')!r} at offset {i}")
    return steps


def _closing_bracket(text, start):
    quoted, i = False, start + 1
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == "]":
            return i
        i += 1
    raise UsageError(f"unclosed '[' in path {text.lstrip('.')!r}")


def _parse_conditions(text):
    conds, parts, cur, quoted, i = [], [], "", False, 0
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "\\" and i + 1 < len(text):
                cur += c + text[i + 1]
                i += 2
                continue
            if c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == ",":
            parts.append(cur)
            cur = ""
            i += 1
            continue
        cur += c
        i += 1
    parts.append(cur)
    for part in parts:
        if "=" not in part:
            raise UsageError(f"bad selector [{text}]: expected KEY=VALUE")
        key, value = part.split("=", 1)
        key, value = key.strip(), value.strip()
        subpath = parse_path(key)
        try:
            parsed = json.loads(value, parse_constant=_reject_constant)
        except ValueError:
            parsed = value  # a bare string
        if value in ("inf", "-inf"):
            parsed = value
        conds.append((key, subpath, parsed))
    return conds


def _matches(element, conds):
    for _, subpath, want in conds:
        try:
            got = resolve(element, subpath)
        except PathError:
            return False
        if not json_equal(got, want):
            return False
    return True


def _describe(value, conds):
    """What the candidates hold for the first condition, for messages."""
    key, subpath, _ = conds[0]
    seen = []
    items = value if isinstance(value, list) else list(value.values())
    for e in items:
        try:
            seen.append(show(resolve(e, subpath)))
        except PathError:
            seen.append("<none>")
    return f"{key} values: {', '.join(seen) if seen else '(empty)'}"


def _step(value, step, where):
    kind = step[0]
    if kind == "key":
        if not isinstance(value, dict):
            raise PathError(f"{where or '$'} is {type_name(value)}, not an object"
                            f" (looking up key {step[1]!r})")
        if step[1] not in value:
            keys = ", ".join(sorted(value)) or "(none)"
            raise PathError(f"{where or '$'} has no key {step[1]!r} (keys: {keys})")
        return [value[step[1]]], False
    if kind == "index":
        if not isinstance(value, list):
            raise PathError(f"{where or '$'} is {type_name(value)}, not an array")
        n = step[1]
        if not -len(value) <= n < len(value):
            raise PathError(f"{where or '$'}[{n}] is out of range (length "
                            f"{len(value)})")
        return [value[n]], False
    if kind == "all":
        if isinstance(value, list):
            return list(value), True
        if isinstance(value, dict):
            return [value[k] for k in sorted(value)], True
        raise PathError(f"{where or '$'} is {type_name(value)}; [*] needs an "
                        "array or object")
    # select / filter
    conds = step[1]
    if isinstance(value, dict):
        items = [value[k] for k in sorted(value)]
    elif isinstance(value, list):
        items = value
    else:
        raise PathError(f"{where or '$'} is {type_name(value)}; a selector "
                        "needs an array or object")
    found = [e for e in items if _matches(e, conds)]
    text = ",".join(f"{k}={show(v)}" for k, _, v in conds)
    if kind == "filter":
        return found, True
    if len(found) != 1:
        what = "no element matches" if not found else \
            f"{len(found)} elements match"
        raise PathError(f"{where or '$'}[{text}]: {what} "
                        f"({_describe(value, conds)})")
    return found, False


def type_name(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if is_number(v):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    return "an object"


def _step_text(step):
    kind = step[0]
    if kind == "key":
        return "." + step[1] if IDENT.fullmatch(step[1]) else f"[{show(step[1])}]"
    if kind == "index":
        return f"[{step[1]}]"
    if kind == "all":
        return "[*]"
    text = ",".join(f"{k}={show(v)}" for k, _, v in step[1])
    return f"[?{text}]" if kind == "filter" else f"[{text}]"


def resolve(doc, steps):
    """Follows `steps`; after [*] / [?...] the result is a list."""
    values, mapped, where = [doc], False, ""
    for step in steps:
        out = []
        for v in values:
            got, many = _step(v, step, where.lstrip("."))
            out.extend(got)
            mapped = mapped or many
        values = out
        where += _step_text(step)
    return values if mapped else values[0]


# --------------------------------------------------------------------------
# Assertions
# --------------------------------------------------------------------------

CMP_OPS = ("==", "!=", "<=", ">=", "<", ">")


def parse_assertion(text):
    """Returns (kind, path_text, steps, op, value)."""
    s = text.strip()
    m = re.match(r"len\s*\((.*)\)\s*(==|!=|<=|>=|<|>)\s*(.+)$", s, re.S)
    if m:
        n = parse_value(m.group(3))
        if not is_number(n):
            raise UsageError(f"{text!r}: len() compares with a number")
        path = m.group(1).strip()
        return ("len", path, parse_path(path), m.group(2), n)
    path, rest = split_path(s)
    if not path:
        raise UsageError(f"{text!r}: expected a path")
    steps = parse_path(path)
    rest = rest.strip()
    if rest in ("exists", "missing"):
        return (rest, path, steps, None, None)
    for op in CMP_OPS:
        if rest.startswith(op):
            return ("cmp", path, steps, op, parse_value(rest[len(op):]))
    m = re.match(r"(in|contains)\s+(.+)$", rest, re.S)
    if m:
        return ("cmp", path, steps, m.group(1), parse_value(m.group(2)))
    raise UsageError(f"{text!r}: expected PATH OP VALUE, len(PATH) OP N, "
                     "PATH exists or PATH missing")


def compare(actual, op, want):
    if op == "==":
        return json_equal(actual, want)
    if op == "!=":
        return not json_equal(actual, want)
    if op == "in":
        if isinstance(want, list):
            return any(json_equal(actual, w) for w in want)
        if isinstance(want, str) and isinstance(actual, str):
            return actual in want
        return False
    if op == "contains":
        if isinstance(actual, list):
            return any(json_equal(a, want) for a in actual)
        if isinstance(actual, str) and isinstance(want, str):
            return want in actual
        if isinstance(actual, dict) and isinstance(want, str):
            return want in actual
        return False
    a, w = as_order_number(actual), as_order_number(want)
    if a is None or w is None:
        return False
    return {"<": a < w, "<=": a <= w, ">": a > w, ">=": a >= w}[op]


def check(doc, assertion):
    """Returns None when the assertion holds, else a failure message."""
    kind, path, steps, op, want = assertion
    try:
        actual = resolve(doc, steps)
    except PathError as e:
        if kind == "missing":
            return None
        return f"  error: {e}"
    if kind == "exists":
        return None
    if kind == "missing":
        return f"  actual: {show(actual, 1000)}"
    if kind == "len":
        if not isinstance(actual, (list, dict, str)):
            return f"  error: {path} is {type_name(actual)}, which has no length"
        if compare(len(actual), op, want):
            return None
        return f"  actual: len = {len(actual)}: {show(actual, 200)}"
    if compare(actual, op, want):
        return None
    return f"  actual: {show(actual, 1000)}"


# --------------------------------------------------------------------------
# Canonical form
# --------------------------------------------------------------------------


def _no_duplicates(pairs):
    seen = {}
    for k, v in pairs:
        if k in seen:
            raise ValueError(f"duplicate key {k!r}")
        seen[k] = v
    return seen


def canonical_errors(raw):
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return [f"not valid UTF-8 at byte {e.start}"]
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates,
                         parse_constant=_reject_constant)
    except ValueError as e:
        return [f"not canonical JSON: {e}"]
    expected = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if text == expected:
        return []
    got_lines = text.split("\n")
    want_lines = expected.split("\n")
    for n, (g, w) in enumerate(zip(got_lines, want_lines), 1):
        if g != w:
            return [f"not canonical at line {n}:",
                    f"  actual:   {g!r}",
                    f"  expected: {w!r}"]
    return [f"not canonical: {len(got_lines)} lines where the canonical form "
            f"has {len(want_lines)} (check the trailing newline)"]


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------


def main(argv):
    # Options may come anywhere (`jsoncheck.py out.json --canonical ...`): no
    # assertion or file name of ours starts with `--`.
    canonical = False
    args = []
    for arg in argv:
        if arg in ("-h", "--help"):
            print(__doc__)
            return 0
        if arg == "--canonical":
            canonical = True
        elif arg.startswith("--"):
            print(f"jsoncheck: unknown option {arg}\n{USAGE}", file=sys.stderr)
            return 2
        else:
            args.append(arg)
    if not args:
        print(USAGE, file=sys.stderr)
        return 2
    source, texts = args[0], args[1:]
    if not texts and not canonical:
        print(f"jsoncheck: nothing to check\n{USAGE}", file=sys.stderr)
        return 2
    try:
        assertions = [parse_assertion(t) for t in texts]
    except UsageError as e:
        print(f"jsoncheck: {e}", file=sys.stderr)
        return 2

    name = "<stdin>" if source == "-" else source
    try:
        if source == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(source, "rb") as f:
                raw = f.read()
    except OSError as e:
        print(f"jsoncheck: cannot read {name}: {e.strerror}", file=sys.stderr)
        return 2

    failed = 0
    if canonical:
        errors = canonical_errors(raw)
        if errors:
            failed += 1
            print(f"jsoncheck: {name}: " + "\n".join(errors), file=sys.stderr)
    try:
        doc = json.loads(raw.decode("utf-8", errors="replace"),
                         parse_constant=_reject_constant)
    except ValueError as e:
        print(f"jsoncheck: {name}: invalid JSON: {e}", file=sys.stderr)
        return 1
    for text, assertion in zip(texts, assertions):
        message = check(doc, assertion)
        if message is not None:
            failed += 1
            print(f"jsoncheck: FAILED: {text}\n{message}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Checks the layering of docs/architecture.md on every #include of the sources.

Each folder is one library; a file may include headers of its own library and of
the libraries that library may use (transitively), never of one above it. The
header include graph must have no cycle (a cycle inside one library is also an
error: it means two headers that cannot be read apart).

usage: check_layers.py SOURCE_DIR  (exit 1 and one line per violation)
"""
import os
import re
import sys

# library -> (folders, libraries it may use directly). The order is bottom-up.
LAYERS = [
    ('support', ['support'], []),
    ('ir', ['ir'], ['support']),
    ('graph', ['ir/graph'], ['ir']),
    ('grammar', ['grammar'], ['support']),
    ('frontend', ['frontend'], ['grammar', 'support']),
    ('passes', ['passes'], ['frontend', 'ir']),
    ('runtime', ['runtime'], ['graph']),
    ('grad', ['runtime/grad'], ['runtime']),
    ('ort', ['runtime/ort'], ['runtime']),
    ('eval', ['runtime/eval'], ['ort']),
    ('transforms', ['transforms'], ['runtime']),
    ('backends', ['backends'], ['ir']),
    ('plan', ['plan'], ['graph']),
    ('quant_core', ['quant/core'], ['plan', 'runtime', 'grad']),
    ('quant_ptq', ['quant/ptq'], ['quant_core', 'transforms']),
    ('quant_search', ['quant/search'], ['quant_ptq']),
    ('quant_learn', ['quant/learn'], ['quant_ptq']),
    ('quant', ['quant/pipeline'], ['quant_search', 'quant_learn']),
    ('driver', ['tools/tpcc'], ['passes', 'backends', 'quant', 'eval']),
]
SOURCE_DIRS = [f for _, folders, _ in LAYERS for f in folders]


def library_of(path):
    """The library of a repository-relative path: the longest matching folder."""
    best = None
    for name, folders, _ in LAYERS:
        for f in folders:
            if path.startswith(f + '/') and (best is None or len(f) > len(best[1])):
                best = (name, f)
    return best[0] if best else None


def allowed():
    uses = {name: set(deps) for name, _, deps in LAYERS}
    closure = {}
    for name, _, _ in LAYERS:  # bottom-up: every dependency is already closed
        c = {name}
        for d in uses[name]:
            c |= closure[d]
        closure[name] = c
    return closure


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else '.')
    closure = allowed()
    errors = []
    graph = {}
    files = []
    for d in SOURCE_DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            for n in names:
                if n.endswith(('.h', '.cpp', '.def')):
                    files.append(os.path.relpath(os.path.join(dirpath, n), root))
    for rel in sorted(set(files)):
        lib = library_of(rel)
        with open(os.path.join(root, rel), encoding='utf-8') as fh:
            for lineno, line in enumerate(fh, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                target = library_of(inc)
                if target is None:
                    continue  # generated or third-party headers
                if not os.path.exists(os.path.join(root, inc)):
                    continue
                graph.setdefault(rel, []).append(inc)
                if target not in closure[lib]:
                    errors.append(f'{rel}:{lineno}: {lib} may not include {inc} (library {target})')
    # Cycles among headers (depth-first search with colours).
    colour = {}
    stack = []

    def visit(h):
        colour[h] = 1
        stack.append(h)
        for nxt in graph.get(h, []):
            if not nxt.endswith('.h'):
                continue
            if colour.get(nxt) == 1:
                cyc = stack[stack.index(nxt):] + [nxt]
                errors.append('include cycle: ' + ' -> '.join(cyc))
            elif colour.get(nxt) is None:
                visit(nxt)
        stack.pop()
        colour[h] = 2

    for h in sorted(graph):
        if h.endswith('.h') and colour.get(h) is None:
            visit(h)
    for e in errors:
        print(e)
    checked = sum(len(v) for v in graph.values())
    print(f'check_layers: {len(files)} files, {checked} includes, {len(errors)} violations')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/env python3
"""Checks the layering of docs/architecture.md on every #include of the sources.

Each folder is one library; a file may include headers of its own library and of
the libraries that library may use (transitively), never of one above it. The
header include graph must have no cycle (a cycle inside one library is also an
error: it means two headers that cannot be read apart).

usage: check_layers.py SOURCE_DIR  (exit 1 and one line per violation)
       check_layers.py --self-test   (the checker finds an upward include and a cycle)
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


def check(root):
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
    checked = sum(len(v) for v in graph.values())
    return errors, len(files), checked


def self_test():
    """A tree with one upward include and one header cycle: both must be found."""
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        def write(path, *includes):
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), 'w') as f:
                f.writelines(f'#include "{i}"\n' for i in includes)
        write('plan/Plan.h')
        write('quant/core/A.h', 'quant/core/B.h')
        write('quant/core/B.h', 'quant/core/A.h')         # a cycle
        write('quant/pipeline/P.h', 'plan/Plan.h')        # fine: down
        write('plan/Planner.cpp', 'quant/pipeline/P.h')   # upward
        errors, _, _ = check(root)
        upward = [e for e in errors if 'plan may not include quant/pipeline/P.h' in e]
        cycles = [e for e in errors if e.startswith('include cycle:')]
        ok = len(upward) == 1 and len(cycles) == 1 and len(errors) == 2
        print('check_layers self-test:', 'ok' if ok else 'FAILED', errors)
        return 0 if ok else 1


def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else '.')
    errors, files, checked = check(root)
    for e in errors:
        print(e)
    print(f'check_layers: {files} files, {checked} includes, {len(errors)} violations')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())

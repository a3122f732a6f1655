#!/usr/bin/env python3
"""Import circles between the files of one Rust crate.

Builds the file-level graph of every path a file names (`use` items, grouped ones expanded, and
paths in code: `crate::a::b`, `super::x`, `self::y`, `child::z`), each resolved to the deepest
module file it reaches, and prints the strongly connected components of more than one file
(with the edges inside each). A facade (`mod.rs`, `lib.rs`) that re-exports its children counts
as importing them, so a child that imports through its facade closes a circle. Comments and
string literals are ignored; test modules count (`--no-tests` leaves `#[cfg(test)] mod` blocks
out); `-v` also prints the whole graph. Exits 1 when there is a circle.

Usage: scripts/test/import-circles.py CRATE/src [--no-tests] [-v]
"""
import os, re, sys
from collections import defaultdict

from rust_source import strip

if len(sys.argv) < 2 or sys.argv[1].startswith('-'):
    sys.exit(__doc__)
root = os.path.abspath(sys.argv[1])
skip_tests = '--no-tests' in sys.argv

def split_inline_mods(src):
    """(code outside inline `mod x { }` blocks, [(name, block body)])"""
    out = []; inner = []; i = 0
    for m in re.finditer(r'(#\[cfg\(test\)\]\s*)?(pub(\([^)]*\))?\s+)?mod\s+(\w+)\s*\{', src):
        if m.start() < i: continue
        out.append(src[i:m.start()]); depth = 0; j = m.end() - 1
        while j < len(src):
            if src[j] == '{': depth += 1
            elif src[j] == '}':
                depth -= 1
                if depth == 0: break
            j += 1
        inner.append((m.group(4), src[m.end():j], bool(m.group(1))))
        i = j + 1
    out.append(src[i:]); return ''.join(out), inner

# module path (tuple) -> file
files = {}
for d, _, fs in os.walk(root):
    for f in fs:
        if not f.endswith('.rs'): continue
        p = os.path.join(d, f); rel = os.path.relpath(p, root)[:-3].split(os.sep)
        if rel[0] == 'bin': continue
        if rel[-1] in ('mod', 'lib', 'main'): rel = rel[:-1]
        files[tuple(rel)] = os.path.relpath(p, root)

# Modules declared with `#[path = "..."]` live where the attribute says.
for mod, f in list(files.items()):
    text = open(os.path.join(root, f)).read()
    for m in re.finditer(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;', text):
        target = os.path.normpath(os.path.join(os.path.dirname(os.path.join(root, f)), m.group(1)))
        files[mod + (m.group(2),)] = os.path.relpath(target, root)

def expand(tree):
    """'a::{b, c::{d, e}}' -> ['a::b', 'a::c::d', 'a::c::e']"""
    tree = tree.strip()
    i = tree.find('{')
    if i < 0: return [tree]
    prefix = tree[:i]; body = tree[i+1:tree.rfind('}')]
    parts, depth, cur = [], 0, ''
    for ch in body:
        if ch == ',' and depth == 0: parts.append(cur); cur = ''; continue
        depth += ch == '{'; depth -= ch == '}'; cur += ch
    parts.append(cur)
    return [x for p in parts if p.strip() for x in expand(prefix + p.strip())]

def resolve(mod, path):
    segs = [s.strip() for s in path.split('::')]
    segs = [re.sub(r'\s+as\s+\w+$', '', s) for s in segs]
    if segs[0] == 'crate': base, segs = (), segs[1:]
    elif segs[0] in ('super', 'self'):
        base = mod
        while segs and segs[0] in ('super', 'self'):
            if segs[0] == 'super': base = base[:-1]
            segs = segs[1:]
    elif mod + (segs[0],) in files: base = mod
    elif mod[:-1] + (segs[0],) in files and mod not in files: base = mod[:-1]
    else: return None
    best = None
    for k in range(len(base), -1, -1):
        if base[:k] in files: best = base[:k]; break
    cur = base
    for s in segs:
        cur = cur + (s,)
        if cur in files: best = cur
        else: break
    return best

edges = defaultdict(set)
for mod, f in files.items():
    top, inner = split_inline_mods(strip(open(os.path.join(root, f)).read()))
    parts = [(mod, top)] + [(mod + (name,), body) for name, body, is_test in inner
                            if not (skip_tests and is_test)]
    for scope, src in parts:
        paths = []
        for m in re.finditer(r'\buse\s+([^;]*);', src):
            paths += expand(m.group(1))
        for m in re.finditer(r'(?<![\w:])((?:\w+)(?:\s*::\s*\w+)+)', src):
            paths.append(re.sub(r'\s', '', m.group(1)))
        for p in paths:
            t = resolve(scope, p)
            if t is not None and t != mod: edges[mod].add(t)

# Tarjan
index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]
def visit(v):
    index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
    for w in edges[v]:
        if w not in index: visit(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        c = []
        while True:
            w = stack.pop(); on.discard(w); c.append(w)
            if w == v: break
        if len(c) > 1: sccs.append(c)
sys.setrecursionlimit(10000)
for v in list(files): 
    if v not in index: visit(v)
for c in sccs:
    names = sorted(files[m] for m in c)
    print(f'circle of {len(c)} files: ' + ', '.join(names))
    cs = set(c)
    for m in sorted(c):
        print('   ', files[m], '->', ', '.join(sorted(files[t] for t in edges[m] if t in cs)))
if '-v' in sys.argv:
    for m in sorted(files):
        print(files[m], '->', ', '.join(sorted(files[t] for t in edges[m])))
sys.exit(1 if sccs else 0)

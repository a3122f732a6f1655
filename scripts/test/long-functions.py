#!/usr/bin/env python3
"""Rust functions longer than a limit.

Walks the given directories for `.rs` files and prints every function whose body runs over the
limit, counted from its `fn` line through its closing brace (attributes and doc comments above
it do not count; a nested function counts in its own right and in its parent). Test code is
left out: items under `#[cfg(test)]` (inline blocks and the files their `mod x;` names),
`tests/` and `benches/` folders, and `third_party/`; kernels are `.cl` files and never read.
Comments and string literals are ignored. Exits 1 when it finds one.

DIRs are relative to the repository root.

Usage: scripts/test/long-functions.py DIR... [--max N]   (N defaults to 120)
"""
import os, re, sys

from rust_source import blank, strip

SKIPPED_DIRS = {'tests', 'benches', 'third_party', 'target'}


def parse_args(argv):
    dirs, limit, i = [], 120, 0
    while i < len(argv):
        if argv[i] == '--max' and i + 1 < len(argv) and argv[i + 1].isdigit():
            limit = int(argv[i + 1]); i += 2
        elif argv[i].startswith('-'):
            sys.exit(__doc__)
        else:
            dirs.append(argv[i]); i += 1
    if not dirs:
        sys.exit(__doc__)
    return dirs, limit


def item_end(code, start):
    """Index of the `;` or matching `}` that ends the item beginning at `start`, and which it was."""
    depth, i = 0, start
    while i < len(code):
        c = code[i]
        if c in '([': depth += 1
        elif c in ')]': depth -= 1
        elif depth == 0 and c == ';': return i, ';'
        elif depth == 0 and c == '}': return i - 1, ';'  # the enclosing block closes first
        elif depth == 0 and c == '{':
            return matching_brace(code, i), '{'
        i += 1
    return len(code) - 1, ';'


def matching_brace(code, open_at):
    depth = 0
    for i in range(open_at, len(code)):
        if code[i] == '{': depth += 1
        elif code[i] == '}':
            depth -= 1
            if depth == 0: return i
    return len(code) - 1


def drop_test_items(code):
    """(code with `#[cfg(test)]` items blanked, names of the `#[cfg(test)] mod x;` files)"""
    test_mods = []
    for m in re.finditer(r'#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]', code):
        if not code[m.start():m.end()].strip():
            continue  # already blanked as part of an earlier test item
        end, kind = item_end(code, m.end())
        decl = re.match(r'(\s*#\s*\[[^\]]*\])*\s*(pub(\([^)]*\))?\s+)?mod\s+(\w+)\s*;', code[m.end():end + 1])
        if kind == ';' and decl:
            test_mods.append(decl.group(4))
        code = code[:m.start()] + blank(code[m.start():end + 1]) + code[end + 1:]
    return code, test_mods


def long_functions(code, limit):
    """[(name, first line, length in lines)] of the functions over `limit` lines."""
    found = []
    for m in re.finditer(r'\bfn\s+(\w+)', code):
        end, kind = item_end(code, m.end())
        if kind != '{':
            continue  # a declaration without a body
        first = code.count('\n', 0, m.start()) + 1
        length = code.count('\n', m.start(), end) + 1
        if length > limit:
            found.append((m.group(1), first, length))
    return found


def child_module_dir(path):
    stem, _ = os.path.splitext(os.path.basename(path))
    folder = os.path.dirname(path)
    return folder if stem in ('mod', 'lib', 'main') else os.path.join(folder, stem)


def scan(root, limit):
    files = []
    for folder, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in SKIPPED_DIRS)
        files += [os.path.join(folder, n) for n in sorted(names) if n.endswith('.rs')]
    parsed = {}
    for path in files:
        with open(path, encoding='utf-8') as f:
            parsed[path] = drop_test_items(strip(f.read()))
    test_files = set()
    for path, (_, test_mods) in parsed.items():
        for name in test_mods:
            base = os.path.join(child_module_dir(path), name)
            test_files.update(p for p in files
                              if p in (base + '.rs', os.path.join(base, 'mod.rs'))
                              or p.startswith(base + os.sep))
    return [(path, *hit) for path in files if path not in test_files
            for hit in long_functions(parsed[path][0], limit)]


def main():
    dirs, limit = parse_args(sys.argv[1:])
    os.chdir(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    reports = [r for d in dirs for r in scan(os.path.normpath(d), limit)]
    for path, name, line, length in reports:
        print(f'{path}:{line}: fn {name} is {length} lines (limit {limit})')
    print(f'{len(reports)} function(s) over {limit} lines in {" ".join(dirs)}', file=sys.stderr)
    sys.exit(1 if reports else 0)


if __name__ == '__main__':
    main()

"""Rust source with its comments, string and char literals blanked out (a small scanner), for
the structure checks of `make structure-check` (import-circles.py, long-functions.py)."""
import re


def blank(text):
    """The same text with every character but newlines turned into a space."""
    return re.sub(r'[^\n]', ' ', text)


def strip(src):
    """Source with comments, string and char literals blanked out, line breaks kept."""
    out, i, n = [], 0, len(src)
    char_lit = re.compile(r"'(\\.[^']*|[^'\\])'")
    raw_str = re.compile(r'b?r(#*)"')
    while i < n:
        c = src[i]
        if src.startswith('//', i):
            j = src.find('\n', i); j = n if j < 0 else j
            out.append(blank(src[i:j])); i = j
        elif src.startswith('/*', i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith('/*', j): depth += 1; j += 2
                elif src.startswith('*/', j): depth -= 1; j += 2
                else: j += 1
            out.append(blank(src[i:j])); i = j
        elif c in 'br' and raw_str.match(src, i) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == '_')):
            m = raw_str.match(src, i); close = '"' + m.group(1)
            j = src.find(close, m.end()); j = n if j < 0 else j + len(close)
            out.append('""' + blank(src[i + 2:j])); i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == '\\' else 1
            j += 1
            out.append('""' + blank(src[i + 2:j])); i = j
        elif c == "'" and char_lit.match(src, i):
            j = char_lit.match(src, i).end()
            out.append("' '" + blank(src[i + 3:j])); i = j
        else:
            out.append(c); i += 1
    return ''.join(out)

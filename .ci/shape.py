#!/usr/bin/env python3
"""Code shape report: source files over a line limit and functions over a line limit.

Usage: python3 .ci/shape.py [--file-limit N] [--fn-limit N] [--prod-only] [--check] [paths...]

Functions are found by a small Rust lexer (comments, strings, raw strings and char literals are
skipped) that matches each `fn` item's body braces. `--prod-only` skips `#[cfg(test)]` modules,
files under `tests/` directories and files named `tests.rs`. `--check` exits 1 when anything is
over a limit (for CI); without it the report is informational.
"""

import argparse
import os
import re
import sys


def strip_code(text):
    """Returns text with comments, strings and char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 260]) and not (
            i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")
        ):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:i + 12])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")
TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{")


def block_end(code, open_idx):
    depth = 0
    for j in range(open_idx, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def functions(code):
    """Yields (name, start_line, line_count) for every fn with a body."""
    for m in FN.finditer(code):
        # The body opens at the first `{` after the signature unless a `;` comes first.
        j = m.end()
        depth = 0
        while j < len(code):
            ch = code[j]
            if ch in "(<[":
                depth += 1
            elif ch in ")>]":
                depth = max(0, depth - 1) if not (ch == ">" and code[j - 1] == "-") else depth
            elif ch == ";" and depth == 0:
                j = -1
                break
            elif ch == "{" and depth == 0:
                break
            j += 1
        if j < 0 or j >= len(code):
            continue
        end = block_end(code, j)
        start_line = code.count("\n", 0, m.start()) + 1
        end_line = code.count("\n", 0, end) + 1
        yield m.group(1), start_line, end_line - start_line + 1


def test_ranges(code):
    ranges = []
    for m in TEST_MOD.finditer(code):
        ranges.append((m.start(), block_end(code, m.end() - 1)))
    return ranges


def is_test_file(path):
    parts = path.split(os.sep)
    return "tests" in parts[:-1] or parts[-1] == "tests.rs"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--file-limit", type=int, default=800)
    ap.add_argument("--fn-limit", type=int, default=120)
    ap.add_argument("--prod-only", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("paths", nargs="*", default=["src"])
    args = ap.parse_args()

    files = []
    for root in args.paths:
        if os.path.isfile(root):
            files.append(root)
            continue
        for dirpath, _, names in os.walk(root):
            files += [os.path.join(dirpath, f) for f in names if f.endswith(".rs")]
    files.sort()

    big_files, big_fns = [], []
    for path in files:
        if args.prod_only and is_test_file(path):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        lines = text.count("\n")
        if lines > args.file_limit:
            big_files.append((lines, path))
        code = strip_code(text)
        tests = test_ranges(code) if args.prod_only else []
        for name, line, count in functions(code):
            if count <= args.fn_limit:
                continue
            offset = len("\n".join(text.split("\n")[: line - 1]))
            if any(a <= offset <= b for a, b in tests):
                continue
            big_fns.append((count, f"{path}:{line} {name}"))

    print(f"files over {args.file_limit} lines: {len(big_files)}")
    for lines, path in sorted(big_files, reverse=True):
        print(f"  {lines:5} {path}")
    print(f"functions over {args.fn_limit} lines: {len(big_fns)}")
    for count, where in sorted(big_fns, reverse=True):
        print(f"  {count:5} {where}")
    if args.check and (big_files or big_fns):
        sys.exit(1)


if __name__ == "__main__":
    main()

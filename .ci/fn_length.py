#!/usr/bin/env python3
"""Fails when a Rust function in the workspace is longer than the limit (100 lines).

A function runs from its `fn` line to the line of its closing brace; braces inside
strings, chars and comments are skipped. Prints each offender as path:line name (n lines).
"""
import os
import re
import sys

LIMIT = int(os.environ.get("FN_LINES_MAX", "100"))
FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+\"[^\"]*\"\s+)?fn\s+(\w+)")


def strip(line, state):
    """Removes string, char and comment contents; `state` carries block comments and
    multi-line strings across lines."""
    out = []
    i = 0
    while i < len(line):
        c = line[i]
        if state["block"]:
            if line.startswith("*/", i):
                state["block"] -= 1
                i += 2
            elif line.startswith("/*", i):
                state["block"] += 1
                i += 2
            else:
                i += 1
            continue
        if state["raw"] is not None:
            end = '"' + "#" * state["raw"]
            j = line.find(end, i)
            if j < 0:
                return "".join(out)
            i = j + len(end)
            state["raw"] = None
            continue
        if state["str"]:
            if c == "\\":
                i += 2
            elif c == '"':
                state["str"] = False
                i += 1
            else:
                i += 1
            continue
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            state["block"] += 1
            i += 2
            continue
        m = re.match(r'b?r(#*)"', line[i:])
        if m and (i == 0 or not (line[i - 1].isalnum() or line[i - 1] == "_")):
            state["raw"] = len(m.group(1))
            i += len(m.group(0))
            continue
        if c == '"':
            state["str"] = True
            i += 1
            continue
        if c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", line[i:])
            if m:
                i += len(m.group(0))
                continue
        out.append(c)
        i += 1
    return "".join(out)


def functions(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    state = {"block": 0, "str": False, "raw": None}
    code = [strip(l, state) for l in lines]
    for start, line in enumerate(code):
        m = FN.match(line)
        if not m:
            continue
        depth = 0
        opened = False
        for end in range(start, len(code)):
            for ch in code[end]:
                if ch == "{":
                    depth += 1
                    opened = True
                elif ch == "}":
                    depth -= 1
                elif ch == ";" and not opened and depth == 0:
                    break  # a declaration without a body
            else:
                if opened and depth == 0:
                    yield m.group(7), start + 1, end - start + 1
                    break
                continue
            break


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "crates"
    bad = []
    for dirpath, _, files in os.walk(root):
        if "/target" in dirpath:
            continue
        for name in files:
            if name.endswith(".rs"):
                path = os.path.join(dirpath, name)
                for fn, line, n in functions(path):
                    if n > LIMIT:
                        bad.append(f"{path}:{line} {fn} ({n} lines)")
    for b in sorted(bad):
        print(b)
    if bad:
        print(f"{len(bad)} functions longer than {LIMIT} lines", file=sys.stderr)
        return 1
    print(f"no function longer than {LIMIT} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Every file a doc or a comment names is a file of this repository.

Scans Markdown files and the comments of Rust files (lines starting with //, //!, ///)
for names of files — a word ending in .rs, .md, .py, .toml, .json, .txt or .svg, with or
without a directory part — and checks that some tracked file's path ends with it
(`pg/serve.rs` matches crates/server/src/pg/serve.rs). Names PostgreSQL's own sources
(`.c`, `.h`) are not checked: they are cited as PostgreSQL's, not as ours. Prints each
dangling reference and exits 1 if there is one.
"""
import re
import subprocess
import sys

EXT = r"(?:rs|md|py|toml|json|txt|svg)"
NAME = re.compile(r"(?<![\w./-])((?:\.\./)*[\w.-]+(?:/[\w.-]+)*\." + EXT + r")(?![\w/])")
# Names that are not files of ours: crates' own files, generated output, examples.
ALLOWED = {
    "lib.rs", "mod.rs", "main.rs", "Cargo.toml", "Cargo.lock",
    "seeds.json", "replay.json", "bufpool.json", "crash.json", "out.json", "x.json",
    "standby.json",  # written by `strata bench standby --json` (docs/BENCHMARKS.md)
    "send_wal.rs",  # neon's safekeeper, cited in issue text as a public example
}


def tracked():
    out = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True)
    return out.stdout.split()


def texts(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if path.endswith(".rs"):
                s = line.strip()
                if not s.startswith("//"):
                    continue
            yield n, line


def main():
    files = tracked()
    bad = []
    for path in files:
        if not (path.endswith(".md") or path.endswith(".rs")):
            continue
        for n, line in texts(path):
            for m in NAME.finditer(line):
                ref = m.group(1)
                while ref.startswith("../"):
                    ref = ref[3:]
                if ref.split("/")[-1] in ALLOWED or ref.startswith("."):
                    continue
                if "*" in ref or "<" in ref:
                    continue
                if not any(f == ref or f.endswith("/" + ref) for f in files):
                    bad.append(f"{path}:{n}: {m.group(1)}")
    for b in bad:
        print(b)
    if bad:
        print(f"{len(bad)} references to files that are not in this repository")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

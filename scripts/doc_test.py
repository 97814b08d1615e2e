#!/usr/bin/env python3
"""The doc-test: every shell block of README.md and docs/*.md is marked, the
marked `run` blocks run, and every page and relative link is reachable.

Convention (docs/testing.md, "The doc-test"): a fenced block whose info
string is sh, bash, shell, console or empty is a shell block and needs a
marker on the line just before its fence:

  <!-- doc-test: run -->                   run from the repository root
  <!-- doc-test: output -->                output only, nothing to run
  <!-- doc-test: long (COMMAND) -->        too slow here; COMMAND runs it
  <!-- doc-test: needs hardware -->        a board, a cluster or a network
  <!-- doc-test: needs cross tools -->     cross compilers or QEMU

A `run` block is a bash script (`set -e -o pipefail`); in a console block
the lines starting with `$ ` are the commands and the rest is their output.
A file's run blocks run in order in one scratch directory that holds links
to the repository's top-level entries (so `./fedrt`, examples/ and tests/
work) and to the release build, so outputs land in the scratch directory.

Usage: doc_test.py [--root DIR] [--build DIR] [--check-only] [--timeout S] [--skip PAGE]...
Exit status 0 when everything passes, 1 with one line per problem.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SHELL_LANGS = {"", "sh", "bash", "shell", "console"}
MARKER = re.compile(r"^<!--\s*doc-test:\s*(.*?)\s*-->\s*$")
KINDS = ("run", "output", "long", "needs hardware", "needs cross tools")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([A-Za-z0-9_+-]*)")
LINK = re.compile(r"\]\(([^)\s]+)\)")


class Block:
    """One fenced shell block: where it is, its marker and its text."""

    def __init__(self, path, line, lang, marker, text):
        self.path, self.line, self.lang = path, line, lang
        self.marker, self.text = marker, text

    def where(self):
        return f"{self.path}:{self.line}"


def read(path):
    """A file's text."""
    with open(path, encoding="utf-8") as f:
        return f.read()


def doc_files(root):
    """README.md and every docs/*.md, relative to root."""
    docs = sorted(f for f in os.listdir(os.path.join(root, "docs")) if f.endswith(".md"))
    return ["README.md"] + [os.path.join("docs", f) for f in docs]


def parse_blocks(root, rel):
    """The shell blocks of one page, with the marker line before each fence."""
    lines = read(os.path.join(root, rel)).split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        start, body = i, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        if lang not in SHELL_LANGS:
            continue
        prev = lines[start - 1].strip() if start > 0 else ""
        mm = MARKER.match(prev)
        blocks.append(Block(rel, start + 1, lang, mm.group(1) if mm else None, "\n".join(body)))
    return blocks


def marker_problem(block):
    """Why a block's marker is missing or unknown, or None."""
    if block.marker is None:
        return (f"{block.where()}: shell block without a doc-test marker "
                f"(put '<!-- doc-test: run|output|long (COMMAND)|needs hardware|needs cross tools -->' "
                f"on the line before the fence)")
    kind = block.marker.split("(")[0].strip()
    if kind not in KINDS:
        return f"{block.where()}: unknown doc-test marker '{block.marker}' (known: {', '.join(KINDS)})"
    if kind == "long" and "(" not in block.marker:
        return f"{block.where()}: 'long' needs the command that runs it elsewhere: long (COMMAND)"
    return None


def script_of(block):
    """The bash text a run block executes."""
    if block.lang != "console":
        return block.text
    cmds, cont = [], False
    for line in block.text.split("\n"):
        if line.startswith("$ ") or cont:
            cmd = line[2:] if line.startswith("$ ") and not cont else line
            cmds.append(cmd)
            cont = cmd.rstrip().endswith("\\")
    return "\n".join(cmds)


def link_problems(root, files):
    """Relative links to missing files, and docs pages docs/README.md does not link."""
    problems = []
    for rel in files:
        text = read(os.path.join(root, rel))
        for n, line in enumerate(text.split("\n"), 1):
            for target in LINK.findall(line):
                if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                    continue
                path = target.split("#")[0]
                full = os.path.normpath(os.path.join(root, os.path.dirname(rel), path))
                if not os.path.exists(full):
                    problems.append(f"{rel}:{n}: link '{target}' points to no file")
    index = os.path.join(root, "docs", "README.md")
    if not os.path.exists(index):
        return problems + ["docs/README.md: the index of docs/ is missing"]
    linked = {os.path.normpath(t.split("#")[0]) for t in LINK.findall(read(index))}
    for rel in files:
        name = os.path.relpath(rel, "docs")
        if rel.startswith("docs/") and name != "README.md" and name not in linked:
            problems.append(f"{rel}: not linked from docs/README.md")
    return problems


def scratch_dir(root, build):
    """A directory with links to the repository's entries and the release build."""
    d = tempfile.mkdtemp(prefix="fedrt-doc-test-")
    for entry in os.listdir(root):
        if entry in ("build", "out", ".git"):
            continue
        os.symlink(os.path.join(root, entry), os.path.join(d, entry))
    os.mkdir(os.path.join(d, "build"))
    os.symlink(os.path.abspath(build), os.path.join(d, "build", "release"))
    return d


def run_file_blocks(root, build, blocks, timeout):
    """Runs one page's run blocks in order in one scratch directory."""
    problems, d = [], scratch_dir(root, build)
    # HOME is the scratch directory too: a block may install into ~/.local.
    env = dict(os.environ, FEDRT_SKIP_SETUP="1", HOME=d)
    try:
        for b in blocks:
            script = "set -e -o pipefail\n" + script_of(b)
            try:
                p = subprocess.run(["bash", "-c", script], cwd=d, env=env, timeout=timeout,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            except subprocess.TimeoutExpired:
                problems.append(f"{b.where()}: run block took over {timeout} s")
                continue
            print(f"doc-test: {b.where()}: exit {p.returncode}", flush=True)
            if p.returncode != 0:
                tail = "\n".join((p.stderr or p.stdout).strip().split("\n")[-15:])
                problems.append(f"{b.where()}: run block exited {p.returncode}:\n{tail}")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--build", help="the release build directory (default ROOT/build/release)")
    ap.add_argument("--check-only", action="store_true", help="markers and links only, run nothing")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per run block (default 120)")
    ap.add_argument("--skip", action="append", default=[],
                    help="a page whose blocks are not checked (e.g. one another branch rewrites)")
    a = ap.parse_args(argv)
    root = os.path.abspath(a.root)
    build = a.build or os.path.join(root, "build", "release")
    files = doc_files(root)
    for s in a.skip:
        if s not in files:
            print(f"doc-test: --skip: '{s}' is not one of the pages", file=sys.stderr)
            return 2
    blocks = [b for f in files if f not in a.skip for b in parse_blocks(root, f)]
    problems = [p for p in map(marker_problem, blocks) if p] + link_problems(root, files)
    runs = [b for b in blocks if b.marker == "run"]
    if not a.check_only and not problems:
        if not os.path.isdir(os.path.join(build, "bin")):
            problems.append(f"--build: '{build}' has no bin/ (build the release preset first)")
        else:
            for f in files:
                problems += run_file_blocks(root, build, [b for b in runs if b.path == f], a.timeout)
    for p in problems:
        print(f"doc-test: {p}", file=sys.stderr)
    print(f"doc-test: {len(files)} pages, {len(blocks)} shell blocks, {len(runs)} run, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

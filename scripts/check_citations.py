#!/usr/bin/env python3
"""Fails when a comment or a document cites something that does not exist.

    scripts/check_citations.py [ROOT]      check the repository (default: this one)
    scripts/check_citations.py --self-test a small tree with known dead citations

Checked in every tracked text file (git ls-files) of the repository:
  - a repository path (runtime/..., tests/..., docs/..., scripts/..., and the
    other top-level folders, or an include path fedrt/... under
    runtime/include/) names a file or folder that exists;
  - a section cited as  PATH.md, "Heading"  or  PATH.md "Heading"  (e.g.
    docs/architecture.md, "Layers") is a Markdown heading of that document (compared without case, backticks
    or trailing punctuation);
  - a relative Markdown link [text](path) in a .md file resolves.
Patterns (a path containing or followed by <x>, {a,b}, *, $VAR, ..., N)
are not checked. Prints one line per dead citation, FILE:LINE:
what, and exits 1 if there is any. Run by ctest (citations_exist).
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_common  # noqa: E402  (scripts/ is not a package)

_args = [a for a in sys.argv[1:] if not a.startswith("--")]
ROOT = os.path.abspath(_args[0] if _args else os.path.join(os.path.dirname(__file__), ".."))
TOP = ("runtime", "platform", "examples", "toolchains", "tests", "docs", "scripts", "cmake", "bench", ".ci")
TEXT = (".h", ".hpp", ".c", ".cc", ".cpp", ".py", ".sh", ".cmake", ".md", ".txt", ".toml", ".proto", ".js",
        ".html", ".css", ".json", ".options", ".ld", ".S", ".s")
PATH_RE = re.compile(r"(?<![\w./-])((?:%s)/[\w./+-]*[\w+])" % "|".join(re.escape(t) for t in TOP))
INCLUDE_RE = re.compile(r"(?<![\w./-])(fedrt/[\w./-]*\.h)\b")
SECTION_RE = re.compile(r"((?:[\w.-]+/)*[\w.-]+\.md),?\s+\"([^\"]+)\"")
LINK_RE = re.compile(r"\[[^\]]*\]\(([^)\s#]+)(?:#[^)]*)?\)")
PLACEHOLDER = re.compile(r"[<>{}*$]|\.\.\.|(^|/)N(/|$)|XXXX")


# The two checkers' self-tests and the doc-test's tests cite dead paths on purpose.
NOT_CHECKED = ("scripts/check_citations.py", "scripts/check_includes.py", "tests/cli/doc_test_test.py")


def is_text(name):
    if name in NOT_CHECKED:
        return False
    return name.endswith(TEXT) or os.path.basename(name) in ("CMakeLists.txt", "fedrt", "run")


def tracked_files():
    """The repository's files: git's list, or a walk of the tree outside a checkout."""
    git = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True)
    if git.returncode == 0 and os.path.isdir(os.path.join(ROOT, ".git")):
        names = [n for n in git.stdout.decode().split("\0") if n]
    else:
        names = []
        for d, subdirs, files in os.walk(ROOT):
            subdirs[:] = [s for s in subdirs if s not in (".git", "build", "out", "Testing", "__pycache__")]
            names += [os.path.relpath(os.path.join(d, f), ROOT) for f in files]
    return sorted(n for n in names if is_text(n))


def normalise(heading):
    h = heading.replace("`", "").replace("*", "").strip().lower()
    h = re.sub(r"^\d+(\.\d+)*\.?\s+", "", h)  # "1.4 Least squares" -> "least squares"
    return re.sub(r"[\s:.,;]+$", "", re.sub(r"\s+", " ", h))


def has_section(doc, section):
    """A heading of doc that is the cited section or begins with it ("MPI" -> "MPI: the simulator ...")."""
    want = normalise(section)
    return any(h == want or (h.startswith(want) and not h[len(want)].isalnum()) for h in headings(doc))


_headings = {}


def headings(doc):
    if doc not in _headings:
        found = set()
        path = os.path.join(ROOT, doc)
        if os.path.isfile(path):
            in_code = False
            with open(path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith("```"):
                        in_code = not in_code
                    elif not in_code and line.startswith("#"):
                        found.add(normalise(line.lstrip("#")))
        _headings[doc] = found
    return _headings[doc]


def exists(path):
    path = path.rstrip(".")
    return os.path.exists(os.path.join(ROOT, path))


def check_file(name):
    problems = []
    try:
        with open(os.path.join(ROOT, name), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (UnicodeDecodeError, FileNotFoundError):
        return problems
    for no, line in enumerate(lines, 1):
        for m in PATH_RE.finditer(line):
            p = m.group(1)
            rest = re.match(r"[^\s`'\"),;\]]*", line[m.end():]).group(0)
            if PLACEHOLDER.search(p + rest):
                continue  # a pattern (fedrt_*.cc, device-{id}.csv), not a path
                continue
            if not exists(p):
                problems.append(f"{name}:{no}: no such path: {p}")
        for m in INCLUDE_RE.finditer(line):
            p = m.group(1)
            if PLACEHOLDER.search(p):
                continue
            if not os.path.exists(os.path.join(ROOT, "runtime/include", p)) and not exists(p):
                problems.append(f"{name}:{no}: no such header: {p} (runtime/include/{p})")
        for m in SECTION_RE.finditer(line):
            doc, section = m.group(1), m.group(2)
            if exists(doc) and not has_section(doc, section):
                problems.append(f"{name}:{no}: {doc} has no section \"{section}\"")
        if name.endswith(".md"):
            for m in LINK_RE.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z]+:", target) or PLACEHOLDER.search(target):
                    continue
                resolved = os.path.normpath(os.path.join(os.path.dirname(name), target))
                if not os.path.exists(os.path.join(ROOT, resolved)):
                    problems.append(f"{name}:{no}: broken link: {target}")
    return problems


def check_tree():
    problems = []
    for name in tracked_files():
        problems.extend(check_file(name))
    return problems


def self_test():
    """The checker on a small tree with one citation of each kind dead and one alive."""
    global ROOT
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        ROOT = tmp
        _headings.clear()
        files = {
            "docs/guide.md": "# Guide\n\n## Round protocol\n\nSee [the notes](notes.md) and [code](../runtime/a.cc).\n",
            "runtime/a.cc": "// runtime/a.cc (docs/guide.md, \"Round protocol\"); runtime/b.cc; fedrt/x.h\n"
                            "// docs/guide.md \"Rounds\"; tests/*.cc and device-{id}.csv are patterns\n",
        }
        check_common.write_tree(tmp, files)
        got = check_tree()
    want = [
        "docs/guide.md:5: broken link: notes.md",
        "runtime/a.cc:1: no such path: runtime/b.cc",
        "runtime/a.cc:1: no such header: fedrt/x.h (runtime/include/fedrt/x.h)",
        "runtime/a.cc:2: docs/guide.md has no section \"Rounds\"",
    ]
    return check_common.self_test_result("check_citations", got, want, "the 4 dead citations found, nothing else")

def main():
    if "--self-test" in sys.argv[1:]:
        return self_test()
    return check_common.report("check_citations", check_tree(), "dead citation(s)", "every citation resolves")


if __name__ == "__main__":
    sys.exit(main())

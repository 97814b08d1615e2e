#!/usr/bin/env python3
"""Fails when an #include crosses the module layers of docs/architecture.md.

    scripts/check_includes.py [ROOT]      check the repository (default: this one)
    scripts/check_includes.py --self-test a small tree with known violations

docs/architecture.md, "Module dependencies", holds two tables: the modules
(name, the folders whose files belong to it, the modules it may include) and
the exceptions still to remove (a file and the header it includes against the
layers). The check:
  - reads every "#include" of a C or C++ file under runtime/, platform/ and
    bench/; an include of "fedrt/<dir>/..." belongs to the module whose
    folders hold runtime/include/fedrt/<dir>, a relative include to the
    module of the file it names; system and third-party headers are not
    checked;
  - fails on an include from one module to another that the table does not
    allow, unless it is a listed exception;
  - fails when the allowed dependencies form a cycle (the layers must be a
    partial order), when a folder belongs to no module or to two, and when an
    exception no longer occurs (the list only shrinks).
Prints one line per problem and exits 1 if there is any. Run by ctest
(includes_follow_layers).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_common  # noqa: E402  (scripts/ is not a package)

_args = [a for a in sys.argv[1:] if not a.startswith("--")]
ROOT = os.path.abspath(_args[0] if _args else os.path.join(os.path.dirname(__file__), ".."))
SCANNED = ("runtime", "platform", "bench")
SOURCES = (".h", ".hpp", ".c", ".cc", ".cpp")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
DOC = "docs/architecture.md"
SECTION = "## Module dependencies"


def table_rows(lines, start):
    """The rows of the Markdown table that begins at or after lines[start]."""
    rows, i = [], start
    while i < len(lines) and not lines[i].startswith("|"):
        i += 1
    while i < len(lines) and lines[i].startswith("|"):
        cells = [c.strip().strip("`") for c in lines[i].strip().strip("|").split("|")]
        if not all(set(c) <= set("-: ") for c in cells):
            rows.append(cells)
        i += 1
    return rows[1:], i  # without the header row


def read_layers():
    """modules {name: (folders, allowed)}, exceptions {(file, header)}, problems."""
    with open(os.path.join(ROOT, DOC), encoding="utf-8") as f:
        lines = f.read().splitlines()
    if SECTION not in lines:
        return {}, set(), [f"{DOC}: no section '{SECTION}'"]
    at = lines.index(SECTION)
    module_rows, end = table_rows(lines, at)
    exception_rows, _ = table_rows(lines, end)
    modules, problems = {}, []
    for row in module_rows:
        name, folders, allowed = row[0], row[1].split(), row[2].replace(",", " ").split()
        modules[name] = (folders, set(a for a in allowed if a not in ("-", "any")), "any" in allowed)
    for name, (_, allowed, _any) in modules.items():
        for a in allowed - set(modules):
            problems.append(f"{DOC}: module '{name}' may include '{a}', which is not a module")
    exceptions = {(r[0], r[1]) for r in exception_rows if len(r) >= 2}
    return modules, exceptions, problems


def module_of(path, modules):
    """The module whose folder is the longest prefix of path (None: none)."""
    best, best_len = None, -1
    for name, (folders, _, _) in modules.items():
        for folder in folders:
            if (path == folder or path.startswith(folder.rstrip("/") + "/")) and len(folder) > best_len:
                best, best_len = name, len(folder)
    return best


def cycle(modules):
    """A cycle of the allowed dependencies as a list of names, or None."""
    state = {}

    def visit(m, stack):
        state[m] = 1
        for n in sorted(modules[m][1]):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n] if n in stack else [m, n]
            if n not in state:
                found = visit(n, stack + [n])
                if found:
                    return found
        state[m] = 2
        return None

    for m in sorted(modules):
        if m not in state:
            found = visit(m, [m])
            if found:
                return found
    return None


def check():
    modules, exceptions, problems = read_layers()
    if not modules:
        return problems
    found = cycle(modules)
    if found:
        problems.append(f"{DOC}: the allowed dependencies form a cycle: {' -> '.join(found)}")
    seen_exceptions = set()
    for top in SCANNED:
        for d, subdirs, files in os.walk(os.path.join(ROOT, top)):
            subdirs.sort()
            for f in sorted(files):
                if not f.endswith(SOURCES):
                    continue
                rel = os.path.relpath(os.path.join(d, f), ROOT)
                m = module_of(rel, modules)
                if m is None:
                    problems.append(f"{rel}: in no module of {DOC}")
                    continue
                with open(os.path.join(d, f), encoding="utf-8", errors="replace") as fh:
                    for no, line in enumerate(fh, 1):
                        inc = INCLUDE.match(line)
                        if not inc:
                            continue
                        target = inc.group(1)
                        if target.startswith("fedrt/"):
                            target_path = "runtime/include/" + target
                        else:
                            target_path = os.path.relpath(os.path.normpath(os.path.join(d, target)), ROOT)
                            if not os.path.exists(os.path.join(ROOT, target_path)):
                                continue  # a third-party or generated header
                        t = module_of(target_path, modules)
                        if t is None:
                            problems.append(f"{rel}:{no}: includes {target}, in no module of {DOC}")
                        elif t != m and t not in modules[m][1] and not modules[m][2]:
                            if (rel, target) in exceptions:
                                seen_exceptions.add((rel, target))
                            else:
                                problems.append(f"{rel}:{no}: module '{m}' includes {target} of module '{t}', "
                                                f"which the layers do not allow")
    for rel, target in sorted(exceptions - seen_exceptions):
        problems.append(f"{DOC}: exception '{rel}' -> '{target}' no longer occurs; remove it from the list")
    return problems


def self_test():
    """The check on a small tree: one allowed include, one against the layers, one stale exception."""
    global ROOT
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        ROOT = tmp
        files = {
            DOC: "# A\n\n" + SECTION + "\n\n| module | folders | may include |\n|---|---|---|\n"
                 "| core | runtime/include/fedrt/core runtime/src/core | - |\n"
                 "| sim | runtime/include/fedrt/sim runtime/src/sim | core |\n\n"
                 "| file | includes |\n|---|---|\n| runtime/src/core/b.cc | fedrt/sim/gone.h |\n",
            "runtime/include/fedrt/core/a.h": "#pragma once\n",
            "runtime/include/fedrt/sim/s.h": '#include "fedrt/core/a.h"\n',
            "runtime/src/core/a.cc": '#include <vector>\n#include "fedrt/core/a.h"\n#include "fedrt/sim/s.h"\n',
        }
        check_common.write_tree(tmp, files)
        got = check()
        # core may include sim, and sim core: a cycle.
        text = open(os.path.join(tmp, DOC)).read().replace("| core | runtime/include/fedrt/core runtime/src/core | - |",
                                                            "| core | runtime/include/fedrt/core runtime/src/core | sim |")
        with open(os.path.join(tmp, DOC), "w") as f:
            f.write(text)
        got_cycle = [p for p in check() if "cycle" in p]
    want = [
        "runtime/src/core/a.cc:3: module 'core' includes fedrt/sim/s.h of module 'sim', which the layers do not allow",
        f"{DOC}: exception 'runtime/src/core/b.cc' -> 'fedrt/sim/gone.h' no longer occurs; remove it from the list",
    ]
    want_cycle = [f"{DOC}: the allowed dependencies form a cycle: core -> sim -> core"]
    return check_common.self_test_result("check_includes", got + got_cycle, want + want_cycle,
                                         "the wrong include, the stale exception and the cycle found, nothing else")

def main():
    if "--self-test" in sys.argv[1:]:
        return self_test()
    return check_common.report("check_includes", check(), "problem(s)", "every include follows the layers")


if __name__ == "__main__":
    sys.exit(main())

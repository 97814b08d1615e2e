"""What scripts/check_citations.py and scripts/check_includes.py share:
writing a self-test's small tree and reporting problems the same way.
"""

import os


def write_tree(root, files):
    """Writes {relative path: text} under root, making the folders."""
    for name, text in files.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def report(prog, problems, what, all_good):
    """One line per problem, then a summary; the exit status (1 if any)."""
    for p in problems:
        print(p)
    print(f"{prog}: {len(problems)} {what}" if problems else f"{prog}: {all_good}")
    return 1 if problems else 0


def self_test_result(prog, got, want, found):
    """Compares a self-test's problems with the expected ones; the exit status."""
    if got != want:
        print(f"{prog} --self-test: FAILED\n  got:  {got}\n  want: {want}")
        return 1
    print(f"{prog} --self-test: {found}")
    return 0

#!/usr/bin/env python3
"""Tests of scripts/doc_test.py on small trees: each problem it must find is
found, named by file and line, and a clean tree passes."""
import contextlib
import shutil
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import doc_test  # noqa: E402

INDEX = "# docs\n\n- [a](a.md)\n"


class DocTestTest(unittest.TestCase):
    def tree(self, pages):
        """A repository with README.md, docs/ pages and an empty build/release/bin."""
        root = tempfile.mkdtemp(prefix="doc-test-test-")
        self.addCleanup(shutil.rmtree, root, ignore_errors=True)
        os.makedirs(os.path.join(root, "docs"))
        os.makedirs(os.path.join(root, "build", "release", "bin"))
        for rel, text in pages.items():
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        return root

    def run_doc_test(self, root, *extra):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = doc_test.main(["--root", root, "--timeout", "20", *extra])
        return rc, out.getvalue(), err.getvalue()

    def test_clean_tree_runs_its_blocks_in_order_and_passes(self):
        root = self.tree({
            "README.md": "# r\n\n<!-- doc-test: run -->\n```sh\necho 42 > made.txt\n```\n",
            "docs/README.md": INDEX,
            "docs/a.md": "# a\n\n<!-- doc-test: run -->\n```console\n$ echo hi > f.txt\nhi\n$ grep -q hi f.txt\n```\n"
                         "\n<!-- doc-test: output -->\n```\n$ not run\n```\n"
                         "\n<!-- doc-test: long (./fedrt bench) -->\n```sh\nfalse\n```\n"
                         "\n```toml\n[run]\n```\n",
        })
        rc, out, err = self.run_doc_test(root)
        self.assertEqual(rc, 0, err)
        self.assertIn("3 pages, 4 shell blocks, 2 run, 0 problems", out)
        self.assertIn("docs/a.md:4: exit 0", out)
        # Outputs land in a scratch directory, never in the repository.
        self.assertFalse(os.path.exists(os.path.join(root, "made.txt")))

    def test_unmarked_block_is_named_by_file_and_line(self):
        root = self.tree({"README.md": "# r\n\ntext\n```bash\nls\n```\n", "docs/README.md": INDEX,
                          "docs/a.md": "# a\n"})
        rc, _, err = self.run_doc_test(root, "--check-only")
        self.assertEqual(rc, 1)
        self.assertIn("README.md:4: shell block without a doc-test marker", err)

    def test_unknown_marker_and_long_without_command_are_refused(self):
        root = self.tree({"README.md": "<!-- doc-test: maybe -->\n```sh\nls\n```\n<!-- doc-test: long -->\n```sh\nls\n```\n",
                          "docs/README.md": INDEX, "docs/a.md": "# a\n"})
        rc, _, err = self.run_doc_test(root, "--check-only")
        self.assertEqual(rc, 1)
        self.assertIn("README.md:2: unknown doc-test marker 'maybe'", err)
        self.assertIn("README.md:6: 'long' needs the command", err)

    def test_failing_run_block_names_its_line_and_stderr(self):
        root = self.tree({"README.md": "# r\n", "docs/README.md": INDEX,
                          "docs/a.md": "# a\n\n<!-- doc-test: run -->\n```sh\necho fine\n"
                                       "echo 'no such input: x.csv' >&2; exit 3\necho never\n```\n"})
        rc, _, err = self.run_doc_test(root)
        self.assertEqual(rc, 1)
        self.assertIn("docs/a.md:4: run block exited 3", err)
        self.assertIn("no such input: x.csv", err)

    def test_dead_link_and_unindexed_page_are_found(self):
        root = self.tree({"README.md": "see [x](docs/missing.md)\n", "docs/README.md": INDEX,
                          "docs/a.md": "# a\n", "docs/b.md": "# b, linked from nowhere\n"})
        rc, _, err = self.run_doc_test(root, "--check-only")
        self.assertEqual(rc, 1)
        self.assertIn("README.md:1: link 'docs/missing.md' points to no file", err)
        self.assertIn("docs/b.md: not linked from docs/README.md", err)
        self.assertNotIn("docs/a.md: not linked", err)

    def test_skip_leaves_a_page_out_and_must_name_a_page(self):
        root = self.tree({"README.md": "# r\n", "docs/README.md": INDEX,
                          "docs/a.md": "# a\n\n```sh\nls\n```\n"})
        self.assertEqual(self.run_doc_test(root, "--check-only", "--skip", "docs/a.md")[0], 0)
        rc, _, err = self.run_doc_test(root, "--check-only", "--skip", "docs/nope.md")
        self.assertEqual(rc, 2)
        self.assertIn("--skip: 'docs/nope.md' is not one of the pages", err)


if __name__ == "__main__":
    unittest.main()

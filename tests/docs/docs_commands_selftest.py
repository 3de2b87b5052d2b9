"""docs_commands_test.py's own rules, on crafted pages: what it runs, what
it refuses, and that a page that is wrong fails it.

usage: docs_commands_selftest.py --bin-dir DIR --standin FILE --stubs DIR
"""

from __future__ import annotations

import argparse
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docs_commands_test as docs  # noqa: E402

ARGS = argparse.Namespace()


def page_of(text: str) -> docs.Page:
    """A crafted page that starts no daemon; `text` from its line 3."""
    return docs.parse(os.path.join(docs.ROOT, "crafted.md"),
                      "<!-- docs-test: no daemon -->\n\n" + text)


def failures(text: str) -> int:
    return docs.run_page(ARGS, page_of(text))


class DocsCommandsRules(unittest.TestCase):
    def test_a_page_whose_commands_do_as_shown_passes(self) -> None:
        self.assertEqual(failures(
            "```sh\nX=1\necho \"x is $X\"\n#> x is *\necho '{\"a\": 1}'\n"
            "# {\"a\": 1}\nfalse || [ $? -eq 1 ]\n```\n\n"
            "```python\nprint('hello')\n#> hello\n```\n"), 0)

    def test_a_failing_command_fails_the_page(self) -> None:
        self.assertEqual(failures("```sh\nfalse\n```\n"), 1)

    def test_an_answer_other_than_the_shown_one_fails(self) -> None:
        self.assertEqual(failures("```sh\necho hi\n#> bye\n```\n"), 1)
        self.assertEqual(failures("```sh\necho '{\"a\": 2}'\n# {\"a\": 1}\n```\n"), 1)

    def test_an_unmarked_block_it_would_not_run_fails(self) -> None:
        self.assertEqual(failures("```\nkubectl apply -k x\n```\n"), 1)
        self.assertEqual(failures("```go\nmain()\n```\n"), 1)

    def test_an_indented_code_block_fails(self) -> None:
        self.assertEqual(failures("Text:\n\n    leasekeeper-ctl version\n"), 1)

    def test_a_marked_block_and_displays_are_not_run(self) -> None:
        page = page_of("<!-- not run: needs Kubernetes -->\n```sh\n"
                       "kubectl apply -k x\n```\n\n```text\n$ false\n```\n\n"
                       "```cpp\nint main() {}\n```\n")
        self.assertEqual(page.commands, [])
        self.assertEqual(page.skipped, [(4, "needs Kubernetes")])
        self.assertEqual(page.problems, [])

    def test_a_command_runs_until_bash_parses_it(self) -> None:
        page = page_of("```sh\nfor i in 1 2; do\n  echo $i\ndone\n"
                       "cat <<'EOF'\n  two lines\nEOF\necho 'a\nb'\n```\n")
        self.assertEqual([c.line for c in page.commands], [4, 7, 10])

    def test_page_ports_map_to_free_ports_the_same_way_each_time(self) -> None:
        page = page_of("```sh\necho 127.0.0.1:7240 127.0.0.1:70000\n"
                       "echo 127.0.0.1:7240\n```\n")
        mapping = docs.addresses(page)
        self.assertEqual(set(mapping), {"7240"})
        self.assertEqual(docs.substitute("x 127.0.0.1:7240 127.0.0.1:70000",
                                         mapping),
                         f"x {mapping['7240']} 127.0.0.1:70000")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--standin", required=True)
    parser.add_argument("--stubs", required=True)
    args, rest = parser.parse_known_args()
    ARGS.root = os.path.abspath(docs.ROOT)
    for name in ("bin_dir", "standin", "stubs"):
        setattr(ARGS, name, os.path.abspath(getattr(args, name)))
    result = unittest.main(argv=[sys.argv[0], *rest], exit=False)
    return 0 if result.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())

"""The README's Python examples run as written and print what their comments show, and its
quick-start test command is the one CI runs.

The convention this checks, for whatever the README holds: in a ```python block, a
``print(...)`` call followed on its line by ``# text`` shows its output. The text must be
the printed line, or start with it (a value, then an explanation), or be a part of it (a
fragment of a long repr). Every such print must run exactly once.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path


README = Path(__file__).resolve().parents[1] / "README.md"
CI_SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "run"


def python_blocks(text: str | None = None) -> list[str]:
    """The fenced ```python blocks of the README (or of ``text``), in order."""
    return re.findall(r"```python\n(.*?)```", README.read_text() if text is None else text, flags=re.S)


def shown_prints(block: str) -> dict[int, tuple[int, str]]:
    """line number -> (column of the print call, the comment's text) for each ``print(...)``
    with a trailing comment."""
    comments = {
        tok.start[0]: tok.string.lstrip("#").strip()
        for tok in tokenize.generate_tokens(io.StringIO(block).readline)
        if tok.type == tokenize.COMMENT
    }
    out = {}
    for node in ast.walk(ast.parse(block)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"
                and node.lineno in comments and node.end_lineno == node.lineno):
            out[node.lineno] = (node.col_offset, comments[node.lineno])
    return out


def matches(printed: str, shown: str) -> bool:
    """The comment shows exactly what was printed, or that followed by ``: why``."""
    return printed == shown or shown.startswith(printed + ": ")


def run_blocks(blocks: list[str]) -> list[str]:
    """Run the blocks in one namespace; return one line per problem (empty when every
    commented print printed what its comment shows)."""
    namespace: dict[str, object] = {}
    problems: list[str] = []
    for i, block in enumerate(blocks):
        expected = shown_prints(block)
        printed: dict[int, list[str]] = {}

        def show(line: int, *args: object, **kwargs: object) -> None:
            text = str(kwargs.get("sep", " ")).join(str(a) for a in args)
            printed.setdefault(line, []).append(text)
            print(text)

        lines = block.splitlines()
        for line, (col, _) in expected.items():  # print(...) -> __show__(LINE, ...)
            source = lines[line - 1]
            assert source[col:].startswith("print(")
            lines[line - 1] = f"{source[:col]}__show__({line}, {source[col + len('print('):]}"
        namespace["__show__"] = show
        try:
            exec(compile("\n".join(lines), f"README.md python block {i}", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the message is the point
            problems.append(f"block {i} failed: {exc!r}\n{block}")
            continue
        for line, (_, shown) in expected.items():
            got = printed.get(line, [])
            if len(got) != 1:
                problems.append(f"block {i} line {line}: printed {len(got)} times, comment shows {shown!r}")
            elif not matches(got[0].strip(), shown):
                problems.append(f"block {i} line {line}: printed {got[0]!r}, comment shows {shown!r}")
    return problems


def test_readme_has_python_examples() -> None:
    blocks = python_blocks()
    assert len(blocks) >= 2
    assert sum(len(shown_prints(b)) for b in blocks) >= 3


def test_readme_python_examples_run() -> None:
    problems = run_blocks(python_blocks())
    assert problems == [], "\n".join(problems)


def test_a_wrong_shown_value_is_caught() -> None:
    """The checker itself: a wrong comment, a print that never runs, a print that runs
    twice, and a print of only the start of what the comment shows (a move name without
    its symbol) are all reported; a right one and a value-then-explanation are not."""
    text = (
        "```python\nx = 2 + 2\nprint(x)  # 4\nprint(x, x + 1)  # 4 5: two numbers\n```\n"
        "```python\nprint(x * 2)  # 9\nif False:\n    print(x)  # 4\nfor _ in range(2):\n    print(x)  # 4\n"
        "print('b2')  # b2 O\nprint('b2 O')  # b2\n```\n"
    )
    problems = run_blocks(python_blocks(text))
    assert len(problems) == 5, problems
    for expected in ("printed '8', comment shows '9'", "printed 0 times", "printed 2 times",
                     "printed 'b2', comment shows 'b2 O'", "printed 'b2 O', comment shows 'b2'"):
        assert sum(expected in problem for problem in problems) == 1, (expected, problems)


def test_ci_runs_the_readme_test_command() -> None:
    text = README.read_text()
    marker = text.index("<!-- test-command -->")
    block = re.search(r"```bash\n(.*?)\n```", text[marker:], flags=re.S)
    assert block is not None
    command = block.group(1).strip()
    assert "pytest" in command and "\n" not in command
    assert "<!-- test-command -->" in CI_SCRIPT.read_text()

"""The README's Python examples run as written, and its quick-start commands match CI."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
CI_SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "run"


def python_blocks() -> list[str]:
    """The fenced ```python blocks of the README, in order."""
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_python_examples() -> None:
    assert len(python_blocks()) >= 5


def test_readme_python_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    namespace: dict[str, object] = {}
    for i, block in enumerate(python_blocks()):
        try:
            exec(compile(block, f"README.md python block {i}", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the message is the point
            pytest.fail(f"README python block {i} failed: {exc!r}\n{block}")
    out = capsys.readouterr().out
    assert "order (0, 1, 2, 3, 4)" in out  # the rules example prints the winning line


def test_ci_runs_the_readme_test_command() -> None:
    text = README.read_text()
    marker = text.index("<!-- test-command -->")
    block = re.search(r"```bash\n(.*?)\n```", text[marker:], flags=re.S)
    assert block is not None
    command = block.group(1).strip()
    assert "pytest" in command and "\n" not in command
    assert "<!-- test-command -->" in CI_SCRIPT.read_text()

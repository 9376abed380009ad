"""The page's stylesheet: text it colours itself (marks drawn as text) stands out enough to
read, by the WCAG contrast ratio."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[2] / "web" / "static"


def _luminance(colour: str) -> float:
    digits = colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(2 * d for d in digits)
    channels = [int(digits[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(foreground: str, background: str) -> float:
    """The WCAG contrast ratio of two #rgb or #rrggbb colours."""
    high, low = sorted((_luminance(foreground), _luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_contrast_ratio_matches_wcag() -> None:
    assert contrast("#000", "#fff") == pytest.approx(21.0)
    assert contrast("#999999", "#f6f4ef") == pytest.approx(2.59, abs=0.01)


def test_marks_drawn_as_text_reach_4_5_to_1() -> None:
    """The study list's "not proven" mark and the threat mark's symbol on the board are text:
    each reaches 4.5:1 on the page, on a cell, and on the highlighted current move."""
    css = (STATIC / "style.css").read_text()
    variables = dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{3,6})", css))
    unknown = re.search(r"^\.unknown\s*\{\s*color:\s*(#[0-9a-fA-F]{3,6})", css, re.MULTILINE)
    assert unknown is not None
    for name, colour, backgrounds in (
        ("study mark", unknown.group(1), ("bg", "cell", "last")),
        ("threat mark", variables["threat"], ("bg", "cell")),
    ):
        for background in backgrounds:
            ratio = contrast(colour, variables[background])
            assert ratio >= 4.5, f"{name} {colour} on --{background} {variables[background]}: {ratio:.2f}"

"""test_browser's harness (the live server, the browser fixtures, axe) for the other browser
test files: the tests run in importlib mode, where test files do not import each other by
name, so this loads test_browser once as a module; it skips the caller too when Chromium or
Playwright is missing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

NAME = "orderchaos_web_browser_harness"


def load() -> ModuleType:
    """tests/web/test_browser.py as a module, loaded once."""
    if NAME not in sys.modules:
        spec = importlib.util.spec_from_file_location(NAME, Path(__file__).parent / "web" / "test_browser.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[NAME] = module
        spec.loader.exec_module(module)
    return sys.modules[NAME]

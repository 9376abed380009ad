"""The documentation: the Sphinx site (guides and API reference) builds without a warning, and
every public name of the modules the API reference documents has a docstring.

Sphinx's autodoc skips an undocumented function silently, so the second test walks the same
modules (the ``automodule`` lines of ``docs/api/*.md``) the way autodoc does: each public
function and class defined in the module (its ``__all__`` when it has one), and each public
method and property of those classes.
"""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO

DOCS = REPO / "docs"
AUTOMODULE = re.compile(r"^\.\. automodule:: (\S+)\n((?:[ \t]+:[^\n]*\n)*)", re.MULTILINE)


def documented_modules() -> list[str]:
    """The modules whose members the API reference lists (``automodule`` without
    ``:no-members:``)."""
    names = []
    for page in sorted((DOCS / "api").glob("*.md")):
        for name, options in AUTOMODULE.findall(page.read_text()):
            if ":no-members:" not in options:
                names.append(name)
    return names


def _public_members(module: object) -> list[tuple[str, object]]:
    """What autodoc's ``:members:`` shows of a module: ``__all__``, or the public functions
    and classes defined in it."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    out = []
    for name in names:
        obj = getattr(module, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj) or hasattr(obj, "py_func")):
            continue  # constants and imported modules are documented by their own comments
        if getattr(obj, "__module__", None) != module.__name__:
            continue  # imported from elsewhere: documented where it is defined
        out.append((name, obj))
    return out


def _class_members(cls: type) -> list[tuple[str, object]]:
    out = []
    for name, obj in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        if inspect.isfunction(obj) or isinstance(obj, property):
            out.append((name, obj))
    return out


def own_docstring(obj: object) -> str:
    """The docstring written for ``obj`` itself: not one inherited from a base class, and not
    the signature that dataclasses and named tuples put there when none was written."""
    doc = (vars(obj).get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)) or ""
    if inspect.isclass(obj) and doc.startswith(f"{obj.__name__}("):
        return ""
    return doc.strip()


def missing_docstrings(module_name: str) -> list[str]:
    """The public names of ``module_name`` (and the public methods and properties of its
    classes) that have no docstring of their own."""
    module = importlib.import_module(module_name)
    missing = [] if (module.__doc__ or "").strip() else [f"{module_name} (the module)"]
    for name, obj in _public_members(module):
        if not own_docstring(obj):
            missing.append(f"{module_name}.{name}")
        if inspect.isclass(obj):
            for member, value in _class_members(obj):
                if not own_docstring(value):
                    missing.append(f"{module_name}.{name}.{member}")
    return missing


def test_the_api_reference_covers_the_public_floors() -> None:
    modules = documented_modules()
    for room in ("orderchaos.envs.", "orderchaos.agents.", "orderchaos.arena.", "orderchaos.train.config"):
        assert any(m.startswith(room) for m in modules), room


def test_every_documented_public_name_has_a_docstring() -> None:
    missing = [name for module in documented_modules() for name in missing_docstrings(module)]
    assert not missing, "public names without a docstring:\n" + "\n".join(missing)


def test_the_docstring_check_sees_undocumented_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "undocumented_example.py").write_text(
        '"""A module."""\n\ndef shown(x):\n    return x\n\nclass Shape:\n    """A class."""\n\n'
        "    def area(self):\n        return 0\n\n    def _hidden(self):\n        return 1\n\n"
        "class Bare(Shape):\n    pass\n\n"
        "import dataclasses\n\n@dataclasses.dataclass\nclass Record:\n    x: int = 0\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert missing_docstrings("undocumented_example") == [
        "undocumented_example.shown", "undocumented_example.Shape.area", "undocumented_example.Bare",
        "undocumented_example.Record",
    ]


def test_the_site_builds_without_a_warning(tmp_path: Path) -> None:
    """Warnings are errors (-W): a broken link between guides, a bad docstring markup or a
    module that fails to import fails here. The same command as README's, into tmp_path."""
    pytest.importorskip("sphinx", reason="the docs extra is not installed: pip install -e '.[docs]'")
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(DOCS),
         str(tmp_path / "html")],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "html" / "index.html").is_file()
    assert (tmp_path / "html" / "api" / "envs.html").is_file()

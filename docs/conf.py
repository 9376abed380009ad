"""Sphinx configuration of the orderchaos documentation: the guides (docs/*.md, read by
myst-parser) and the API reference built from the docstrings (docs/api/*.md).

Build it with ``python -m sphinx -W -b html docs docs/_build/html`` (``pip install -e
'.[docs]'``); the entry page is ``docs/_build/html/index.html``.
"""

from __future__ import annotations

import orderchaos

project = "orderchaos"
author = "the orderchaos authors"
copyright = "2026, the orderchaos authors"
release = orderchaos.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "myst_parser",
]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# Guides link to each other's sections by their GitHub anchors (``evaluation.md#symmetry-...``).
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
# The docstrings write ``:class:`State``` and friends by their short names; unresolved
# references stay text (nitpicky is off), broken markup fails the build (-W).
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False

html_theme = "furo"
html_title = f"orderchaos {release}"

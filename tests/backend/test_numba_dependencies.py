"""numba's disk cache keys a kernel on its own file only: a kernel that compiles a constant or a
function of another module keeps the old one after an edit of that module alone (a ``git pull``
on an editable install rewrites only the files that changed). So each ``*_numba.py`` module that
does holds ``DEPENDENCY_DIGEST``, the digest of those modules' sources, and this test makes every
edit of them edit that line too, which invalidates the module's cache."""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import inspect
from pathlib import Path

import pytest

numba = pytest.importorskip("numba")

SRC = Path(__file__).resolve().parents[2] / "src"


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(SRC).with_suffix("").parts)


def _is_signature(value: object) -> bool:
    """A numba type or a tuple of them: only a signature, which numba's cache keys on."""
    if isinstance(value, (tuple, list)):
        return all(_is_signature(v) for v in value)
    return isinstance(value, numba.core.types.Type)


def _dependencies(path: Path) -> list[str]:
    """The Ember modules whose constants or functions the module compiles (not
    ``ember.backend.compiled``, not numba types)."""
    module = importlib.import_module(_module_name(path))
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ember")):
            continue
        if node.module == "ember.backend.compiled":
            continue
        for alias in node.names:
            value = getattr(module, alias.asname or alias.name)
            if inspect.ismodule(value):  # (from ember.ops import erfc_kernel)
                found.add(value.__name__)
            elif not _is_signature(value):
                found.add(node.module)
    return sorted(found)


def _digest(modules: list[str]) -> str:
    h = hashlib.sha256()
    for name in modules:
        text = Path(importlib.util.find_spec(name).origin).read_text(encoding="utf-8")
        h.update(f"{name}\n{text}".encode())
    return h.hexdigest()[:16]


def test_every_numba_module_holds_the_digest_of_what_it_compiles():
    stale = []
    checked = 0
    for path in sorted(SRC.glob("ember/**/*_numba.py")):
        modules = _dependencies(path)
        held = getattr(importlib.import_module(_module_name(path)), "DEPENDENCY_DIGEST", None)
        if not modules:
            assert held is None, f"{path.name} compiles nothing of another module: drop its digest"
            continue
        checked += 1
        if held != _digest(modules):
            stale.append(f'update DEPENDENCY_DIGEST = "{_digest(modules)}" in {path.name} '
                         f"(numba's cache only sees that file; it compiles {', '.join(modules)})")
    assert not stale, "\n".join(stale)
    assert checked >= 4  # erf, erfc, gamma, bessel at least


"""What README.md and docs/*.md name exists: every dotted ``ember.…`` name (in prose and code)
resolves, every repository path (``tests/…``, ``examples/…``, ``benchmarks/…``, …) is there,
and every link to a guide, with its ``#anchor``, lands. A rename that forgets the docs fails.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PLACEHOLDERS = {  # names that stand for the reader's own
    "ember.nn.functional.x",  # fx.md: "ember.nn.functional.x(...)" for any functional
    "ember.ops.mylib.numpy_sin",  # custom_ops.md: the op the reader registers
    "ember.ops.namespace.name",
}


def _where(path: Path, text: str, start: int) -> str:
    return f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, start) + 1}"


def _unresolved(name: str) -> str | None:
    """Why ``name`` does not resolve (import the longest module prefix, then getattr)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for j, attr in enumerate(parts[i:], i):
            if not hasattr(obj, attr):
                return f"{'.'.join(parts[:j])} has no attribute {attr!r}"
            obj = getattr(obj, attr)
        return None
    return "no such module"


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchors of a Markdown file's headings."""
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.*)$", markdown, re.M)}


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.name)
def test_dotted_names_resolve(guide):
    text = guide.read_text()
    names = {m.group(0): m.start()
             for m in re.finditer(r"(?<![\w.])ember(?:\.[A-Za-z_]\w*)+", text)}
    bad = [f"{_where(guide, text, at)}: {name}: {why}" for name, at in names.items()
           if name not in PLACEHOLDERS and (why := _unresolved(name))]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.name)
def test_paths_and_links_exist(guide):
    text = guide.read_text()
    bad = []
    for m in re.finditer(r"(?<![\w/.])((?:tests|examples|benchmarks|src|docs|\.ci)/[\w./\-]*\w)"
                         r"(?![\w<])", text):
        if not (ROOT / m.group(1)).exists():
            bad.append(f"{_where(guide, text, m.start())}: no file {m.group(1)}")
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        path, _, anchor = m.group(1).partition("#")
        if m.group(1).startswith(("http:", "https:")):
            continue
        target = guide.parent / path if path else guide
        if not target.exists():
            bad.append(f"{_where(guide, text, m.start())}: broken link {m.group(1)}")
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target.read_text()):
            bad.append(f"{_where(guide, text, m.start())}: no heading for #{anchor}")
    assert not bad, "\n".join(bad)

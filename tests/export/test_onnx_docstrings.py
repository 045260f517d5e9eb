"""The docstring examples of ember.onnx run and print what they say."""

import doctest
import importlib

import pytest

import ember

pytest.importorskip("onnx")


@pytest.mark.parametrize("module", ["ember.onnx", "ember.onnx.registry",
                                    "ember.onnx.exporter", "ember.onnx.modes"])
def test_docstring_examples(module):
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, extraglobs={**vars(mod), "ember": ember},
                             optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_converters_share_no_private_names():
    # (gamma.py imported special.py's _horner; shared helpers are public, as Context.horner)
    import ast
    import pathlib

    root = pathlib.Path(importlib.import_module("ember.onnx").__file__).parent
    private = [(path.name, alias.name) for path in root.rglob("*.py")
               for node in ast.walk(ast.parse(path.read_text()))
               if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ember.onnx")
               for alias in node.names if alias.name.startswith("_")]
    assert private == []

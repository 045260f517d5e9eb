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

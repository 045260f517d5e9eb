"""Every example in ember.masked's docstrings runs as written."""

import doctest
import importlib

import pytest

import ember

MODULES = ["ember.masked.masks", "ember.masked.reductions", "ember.masked.normalizations",
           "ember.masked.tensor", "ember.masked.op_table", "ember.masked.autograd"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, extraglobs={"ember": ember},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0, name


"""Every example in the sparse modules' docstrings (and the layouts') runs as written."""

import doctest
import importlib

import numpy as np
import pytest

import ember

MODULES = ["ember.sparse", "ember.sparse.tensor", "ember.sparse.construct", "ember.sparse.ops",
           "ember.sparse.invariants", "ember.sparse.elementwise", "ember.sparse.row_products",
           "ember.sparse.spgemm", "ember.sparse.gradcheck",
           "ember.layouts", "ember.optim.sparse_adam", "ember.sparse.patterned"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, extraglobs={"ember": ember, "np": np},
                             optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"

"""Every example in the distributions' docstrings runs as written."""

import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import ember
import ember.distributions

MODULES = ["ember.distributions"] + [
    f"ember.distributions.{m.name}" for m in pkgutil.iter_modules(ember.distributions.__path__)]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, extraglobs={"ember": ember, "np": np},
                             optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"

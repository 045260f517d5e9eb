"""The examples in ember.library's docstrings run and print what they say."""

import doctest
import importlib

import numpy as np
import pytest

import ember
from tests.library.ops_for_tests import define_sin

MODULES = ["ember.library", "ember.library.registry", "ember.library.schema",
           "ember.library.opcheck", "ember.library.fake_context"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    define_sin(ember, ember.library, "mylib")  # the op the examples register rules for
    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs={"ember": ember, "np": np},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted and result.failed == 0

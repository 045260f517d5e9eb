"""Every example in ember.fx's docstrings runs as written."""

import doctest
import importlib

import pytest

import ember
import ember.fx.experimental.optimization
import ember.fx.passes.shape_prop  # noqa: F401

MODULES = ["ember.fx", "ember.fx.node", "ember.fx.graph", "ember.fx.graph_module",
           "ember.fx.proxy", "ember.fx.tracer", "ember.fx.interpreter",
           "ember.fx.subgraph_rewriter", "ember.fx.passes.shape_prop",
           "ember.fx.experimental.optimization"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, extraglobs={"ember": ember},
                             optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"

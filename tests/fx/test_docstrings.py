"""Every example in ember.fx's docstrings runs as written."""

import doctest
import importlib

import pytest

import ember
import ember.fx.experimental.optimization
import ember.fx.passes.shape_prop  # noqa: F401
import ember.fx.passes.split_module  # noqa: F401

MODULES = ["ember.fx", "ember.fx.codegen", "ember.fx.node", "ember.fx.graph",
           "ember.fx.graph_module", "ember.fx.proxy", "ember.fx.placeholders", "ember.fx.tracer",
           "ember.fx.interpreter", "ember.fx.passes.split_module",
           "ember.fx.subgraph_rewriter", "ember.fx.passes.shape_prop",
           "ember.fx.experimental.optimization"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, extraglobs={"ember": ember},
                             optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"


def test_import_ember_makes_ember_fx_available():
    import subprocess
    import sys

    code = "import ember; print(ember.fx.symbolic_trace(lambda x: x + 1).code)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "add = x + 1" in out.stdout, out.stderr[-500:]

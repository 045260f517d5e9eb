"""The examples in the docstrings of ember.func and forward mode run and print what they say."""

from __future__ import annotations

import dataclasses
import doctest
import importlib
from typing import Any

import pytest

import ember
import ember.autograd.forward_ad as fwAD
from ember.func import pytree

MODULES = ["ember.func", "ember.func.reverse", "ember.func.forward", "ember.func.jacobian",
           "ember.func.ensembling", "ember.func.batch_norm", "ember.func.functionalize",
           "ember.func.rearrange",
           "ember.nn.utils._functional_call", "ember.func.pytree", "ember.utils._pytree",
           "ember.utils._pytree_dataclass", "ember.utils._pytree_keys",
           "ember.utils._pytree_serialize", "ember.utils._pytree_types",
           "ember.autograd.forward",
           "ember.autograd.forward_ad", "ember.autograd.functional", "ember.func.vmap",
           "ember.autograd.function", "ember.autograd.gradient_edge", "ember.autograd.engine",
           "ember.autograd.graph_task",
           "ember.autograd.grad_mode", "ember.autograd.graph", "ember.autograd.saved_hooks"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    ember.manual_seed(0)
    extra = {"ember": ember, "fwAD": fwAD, "dataclasses": dataclasses, "Any": Any,
             "x": ember.tensor([0.0, 1.0]),
             "v": ember.ones(2), **{n: getattr(pytree, n) for n in
                                    ("tree_flatten", "tree_unflatten", "tree_map", "tree_paths",
                                              "register_pytree_node")}}
    result = doctest.testmod(module, extraglobs=extra, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0

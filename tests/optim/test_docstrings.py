"""The examples in the docstrings of ember.optim run and print what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

import ember
from ember.optim import lr_scheduler

MODULES = ["", "lr_scheduler", "optimizer", "sgd", "adam", "adagrad", "adadelta", "adamax",
           "nadam", "radam", "rmsprop", "lion", "rprop", "asgd", "lbfgs", "adafactor", "muon",
           "swa_utils", "ember.utils.weight_averaging", "lr_scheduler.base", "lr_scheduler.cyclic",
           "lr_scheduler.decay",
           "lr_scheduler.cosine", "lr_scheduler.one_cycle", "lr_scheduler.composite",
           "lr_scheduler.plateau", "elementwise", "stateless"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name if name.startswith("ember.") else
                                     f"ember.optim.{name}".rstrip("."))
    names = {n: getattr(lr_scheduler, n) for n in lr_scheduler.__all__}
    result = doctest.testmod(module, extraglobs={"ember": ember, **names},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0

"""The docstring examples of ember.nn run and print what they say."""

import doctest
import importlib

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

MODULES = ["parameter", "module", "state_dict", "containers", "linear", "flatten",
           "activation", "conv", "pooling", "normalization", "padding", "dropout", "sparse",
           "upsampling", "loss", "init", "attention", "attention.flex_attention",
           "attention.block_mask", "attention.bias", "multihead_attention", "transformer",
           "rnn", "rnn_checks", "lazy", "module_hooks",
           "fold", "shuffle", "distance", "utils.clip_grad", "utils.convert_parameters",
           "utils.rnn", "utils.parametrize", "utils.parametrizations", "utils.weight_norm",
           "utils.spectral_norm", "utils.stateless", "utils.fusion", "utils.init", "utils.prune",
           "utils.memory_format", "adaptive",
           "sync_batch_norm", "data_parallel", "linear_cross_entropy", "modules", "modules.utils",
           "functional"]


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module):
    mod = importlib.import_module(f"ember.nn.{module}")
    model = nn.Sequential(nn.Linear(2, 2))
    model(ember.randn(3, 2)).sum().backward()
    glob = {**vars(mod), "ember": ember, "nn": nn, "F": F, "np": np, "m": nn.Linear(2, 2),
            "model": model, "prune": nn.utils.prune}
    result = doctest.testmod(mod, extraglobs=glob, optionflags=doctest.NORMALIZE_WHITESPACE
                             | doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0

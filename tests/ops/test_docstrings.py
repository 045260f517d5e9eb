"""Every example in the ops' docstrings runs as written."""

import builtins
import doctest
import importlib

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.ops import _FAMILIES

MODULES = [f"ember.ops.{family}" for family in _FAMILIES] + [
    "ember.linalg", "ember.fft", "ember.tensor", "ember.dtypes", "ember.backend.capabilities",
    "ember.backend.settings", "ember.autograd.gradcheck", "ember.special", "ember.ops.bessel",
    "ember.ops.zeta", "ember.ops.orthogonal_polynomials", "ember.ops.forwarding",
    "ember.ops.spaced", "ember.ops.scaled_add", "ember.ops.torch_steps",
    "ember.signal.windows", "ember.random", "ember.hooks", "ember.testing",
    "ember.testing.comparison", "ember.testing.creation", "ember.hub.cache",
    "ember.hub.download", "ember.hub.hubconf"]
# packages with no docstring test of their own
MODULES += [
    "ember.amp.autocast_mode", "ember.backend.allocator", "ember.backend.copies",
    "ember.backend.device", "ember.backend.meta", "ember.backend.threads",
    "ember.data.dataloader", "ember.data.worker", "ember.io.placement",
    "ember.ops.bce", "ember.ops.dims", "ember.ops.fits", "ember.ops.generator", "ember.ops.nll",
    "ember.ops.masked_put", "ember.ops.grad_flag",
    "ember.ops.variance_kernel",
    "ember.ops.int_args", "ember.ops.number_protocol", "ember.ops.out_arg",
    "ember.ops.relu_kernel", "ember.ops.scan", "ember.ops.view_dtype", "ember.profiler.events",
    "ember.quant.modules.normalization", "ember.size", "ember.tensor_repr", "ember.type_info",
    "ember.utils.graph_tracer", "ember.utils.tensorboard", "ember.jit", "ember.jit.compiled",
    "ember.jit.switches",
    "ember.amp.grad_scaler", "ember.memory", "ember.ops.multi_dot", "ember.ops.numpy_names",
    "ember.nn", "ember.storage", "ember.return_types", "ember.overrides", "ember.other_threads",
    "ember.multiprocessing", "ember.mps", "ember.xpu", "ember._dynamo", "ember.jit.torchscript",
    "ember.ops.argument_kind", "ember.ops.target_shape", "ember.autograd.anomaly",
    "ember.ops.conv_transpose",
    "ember.backend.switches", "ember.backend.parallel"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, extraglobs={"ember": ember, "np": np, "F": F, "nn": nn},
                             optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"


def test_package_docstring_examples_run():
    # the package's own namespace shadows Python's float, int, bool and complex with dtypes;
    # the examples are written for a user's script, where those are the builtins
    shadowed = {name: getattr(builtins, name) for name in ("float", "int", "bool", "complex")}
    result = doctest.testmod(ember, extraglobs={"ember": ember, "np": np, **shadowed},
                             optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 100

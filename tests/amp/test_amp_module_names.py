"""The names PyTorch's ``torch.amp.autocast_mode`` and ``torch.amp.grad_scaler`` modules export
(``custom_fwd``, ``custom_bwd``, ``is_autocast_available``, ``autocast_decorator``,
``OptState``) import from Ember's modules of the same names (an ImportError before)."""

import numpy as np
import pytest
import torch

import ember
import ember.amp.autocast_mode
import ember.amp.grad_scaler


@pytest.mark.parametrize("module", ["autocast_mode", "grad_scaler"])
def test_every_name_torchs_module_exports_is_there(module):
    ours = getattr(ember.amp, module)
    missing = [n for n in getattr(torch.amp, module).__all__ if not hasattr(ours, n)]
    assert missing == []
    assert ember.amp.autocast_mode.custom_fwd is ember.amp.custom_fwd


def test_autocast_decorator_wraps_a_function_in_the_autocast_as_torchs():
    a, b = np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)
    results = []
    for lib in (torch, ember):
        mode = lib.amp.autocast_mode

        def product(x, y, lib=lib):
            return x @ y, lib.is_autocast_enabled("cpu")

        decorated = mode.autocast_decorator(lib.autocast("cpu", dtype=lib.float16), product)
        y, inside = decorated(lib.tensor(a), lib.tensor(b))
        results.append((str(y.dtype).split(".")[1], inside, lib.is_autocast_enabled("cpu"),
                        decorated.__name__))
    assert results[0] == results[1] == ("float16", True, False, "product")


def test_opt_state_members_are_torchs():
    from ember.amp.grad_scaler import OptState
    assert {m.name: m.value for m in OptState} == \
        {m.name: m.value for m in torch.amp.grad_scaler.OptState}


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_deprecated_gpu_dtype_and_nesting_counter_as_torch(lib):
    with pytest.warns(DeprecationWarning):
        assert lib.get_autocast_gpu_dtype() is lib.float16
    with pytest.warns(DeprecationWarning):
        lib.set_autocast_gpu_dtype(lib.bfloat16)
    try:
        assert lib.get_autocast_dtype("cuda") is lib.bfloat16
        assert lib.get_autocast_dtype("cpu") is lib.bfloat16
    finally:
        lib.set_autocast_dtype("cuda", lib.float16)
    # one counter per thread, which each autocast entered adds one to; it may go below 0
    with lib.autocast("cpu", enabled=False):
        with lib.autocast("cpu"):
            assert lib.autocast_increment_nesting() == 3
            assert lib.autocast_decrement_nesting() == 2
    assert lib.autocast_decrement_nesting() == -1
    assert lib.autocast_increment_nesting() == 0

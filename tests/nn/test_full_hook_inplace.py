"""A module's full backward hooks pass its tensors through an identity custom Function, so an
in-place write into its output (a later ReLU(inplace=True)) or input is refused, as PyTorch;
Ember's error names the module, not its internal identity Function, and hints inplace=False."""

import pytest
import torch

import ember


def _run(lib, register, inplace_before=False):
    lin = lib.nn.Linear(3, 3).double()
    with lib.no_grad():
        lin.weight.copy_(lib.arange(9.0, dtype=lib.float64).reshape(3, 3) - 4)
    getattr(lin, register)(lambda m, *grads: None)
    layers = [lib.nn.ReLU(inplace=True), lin] if inplace_before else \
        [lin, lib.nn.ReLU(inplace=True)]
    x = lib.ones(2, 3, dtype=lib.float64, requires_grad=True)
    lib.nn.Sequential(*layers)(x * 1).sum().backward()
    return x.grad.tolist()


@pytest.mark.parametrize("register", ["register_full_backward_hook",
                                      "register_full_backward_pre_hook"])
@pytest.mark.parametrize("lib", [torch, ember])
def test_inplace_write_into_a_hooked_output_raises(lib, register):
    with pytest.raises(RuntimeError, match="is a view and is being modified in ?place"):
        _run(lib, register)


@pytest.mark.parametrize("register", ["register_full_backward_hook",
                                      "register_full_backward_pre_hook"])
def test_the_error_names_the_module_and_hints_inplace_false(register):
    with pytest.raises(RuntimeError) as info:
        _run(ember, register)
    text = str(info.value)
    assert "output 0 of Linear, which has full backward hooks" in text
    assert "inplace=False" in text
    assert "OutputIdentity" not in text and "Output 0 of" not in text


def test_inplace_before_a_hooked_module_still_runs():
    # the write comes before the module's identity: allowed in both
    assert _run(ember, "register_full_backward_hook", True) == \
        _run(torch, "register_full_backward_hook", True)

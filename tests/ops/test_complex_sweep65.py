"""Complex numbers where PyTorch has no kernel: Ember refuses them as it does (it returned an
answer), found by sweep65a."""

import pytest
import torch

import ember


@pytest.mark.parametrize("make", [
    lambda m: m.arange(3, dtype=m.complex64),
    lambda m: m.arange(0.0, 2.0, 0.5, dtype=m.complex128),
    lambda m: m.range(0, 2, dtype=m.complex64),
    lambda m: m.isin(m.tensor([1j, 2]), m.tensor([1j])),
    lambda m: m.isin(m.tensor([1.0]), 1j),
    lambda m: m.isin(m.tensor([1.0, 2.0]), m.tensor([1j])),
])
@pytest.mark.filterwarnings("ignore:.*range is deprecated")
def test_complex_ops_torch_has_no_kernel_for_are_refused(make):
    with pytest.raises((NotImplementedError, RuntimeError)):
        make(torch)
    with pytest.raises(ember.DTypeError, match=r"(arange|range|isin): .*complex.*Hint"):
        make(ember)


def test_linspace_and_logspace_keep_their_complex_dtype():
    """PyTorch's linspace/logspace do take a complex dtype; so does Ember."""
    for name in ("linspace", "logspace"):
        mine = getattr(ember, name)(0, 1, 3, dtype=ember.complex64)
        ref = getattr(torch, name)(0, 1, 3, dtype=torch.complex64)
        assert mine.dtype is ember.complex64
        torch.testing.assert_close(torch.from_numpy(mine.numpy()), ref)

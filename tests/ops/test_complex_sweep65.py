"""Complex tensors as PyTorch 2.13 treats them, found by sweep65a: ops it has no kernel for
are refused (Ember returned an answer); view_as_complex of a tensor without elements."""

import numpy as np
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
    lambda m: m.unique_consecutive(m.tensor([1j, 1j, 2])),
    lambda m: m.unique_consecutive(m.tensor([[1j, 1j, 2]]), dim=1),
    lambda m: m.tensor([1j, 2]).index_reduce(0, m.tensor([0]), m.tensor([2j]), "prod"),
    lambda m: m.tensor([1j, 2]).index_reduce(0, m.tensor([1]), m.tensor([2j]), "mean"),
    lambda m: m.bernoulli(m.tensor([0.5 + 0j, 0.2]), 0.5),
    lambda m: m.tensor([0.5 + 0j]).bernoulli(1.0),
])
@pytest.mark.filterwarnings("ignore:.*range is deprecated")
def test_complex_ops_torch_has_no_kernel_for_are_refused(make):
    with pytest.raises((NotImplementedError, RuntimeError)):
        make(torch)
    named = r"(arange|range|isin|unique_consecutive|index_reduce \w+|bernoulli): .*complex.*Hint"
    with pytest.raises(ember.DTypeError, match=named):
        make(ember)


def test_linspace_and_logspace_keep_their_complex_dtype():
    """PyTorch's linspace/logspace do take a complex dtype; so does Ember."""
    for name in ("linspace", "logspace"):
        mine = getattr(ember, name)(0, 1, 3, dtype=ember.complex64)
        ref = getattr(torch, name)(0, 1, 3, dtype=torch.complex64)
        assert mine.dtype is ember.complex64
        torch.testing.assert_close(torch.from_numpy(mine.numpy()), ref)


@pytest.mark.parametrize("shape", [(0, 2), (3, 0, 2), (0, 3, 2)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_view_as_complex_of_no_elements_as_torch(shape, dtype):
    """Refused before: NumPy's empty arrays have zero strides, read as a last stride not 1."""
    mine = ember.view_as_complex(ember.zeros(*shape, dtype=getattr(ember, dtype)))
    ref = torch.view_as_complex(torch.zeros(*shape, dtype=getattr(torch, dtype)))
    assert tuple(mine.shape) == tuple(ref.shape) and mine.stride() == ref.stride()
    assert mine.dtype.name == str(ref.dtype).removeprefix("torch.")


@pytest.mark.parametrize("norm", [
    lambda m, t: m.linalg.vector_norm(t, 2, 1, True),
    lambda m, t: t.norm(),
    lambda m, t: m.nn.functional.normalize(t),
    lambda m, t: m.linalg.matrix_norm(t.reshape(2, 2)),
    lambda m, t: m.linalg.norm(t.reshape(2, 2), "fro", keepdim=True),
])
def test_complex_two_norm_second_derivative_at_a_zero_element_as_torch(norm):
    """The 2-norm of complex numbers went through |z|·|z|, which has no second derivative at
    z = 0: Ember's was 0 there (8-4j for t * norm(t)), PyTorch's finite (12-6j)."""
    x = np.array([[0, 1, -1, 2j]])
    grads = []
    for m in (torch, ember):
        t = m.tensor(x, requires_grad=True)
        y = t * norm(m, t)
        g, = m.autograd.grad((y * (1 + 0.5j)).real.sum(), t, create_graph=True)
        h, = m.autograd.grad((g * g.conj()).real.sum(), t)
        grads.append((y.detach().resolve_conj().numpy() if m is torch else y.detach().numpy(),
                      h.resolve_conj().numpy() if m is torch else h.numpy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-12)
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-12, atol=1e-12)

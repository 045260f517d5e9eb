"""sweep60h: sparse differences from torch 2.13 found by a differential sweep."""

import numpy as np
import pytest
import torch

import ember

DENSE = [[0.0, 1.5, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0], [3.0, 0.0, -1.0, 0.0]]


def _pair(layout: str) -> tuple:
    e, t = ember.tensor(DENSE), torch.tensor(DENSE)
    if layout == "coo":
        return e.to_sparse(), t.to_sparse()
    return getattr(e, f"to_sparse_{layout}")(), getattr(t, f"to_sparse_{layout}")()


def _dense(x):
    x = x.to_dense() if x.layout not in (ember.strided, torch.strided) else x
    return np.asarray(x.detach().numpy())


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("call", [
    lambda m, s: m.sum(s), lambda m, s: m.sum(s, 0), lambda m, s: m.sum(s, dim=1, keepdim=True),
    lambda m, s: m.t(s), lambda m, s: m.transpose(s, 0, 1), lambda m, s: m.swapaxes(s, 1, 0),
    lambda m, s: m.clone(s)])
def test_function_forms_on_a_sparse_tensor_as_torch(layout, call):
    es, ts = _pair(layout)
    got = call(ember, es)
    try:
        want = call(torch, ts)
    except RuntimeError:  # (torch's CSR sum over a dim needs keepdim=True; Ember's sums it
        assert got.layout is ember.sparse_coo  # to COO: the dense sum's values)
        np.testing.assert_allclose(_dense(got), _dense(call(torch, ts.to_dense())))
        return
    assert str(got.layout).split(".")[-1] == str(want.layout).split(".")[-1]
    np.testing.assert_allclose(_dense(got), _dense(want))


def test_function_sum_of_a_sparse_tensor_has_a_gradient():
    s = ember.tensor(DENSE).to_sparse().requires_grad_()
    ember.sum(s).backward()
    np.testing.assert_allclose(s.grad.to_dense().numpy(), (np.array(DENSE) != 0).astype(float))


@pytest.mark.parametrize("dense", [DENSE, [[0.0, 0.0], [0.0, 0.0]], [[1.0, -1.0]]])
@pytest.mark.parametrize("dim", [0, 1, -1, (0, 1)])
def test_csr_sum_keepdim_stays_csr_as_torch(dense, dim):
    e, t = ember.tensor(dense).to_sparse_csr(), torch.tensor(dense).to_sparse_csr()
    got, want = e.sum(dim, keepdim=True), t.sum(dim, keepdim=True)
    assert got.layout is ember.sparse_csr and got.shape == tuple(want.shape)
    assert got._nnz() == want._nnz()
    np.testing.assert_allclose(got.crow_indices().numpy(), want.crow_indices().numpy())
    if want._nnz():  # (torch's to_dense of its empty 1x1 result fails)
        np.testing.assert_allclose(_dense(got), _dense(want))


def test_csr_sum_keepdim_gradient_reaches_the_values():
    s = ember.tensor(DENSE).to_sparse_csr().requires_grad_()
    s.sum((0, 1), keepdim=True).values().sum().backward()
    np.testing.assert_allclose(s.grad.values().numpy(), np.ones(4))


@pytest.mark.parametrize("layout", ["coo", "csr", "csc"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int16"])
def test_size_and_device_methods_as_torch(layout, dtype):
    es, ts = _pair(layout)
    es, ts = es.to(getattr(ember, dtype)), ts.to(getattr(torch, dtype))
    assert es.element_size() == ts.element_size()
    assert es.nelement() == ts.nelement() == 12
    assert es.get_device() == ts.get_device()
    if layout == "coo":
        assert es.is_contiguous() is ts.is_contiguous() is False
    else:
        with pytest.raises(Exception, match="is_contiguous"):
            es.is_contiguous()


def _coo(lib, values):
    return lib.sparse_coo_tensor([[0, 1, 0], [1, 0, 1]], values, (2, 2))


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack_of_coo_tensors_as_torch(dim):
    es, ts = _coo(ember, [1.0, 2.0, 3.0]), _coo(torch, [1.0, 2.0, 3.0])
    got, want = ember.stack([es, es.coalesce()], dim), torch.stack([ts, ts.coalesce()], dim)
    assert got.shape == tuple(want.shape) and got.sparse_dim() == want.sparse_dim()
    assert got._nnz() == want._nnz() and got.is_coalesced() == want.is_coalesced()
    np.testing.assert_array_equal(got._indices().numpy(), want._indices().numpy())
    np.testing.assert_allclose(_dense(got), _dense(want))


def test_stack_of_hybrid_coo_tensors_and_gradient_as_torch():
    h = ember.sparse_coo_tensor([[0, 1]], ember.ones(2, 3), (2, 3))
    th = torch.sparse_coo_tensor([[0, 1]], torch.ones(2, 3), (2, 3))
    for dim in (1, 2):
        assert ember.stack([h, h], dim).sparse_dim() == torch.stack([th, th], dim).sparse_dim()
    grads = []
    for lib in (ember, torch):
        v = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        s = _coo(lib, v)
        (lib.stack([s, s * 2], 1).to_dense() * lib.arange(8.0).reshape(2, 2, 2)).sum().backward()
        grads.append(v.grad.numpy())
    np.testing.assert_allclose(*grads)


def test_stack_of_sparse_tensors_refuses_bad_lists():
    s = _coo(ember, [1.0, 2.0, 3.0])
    with pytest.raises(ember.errors.ShapeError, match="equal size"):
        ember.stack([s, ember.sparse_coo_tensor([[0], [0]], [1.0], (2, 3))])
    with pytest.raises(TypeError, match="dense Tensor was found at position 1"):
        ember.stack([s, s.to_dense()])


def _batch(lib, values):
    return lib.sparse_coo_tensor([[0, 1, 0], [1, 0, 1], [2, 2, 0]], values, (2, 2, 3))


def test_bmm_of_a_coo_batch_values_and_gradients_as_torch():
    results = []
    for lib in (ember, torch):
        v = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        d = lib.arange(12.0, dtype=lib.float64).reshape(2, 3, 2).requires_grad_()
        out = lib.bmm(_batch(lib, v), d)
        (out * lib.arange(8.0, dtype=lib.float64).reshape(2, 2, 2)).sum().backward()
        results.append([out.detach().numpy(), v.grad.numpy(), d.grad.numpy()])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want)
    s = _batch(ember, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(s.bmm(ember.ones(2, 3, 2)).numpy(),
                               torch.bmm(_batch(torch, [1.0, 2.0, 3.0]), torch.ones(2, 3, 2)))
    empty = ember.sparse_coo_tensor(ember.zeros(3, 0, dtype=ember.int64), [], (0, 2, 3))
    assert ember.bmm(empty, ember.ones(0, 3, 4)).shape == (0, 2, 4)


def test_bmm_of_a_coo_batch_refuses_bad_operands():
    s = _batch(ember, [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="bmm: mat2 must be a dense tensor"):
        ember.bmm(s, s)
    with pytest.raises(ember.errors.ShapeError, match=r"bmm: \(2, 2, 3\) @ \(2, 4, 2\)"):
        ember.bmm(s, ember.ones(2, 4, 2))
    hybrid = ember.sparse_coo_tensor([[0]], ember.ones(1, 2, 2), (1, 2, 2))
    with pytest.raises(ember.errors.ShapeError, match="no dense dimensions"):
        ember.bmm(hybrid, ember.ones(1, 2, 2))


@pytest.mark.parametrize("layout", ["coo", "csr", "csc"])
def test_new_zeros_and_is_same_size_as_torch(layout):
    es, ts = _pair(layout)
    got, want = es.new_zeros(2, 5), ts.new_zeros(2, 5)
    assert str(got.layout).split(".")[-1] == str(want.layout).split(".")[-1]
    assert got.shape == tuple(want.shape) and got._nnz() == want._nnz() == 0
    assert es.new_zeros((2, 5), dtype=ember.float64).dtype is ember.float64
    if layout == "coo":
        assert got.sparse_dim() == want.sparse_dim() and got.is_coalesced() == want.is_coalesced()
    assert es.is_same_size(ember.zeros(3, 4)) is ts.is_same_size(torch.zeros(3, 4)) is True
    assert es.is_same_size(es.t()) is ts.is_same_size(ts.t()) is False


def test_new_zeros_of_a_block_tensor_keeps_the_blocksize():
    s = ember.ones(4, 4).to_sparse_bsr((2, 2)).new_zeros(4, 6)
    assert s.layout is ember.sparse_bsr and s.values().shape == (0, 2, 2)


@pytest.mark.parametrize("source,destination", [(0, 2), (-1, 0), ((0, 1), (2, 0))])
def test_movedim_of_a_coo_tensor_as_torch(source, destination):
    coalesced = [False, True]
    for c in coalesced:
        es, ts = _batch(ember, [1.0, 2.0, 3.0]), _batch(torch, [1.0, 2.0, 3.0])
        es, ts = (es.coalesce(), ts.coalesce()) if c else (es, ts)
        for got in (ember.movedim(es, source, destination), es.moveaxis(source, destination)):
            want = torch.movedim(ts, source, destination)
            assert got.shape == tuple(want.shape) and got.is_coalesced() == want.is_coalesced()
            np.testing.assert_allclose(_dense(got), _dense(want))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool"])
def test_type_of_a_coo_tensor_as_torch(dtype):
    es = ember.tensor(DENSE).to_sparse().to(getattr(ember, dtype))
    ts = torch.tensor(DENSE).to_sparse().to(getattr(torch, dtype))
    assert es.type() == ts.type().replace("torch.", "ember.", 1)
    for target in ("torch.sparse.DoubleTensor", "torch.IntTensor"):
        got, want = es.type(target), ts.type(target)
        assert got.layout is ember.sparse_coo and str(got.dtype)[6:] == str(want.dtype)[6:]
    assert es.type(ember.float64).dtype is ember.float64
    with pytest.raises(Exception, match="type"):
        ember.tensor(DENSE).to_sparse_csr().type()

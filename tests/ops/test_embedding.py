"""embedding against PyTorch and finite differences."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from tests.ops.optable import Const, OpCase, S, arg, op_tests

IDX = Const(np.array([[1, 2, 4], [4, 3, 1]]))
REPEATED = Const(np.array([0, 2, 2, 2, 5, 0]))

CASES = [
    OpCase("embedding", F.embedding, TF.embedding, [
        S(IDX, arg(6, 3)),
        S(REPEATED, arg(6, 4, noncontig=True)),                   # repeats accumulate
        S(Const(np.array(3)), arg(6, 3)),                         # 0-d index
        S(Const(np.zeros((0, 2), dtype=np.int64)), arg(6, 3)),    # no indices
    ]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


@pytest.mark.parametrize("kw", [dict(padding_idx=2), dict(padding_idx=-4),
                                dict(scale_grad_by_freq=True),
                                dict(padding_idx=0, scale_grad_by_freq=True)])
def test_padding_and_frequency_scaling_first_and_second_order_like_torch(kw):
    # not true derivatives (the padding row is frozen), so compared with torch, not FD
    idx = np.array([[0, 2, 2], [5, 2, 1]])
    w = np.random.default_rng(0).standard_normal((6, 3))
    g = np.random.default_rng(1).standard_normal((2, 3, 3))
    mine = ember.from_numpy(w.copy()).requires_grad_()
    ref = torch.from_numpy(w.copy()).requires_grad_()
    (gm,) = ember.autograd.grad(F.embedding(ember.from_numpy(idx), mine, **kw) ** 3, mine,
                                ember.from_numpy(g), create_graph=True)
    (gr,) = torch.autograd.grad(TF.embedding(torch.from_numpy(idx), ref, **kw) ** 3, ref,
                                torch.from_numpy(g), create_graph=True)
    np.testing.assert_allclose(gm.detach().numpy(), gr.detach().numpy())
    if "padding_idx" in kw:
        assert not gm.detach().numpy()[kw["padding_idx"]].any()
    (ggm,) = ember.autograd.grad((gm * gm).sum(), mine)
    (ggr,) = torch.autograd.grad((gr * gr).sum(), ref)
    np.testing.assert_allclose(ggm.numpy(), ggr.numpy())

    # and the second order is the true derivative of the (scaled, masked) first order
    def grad_of(t):
        out = F.embedding(ember.from_numpy(idx), t, **kw) ** 3
        return ember.autograd.grad(out, t, ember.from_numpy(g), create_graph=True)[0]

    assert ember.autograd.gradcheck(grad_of, [ember.from_numpy(w.copy()).requires_grad_()])


def test_max_norm_renormalises_used_rows_in_place_like_torch():
    w = np.random.default_rng(2).standard_normal((5, 4)) * 3
    idx = np.array([0, 3, 3])
    mine, ref = ember.from_numpy(w.copy()), torch.from_numpy(w.copy())
    out = F.embedding(ember.from_numpy(idx), mine, max_norm=1.0)
    expected = TF.embedding(torch.from_numpy(idx), ref, max_norm=1.0)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-6)
    np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-6)
    assert mine._version == 1


def test_embedding_errors():
    w = ember.randn(10, 3)
    with pytest.raises(IndexError, match=r"embedding: index 12 is out of range for 10 "
                                         r"embeddings \(weight shape \(10, 3\)\)"):
        F.embedding(ember.tensor([1, 12]), w)
    with pytest.raises(IndexError, match="index -1"):
        F.embedding(ember.tensor([-1]), w)
    with pytest.raises(ember.DTypeError, match="integer"):
        F.embedding(ember.tensor([1.0]), w)
    with pytest.raises(IndexError, match="padding_idx"):
        F.embedding(ember.tensor([1]), w, padding_idx=10)


def test_compiled_embedding_checks_indices_at_every_call():
    w = ember.randn(10, 3)
    fn = ember.jit.compile(lambda idx: F.embedding(idx, w) * 2)
    np.testing.assert_allclose(fn(ember.tensor([1, 9])).numpy(), w.numpy()[[1, 9]] * 2)
    for bad in (-1, 10):  # NumPy would wrap -1 to the last row
        with pytest.raises(ember.errors.IndexOutOfRange,
                           match=rf"embedding: index {bad} is out of range for 10 embeddings "
                                 r"\(weight shape \(10, 3\)\); expected indices in \[0, 9\]\. "
                                 "Hint"):
            fn(ember.tensor([[1, 2], [bad, 3]]))


def _max_norm_run(compiled, steps=4):
    ember.manual_seed(0)
    emb, head = ember.nn.Embedding(10, 4, max_norm=0.5), ember.nn.Linear(4, 3)
    opt = ember.optim.SGD(list(emb.parameters()) + list(head.parameters()), lr=0.5)

    def step(idx, y):
        loss = F.cross_entropy(head(emb(idx)), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    if compiled:
        step = ember.jit.compile(step)
    ember.manual_seed(1)
    data = [(ember.randint(0, 10, (8,)), ember.randint(0, 3, (8,))) for _ in range(steps)]
    losses, weights = [], []
    for idx, y in data:
        losses.append(step(idx, y).item())
        weights.append(emb.weight.detach().numpy().copy())
    return losses, weights


def test_compiled_max_norm_renormalises_at_every_call_like_eager():
    (le, we), (lc, wc) = _max_norm_run(False), _max_norm_run(True)
    np.testing.assert_allclose(lc, le, rtol=1e-5)
    for a, b in zip(wc, we):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_second_order_padding_mask_follows_each_calls_indices():
    w = ember.randn(6, 3, requires_grad=True)

    def grad_norm(idx):
        (g,) = ember.autograd.grad((F.embedding(idx, w, padding_idx=2) ** 3).sum(), w,
                                   create_graph=True)
        (gg,) = ember.autograd.grad((g * g).sum(), w)
        return gg

    fn = ember.jit.compile(grad_norm)
    for idx in ([0, 2, 2, 5], [2, 1, 1, 3], [4, 4, 0, 2]):
        idx = ember.tensor(idx)
        np.testing.assert_allclose(fn(idx).numpy(), grad_norm(idx).numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("scale", [False, True])
def test_numba_backward_matches_numpys_sorted_sums_and_torch(dtype, index_dtype, scale):
    from ember.backend import compiled
    from ember.ops.embedding import EmbeddingBackward

    rng = np.random.default_rng(3)
    g = rng.standard_normal((4, 50, 16)).astype(dtype)
    idx = rng.integers(0, 30, (4, 50)).astype(index_dtype)  # rows 30..39 get none
    params = dict(num_weights=40, padding_idx=7, scale_grad_by_freq=scale)
    saved = compiled.numba_enabled()
    try:
        compiled.use_numba(False)
        numpys = EmbeddingBackward.forward(np, g, idx, **params)
        compiled.use_numba(saved)
        mine = EmbeddingBackward.forward(np, g, idx, **params)
    finally:
        compiled.use_numba(saved)
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(mine, numpys, rtol=tol, atol=tol)
    assert not mine[7].any() and not mine[30:].any()
    w = torch.zeros(40, 16, dtype=torch.from_numpy(g).dtype, requires_grad=True)
    TF.embedding(torch.from_numpy(idx.astype(np.int64)), w, padding_idx=7,
                 scale_grad_by_freq=scale).backward(torch.from_numpy(g))
    np.testing.assert_allclose(mine, w.grad.numpy(), rtol=tol, atol=tol)


def test_backward_rejects_indices_outside_the_weight(numba_or_numpy):
    from ember.ops.embedding import EmbeddingBackward

    g = np.ones((3, 2), np.float32)
    for bad in (5, -1):
        with pytest.raises(IndexError, match=f"embedding_backward: index {bad} is out of "
                                             "range for 5 embeddings"):
            EmbeddingBackward.forward(np, g, np.array([0, bad, 1]), num_weights=5,
                                      padding_idx=None, scale_grad_by_freq=False)


def test_backward_of_an_unaligned_gradient():
    from ember.ops.embedding import EmbeddingBackward

    buf = np.zeros(4 * 60 + 1, np.uint8)
    g = np.frombuffer(buf.data, np.float32, 60, offset=1).reshape(6, 10)
    out = EmbeddingBackward.forward(np, g, np.array([0, 1, 1, 2, 3, 0]), num_weights=4,
                                    padding_idx=None, scale_grad_by_freq=False)
    assert out.shape == (4, 10) and not out.any()


def test_backward_into_rows_of_no_width_like_torch(numba_or_numpy):
    w = ember.zeros(5, 0, requires_grad=True)
    F.embedding(ember.tensor([1, 1, 4]), w, scale_grad_by_freq=True).sum().backward()
    assert w.grad.shape == (5, 0)


@pytest.mark.parametrize("index_dtype", ["int8", "uint8", "int16"])
def test_vmap_of_small_integer_indices_is_refused_like_torch(index_dtype):
    from ember.func import vmap

    w, idx = ember.randn(4, 120, 2), ember.tensor(np.array([[1, 119]] * 4, dtype=index_dtype))
    with pytest.raises(RuntimeError):  # (torch refuses them, in vmap or not)
        torch.func.vmap(lambda v, i: TF.embedding(i, v))(torch.from_numpy(w.numpy()),
                                                          torch.from_numpy(idx.numpy()))
    with pytest.raises(ember.DTypeError, match=f"int64 or int32 integer.*{index_dtype}"):
        vmap(lambda v, i: F.embedding(i, v))(w, idx)


def test_vmap_of_int32_indices_keeps_each_sample_in_its_rows(numba_or_numpy):
    from ember.func import grad, vmap

    w = ember.randn(4, 120, 2, dtype=ember.float64)
    idx = ember.tensor(np.array([[1, 119], [0, 3], [5, 118], [117, 2]], dtype="int32"))
    got = vmap(lambda i: grad(lambda v: F.embedding(i, v).pow(2).sum())(w[0]))(idx)
    rows = vmap(lambda v, i: F.embedding(i, v))(w, idx)
    for k in range(4):
        i = idx[k].to(ember.int64)
        want = grad(lambda v, i=i: F.embedding(i, v).pow(2).sum())(w[0])
        np.testing.assert_array_equal(got[k].numpy(), want.numpy())
        np.testing.assert_array_equal(rows[k].numpy(), w[k].numpy()[i.numpy()])


@pytest.mark.parametrize("bad", [5, -1])
def test_vmap_over_weights_rejects_an_index_outside_a_samples_rows(bad):
    from ember.func import vmap

    w = ember.randn(3, 5, 2)
    idx = ember.tensor([[0, 1], [bad, 2], [3, 4]])  # inside the (15, 2) rows vmap looks up
    with pytest.raises(IndexError, match=f"embedding: index {bad} is out of "):
        vmap(lambda v, i: F.embedding(i, v))(w, idx)

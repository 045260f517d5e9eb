"""Tensors built from others (construct.py) against PyTorch and finite differences: the op table
for the differentiable ops, direct comparisons for the index builders, views, dtypes, errors
and vmap."""

import itertools

import numpy as np
import pytest
import torch
import torch.func as tf

import ember
from ember.errors import DTypeError, IndexOutOfRange, ShapeError
from ember.func.vmap import vmap
from tests.ops.optable import OpCase, S, arg, assert_same, op_tests

INF = float("inf")


def both(fn):
    """The same lambda for Ember and PyTorch, given the module: ``both(lambda m, x: …)``."""
    return (lambda *a, **k: fn(ember, *a, **k)), (lambda *a, **k: fn(torch, *a, **k))


def case(name, fn, samples, **kw):
    e, t = both(fn)
    return OpCase(name, e, t, samples, **kw)


def _vander(x, N=None, increasing=False):  # noqa: N803
    """PyTorch's vander written with pow, whose backward works."""
    n = x.shape[0] if N is None else N
    out = x.unsqueeze(1) ** torch.arange(n, dtype=x.dtype)
    return out if increasing else out.flip(1)


CASES = [
    # tensor_split: sections (uneven, more than the size), indices (unsorted, negative,
    # past the end), int64 tensors, negative dims, empty dims
    case("tensor_split_sections", lambda m, x: m.tensor_split(x, 3),
         [S(arg(7, 2)), S(arg(2, 3, noncontig=True)), S(arg(0, 3)), S(arg(4))]),
    case("tensor_split_many", lambda m, x: x.tensor_split(5, dim=-1), [S(arg(2, 3))]),
    case("tensor_split_indices", lambda m, x: m.tensor_split(x, [1, 5, 3, -1, 9], 1),
         [S(arg(2, 7)), S(arg(2, 7, noncontig=True))]),
    case("tensor_split_empty_list", lambda m, x: m.tensor_split(x, []), [S(arg(3, 2))]),
    case("tensor_split_kw", lambda m, x: (m.tensor_split(x, sections=2)
                                          + m.tensor_split(x, indices=(2,), dim=-2)),
         [S(arg(5, 2))]),
    case("tensor_split_tensor", lambda m, x: (m.tensor_split(x, m.tensor(2), -1)
                                              + x.tensor_split(m.tensor([1, 2]), -1)),
         [S(arg(3, 5))]),
    # diff: n, dim, prepend/append (broadcast-free, any length along dim), n past the size
    case("diff", lambda m, x: x.diff(), [S(arg(5)), S(arg(3, 4, noncontig=True)), S(arg(2, 0))]),
    case("diff_n_dim", lambda m, x: m.diff(x, n=2, dim=0),
         [S(arg(5, 3)), S(arg(2, 3)), S(arg(1, 3))]),
    case("diff_n0", lambda m, x: m.diff(x, 0), [S(arg(3, 2))]),
    case("diff_n_large", lambda m, x: m.diff(x, 7, -2), [S(arg(4, 2))]),
    case("diff_prepend_append", lambda m, x, p, a: m.diff(x, 2, 1, prepend=p, append=a),
         [S(arg(2, 3), arg(2, 1), arg(2, 2)), S(arg(2, 0), arg(2, 2), arg(2, 1, grad=False))]),
    case("diff_append", lambda m, x, a: x.diff(dim=0, append=a), [S(arg(3, 2), arg(1, 2))]),
    # kron: equal ranks, different ranks, 0-d, empty
    case("kron", lambda m, a, b: m.kron(a, b),
         [S(arg(2, 3), arg(3, 2)), S(arg(2, 2), arg(3)), S(arg(3), arg(2, 1, 2)),
          S(arg(), arg(3)), S(arg(), arg()), S(arg(0, 2), arg(2, 2)),
          S(arg(2, 3, noncontig=True), arg(2, 2, noncontig=True))]),
    case("kron_method", lambda m, a, b: a.kron(b), [S(arg(2), arg(2, grad=False))]),
    # cartesian_prod / combinations
    case("cartesian_prod", lambda m, a, b, c: m.cartesian_prod(a, b, c),
         [S(arg(2), arg(3), arg(2)), S(arg(3), arg(0), arg(2))]),
    case("cartesian_prod_two", lambda m, a, b: m.cartesian_prod(a, b), [S(arg(3), arg(2))]),
    case("combinations", lambda m, x: m.combinations(x),
         [S(arg(4)), S(arg(1)), S(arg(0))]),
    case("combinations_r", lambda m, x: m.combinations(x, r=3), [S(arg(5)), S(arg(2))]),
    case("combinations_replacement", lambda m, x: m.combinations(x, 3, with_replacement=True),
         [S(arg(3)), S(arg(1))]),
    case("combinations_replacement_2", lambda m, x: m.combinations(x, with_replacement=True),
         [S(arg(4))]),
    case("combinations_r1", lambda m, x: m.combinations(x, 1), [S(arg(3))]),
    # trace
    case("trace", lambda m, x: m.trace(x),
         [S(arg(3, 3)), S(arg(2, 4)), S(arg(4, 2, noncontig=True)), S(arg(0, 3))]),
    case("trace_method", lambda m, x: x.trace(), [S(arg(3, 2))]),
    # cross: default dim (first of size 3 in input), explicit and negative dims, broadcasting
    case("cross", lambda m, a, b: m.cross(a, b, dim=-1),
         [S(arg(3), arg(3)), S(arg(4, 3), arg(4, 3)), S(arg(1, 3), arg(4, 3)),
          S(arg(2, 3, noncontig=True), arg(2, 3)), S(arg(0, 3), arg(0, 3))]),
    case("cross_default_dim", lambda m, a, b: m.cross(a, b),
         [S(arg(2, 3, 3), arg(2, 3, 3)), S(arg(3, 1), arg(3, 4))]),
    case("cross_dim0", lambda m, a, b: a.cross(b, 0), [S(arg(3, 4), arg(3, 4, grad=False))]),
    case("linalg_cross", lambda m, a, b: m.linalg.cross(a, b),
         [S(arg(2, 1, 3), arg(1, 4, 3))]),
    # vander (PyTorch 2.13's own vander backward fails, "modified by an inplace operation":
    # its gradients are checked against the same matrix built with pow)
    OpCase("vander", ember.vander, _vander, [S(arg(4)), S(arg(2, noncontig=True))]),
    OpCase("vander_N", lambda x: ember.vander(x, N=5), lambda x: _vander(x, N=5), [S(arg(3))]),
    OpCase("vander_increasing", lambda x: ember.vander(x, 3, increasing=True),
           lambda x: _vander(x, 3, increasing=True), [S(arg(4)), S(arg(3, noncontig=True))]),
    OpCase("vander_N2", lambda x: ember.vander(x, 2), lambda x: _vander(x, 2), [S(arg(3))]),
    case("vander_constant", lambda m, x: (m.vander(x), m.vander(x, N=0), m.vander(x, N=1)),
         [S(arg(1)), S(arg(0)), S(arg(3))], grad=False),
    # meshgrid: views, 0-d inputs, both indexings
    case("meshgrid_ij", lambda m, a, b: m.meshgrid(a, b, indexing="ij"),
         [S(arg(2), arg(3)), S(arg(), arg(3)), S(arg(0), arg(2))]),
    case("meshgrid_xy", lambda m, a, b, c: m.meshgrid([a, b, c], indexing="xy"),
         [S(arg(2), arg(3), arg(4)), S(arg(2), arg(), arg(3))]),
    case("meshgrid_one", lambda m, a: m.meshgrid(a, indexing="xy"), [S(arg(3)), S(arg())]),
    # rot90
    case("rot90", lambda m, x: m.rot90(x), [S(arg(2, 3)), S(arg(2, 3, 2, noncontig=True))]),
    case("rot90_k", lambda m, x: (x.rot90(2), x.rot90(-1), x.rot90(3, [1, 0]), x.rot90(4)),
         [S(arg(2, 3))]),
    case("rot90_dims", lambda m, x: m.rot90(x, 1, (-1, 0)), [S(arg(2, 3, 4)), S(arg(0, 2, 3))]),
    # block_diag
    case("block_diag", lambda m, a, b, c: m.block_diag(a, b, c),
         [S(arg(2, 2), arg(3), arg()), S(arg(1, 3), arg(0, 2), arg(2, 0)),
          S(arg(2, 3, noncontig=True), arg(2, 1, grad=False), arg(1))]),
    case("block_diag_one", lambda m, a: m.block_diag(a), [S(arg(2, 3)), S(arg(3))]),
    # cdist: direct and matmul paths, every kind of p, batch broadcasting, empty
    case("cdist", lambda m, a, b: m.cdist(a, b),
         [S(arg(3, 4), arg(5, 4)), S(arg(2, 3, 4), arg(2, 5, 4)), S(arg(3, 4), arg(2, 1, 4)),
          S(arg(4, 3, noncontig=True), arg(2, 3)), S(arg(0, 3), arg(2, 3)),
          S(arg(2, 0), arg(3, 0))]),
    case("cdist_mm", lambda m, a, b: m.cdist(a, b), [S(arg(30, 3), arg(4, 3)),
                                                     S(arg(2, 3), arg(2, 27, 3))]),
    case("cdist_mm_forced", lambda m, a, b: m.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
         [S(arg(3, 4), arg(5, 4))]),
    case("cdist_no_mm", lambda m, a, b: m.cdist(a, b, 2.0, "donot_use_mm_for_euclid_dist"),
         [S(arg(30, 2), arg(3, 2))]),
    case("cdist_p1", lambda m, a, b: m.cdist(a, b, p=1), [S(arg(3, 4), arg(2, 4))]),
    case("cdist_p0", lambda m, a, b: m.cdist(a, b, p=0), [S(arg(3, 4), arg(2, 4))]),
    case("cdist_pinf", lambda m, a, b: m.cdist(a, b, p=INF),
         [S(arg(3, 4), arg(2, 4)), S(arg(2, 0), arg(3, 0))]),
    case("cdist_p3", lambda m, a, b: m.cdist(a, b, p=3), [S(arg(3, 4), arg(2, 4))]),
    case("cdist_p_half", lambda m, a, b: m.cdist(a, b, p=0.5), [S(arg(3, 2), arg(2, 2))]),
    case("cdist_p_frac", lambda m, a, b: m.cdist(a, b, p=1.5), [S(arg(1, 3, 2), arg(2, 2))]),
    # renorm: some slices scaled, some not
    case("renorm", lambda m, x: x.renorm(2, 0, 1.5),
         [S(arg(3, 4)), S(arg(4, 3, noncontig=True)), S(arg(0, 3))]),
    case("renorm_dims", lambda m, x: m.renorm(x, 1, -1, 2.0), [S(arg(2, 3, 4))]),
    case("renorm_p", lambda m, x: (x.renorm(INF, 1, 1.0), x.renorm(3, 1, 1.5),
                                   x.renorm(0.5, 0, 4.0)),
         [S(arg(3, 4, low=0.5, high=2.0))]),
    # Tensor.unfold: overlapping, tiling, gapped windows; 0-d; negative dims; empty windows
    case("unfold", lambda m, x: x.unfold(0, 2, 1),
         [S(arg(5)), S(arg(4, 3)), S(arg(4, 3, noncontig=True))]),
    case("unfold_tiles", lambda m, x: x.unfold(-1, 2, 2),
         [S(arg(3, 4)), S(arg(3, 5)), S(arg(2, 5, noncontig=True))]),
    case("unfold_gaps", lambda m, x: x.unfold(1, 2, 3), [S(arg(2, 7, 2)), S(arg(2, 8, 1))]),
    case("unfold_overlap_step", lambda m, x: x.unfold(-2, 3, 2), [S(arg(7, 2))]),
    case("unfold_whole", lambda m, x: x.unfold(0, 4, 1), [S(arg(4, 2))]),
    case("unfold_size0", lambda m, x: x.unfold(0, 0, 2), [S(arg(3, 2)), S(arg(0, 2))],
         gradgrad=False),  # (empty: the gradient is a constant)
    case("unfold_0d", lambda m, x: (x.unfold(0, 1, 1), x.unfold(-1, 0, 3)), [S(arg())]),
    case("unfold_twice", lambda m, x: x.unfold(0, 2, 1).unfold(1, 2, 2),
         [S(arg(4, 5))]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def _close(mine, ref):
    assert_same(mine, ref, rtol=1e-6, atol=1e-6)  # (integers and bools: exactly)


def _pair(values, dtype=None):
    a = np.asarray(values) if dtype is None else np.asarray(values, dtype=dtype)
    return ember.from_numpy(a.copy()), torch.from_numpy(a.copy())


# -- index builders -------------------------------------------------------------------------------
@pytest.mark.parametrize("row,col", [(0, 0), (0, 3), (3, 0), (1, 1), (3, 3), (3, 5), (5, 2),
                                     (4, 4)])
@pytest.mark.parametrize("offset", [-6, -2, -1, 0, 1, 2, 7])
def test_tril_triu_indices_match_torch(row, col, offset):
    _close(ember.tril_indices(row, col, offset), torch.tril_indices(row, col, offset))
    _close(ember.triu_indices(row, col, offset), torch.triu_indices(row, col, offset))


def test_tril_triu_indices_dtype_and_keywords():
    _close(ember.tril_indices(row=3, col=4, offset=1, dtype=ember.int32),
          torch.tril_indices(row=3, col=4, offset=1, dtype=torch.int32))
    with pytest.raises(DTypeError, match="triu_indices: dtype must be int64 or int32"):
        ember.triu_indices(3, 2, dtype=ember.int16)
    assert ember.tril_indices(2, 2, device="cpu").device == ember.device("cpu")
    with pytest.raises(DTypeError, match="tril_indices: dtype must be int64 or int32"):
        ember.tril_indices(3, 3, dtype=ember.float32)
    with pytest.raises(ValueError, match="triu_indices: row must be non-negative, got -1"):
        ember.triu_indices(-1, 3)
    with pytest.raises(ValueError, match="col must be non-negative"):
        ember.tril_indices(3, -2)
    with pytest.raises(TypeError, match="row must be an int"):
        ember.tril_indices(2.5, 3)


def test_tril_indices_index_a_matrix_like_tril():
    x = ember.arange(12.0).reshape(3, 4)
    rows, cols = ember.tril_indices(3, 4, 1)
    assert x[rows, cols].sum().item() == x.tril(1).sum().item()


def test_combinations_match_itertools():
    x = ember.arange(6)
    for r in range(0, 8):
        for repl in (False, True):
            mine = ember.combinations(x, r, repl)
            ref = torch.combinations(torch.arange(6), r, repl)
            _close(mine, ref)
            make = itertools.combinations_with_replacement if repl else itertools.combinations
            if r:
                assert mine.tolist() == [list(c) for c in make(range(6), r)]


def test_integer_and_bool_dtypes_match_torch():
    e32, t32 = _pair([[1, 2, 3], [4, 5, 6], [7, 8, 9]], np.int32)
    _close(e32.trace(), t32.trace())  # int32 -> int64
    eu, tu = _pair([3, 1, 7], np.uint8)
    _close(eu.diff(), tu.diff())  # wraps around, as uint8 does
    _close(ember.vander(eu, 4), torch.vander(tu, 4))  # -> int64
    eb, tb = _pair([True, False, False, True])
    _close(eb.diff(), tb.diff())  # bools: logical xor
    _close(eb.diff(n=2), tb.diff(n=2))
    _close(ember.vander(eb), torch.vander(tb))
    _close(ember.block_diag(eb, eb[:2]), torch.block_diag(tb, tb[:2]))
    ei, ti = _pair([1, 5, 2])
    ef, tf_ = _pair([0.5])
    _close(ei.diff(append=ef.to(ember.float32)), ti.diff(append=tf_.float()))  # promotes
    _close(ei.diff(prepend=ei), ti.diff(prepend=ti))
    _close(ember.kron(e32, ei), torch.kron(t32, ti))
    _close(ember.kron(eb, ef), torch.kron(tb, tf_))
    _close(ember.cross(ei, ei.flip(0)), torch.cross(ti, ti.flip(0), dim=0))
    _close(ember.cartesian_prod(ei, ei[:2]), torch.cartesian_prod(ti, ti[:2]))
    _close(ember.combinations(eb, 2), torch.combinations(tb, 2))
    _close(ember.block_diag(e32, ef, ember.tensor(2)), torch.block_diag(t32, tf_,
                                                                      torch.tensor(2)))
    _close(ember.rot90(e32, 1, (1, 0)), torch.rot90(t32, 1, (1, 0)))
    _close(e32.unfold(1, 2, 1), t32.unfold(1, 2, 1))
    for mine, ref in zip(ember.meshgrid(eb, eb[1:], indexing="xy"),
                         torch.meshgrid(tb, tb[1:], indexing="xy"), strict=True):
        _close(mine, ref)
    _close(ember.block_diag(), torch.block_diag())
    _close(ember.combinations(ember.zeros(0), 2), torch.combinations(torch.zeros(0), 2))
    _close(ember.combinations(ei, 0), torch.combinations(ti, 0))


def test_half_precision_keeps_its_dtype():
    x = ember.ones(3, 3, dtype=ember.float16)
    assert x.trace().dtype is ember.float16
    assert ember.kron(x, x).dtype is ember.float16
    assert ember.vander(x[0]).dtype is ember.float16


# -- views and copies -----------------------------------------------------------------------------
def test_tensor_split_and_meshgrid_are_views():
    x = ember.zeros(7, 2)
    for piece in x.tensor_split([2, 5]):
        assert np.shares_memory(x.numpy(), piece.numpy())
    piece = x.tensor_split(3)[1]
    piece.add_(1)
    assert x._version == 1 and x.numpy()[3:5].all() and x.numpy().sum() == 4
    a, b = ember.arange(3), ember.arange(4)
    ga, gb = ember.meshgrid(a, b, indexing="xy")
    assert np.shares_memory(ga.numpy(), a.numpy()) and np.shares_memory(gb.numpy(), b.numpy())


def test_unfold_is_a_view_sharing_memory_and_version():
    x = ember.zeros(3, 6)
    u = x.unfold(1, 2, 2)
    assert u.shape == (3, 3, 2)
    assert np.shares_memory(x.numpy(), u.numpy())
    t = torch.zeros(3, 6).unfold(1, 2, 2)
    assert u.stride() == t.stride()
    u[:, 1].add_(1)  # in place through the view
    assert x._version == 1
    np.testing.assert_array_equal(x.numpy(), [[0, 0, 1, 1, 0, 0]] * 3)
    assert np.shares_memory(ember.tensor(2.0).unfold(0, 1, 1).numpy(),
                            ember.tensor(2.0).numpy()) is False  # (two different tensors)
    s = ember.tensor(2.0)
    assert np.shares_memory(s.unfold(0, 1, 1).numpy(), s.numpy())


def test_unfold_gradient_after_inplace_write_through_it():
    x = ember.arange(6.0, requires_grad=True)
    y = x * 1
    y.unfold(0, 2, 2)[1].mul_(3)
    (y * ember.arange(6.0)).sum().backward()
    tx = torch.arange(6.0, requires_grad=True)
    ty = tx * 1
    ty.unfold(0, 2, 2)[1].mul_(3)
    (ty * torch.arange(6.0)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy())


def test_copies_do_not_alias():
    x = ember.zeros(3, 3)
    for y in (x.rot90(4), x.rot90(1), x.diff(0), ember.kron(x, ember.ones(1)),
              ember.block_diag(x), ember.cartesian_prod(x[0], x[1])):
        assert not np.shares_memory(x.numpy(), y.numpy())
    v = ember.arange(3)
    assert ember.cartesian_prod(v) is v  # as PyTorch: the tensor itself


def test_renorm_in_place():
    e, t = _pair(np.random.default_rng(0).standard_normal((3, 4)) * 3)
    e.renorm_(2, 1, 1.0)
    t.renorm_(2, 1, 1.0)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)


# -- numerics -------------------------------------------------------------------------------------
def test_cdist_gradient_at_zero_distance_is_zero_as_in_torch():
    a = np.random.default_rng(1).standard_normal((30, 3))
    for p, mode in [(2.0, "donot_use_mm_for_euclid_dist"), (2.0, "use_mm_for_euclid_dist"),
                    (1.0, None), (3.0, None), (0.5, None), (INF, None), (0.0, None)]:
        kw = {"compute_mode": mode} if mode else {}
        x = ember.from_numpy(a.copy()).requires_grad_(True)
        tx = torch.from_numpy(a.copy()).requires_grad_(True)
        ember.cdist(x, x[:5].detach(), p, **kw).sum().backward()
        torch.cdist(tx, tx[:5].detach(), p, **kw).sum().backward()
        assert np.isfinite(x.grad.numpy()).all(), (p, mode)
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=f"p={p} mode={mode}")


def test_cdist_large_matches_torch_both_modes():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, 40, 5)), rng.standard_normal((1, 33, 5))
    for mode in ("use_mm_for_euclid_dist_if_necessary", "donot_use_mm_for_euclid_dist"):
        mine = ember.cdist(ember.from_numpy(a), ember.from_numpy(b), compute_mode=mode)
        ref = torch.cdist(torch.from_numpy(a), torch.from_numpy(b), compute_mode=mode)
        np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-10, atol=1e-10)


def test_vander_gradient_with_zeros_is_exact():
    x = ember.tensor([0.0, 2.0, -1.0], dtype=ember.float64, requires_grad=True)
    tx = torch.tensor([0.0, 2.0, -1.0], dtype=torch.float64, requires_grad=True)
    ember.vander(x, 4).sum().backward()
    _vander(tx, 4).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


# -- vmap -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["unfold", "unfold_0d", "cross", "cdist", "diff", "kron",
                                  "trace", "renorm", "rot90", "vander", "tensor_split",
                                  "block_diag", "combinations", "meshgrid"])
def test_vmap_matches_torch_func(name):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 5, 3))
    b = rng.standard_normal((4, 5, 3))
    fns = {
        "unfold": lambda m, x, y: x.unfold(0, 2, 1) * 2,
        "unfold_0d": lambda m, x, y: x[0, 0].unfold(0, 1, 1) + 1,
        "cross": lambda m, x, y: m.cross(x, y, dim=-1),
        "cdist": lambda m, x, y: m.cdist(x, y[:2]),
        "diff": lambda m, x, y: m.diff(x, 2, 0, prepend=y[:1]),
        "kron": lambda m, x, y: m.kron(x[:2, :2], y[0]),
        "trace": lambda m, x, y: m.trace(x),
        "renorm": lambda m, x, y: m.renorm(x, 2, 0, 1.0),
        "rot90": lambda m, x, y: m.rot90(x, 1, (0, 1)),
        "vander": lambda m, x, y: m.vander(x[:, 0], 3),
        "tensor_split": lambda m, x, y: m.tensor_split(x, [1, 3])[1],
        "block_diag": lambda m, x, y: m.block_diag(x[:2], y[0]),
        "combinations": lambda m, x, y: m.combinations(x[:, 1], 2),
        "meshgrid": lambda m, x, y: m.meshgrid(x[:, 0], y[0], indexing="xy")[1],
    }
    fn = fns[name]
    mine = vmap(lambda x, y: fn(ember, x, y))(ember.from_numpy(a), ember.from_numpy(b))
    ref = tf.vmap(lambda x, y: fn(torch, x, y))(torch.from_numpy(a), torch.from_numpy(b))
    np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-10, atol=1e-10)


def test_vmap_of_unfold_gradients():
    a = np.random.default_rng(4).standard_normal((3, 6))
    grads = vmap(ember.func.grad(lambda x: (x.unfold(0, 3, 2) ** 2).sum()))(ember.from_numpy(a))
    ref = tf.vmap(tf.grad(lambda x: (x.unfold(0, 3, 2) ** 2).sum()))(torch.from_numpy(a))
    np.testing.assert_allclose(grads.numpy(), ref.numpy(), rtol=1e-12)


# -- errors ---------------------------------------------------------------------------------------
def test_tensor_split_errors():
    x = ember.zeros(5)
    with pytest.raises(ShapeError, match="tensor_split: expected at least a 1-dimensional"):
        ember.tensor_split(ember.zeros(()), 2)
    with pytest.raises(ValueError, match="number of sections must be larger than 0, got 0"):
        x.tensor_split(0)
    with pytest.raises(DTypeError, match="dtype int64, but got float32"):
        x.tensor_split(ember.tensor([1.0]))
    with pytest.raises(ShapeError, match="0-d or 1-d tensor"):
        x.tensor_split(ember.tensor([[1]]))
    with pytest.raises(TypeError, match="each split index must be an int"):
        x.tensor_split([1.5])
    with pytest.raises(TypeError, match="indices_or_sections must be an int"):
        x.tensor_split(2.5)
    with pytest.raises(TypeError, match="exactly one of"):
        x.tensor_split(2, sections=2)
    with pytest.raises(IndexOutOfRange, match="tensor_split: dimension 1 is out of range"):
        x.tensor_split(2, 1)


def test_diff_errors():
    x = ember.zeros(2, 3)
    with pytest.raises(ShapeError, match="diff: expects input to be at least one-dimensional"):
        ember.zeros(()).diff()
    with pytest.raises(ValueError, match="order must be non-negative but got -1"):
        x.diff(-1)
    with pytest.raises(ShapeError, match="prepend to have the same number of dimensions"):
        x.diff(prepend=ember.zeros(3))
    with pytest.raises(ShapeError, match=r"append.*input.size\(1\) = 3, but append.size\(1\) "
                                         r"= 2"):
        x.diff(dim=0, append=ember.zeros(1, 2))
    with pytest.raises(TypeError, match="diff: prepend must be a Tensor, got float"):
        x.diff(prepend=2.0)
    with pytest.raises(ShapeError, match=r"append.*input.size\(1\) = 3"):  # (n=0 too)
        x.diff(0, dim=0, append=ember.zeros(1, 2))


def test_diff_of_order_0_leaves_prepend_and_append_out_as_torch():
    """n=0 gave the joined tensor (8, 5); PyTorch and NumPy give the input (5, 5)."""
    a = np.arange(25.0).reshape(5, 5)
    ref = torch.diff(torch.tensor(a), 0, 0, torch.ones(1, 5), torch.ones(2, 5))
    out = ember.diff(ember.tensor(a), 0, 0, ember.ones(1, 5), ember.ones(2, 5))
    assert tuple(out.shape) == tuple(ref.shape) == (5, 5) and out.dtype is ember.float64
    np.testing.assert_array_equal(out.numpy(), ref.numpy())


def test_product_and_grid_errors():
    with pytest.raises(ShapeError, match="cartesian_prod: expects 1-d tensors, but tensor 1"):
        ember.cartesian_prod(ember.zeros(2), ember.zeros(2, 2))
    with pytest.raises(ValueError, match="cartesian_prod: expects a non-empty list"):
        ember.cartesian_prod()
    with pytest.raises(DTypeError, match="meshgrid: expects all tensors to have the same dtype"):
        ember.cartesian_prod(ember.zeros(2), ember.arange(2))
    with pytest.raises(ShapeError, match="combinations: expects a 1-d vector, but got shape"):
        ember.combinations(ember.zeros(2, 2))
    with pytest.raises(ValueError, match="combinations: expects a non-negative r, but got -1"):
        ember.combinations(ember.zeros(3), -1)
    with pytest.raises(ShapeError, match="meshgrid: expects 0-d or 1-d tensors"):
        ember.meshgrid(ember.zeros(2, 2), indexing="ij")
    with pytest.raises(ValueError, match='meshgrid: indexing must be one of "xy" or "ij"'):
        ember.meshgrid(ember.zeros(2), indexing="foo")
    with pytest.raises(ValueError, match="meshgrid: expects a non-empty list"):
        ember.meshgrid()
    with pytest.raises(TypeError, match="kron: other must be a Tensor"):
        ember.kron(ember.zeros(2), [1, 2])


def test_matrix_op_errors():
    with pytest.raises(ShapeError, match="trace: expected a matrix, but got a tensor with 1"):
        ember.zeros(3).trace()
    with pytest.raises(DTypeError, match="trace: not implemented for bool"):
        ember.zeros(2, 2, dtype=ember.bool_).trace()
    with pytest.raises(ShapeError, match="vander: x must be a one-dimensional tensor"):
        ember.vander(ember.zeros(2, 2))
    with pytest.raises(ValueError, match="vander: N must be non-negative, got -1"):
        ember.vander(ember.zeros(2), N=-1)
    with pytest.raises(ShapeError, match="rot90: expected total rotation dims == 2"):
        ember.zeros(2, 3).rot90(1, [0])
    with pytest.raises(ShapeError, match="rot90: expected total dims >= 2"):
        ember.zeros(3).rot90(1, [0, -1])
    with pytest.raises(ShapeError, match="rot90: expected rotation dims to be different"):
        ember.zeros(2, 3).rot90(1, [0, -2])
    with pytest.raises(IndexOutOfRange, match="rot90: dimension 2 is out of range"):
        ember.zeros(2, 3).rot90(1, [0, 2])
    with pytest.raises(ShapeError, match="block_diag: input tensors must have 2 or fewer "
                                         "dimensions; input 1 has shape"):
        ember.block_diag(ember.zeros(2), ember.zeros(2, 2, 2))


def test_cross_errors():
    with pytest.raises(ShapeError, match=r"cross: no dimension of size 3 in input \(shape "
                                         r"\(4, 4\)\)"):
        ember.cross(ember.zeros(4, 4), ember.zeros(4, 4))
    with pytest.raises(ShapeError, match="cross: inputs dimension 0 must have length 3. Got 3 "
                                         "and 4"):
        ember.cross(ember.zeros(3), ember.zeros(4))
    with pytest.raises(ShapeError, match="same number of dimensions"):
        ember.cross(ember.zeros(2, 3), ember.zeros(3))
    with pytest.raises(DTypeError, match="same dtype, got int64 and float32"):
        ember.cross(ember.ones(3, dtype=ember.int64), ember.ones(3))
    with pytest.raises(DTypeError, match="cross: not implemented for bool"):
        ember.cross(ember.ones(3, dtype=ember.bool_), ember.ones(3, dtype=ember.bool_))
    with pytest.raises(ShapeError, match="cross: shapes .* do not broadcast"):
        ember.cross(ember.zeros(2, 3), ember.zeros(4, 3), dim=1)
    with pytest.raises(ShapeError, match="linalg.cross: inputs dimension -1 must have length 3"):
        ember.ops.construct.linalg_cross(ember.zeros(3, 2), ember.zeros(3, 2))


def test_cdist_and_renorm_errors():
    with pytest.raises(ShapeError, match="cdist: only supports at least 2-d tensors, x1"):
        ember.cdist(ember.zeros(4), ember.zeros(4))
    with pytest.raises(ShapeError, match="same number of columns"):
        ember.cdist(ember.zeros(3, 4), ember.zeros(5, 3))
    with pytest.raises(ValueError, match="only supports non-negative p values"):
        ember.cdist(ember.zeros(3, 4), ember.zeros(5, 4), p=-1)
    with pytest.raises(DTypeError, match="only supports floating-point dtypes, x1 is int64"):
        ember.cdist(ember.zeros(3, 4, dtype=ember.int64), ember.zeros(5, 4, dtype=ember.int64))
    with pytest.raises(DTypeError, match="same dtype, got float32 and float64"):
        ember.cdist(ember.zeros(3, 4), ember.zeros(5, 4, dtype=ember.float64))
    with pytest.raises(ShapeError, match=r"cdist \(the batch dimensions\)"):
        ember.cdist(ember.zeros(2, 3, 4), ember.zeros(3, 5, 4))
    with pytest.raises(ValueError, match="'foo' is not a valid value for compute_mode"):
        ember.cdist(ember.zeros(3, 4), ember.zeros(5, 4), compute_mode="foo")
    x = ember.ones(2, 3)
    with pytest.raises(DTypeError, match="renorm: expected a floating or complex input, got int64"):
        ember.ones(2, 3, dtype=ember.int64).renorm(2, 0, 1)
    with pytest.raises(ShapeError, match="renorm: input needs at least 2 dimensions"):
        ember.ones(3).renorm(2, 0, 1)
    with pytest.raises(ValueError, match="renorm: non-positive norm not supported"):
        x.renorm(0, 0, 1)
    with pytest.raises(ValueError, match="renorm: expected maxnorm to be >= 0 but got -1"):
        x.renorm(2, 0, -1)
    with pytest.raises(IndexOutOfRange, match="renorm: dimension 2 is out of range"):
        x.renorm(2, 2, 1)


def test_unfold_errors():
    x = ember.arange(7.0)
    with pytest.raises(ShapeError, match="unfold: maximum size for tensor at dimension 0 is 7 "
                                         "but size is 8"):
        x.unfold(0, 8, 1)
    with pytest.raises(ValueError, match="unfold: step is 0 but must be > 0"):
        x.unfold(0, 2, 0)
    with pytest.raises(ValueError, match="unfold: size is -1 but must be >= 0"):
        x.unfold(0, -1, 1)
    with pytest.raises(ShapeError, match="dimension 0 is 1 but size is 2"):
        ember.tensor(3.0).unfold(0, 2, 1)
    with pytest.raises(IndexOutOfRange, match="unfold: dimension 1 is out of range"):
        x.unfold(1, 2, 1)
    with pytest.raises(TypeError, match="unfold: size must be an int"):
        x.unfold(0, 2.0, 1)


@pytest.mark.parametrize("shape,dim,size,step", [((3, 9, 2), 1, 4, 3), ((7,), 0, 3, 1),
                                                 ((2, 8), -1, 5, 2), ((6, 2), 0, 6, 4)])
@pytest.mark.parametrize("scatter_max", [0, 10**9], ids=["overlap_add", "scatter"])
def test_unfold_vjp_both_ways(monkeypatch, shape, dim, size, step, scatter_max):
    # unfold's vjp scatter-adds small gradients and overlap-adds large ones: both, forced on
    # tiny inputs, match torch and pass finite differences to second order
    monkeypatch.setattr(ember.ops.unfold, "SCATTER_MAX", scatter_max)
    rng = np.random.default_rng(7)
    x = ember.tensor(rng.standard_normal(shape), requires_grad=True)
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    g = rng.standard_normal(tuple(tx.unfold(dim, size, step).shape))
    (mine,) = ember.autograd.grad(x.unfold(dim, size, step), x, ember.tensor(g))
    (ref,) = torch.autograd.grad(tx.unfold(dim, size, step), tx, torch.tensor(g))
    np.testing.assert_allclose(mine.numpy(), ref.numpy(), atol=1e-12)
    assert ember.autograd.gradgradcheck(lambda t: t.unfold(dim, size, step) ** 2, (x,))

"""Ops × PyTorch's limited-support dtypes (uint16/32/64, the float8s) against torch: what
torch computes, Ember computes to the same values and dtype; what torch refuses, Ember refuses
with a DTypeError naming the dtype."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import DTypeError

DTYPES = ["uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
          "float8_e5m2fnuz", "float8_e8m0fnu"]


def _bools(lib):
    return lib.ones(2, 3, dtype=lib.bool)


# each op takes the library (torch or ember) and a (2, 3) tensor of ones in the dtype
OPS = {
    # arithmetic
    "add": lambda lib, a: a + a, "add_scalar": lambda lib, a: a + 1,
    "sub": lambda lib, a: a - a, "mul": lambda lib, a: a * a,
    "mul_int_scalar": lambda lib, a: a * 2, "mul_float_scalar": lambda lib, a: a * 2.5,
    "div": lambda lib, a: a / a, "floor_divide": lambda lib, a: a // a,
    "remainder": lambda lib, a: a % a, "pow": lambda lib, a: a ** 2, "neg": lambda lib, a: -a,
    "abs": lambda lib, a: a.abs(), "exp": lambda lib, a: a.exp(), "sqrt": lambda lib, a: a.sqrt(),
    "add_float32": lambda lib, a: a + lib.ones(2, 3), "add_": lambda lib, a: a.add_(a),
    "mul_": lambda lib, a: a.mul_(a), "clamp": lambda lib, a: a.clamp(0, 1),
    "sign": lambda lib, a: a.sign(), "floor": lambda lib, a: a.floor(),
    "maximum": lambda lib, a: lib.maximum(a, a),
    # comparisons and tests
    "eq": lambda lib, a: a == a, "eq_scalar": lambda lib, a: a == 1, "ne": lambda lib, a: a != a,
    "lt": lambda lib, a: a < a, "ge": lambda lib, a: a >= a,
    "equal": lambda lib, a: lib.equal(a, a),
    "allclose": lambda lib, a: lib.allclose(a, a), "isnan": lambda lib, a: a.isnan(),
    "isinf": lambda lib, a: a.isinf(), "isfinite": lambda lib, a: a.isfinite(),
    "logical_not": lambda lib, a: a.logical_not(),
    "logical_and": lambda lib, a: lib.logical_and(a, a),
    "logical_or": lambda lib, a: lib.logical_or(a, a), "isposinf": lambda lib, a: a.isposinf(),
    "isneginf": lambda lib, a: a.isneginf(), "bitwise_and": lambda lib, a: a & a,
    "bitwise_or": lambda lib, a: a | a, "left_shift": lambda lib, a: a << 1,
    # reductions
    "sum": lambda lib, a: a.sum(), "sum_dim": lambda lib, a: a.sum(0),
    "sum_float32": lambda lib, a: a.sum(dtype=lib.float32), "mean": lambda lib, a: a.mean(),
    "prod": lambda lib, a: a.prod(), "cumsum": lambda lib, a: a.cumsum(0),
    "max": lambda lib, a: a.max(), "amax": lambda lib, a: a.amax(0),
    "argmax": lambda lib, a: a.argmax(), "max_dim": lambda lib, a: a.max(0),
    "any": lambda lib, a: a.any(), "all": lambda lib, a: a.all(), "var": lambda lib, a: a.var(),
    "count_nonzero": lambda lib, a: a.count_nonzero(), "sort": lambda lib, a: a.sort(),
    "topk": lambda lib, a: a.topk(1), "unique": lambda lib, a: a.unique(),
    "unique_consecutive": lambda lib, a: lib.unique_consecutive(a),
    "sum_to_size": lambda lib, a: a.sum_to_size(1, 3),
    "embedding": lambda lib, a: lib.nn.functional.embedding(lib.tensor([1, 0]), a),
    # matrix products
    "matmul": lambda lib, a: a @ a.T, "mm": lambda lib, a: lib.mm(a, a.T),
    "bmm": lambda lib, a: lib.bmm(a[None], a.T[None]),
    "dot": lambda lib, a: lib.dot(a[0], a[0]), "mv": lambda lib, a: lib.mv(a, a[0]),
    "trace": lambda lib, a: a[:, :2].trace(),
    # casts and copies
    "to_float32": lambda lib, a: a.to(lib.float32), "to_int64": lambda lib, a: a.to(lib.int64),
    "from_float32": lambda lib, a: lib.ones(3).to(a.dtype), "clone": lambda lib, a: a.clone(),
    "copy_": lambda lib, a: lib.empty_like(a).copy_(a),
    "copy_from_float32": lambda lib, a: a.copy_(lib.ones(2, 3)),
    "view_uint8": lambda lib, a: a.view(lib.uint8), "item": lambda lib, a: a[0, 0].item(),
    "tolist": lambda lib, a: a.tolist(),
    # joining and reshaping
    "cat": lambda lib, a: lib.cat([a, a]), "stack": lambda lib, a: lib.stack([a, a]),
    "reshape": lambda lib, a: a.reshape(6), "transpose": lambda lib, a: a.t().contiguous(),
    "unfold": lambda lib, a: a.unfold(1, 2, 1).contiguous(),
    "repeat": lambda lib, a: a.repeat(2, 1), "roll": lambda lib, a: a.roll(1),
    "tril": lambda lib, a: a.tril(),
    # indexing
    "index_int": lambda lib, a: a[0], "index_slice": lambda lib, a: a[:, 1:],
    "index_tensor": lambda lib, a: a[lib.tensor([1, 0])],
    "index_mask": lambda lib, a: a[_bools(lib)],
    "index_select": lambda lib, a: a.index_select(0, lib.tensor([1])),
    "gather": lambda lib, a: a.gather(0, lib.zeros(2, 3, dtype=lib.int64)),
    "scatter": lambda lib, a: a.scatter(0, lib.zeros(1, 3, dtype=lib.int64), a[:1]),
    "setitem_int": lambda lib, a: a.__setitem__(0, 2),
    "setitem_slice": lambda lib, a: a.__setitem__(slice(0, 1), a[1:].clone()),
    "setitem_tensor": lambda lib, a: a.__setitem__(lib.tensor([0]), a[1:].clone()),
    "index_put_": lambda lib, a: a.index_put_((lib.tensor([0]),), a[1].clone()),
    "where": lambda lib, a: lib.where(_bools(lib), a, a),
    "take": lambda lib, a: a.take(lib.tensor([1, 2])),
    "masked_select": lambda lib, a: a.masked_select(_bools(lib)),
    "masked_scatter": lambda lib, a: a.masked_scatter(_bools(lib), a),
    "put_": lambda lib, a: a.put_(lib.tensor([0]), a[0, :1].clone()),
    "index_add": lambda lib, a: a.index_add(0, lib.tensor([0]), a[:1]),
    "index_copy": lambda lib, a: a.index_copy(0, lib.tensor([0]), a[:1]),
    "index_fill": lambda lib, a: a.index_fill(0, lib.tensor([0]), 1),
    "masked_fill": lambda lib, a: a.masked_fill(_bools(lib), 0),
    # creation and filling
    "zeros": lambda lib, a: lib.zeros(2, dtype=a.dtype),
    "full": lambda lib, a: lib.full((2,), 2, dtype=a.dtype),
    "arange": lambda lib, a: lib.arange(3, dtype=a.dtype), "fill_": lambda lib, a: a.fill_(2),
    "fill_diagonal_": lambda lib, a: a.fill_diagonal_(2),
    "randn": lambda lib, a: lib.randn(2, dtype=a.dtype).shape,
    "rand_like": lambda lib, a: lib.rand_like(a).shape,
    "randint": lambda lib, a: lib.randint(0, 2, (2,), dtype=a.dtype).shape,
    "random_": lambda lib, a: a.random_(0, 2).shape,
    "zero_": lambda lib, a: a.zero_(),
}


def _run(lib, op, name):
    a = lib.ones(2, 3).to(getattr(lib, name))
    try:
        out = OPS[op](lib, a)
    except (RuntimeError, NotImplementedError, TypeError) as err:
        return None, err
    return (a if out is None else out), None  # (in-place ops: the tensor written)


def _values(x):
    """What to compare of a result: a tensor's dtype name, shape and values (read wide)."""
    if isinstance(x, tuple):
        return tuple(_values(v) for v in x)
    if isinstance(x, (torch.Tensor, ember.Tensor)):
        lib = torch if isinstance(x, torch.Tensor) else ember
        wide = lib.float64 if x.is_floating_point() else lib.int64
        return str(x.dtype).split(".")[-1], tuple(x.shape), np.array(x.to(wide).tolist())
    return x


def _assert_same(actual, expected):
    if isinstance(expected, tuple):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            _assert_same(a, e)
    elif isinstance(expected, np.ndarray):  # (float32 math may differ in the last bit)
        np.testing.assert_allclose(actual, expected, rtol=1e-6)
    else:
        assert actual == expected


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_ops_compute_or_refuse_as_torch_does(op, name):
    expected, refusal = _run(torch, op, name)
    if refusal is not None:
        with pytest.raises(DTypeError, match=name):
            OPS[op](ember, ember.ones(2, 3).to(getattr(ember, name)))
        return
    actual, error = _run(ember, op, name)
    assert error is None, f"{op} on {name}: torch computes it, Ember raised {error!r}"
    _assert_same(_values(actual), _values(expected))


def test_the_check_names_the_op_and_dtype():
    with pytest.raises(DTypeError, match=r"add: not implemented for float8_e4m3fn .* \.float\(\)"):
        ember.ones(2, dtype=ember.float8_e4m3fn) + ember.ones(2, dtype=ember.float8_e4m3fn)
    with pytest.raises(DTypeError, match="gather: not implemented for uint32"):
        ember.ones(2, dtype=ember.uint32).gather(0, ember.tensor([0]))
    assert np.array_equal(ember.ones(2, dtype=ember.uint32).sort().values.numpy(), [1, 1])

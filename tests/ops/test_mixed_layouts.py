"""Strides of elementwise results whose operands are laid out differently, against PyTorch:
the first operand that tells two dimensions apart decides their order (NumPy's iterator
keeps C order where operands disagree: ``channels_last + contiguous`` was C)."""

import numpy as np
import pytest
import torch

import ember


def _x(m, shape, order, offset):
    """A float64 tensor of ``shape`` stored with its dims in ``order`` (outermost first)."""
    n = int(np.prod(shape))
    stored = [shape[d] for d in order]
    values = ((m.arange(float(n), dtype=m.float64) * 7 + offset) % 11 + 1) / 13
    if not shape:
        return values.reshape(())
    return values.reshape(stored).permute(*[order.index(d) for d in range(len(shape))])


S = (2, 3, 4, 5)
LAYOUTS = {
    "c": lambda m, o: _x(m, S, (0, 1, 2, 3), o),
    "channels_last": lambda m, o: _x(m, S, (0, 2, 3, 1), o),
    "transposed": lambda m, o: _x(m, S, (0, 1, 3, 2), o),
    "permuted": lambda m, o: _x(m, S, (3, 1, 2, 0), o),
    "sliced": lambda m, o: _x(m, (2, 3, 4, 10), (0, 1, 2, 3), o)[..., ::2],
    "expanded": lambda m, o: _x(m, (1, 3, 1, 5), (0, 1, 2, 3), o).expand(*S),
    "bias": lambda m, o: _x(m, (3, 1, 1), (0, 1, 2), o),
    "mask": lambda m, o: _x(m, (2, 1, 4, 5), (0, 1, 2, 3), o),
    "broadcast_transposed": lambda m, o: _x(m, (1, 3, 4, 5), (0, 1, 3, 2), o),
    "0-d": lambda m, o: _x(m, (), (), o),
}
FIRST = ["channels_last", "transposed", "permuted", "broadcast_transposed"]
SECOND = ["c", "channels_last", "sliced", "expanded", "bias", "mask", "0-d"]
BINARY = {
    "add": lambda m, a, b: a + b, "sub": lambda m, a, b: m.sub(a, b, alpha=2),
    "mul": lambda m, a, b: a * b, "div": lambda m, a, b: a / b,
    "pow": lambda m, a, b: a ** b, "maximum": lambda m, a, b: m.maximum(a, b),
    "atan2": lambda m, a, b: m.atan2(a, b), "hypot": lambda m, a, b: m.hypot(a, b),
    "remainder": lambda m, a, b: a % b, "lt": lambda m, a, b: a < b,
    "eq": lambda m, a, b: a == b,
    "bitwise_xor": lambda m, a, b: (a * 10).int() ^ (b * 10).int(),
}


def _assert_like_torch(fn, *layouts, grad=True):
    results = []
    for m in (ember, torch):
        xs = [LAYOUTS[name](m, 3 * i).requires_grad_(grad) for i, name in enumerate(layouts)]
        y = fn(m, *xs)
        if grad and y.dtype.is_floating_point:
            (y * m.arange(float(y.numel()), dtype=y.dtype).reshape(y.shape)).sum().backward()
        results.append((y, [x.grad for x in xs]))
    (mine, mine_grads), (ref, ref_grads) = results
    assert mine.stride() == ref.stride()
    np.testing.assert_allclose(mine.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    for g, r in zip(mine_grads, ref_grads):
        assert (g is None) == (r is None)
        if r is not None:  # (strides along dims of size 1 address nothing: not compared)
            assert [s for s, n in zip(g.stride(), g.shape) if n > 1] == \
                [s for s, n in zip(r.stride(), r.shape) if n > 1]
            np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("second", SECOND)
@pytest.mark.parametrize("first", FIRST)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_ops_follow_the_first_operand_that_decides_as_torch(op, first, second):
    _assert_like_torch(BINARY[op], first, second, grad=op not in ("lt", "eq", "bitwise_xor",
                                                                  "remainder"))


def test_a_transposed_matrix_plus_a_c_ordered_one_stays_transposed_as_torch():
    for m in (ember, torch):
        a = m.arange(20.0).reshape(5, 4).t()
        assert (a + m.ones(4, 5)).stride() == (1, 4)
        assert (m.ones(4, 5) + a).stride() == (5, 1)
    x = ember.ones(2, 3, 2, 3, 4).contiguous(memory_format=ember.channels_last_3d)
    assert (x * ember.ones(2, 3, 2, 3, 4)).is_contiguous(memory_format=ember.channels_last_3d)


TERNARY = {
    "where": lambda m, a, b, c: m.where(a > 0.5, b, c),
    "clamp": lambda m, a, b, c: m.clamp(a, b * 0.5, c + 0.5),
    "lerp": lambda m, a, b, c: m.lerp(a, b, c),
    "addcmul": lambda m, a, b, c: m.addcmul(a, b, c, value=0.5),
    "addcdiv": lambda m, a, b, c: m.addcdiv(a, b, c, value=0.5),
}


@pytest.mark.parametrize("layouts", [
    ("bias", "channels_last", "c"), ("bias", "transposed", "channels_last"),
    ("mask", "permuted", "c"), ("c", "bias", "channels_last"), ("channels_last", "c", "c"),
    ("transposed", "mask", "bias"), ("expanded", "channels_last", "transposed"),
    ("bias", "bias", "channels_last"), ("0-d", "sliced", "transposed")])
@pytest.mark.parametrize("op", list(TERNARY))
def test_ternary_ops_follow_the_first_operand_that_decides_as_torch(op, layouts):
    # (a broadcast first operand leaves the others to decide; where NumPy keeps C order
    # when they disagree, torch takes the first of them; clamp of a broadcast input by a
    # larger bound raised a NumPy "non-broadcastable output operand" error)
    # (torch's clamp backward refuses an input smaller than the result)
    small = layouts[0] in ("bias", "0-d", "mask")
    _assert_like_torch(TERNARY[op], *layouts, grad=not (small and op in ("where", "clamp")))


def test_lerp_with_a_weight_in_another_layout_keeps_a_c_ordered_input_c_as_torch():
    for m in (ember, torch):
        start, end = m.zeros(4, 5, dtype=m.float64), m.ones(4, 5, dtype=m.float64)
        weight = m.arange(20.0, dtype=m.float64).reshape(5, 4).t() / 20
        assert m.lerp(start, end, weight).stride() == (5, 1)

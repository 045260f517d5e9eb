"""Every elementwise primitive's ``infer`` rule agrees with what its ``forward`` computes (the
rule tracing and error messages rely on), checked by watching each op an expression applies."""

import numpy as np
import pytest

import ember
from ember.ops.primitive import apply_below, pop_handler, push_handler, spec

FAMILIES = ("ember.ops.unary", "ember.ops.activations", "ember.ops.compare",
            "ember.ops.select", "ember.ops.arithmetic", "ember.ops.lerp_kernel")


class InferWatcher:
    """A dispatch handler comparing each op's infer result with its eager output."""

    def __init__(self):
        self.seen = set()

    def __call__(self, prim, inputs, params):
        out = apply_below(self, prim, inputs, params)
        if type(prim).__module__ in FAMILIES:
            expected = prim.infer(*(spec(t) for t in inputs), **params)
            assert tuple(expected.shape) == tuple(out.shape), prim.name
            assert expected.dtype is out.dtype, (prim.name, expected.dtype, out.dtype)
            self.seen.add(prim.name)
        return out


def expressions(x, i, b):
    yield from (getattr(ember, n)(x.abs() + 1.5) for n in ember.ops.unary.__all__
                if n not in ("acosh", "arccosh", "asin", "acos", "atanh", "arcsin", "arccos",
                             "arctanh"))
    yield from (ember.acosh(x.abs() + 1.5), ember.asin(x * 0.1), ember.acos(x * 0.1),
                ember.atanh(x * 0.1), ember.round(x, decimals=2), ember.abs(i), ember.sign(i))
    for name in ["relu", "relu6", "leaky_relu", "hardtanh", "elu", "selu", "celu", "gelu",
                 "silu", "softplus", "mish", "logsigmoid", "hardsigmoid", "hardswish",
                 "softsign"]:
        yield getattr(ember, name)(x)
    yield ember.gelu(x, approximate="tanh")
    yield ember.relu(i)
    for op in ["eq", "ne", "lt", "le", "gt", "ge", "maximum", "minimum", "fmax", "fmin"]:
        yield getattr(ember, op)(x, x * 0.5)
        yield getattr(ember, op)(i, 2)
    yield from (ember.logical_and(x, i), ember.logical_or(b, x), ember.logical_xor(i, b),
                ember.logical_not(x), i & 3, i | b, i ^ 1, ~i, ~b)
    yield from (ember.isnan(x), ember.isinf(x), ember.isfinite(x), ember.isposinf(x),
                ember.isneginf(x), ember.signbit(x), ember.nan_to_num(x),
                ember.isclose(x, x + 1e-9), ember.isclose(i, i))
    yield from (ember.where(b, x, 0.0), ember.where(x > 0, i, x), ember.clamp(x, -1, 1),
                ember.clamp(i, min=0.5), ember.clamp(x, x * 0.5, x * 2.0))
    yield from (x ** 2, x.abs() ** x, 2 ** x, i ** 2, i ** ember.tensor(-1), ember.fmod(x, 1.5),
                ember.addcmul(x, x, x), ember.lerp(x, x * 2, 0.5), x - 0.5)


@pytest.mark.parametrize("shape", [(3, 4), (), (0, 2)])
def test_infer_agrees_with_forward(shape):
    rng = np.random.default_rng(0)
    x = ember.from_numpy(rng.uniform(-2, 2, size=shape))
    i = ember.from_numpy(np.asarray(rng.integers(-3, 4, size=shape)))
    b = ember.from_numpy(np.asarray(rng.uniform(size=shape) > 0.5))
    watcher = InferWatcher()
    push_handler(watcher)
    try:
        for _ in expressions(x, i, b):
            pass
    finally:
        pop_handler(watcher)
    assert len(watcher.seen) > 60, sorted(watcher.seen)


def test_infer_rules_give_clear_errors():
    from ember.ops.compare import Eq
    from ember.ops.primitive import TensorSpec
    from ember.ops.select import Where

    f32, boolean = ember.float32, ember.bool_
    with pytest.raises(ember.ShapeError, match="eq: shapes"):
        Eq.infer(TensorSpec((3,), f32), TensorSpec((4,), f32))
    with pytest.raises(ember.DTypeError, match="where: the condition must be a bool"):
        Where.infer(TensorSpec((3,), f32), TensorSpec((3,), f32), TensorSpec((3,), f32))
    out = Where.infer(TensorSpec((3, 1), boolean), TensorSpec((4,), f32), TensorSpec((), f32))
    assert out == TensorSpec((3, 4), f32)

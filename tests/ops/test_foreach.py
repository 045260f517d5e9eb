"""``ember._foreach_*`` against ``torch._foreach_*``: every function, each form of its
operand, values and gradients; in a compiled step; the errors."""

import numpy as np
import pytest
import torch

import ember
from ember.autograd.gradcheck import gradcheck

RNG = np.random.default_rng(0)
A = [RNG.random(3) + 0.2, RNG.random((2, 2)) + 0.2]
B = [RNG.random(3) + 0.3, RNG.random((1, 2)) + 0.3]  # (broadcasts against A's)
C = [RNG.random(3) + 0.4, RNG.random((2, 2)) + 0.4]
UNARY = ["abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
         "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
         "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc"]
BINARY = ["add", "sub", "mul", "div", "pow", "clamp_min", "clamp_max", "maximum", "minimum"]
OTHERS = {"number": lambda lib, b: 0.7, "numbers": lambda lib, b: [0.7, 1.3],
          "tensors": lambda lib, b: b, "0-d tensor": lambda lib, b: lib.tensor(0.6)}


def _same_as_torch(call, grad=True):
    """``call(lib, a, b, c)`` on copies of A, B, C in both libraries: the tensors it returns
    (an in-place call returns the list it wrote) and, with ``grad``, the gradients of a
    weighted sum of them."""
    results = []
    for lib in (ember, torch):
        a, b, c = ([lib.tensor(x.copy(), requires_grad=grad) for x in xs] for xs in (A, B, C))
        out = call(lib, a, b, c)
        values = [t.detach().numpy().copy() for t in out]
        grads = []
        if grad:
            sum((t * (i + 2)).sum() for i, t in enumerate(out)).backward()
            grads = [None if t.grad is None else t.grad.numpy() for t in a + b + c]
        results.append((values, grads))
    (values, grads), (want_values, want_grads) = results
    for got, want in zip(values + grads, want_values + want_grads, strict=True):
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_allclose(got, want, rtol=1e-12)


def _written(lib, name, xs, *args, **kwargs):
    """The in-place ``name`` on copies of ``xs``: those copies, which it wrote (and returns,
    as PyTorch's binding does)."""
    xs = [x * 1 for x in xs]
    assert getattr(lib, name)(xs, *args, **kwargs) is xs
    return xs


@pytest.mark.parametrize("op", UNARY)
def test_unary_ops_match_torch(op):
    _same_as_torch(lambda lib, a, b, c: getattr(lib, f"_foreach_{op}")([x * 0.9 for x in a]))
    _same_as_torch(lambda lib, a, b, c: _written(lib, f"_foreach_{op}_", [x * 0.9 for x in a]))


@pytest.mark.parametrize("form", list(OTHERS))
@pytest.mark.parametrize("op", BINARY)
def test_binary_ops_take_each_form_of_operand_as_torch(op, form):
    grad = op not in ("maximum", "minimum")  # (torch has no derivative of those)
    _same_as_torch(lambda lib, a, b, c: getattr(lib, f"_foreach_{op}")(a, OTHERS[form](lib, b)),
                   grad)
    _same_as_torch(lambda lib, a, b, c: _written(lib, f"_foreach_{op}_", a,
                                                 OTHERS[form](lib, b)), grad)


@pytest.mark.parametrize("op", ["add", "sub"])
def test_alpha_scales_the_operand(op):
    _same_as_torch(lambda lib, a, b, c: getattr(lib, f"_foreach_{op}")(a, b, alpha=2.5))
    _same_as_torch(lambda lib, a, b, c: _written(lib, f"_foreach_{op}_", a, b, alpha=-0.5))


@pytest.mark.parametrize("value", [None, 0.3, [0.3, -1.2], "tensor"])
@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_addcmul_and_addcdiv_take_each_form_of_value(op, value):
    def args(lib):
        return () if value is None else (lib.tensor([0.3, -1.2]),) if value == "tensor" \
            else (value,)
    grad = value != "tensor"  # (torch has no derivative of that form)
    _same_as_torch(lambda lib, a, b, c: getattr(lib, f"_foreach_{op}")(a, b, c, *args(lib)),
                   grad)
    _same_as_torch(lambda lib, a, b, c: _written(lib, f"_foreach_{op}_", a, b, c, *args(lib)),
                   grad)


@pytest.mark.parametrize("weight", [0.3, [0.3, 0.8], "tensors"])
def test_lerp_takes_a_weight_a_list_or_tensors(weight):
    def w(lib):
        return [lib.tensor(0.3, dtype=lib.float64), lib.tensor([0.1, 0.9], dtype=lib.float64)] \
            if weight == "tensors" else weight
    _same_as_torch(lambda lib, a, b, c: lib._foreach_lerp(a, c, w(lib)))
    _same_as_torch(lambda lib, a, b, c: _written(lib, "_foreach_lerp_", a, c, w(lib)))


@pytest.mark.parametrize("ord", [2, 1, 3.5, float("inf")])
def test_norms_and_power_sums_match_torch(ord):
    _same_as_torch(lambda lib, a, b, c: lib._foreach_norm(a, ord))
    _same_as_torch(lambda lib, a, b, c: lib._foreach_powsum([x - 0.5 for x in a], ord),
                   grad=False)  # (torch has no derivative of powsum)


def test_the_other_list_ops_match_torch():
    _same_as_torch(lambda lib, a, b, c: lib._foreach_pow(2.0, a))
    _same_as_torch(lambda lib, a, b, c: lib._foreach_norm([x.float() for x in a], 2,
                                                          dtype=lib.float64), grad=False)
    _same_as_torch(lambda lib, a, b, c: lib._foreach_max(a))
    _same_as_torch(lambda lib, a, b, c: lib._foreach_mm([a[1]], [c[1]]))
    _same_as_torch(lambda lib, a, b, c: lib._foreach_clone(a))
    _same_as_torch(lambda lib, a, b, c: _written(lib, "_foreach_copy_", a, c), grad=False)
    _same_as_torch(lambda lib, a, b, c: _written(lib, "_foreach_zero_", a))


def test_float64_gradients_are_right():
    xs = [ember.tensor(x, requires_grad=True) for x in A]
    ys = [ember.tensor(x, requires_grad=True) for x in C]
    assert gradcheck(lambda *t: ember._foreach_addcdiv(t[:2], t[2:], t[:2], [0.5, -2.0]),
                     (*xs, *ys))
    assert gradcheck(lambda *t: ember._foreach_norm(t, 3), tuple(xs))


def test_an_ema_of_weights_compiles_as_eager():
    def run(compiled):
        ember.manual_seed(0)
        model = ember.nn.Linear(3, 2)
        ema = [p.detach().clone() for p in model.parameters()]
        opt = ember.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            model(x).square().mean().backward()
            opt.step()
            opt.zero_grad()
            with ember.no_grad():
                ember._foreach_lerp_(ema, list(model.parameters()), 0.1)
        fn = ember.jit.compile(step) if compiled else step
        for k in range(3):
            fn(ember.arange(6.0).reshape(2, 3) / (k + 1))
        return [t.numpy() for t in ema]
    for got, want in zip(run(True), run(False), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_bad_lists_are_clear_errors():
    a = [ember.ones(2), ember.ones(3)]
    with pytest.raises(ValueError, match="_foreach_add: expected a non-empty list of tensors"):
        ember._foreach_add([], 1.0)
    with pytest.raises(ValueError, match="2 tensors but 1 operands"):
        ember._foreach_add(a, [1.0])
    with pytest.raises(ValueError, match="2 tensors but 1 operands"):
        ember._foreach_mul(a, [ember.ones(2)])
    with pytest.raises(ValueError, match="must be 0-d, got shape"):
        ember._foreach_mul(a, ember.ones(2))
    with pytest.raises(TypeError, match="takes no alpha"):
        ember._foreach_mul(a, 2.0, alpha=3)
    with pytest.raises(ember.DTypeError):
        ember._foreach_add_([ember.tensor([1, 2])], 0.5)  # (as torch: float into int)


@pytest.mark.parametrize("fn", [
    lambda m: m._foreach_add([m.tensor([1])], [m.tensor([1])], alpha=1.0),
    lambda m: m._foreach_sub([m.ones(1)], [m.ones(1)], alpha=1 + 0j),
    lambda m: m._foreach_mul([m.ones(1)], [m.ones(1)], alpha=1.0),
])
def test_foreach_checks_an_alpha_equal_to_1_of_another_type_as_torch(fn):
    # (alpha=1.0 equals 1, so it was dropped unchecked: int lists added with a float alpha)
    with pytest.raises((RuntimeError, TypeError)):
        fn(torch)
    with pytest.raises(TypeError, match="alpha"):
        fn(ember)

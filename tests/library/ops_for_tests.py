"""The same custom ops defined with ember.library and with torch.library (NumPy kernels)."""


import numpy as np


def define_sin(lib, libmod, ns):
    """``ns::numpy_sin(x) -> sin(x)``, with a fake rule and autograd."""
    T = lib.Tensor

    @libmod.custom_op(f"{ns}::numpy_sin", mutates_args=())
    def numpy_sin(x: T) -> T:
        return lib.from_numpy(np.sin(x.numpy()))

    numpy_sin.register_fake(lambda x: lib.empty_like(x))

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()

    numpy_sin.register_autograd(backward, setup_context=setup_context)
    return numpy_sin


def define_pair(lib, libmod, ns):
    """``ns::scaled_pair(x, w, alpha, *, n) -> (alpha * x * w, sum(x ** n, 0))`` (w optional),
    with a fake rule and a backward written in the framework's ops (twice differentiable)."""
    T = lib.Tensor

    @libmod.custom_op(f"{ns}::scaled_pair", mutates_args=())
    def scaled_pair(x: T, w: T | None, alpha: float = 1.0, *, n: int = 2) -> tuple[T, T]:
        a = x.numpy() * alpha
        if w is not None:
            a = a * w.numpy()
        return lib.from_numpy(a), lib.from_numpy((x.numpy() ** n).sum(0))

    @scaled_pair.register_fake
    def _(x, w, alpha=1.0, *, n=2):
        return lib.empty_like(x), x.new_empty(x.shape[1:])

    def setup_context(ctx, inputs, keyword_only_inputs, output):
        x, w, alpha = inputs
        ctx.save_for_backward(x, w)
        ctx.alpha, ctx.n = alpha, keyword_only_inputs["n"]

    def backward(ctx, g_scaled, g_sum):
        x, w = ctx.saved_tensors
        gx = g_scaled * ctx.alpha * (w if w is not None else 1) + \
            g_sum * ctx.n * x ** (ctx.n - 1)
        gw = None if w is None else g_scaled * ctx.alpha * x
        return gx, gw, None

    scaled_pair.register_autograd(backward, setup_context=setup_context)
    return scaled_pair


def define_add_(lib, libmod, ns):
    """``ns::numpy_add_(x, y)``: adds ``y`` into ``x`` in place, returns nothing."""
    T = lib.Tensor

    @libmod.custom_op(f"{ns}::numpy_add_", mutates_args=("x",))
    def numpy_add_(x: T, y: T) -> None:
        out = x.numpy()
        out += y.numpy()

    numpy_add_.register_fake(lambda x, y: None)
    return numpy_add_


def define_weighted_sum(lib, libmod, ns):
    """``ns::weighted_sum(xs, weights=None) -> sum_i weights[i] * xs[i]``: a tensor-list input
    whose backward returns a list, ``set_materialize_grads`` and ``needs_input_grad``."""
    T = lib.Tensor

    @libmod.custom_op(f"{ns}::weighted_sum", mutates_args=())
    def weighted_sum(xs: list[T], weights: list[float] | None = None) -> T:
        weights = weights or [1.0] * len(xs)
        return lib.from_numpy(sum(w * x.numpy() for w, x in zip(weights, xs)))

    def setup_context(ctx, inputs, output):
        xs, weights = inputs
        ctx.weights = weights or [1.0] * len(xs)
        ctx.set_materialize_grads(False)

    def backward(ctx, g):
        assert ctx.needs_input_grad[1:] == (False,) and ctx.needs_input_grad[0][0]
        return [g * w for w in ctx.weights], None

    weighted_sum.register_autograd(backward, setup_context=setup_context)
    return weighted_sum

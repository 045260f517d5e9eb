"""Finite-difference checks of gradients: ``gradcheck`` (first order) and ``gradgradcheck``
(second order), as public API. Use float64 (complex128) inputs: float32 differences are too
coarse. A complex input or output counts as its (real, imag) pairs, as in PyTorch: the
Jacobians compared are those of the real views, so a wrong imaginary part is caught."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember.autograd.engine import grad
from ember.errors import GradError
from ember.tensor import Tensor


class GradcheckError(GradError):
    """Analytical and numerical derivatives disagree."""


def _tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _wrt(op: str, inputs: tuple) -> list[int]:
    """The indices of the inputs that require grad; each must be a tensor."""
    wrt = [i for i, x in enumerate(inputs) if getattr(x, "requires_grad", False)]
    for i in wrt:
        if not isinstance(inputs[i], Tensor):
            raise TypeError(f"{op}: input {i} is a {type(inputs[i]).__name__}, not a tensor; "
                            f"{op} differentiates with respect to tensors. Hint: for a nested "
                            "tensor nt, check a function of its values: lambda v: f(ember.nested"
                            ".nested_tensor_from_jagged(v, nt.offsets())) at nt.values()")
    return wrt


def _float_outputs(outputs: tuple) -> list:
    return [o for o in outputs
            if hasattr(o, "dtype") and (o.dtype.is_floating_point or o.dtype.is_complex)]


def _real_view(array: np.ndarray) -> np.ndarray:
    """The flat float64 values, a complex array as its (real, imag) pairs."""
    if array.dtype.kind == "c":
        return np.stack([array.real, array.imag], axis=-1).astype(np.float64).ravel()
    return array.astype(np.float64).ravel()


def _parts(array: np.ndarray) -> tuple:
    """The unit steps along each real coordinate of one element: 1, and 1j if complex."""
    return (1, 1j) if array.dtype.kind == "c" else (1,)


def _numerical(func: Callable, inputs: tuple, wrt: list[int], eps: float) -> list[list[np.ndarray]]:
    """jac[i][k]: d(output k)/d(input i) as an array of shape (out_k.size, in_i.size)."""
    jac = []
    # evaluated with grad on: func may itself differentiate (gradgradcheck)
    for i in wrt:
        array = inputs[i]._data  # perturbed in place, element by element (views too)
        cols: list[list[np.ndarray]] = []
        for j in range(array.size):
            at = np.unravel_index(j, array.shape)
            orig = array[at].copy()
            for unit in _parts(array):
                array[at] = orig + eps * unit
                plus = [_real_view(o._data).copy()
                        for o in _float_outputs(_tuple(func(*inputs)))]
                array[at] = orig - eps * unit
                minus = [_real_view(o._data) for o in _float_outputs(_tuple(func(*inputs)))]
                array[at] = orig
                cols.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
        n_out = len(cols[0]) if cols else len(_float_outputs(_tuple(func(*inputs))))
        jac.append([np.stack([c[k] for c in cols], axis=1) if cols else
                    np.zeros((0, 0)) for k in range(n_out)])
    return jac


def _analytical(outputs: list, inputs: tuple, wrt: list[int]) -> list[list[np.ndarray]]:
    from ember.layouts import contiguous_format
    from ember.ops.creation import zeros_like

    def width(t: Any) -> int:
        return t.numel() * len(_parts(t._data))

    jac = [[np.zeros((width(o), width(inputs[i]))) for o in outputs] for i in wrt]
    for k, out in enumerate(outputs):
        parts = _parts(out._data)
        for r in range(width(out)):
            seeds = [zeros_like(o, memory_format=contiguous_format) for o in outputs]
            seeds[k]._data.reshape(-1)[r // len(parts)] = parts[r % len(parts)]
            grads = grad(outputs, [inputs[i] for i in wrt], seeds, retain_graph=True,
                         allow_unused=True)
            for n, g in enumerate(grads):
                if g is not None:
                    jac[n][k][r] = _real_view(g._data)
    return jac


def gradcheck(func: Callable[..., Any], inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True) -> bool:
    """Compares the gradients autograd computes for ``func`` with central differences.

    Every input with ``requires_grad`` is checked against every floating or complex output
    (complex ones through their real and imaginary parts).

    Example:
        >>> x = ember.randn(3, dtype=ember.float64, requires_grad=True)
        >>> ember.autograd.gradcheck(ember.sin, (x,))
        True
    """
    inputs = _tuple(inputs)
    wrt = _wrt("gradcheck", inputs)
    if not wrt:
        raise GradError("gradcheck: no input requires grad; nothing to check")
    outputs = _float_outputs(_tuple(func(*inputs)))
    chosen = [k for k, o in enumerate(outputs) if o.requires_grad]
    if not chosen:
        raise GradcheckError("gradcheck: no output depends on the inputs through autograd")
    outputs = [outputs[k] for k in chosen]
    analytical = _analytical(outputs, inputs, wrt)
    numerical = _numerical(lambda *xs: [_float_outputs(_tuple(func(*xs)))[k] for k in chosen],
                           inputs, wrt, eps)
    for n, i in enumerate(wrt):
        for k in range(len(outputs)):
            a, num = analytical[n][k], numerical[n][k]
            if a.shape != num.shape:
                continue
            bad = np.abs(a - num) > atol + rtol * np.abs(num)
            if bad.any():
                r, c = np.unravel_index(np.argmax(np.abs(a - num) * bad), a.shape)
                msg = (f"gradcheck: Jacobian mismatch for output {k} with respect to input {i}: "
                       f"at (output element {r}, input element {c}) numerical "
                       f"{num[r, c]:.6g}, analytical {a[r, c]:.6g}; "
                       f"{int(bad.sum())} of {bad.size} entries differ")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def gradgradcheck(func: Callable[..., Any], inputs: Any, grad_outputs: Sequence | None = None,
                  *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  raise_exception: bool = True, seed: int = 0) -> bool:
    """Checks second derivatives: gradcheck of ``(inputs, v) -> vjp(func, inputs)(v)``.

    Example:
        >>> x = ember.randn(3, dtype=ember.float64, requires_grad=True)
        >>> ember.autograd.gradgradcheck(ember.tanh, (x,))
        True
    """
    from ember.ops.creation import tensor

    inputs = _tuple(inputs)
    n_in = len(inputs)
    wrt = _wrt("gradgradcheck", inputs)
    outputs = [o for o in _float_outputs(_tuple(func(*inputs))) if o.requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        grad_outputs = [tensor(rng.standard_normal(o.shape) + 1j * rng.standard_normal(o.shape)
                               if o.dtype.is_complex else rng.standard_normal(o.shape),
                               dtype=o.dtype, requires_grad=True) for o in outputs]

    def first_derivative(*args: Any) -> tuple:
        xs, vs = args[:n_in], args[n_in:]
        outs = [o for o in _float_outputs(_tuple(func(*xs))) if o.requires_grad]
        gs = grad(outs, [xs[i] for i in wrt], list(vs), create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_derivative, (*inputs, *grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception)

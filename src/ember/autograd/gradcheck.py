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


def _seed(outputs: list, k: int, r: int) -> np.ndarray:
    """Output ``k``'s one-hot gradient for real coordinate ``r`` (1, or 1j for the imaginary
    part of a complex element)."""
    out = outputs[k]._data
    parts = _parts(out)
    seed = np.zeros(out.shape, out.dtype)
    seed.reshape(-1)[r // len(parts)] = parts[r % len(parts)]
    return seed


def _width(t: Any) -> int:
    return t.numel() * len(_parts(t._data))


def _analytical(outputs: list, inputs: tuple, wrt: list[int], check_dtypes: bool,
                batched: bool) -> list[list[np.ndarray]]:
    """jac[i][k], as :func:`_numerical`'s, one backward per row (with ``batched``, one
    ``is_grads_batched`` backward per output instead)."""
    from ember.ops.creation import tensor, zeros_like

    jac = [[np.zeros((_width(o), _width(inputs[i]))) for o in outputs] for i in wrt]
    for k, out in enumerate(outputs):
        rows = range(_width(out))
        if batched:
            seeds = [tensor(np.stack([_seed(outputs, k, r) if m == k else
                                      np.zeros(o._data.shape, o._data.dtype) for r in rows]))
                     for m, o in enumerate(outputs)]
            runs = [(rows, grad(outputs, [inputs[i] for i in wrt], seeds, retain_graph=True,
                                allow_unused=True, is_grads_batched=True))]
        else:
            runs = [((r,), grad(outputs, [inputs[i] for i in wrt],
                                [tensor(_seed(outputs, k, r)) if m == k else zeros_like(o)
                                 for m, o in enumerate(outputs)],
                                retain_graph=True, allow_unused=True)) for r in rows]
        for at, grads in runs:
            for n, g in enumerate(grads):
                if g is None:
                    continue
                if check_dtypes and g.dtype is not inputs[wrt[n]].dtype:
                    raise GradcheckError(f"gradcheck: the gradient of input {wrt[n]} is "
                                         f"{g.dtype.name} but the input is "
                                         f"{inputs[wrt[n]].dtype.name}")
                jac[n][k][list(at)] = _real_view(g._data).reshape(len(at), -1)
    return jac


def _forward(func: Callable, inputs: tuple, wrt: list[int]) -> list[list[np.ndarray]]:
    """jac[i][k], as :func:`_numerical`'s, one forward-mode pass per column."""
    from ember.autograd.forward import jvp
    from ember.ops.creation import tensor

    def of_wrt(*ts: Any) -> tuple:
        xs = list(inputs)
        for i, t in zip(wrt, ts):
            xs[i] = t
        return tuple(func(*xs))

    jac = []
    for n, i in enumerate(wrt):
        cols = []
        array = inputs[i]._data
        for j in range(array.size):
            for unit in _parts(array):
                tangent = np.zeros(array.shape, array.dtype)
                tangent.reshape(-1)[j] = unit
                tangents = tuple(tensor(tangent) if m == n else None for m in range(len(wrt)))
                _, douts = jvp(of_wrt, tuple(inputs[m] for m in wrt), tangents)
                cols.append([_real_view(d._data) for d in douts])
        n_out = len(cols[0]) if cols else len(of_wrt(*(inputs[m] for m in wrt)))
        jac.append([np.stack([c[k] for c in cols], axis=1) if cols else np.zeros((0, 0))
                    for k in range(n_out)])
    return jac


def _compare(analytical: list, numerical: list, wrt: list[int], atol: float, rtol: float,
             what: str) -> str | None:
    """The first disagreement between two sets of Jacobians, as a message, or None."""
    for n, i in enumerate(wrt):
        for k, (a, num) in enumerate(zip(analytical[n], numerical[n])):
            if a.shape != num.shape:
                continue
            bad = np.abs(a - num) > atol + rtol * np.abs(num)
            if bad.any():
                r, c = np.unravel_index(np.argmax(np.abs(a - num) * bad), a.shape)
                return (f"gradcheck: {what} mismatch for output {k} with respect to input {i}: "
                        f"at (output element {r}, input element {c}) numerical "
                        f"{num[r, c]:.6g}, analytical {a[r, c]:.6g}; "
                        f"{int(bad.sum())} of {bad.size} entries differ")
    return None


def gradcheck(func: Callable[..., Any], inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Compares the gradients autograd computes for ``func`` with central differences.

    Every input with ``requires_grad`` is checked against every floating or complex output
    (complex ones through their real and imaginary parts): reverse mode (``backward``, run
    twice: the two must agree within ``nondet_tol``) unless ``check_backward_ad=False``,
    forward mode (``jvp``) with ``check_forward_ad``. ``check_grad_dtypes`` also checks each
    gradient has its input's dtype; ``check_batched_grad``, that backward with
    ``is_grads_batched`` gives the same rows. As in PyTorch otherwise, except: ``fast_mode``
    and ``masked`` are accepted and Ember checks every entry of the full Jacobian (slower,
    never looser); ``check_undefined_grad`` is accepted (Ember's rules receive zeros, not
    undefined gradients); ``check_batched_forward_grad`` is refused (use ``ember.func.vmap``
    over ``ember.func.jvp``).

    Example:
        >>> x = ember.randn(3, dtype=ember.float64, requires_grad=True)
        >>> ember.autograd.gradcheck(ember.sin, (x,), check_forward_ad=True)
        True
    """
    if check_batched_forward_grad:
        raise NotImplementedError("gradcheck: check_batched_forward_grad is not supported; "
                                  "check ember.func.vmap(ember.func.jvp) against jvp instead")
    inputs = _tuple(inputs)
    wrt = _wrt("gradcheck", inputs)
    if not wrt:
        raise GradError("gradcheck: no input requires grad; nothing to check")
    outputs = _float_outputs(_tuple(func(*inputs)))
    chosen = [k for k, o in enumerate(outputs) if o.requires_grad]
    if not chosen:
        raise GradcheckError("gradcheck: no output depends on the inputs through autograd")
    outputs = [outputs[k] for k in chosen]

    def chosen_outputs(*xs: Any) -> list:
        return [_float_outputs(_tuple(func(*xs)))[k] for k in chosen]

    numerical = _numerical(chosen_outputs, inputs, wrt, eps)
    failure = None
    if check_backward_ad:
        analytical = _analytical(outputs, inputs, wrt, check_grad_dtypes, False)
        failure = _compare(analytical, numerical, wrt, atol, rtol, "Jacobian")
        if failure is None:
            again = _analytical(outputs, inputs, wrt, False, False)
            failure = _compare(again, analytical, wrt, nondet_tol, 0.0,
                               "Backward is not reentrant: a second Jacobian")
        if failure is None and check_batched_grad:
            batched = _analytical(outputs, inputs, wrt, False, True)
            failure = _compare(batched, analytical, wrt, atol, rtol,
                               "batched gradient (is_grads_batched)")
    if failure is None and check_forward_ad:
        forward = _forward(chosen_outputs, inputs, wrt)
        failure = _compare(forward, numerical, wrt, atol, rtol,
                           "Jacobian computed with forward mode")
    if failure is not None and raise_exception:
        raise GradcheckError(failure)
    return failure is None


def gradgradcheck(func: Callable[..., Any], inputs: Any, grad_outputs: Sequence | None = None,
                  *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True,
                  nondet_tol: float = 0.0, check_undefined_grad: bool = True,
                  check_grad_dtypes: bool = False, check_batched_grad: bool = False,
                  check_fwd_over_rev: bool = False, check_rev_over_rev: bool = True,
                  fast_mode: bool = False, masked: bool = False, seed: int = 0) -> bool:
    """Checks second derivatives: gradcheck of ``(inputs, v) -> vjp(func, inputs)(v)``, by
    reverse mode (``check_rev_over_rev``) and forward mode (``check_fwd_over_rev``); the other
    options are :func:`gradcheck`'s. Random ``grad_outputs`` (from ``seed``) are made when not
    given, laid out non-contiguously with ``gen_non_contig_grad_outputs``.

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
        spread = 2 if gen_non_contig_grad_outputs else 1  # every other element of a wider one
        grad_outputs = []
        for o in outputs:
            shape = (*o.shape, spread)
            v = rng.standard_normal(shape)
            v = v + 1j * rng.standard_normal(shape) if o.dtype.is_complex else v
            grad_outputs.append(tensor(v, dtype=o.dtype)[..., 0].requires_grad_())

    def first_derivative(*args: Any) -> tuple:
        xs, vs = args[:n_in], args[n_in:]
        outs = [o for o in _float_outputs(_tuple(func(*xs))) if o.requires_grad]
        gs = grad(outs, [xs[i] for i in wrt], list(vs), create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_derivative, (*inputs, *grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev,
                     fast_mode=fast_mode, masked=masked)

"""L-BFGS: a quasi-Newton method that builds its steps from a short history of updates."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from numbers import Integral
from typing import Any

from ember.errors import ArgumentError
from ember.optim.elementwise import check_hyper, half_add
from ember.optim.optimizer import Optimizer
from ember.tensor import Tensor, _wrap

__all__ = ["LBFGS"]


class LBFGS(Optimizer):
    """Limited-memory BFGS (Nocedal & Wright, Algorithm 7.4 and 7.5), PyTorch's algorithm.

    Each ``step(closure)`` runs up to ``max_iter`` iterations over all parameters as one flat
    vector: the direction comes from the last ``history_size`` step and gradient differences
    (the two-loop recursion); the step length is ``lr`` (the first iteration's is scaled down
    by the gradient's 1-norm), or is searched for with ``line_search_fn="strong_wolfe"``. It
    stops early when the gradient's largest entry is at most ``tolerance_grad``, or when the
    step or the loss change by less than ``tolerance_change``, or after ``max_eval`` closure
    calls (default ``max_iter * 5 // 4``). One parameter group only; memory grows as
    ``2 * history_size`` copies of the parameters. A ``history_size`` changed between steps
    applies from the next step (lowered, the oldest pairs are dropped; PyTorch 2.13 raises
    IndexError there).

    Example:
        >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = ember.optim.LBFGS([w], line_search_fn="strong_wolfe")
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = ((w - 3.0) ** 2 * ember.tensor([1.0, 10.0])).sum()
        ...     loss.backward()
        ...     return loss
        >>> first_loss = opt.step(closure)
        >>> w
        tensor([3., 3.], requires_grad=True)
    """

    # (PyTorch's step copies the new gradient into prev_flat_grad; its other state, the
    # direction and the history lists, it replaces, so inference tensors there pass)
    state_written_in_place = ("prev_flat_grad",)

    def __init__(self, params: Iterable[Any], lr: float = 1, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        check_hyper(lr=lr)
        if line_search_fn not in (None, "strong_wolfe"):
            raise ArgumentError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got "
                                f"{line_search_fn!r}")
        if isinstance(history_size, bool) or not isinstance(history_size, Integral) \
                or history_size < 1:
            raise ArgumentError(f"LBFGS: history_size must be an int of at least 1 (the number "
                                f"of step and gradient differences kept), got {history_size!r}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Refused once a group exists: LBFGS treats all its parameters as one vector."""
        if self.param_groups:
            raise ArgumentError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().add_param_group(param_group)

    @property
    def _params(self) -> list[Tensor]:
        return self.param_groups[0]["params"]

    def _xp(self) -> Any:
        return self._params[0]._device.xp

    def _gather_flat_grad(self) -> Any:
        """The gradients as one real vector; a complex parameter counts as its (real, imag)
        pairs, as PyTorch's ``view_as_real``."""
        xp = self._xp()
        parts = []
        for p in self._params:
            g = p.grad
            if g is None:
                g = xp.zeros(p._data.shape, p._data.dtype)
            else:  # (a sparse gradient counts densely, as PyTorch's)
                g = (g if isinstance(g, Tensor) else g.to_dense())._data
            if g.dtype.kind == "c":
                g = xp.stack([g.real, g.imag], axis=-1)
            parts.append(g.reshape(-1))
        return xp.concatenate(parts)

    def _add_grad(self, step_size: Any, update: Any) -> None:
        """``p += step_size * update`` as PyTorch's ``p.add_(update, alpha=t)``: for a real
        ``update`` of ``p``'s dtype below float64, one fused rounding with ``t`` rounded to that
        dtype (``half_add``); else in the wider dtype."""
        offset, xp = 0, self._xp()
        for p in self._params:
            n = p._data.size * (2 if p._data.dtype.kind == "c" else 1)
            part = update[offset:offset + n]
            if p._data.dtype.kind == "c":
                part = part[0::2] + 1j * part[1::2]
            part = part.reshape(p._data.shape)
            if p._data.dtype == part.dtype and p._data.dtype.itemsize < 8:
                half_add(xp, p._data, part, float(step_size), out=p._data)
            else:
                p._data += float(step_size) * part
            p._vc.value += 1
            offset += n

    def _set_params(self, arrays: list[Any]) -> None:
        for p, data in zip(self._params, arrays, strict=True):
            p._data[...] = data
            p._vc.value += 1

    def _directional_evaluate(self, closure: Callable[[], Any], x: list[Any], t: float,
                              d: Any) -> tuple[float, Any]:
        """The loss and flat gradient at ``x + t * d``; the parameters are left at ``x``."""
        self._add_grad(t, d)
        loss = float(self._evaluate(closure))
        flat_grad = self._gather_flat_grad()
        self._set_params(x)
        return loss, flat_grad

    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Runs the iterations; ``closure`` zeroes the gradients, computes the loss, calls
        ``backward`` and returns the loss. Returns the loss of the first evaluation."""
        if closure is None:
            raise TypeError("LBFGS.step() needs a closure that zeroes the gradients, computes "
                            "the loss, calls backward() and returns the loss")
        self._check_writable(self._params)
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        lr_tensor = lr if isinstance(lr, Tensor) else None
        lr = _lr_number(lr)
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]
        xp = self._xp()
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = self._evaluate(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if _max_abs(xp, flat_grad) <= tolerance_grad:
            return orig_loss

        d, prev_flat_grad = _array(state.get("d")), _array(state.get("prev_flat_grad"))
        # (a history_size lowered since the last step keeps the newest pairs: PyTorch 2.13
        # raises IndexError in its two-loop recursion)
        keep = slice(-history_size, None)
        old_dirs = [_array(y) for y in state.get("old_dirs", [])[keep]]
        old_stps = [_array(s) for s in state.get("old_stps", [])[keep]]
        # (numbers: a state PyTorch saved holds 0-d tensors, ``ro`` a list of them)
        t, h_diag, prev_loss = (_scalar(state.get(k)) for k in ("t", "H_diag", "prev_loss"))
        ro = [_scalar(r) for r in state.get("ro", [])[keep]]
        al = state.get("al")  # (PyTorch's two-loop coefficients, kept in the state as its)
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro, h_diag = [], [], [], 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * float(t)  # (t cast to d's dtype, as PyTorch's 0-d ``t``)
                ys = _dot(xp, y, s)
                if ys > 1e-10:  # (curvature condition: else the pair is skipped)
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / _dot(xp, y, y)
                al = list(al or ())  # (padded to a raised history_size: PyTorch's IndexError)
                al += [None] * (history_size - len(al))
                d = _two_loop(xp, -flat_grad, old_dirs, old_stps, ro, h_diag, al)
            prev_flat_grad, prev_loss = flat_grad, loss
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / xp.abs(flat_grad).sum()[()]) * lr
            else:
                t = lr
            gtd = _dot(xp, flat_grad, d)
            if gtd > -tolerance_change:  # not a descent direction
                break

            evals = 0
            if group["line_search_fn"] is not None:
                x_init = [p._data.copy() for p in self._params]
                loss, flat_grad, t, evals = _strong_wolfe(
                    lambda x, t, d: self._directional_evaluate(closure, x, t, d), xp, x_init,
                    t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = _max_abs(xp, flat_grad) <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:  # (the last iteration's loss is left to the next step)
                    loss = float(self._evaluate(closure))
                    flat_grad = self._gather_flat_grad()
                    opt_cond = _max_abs(xp, flat_grad) <= tolerance_grad
                    evals = 1
            current_evals += evals
            state["func_evals"] += evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if (_max_abs(xp, d * float(t)) <= tolerance_change
                    or abs(loss - prev_loss) < tolerance_change):
                break

        device = self._params[0]._device
        real = flat_grad.dtype  # (0-d tensors of the flat gradient's dtype, as PyTorch's)
        if lr_tensor is not None and t is lr:  # (PyTorch's t is then the lr tensor itself)
            t = lr_tensor if lr_tensor.dim() == 0 else lr_tensor.reshape(())
        else:  # (a number, or a 0-d tensor of its dtype: float64 for float64 lr, float32 grads)
            t = _state_number(t, xp, getattr(t, "dtype", None), device)
        state.update(d=_tensor(d, device), t=t,
                     old_dirs=[_wrap(y, device) for y in old_dirs],
                     old_stps=[_wrap(s, device) for s in old_stps],
                     ro=[_state_number(r, xp, real, device) for r in ro],
                     H_diag=_state_number(h_diag, xp, real, device),
                     prev_flat_grad=_tensor(prev_flat_grad, device), prev_loss=prev_loss)
        if al is not None:
            state["al"] = [a if a is None or isinstance(a, Tensor) else
                           _state_number(a, xp, real, device) for a in al]
        return orig_loss


def _array(value: Tensor | None) -> Any:
    return None if value is None else value._data


def _lr_number(lr: Any) -> Any:
    """``lr`` as the step computes with it: a tensor's array scalar (a float64 lr promotes a
    float32 step length, as PyTorch's 0-d tensors); a non-float tensor's value as a Python
    number (a 0-d int tensor does not promote a float one in PyTorch)."""
    if not isinstance(lr, Tensor):
        return lr
    value = lr._data.reshape(())[()]
    return value if value.dtype.kind == "f" else value.item()


def _scalar(value: Any) -> Any:
    """A saved number as the step computes with it: a 0-d tensor's array scalar keeps its
    dtype (float32 arithmetic stays float32, as PyTorch's 0-d tensors), a number stays."""
    return value._data[()] if isinstance(value, Tensor) else value


def _state_number(value: Any, xp: Any, dtype: Any, device: Any) -> Any:
    """A number for the state: an array scalar becomes a 0-d tensor of ``dtype``, as PyTorch
    keeps them; a Python number (``lr``, ``H_diag``'s first 1) stays one."""
    return _wrap(xp.asarray(value, dtype=dtype), device) if hasattr(value, "dtype") else value


def _dot(xp: Any, a: Any, b: Any) -> Any:
    """``a . b`` as an array scalar of their dtype (PyTorch's 0-d ``dot``): the L-BFGS
    scalars of float32 parameters are float32, their arithmetic with numbers too."""
    return xp.dot(a, b)[()]


def _tensor(array: Any, device: Any) -> Tensor | None:
    return None if array is None else _wrap(array, device)


def _max_abs(xp: Any, a: Any) -> Any:
    """The largest magnitude in ``a``, in its dtype (0 for no parameters at all)."""
    return xp.abs(a).max()[()] if a.size else 0.0


def _two_loop(xp: Any, q: Any, old_dirs: list, old_stps: list, ro: list[Any],
              h_diag: Any, al: list[Any]) -> Any:
    """The L-BFGS direction: the inverse-Hessian estimate applied to ``q`` (minus the
    gradient), from the stored gradient changes ``old_dirs`` and steps ``old_stps``; the
    first loop's coefficients go to ``al[:len(old_dirs)]``."""
    for i in reversed(range(len(old_dirs))):
        al[i] = _dot(xp, old_stps[i], q) * ro[i]
        q -= al[i] * old_dirs[i]
    r = q * h_diag
    for i in range(len(old_dirs)):
        be_i = _dot(xp, old_dirs[i], r) * ro[i]
        r += (al[i] - be_i) * old_stps[i]
    return r


def _cubic_interpolate(xp: Any, x1: Any, f1: Any, g1: Any, x2: Any, f2: Any, g2: Any,
                       bounds: tuple[Any, Any] | None = None) -> Any:
    """The minimiser of the cubic through two points with their slopes, kept in ``bounds``
    (by default the interval between the points); their midpoint when the cubic has none.
    Computed in the slopes' dtype, as PyTorch's 0-d tensors."""
    xmin_bound, xmax_bound = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (xmin_bound + xmax_bound) / 2.0
    d2 = xp.sqrt(d2_square)
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, xmin_bound), xmax_bound)


def _strong_wolfe(obj_func: Callable, xp: Any, x: list[Any], t: Any, d: Any, f: float, g: Any,
                  gtd: Any, c1: float = 1e-4, c2: float = 0.9,
                  tolerance_change: float = 1e-9,
                  max_ls: int = 25) -> tuple[float, Any, Any, int]:
    """A step length along ``d`` satisfying the strong Wolfe conditions (Nocedal & Wright,
    Algorithms 3.5 and 3.6: bracketing, then zooming by cubic interpolation), as PyTorch's
    ``_strong_wolfe``. Returns the loss, flat gradient, step and closure calls made."""
    d_norm = _max_abs(xp, d)
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = _dot(xp, g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:  # bracket an interval that holds a point meeting the conditions
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        t_prev, t = t, _cubic_interpolate(xp, t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                                          bounds=(t + 0.01 * (t - t_prev), t * 10))
        f_prev, g_prev, gtd_prev = f_new, g_new, gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = _dot(xp, g_new, d)
        ls_iter += 1
    if ls_iter >= max_ls:  # (reached the limit of closure calls)
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:  # zoom in on the bracket
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(xp, bracket[0], bracket_f[0], bracket_gtd[0], bracket[1],
                               bracket_f[1], bracket_gtd[1])
        # keep away from the bracket's ends unless the last tries made too little progress
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) \
                    else min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = _dot(xp, g_new, d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new, gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new, gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals

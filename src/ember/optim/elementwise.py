"""The shared shape of the elementwise optimizers (SGD, Adam, RMSprop, …).

Each parameter is updated on its own, in place on its backend array: the step loop, the
``maximize`` sign, L2 or decoupled weight decay, the step counter and the version bump live
here once; a subclass writes only how its state starts (``init_state``) and its update rule
(``update_float``, and ``update_half`` where float16/bfloat16 need PyTorch's roundings)
on backend arrays with the device's namespace ``xp``. One that has a numba kernel
(SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam) names it (``looped_kernel``,
``looped_states``, ``looped_hyper``, ``looped_min_size``): the parameters it applies to are
then stepped by it after the loop, one call each with the decay and ``maximize`` folded in,
and no Python update each (gpt's 54 tensors).
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember.backend import CPU, compiled
from ember.errors import ArgumentError, ArgumentTypeError, ShapeError
from ember.ops.addc_half import half_addc
from ember.ops.scaled_add import as_half, half_add
from ember.optim.optimizer import Optimizer
from ember.tensor import Tensor, _wrap

__all__ = ["ElementwiseOptimizer", "add_sparse_", "check_hyper", "coalesced_rows", "full_state",
           "as_half", "half_add", "half_addcdiv_", "half_decay_squares_", "half_lerp_",
           "half_sqrt_add_eps", "rounded",
           "next_step", "scalar_state", "scale_"]

_KERNELS = compiled.register("ember.optim.update_numba")


class ElementwiseOptimizer(Optimizer):
    """An optimizer whose update of a parameter reads only that parameter, its gradient and its
    state.

    Class attribute ``decoupled_weight_decay``: True when ``weight_decay`` always shrinks the
    weights (``p *= 1 - lr * wd``, AdamW's and Lion's decay) instead of adding ``wd * p`` to the
    gradient; a group's own ``decoupled_weight_decay`` key (Adam, NAdam, RAdam) overrides it.
    Class attribute ``decays_in_update``: True when ``update`` applies ``weight_decay`` itself
    (Adafactor's step size reads the weights before they decay). Class attribute
    ``supports_complex``: False where PyTorch refuses complex parameters (Adafactor, Muon).

    A complex parameter is stepped as PyTorch steps it, as real pairs (``view_as_real``):
    its state is complex, of its shape (as in PyTorch's state dicts), and ``update`` sees
    the parameter, its gradient and its complex state as real arrays sharing their memory.
    """

    decoupled_weight_decay = False
    decays_in_update = False
    supports_complex = True
    state_shaped_like_params = True

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Updates every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._evaluate(closure)
        self._step_groups([(group, group["params"]) for group in self.param_groups])
        return loss

    def can_split_step(self) -> bool:
        """Whether :meth:`step` is the sum of :meth:`step_part` over any split of the
        parameters: no step hooks (they see whole steps) and no ``step`` of a subclass."""
        return type(self).step is ElementwiseOptimizer.step and not self._has_step_hooks()

    def step_part(self, params: Sequence[Tensor], check: Sequence[Tensor] = ()) \
            -> Callable[[], None]:
        """A function that updates only those of ``params`` that have a gradient, exactly as
        :meth:`step` would (no step hooks run), after checking that ``check`` can be updated
        too (a split step's first part checks all of the step's: none moves when one
        cannot). A compiled training step (``ember.jit``) updates each parameter this way as
        soon as its gradient is final, so that the gradient's memory is freed early.

        Example:
            >>> w, b = ember.ones(2, requires_grad=True), ember.ones(2, requires_grad=True)
            >>> opt = ember.optim.SGD([w, b], lr=0.5)
            >>> step_w = opt.step_part([w])
            >>> (w * b).sum().backward(); step_w()
            >>> w.tolist(), b.tolist()
            ([0.5, 0.5], [1.0, 1.0])
        """
        wanted = {id(p) for p in params}
        parts = [(group, [p for p in group["params"] if id(p) in wanted])
                 for group in self.param_groups]
        parts = [(group, some) for group, some in parts if some]
        check = list(check)

        def run() -> None:
            self._opt_called = True
            self._check_writable(check)
            self._step_groups(parts)

        return run

    def _step_groups(self, parts: list[tuple[dict[str, Any], list[Tensor]]]) -> None:
        """Steps the parameters with a gradient among each ``(group, parameters)`` pair."""
        self._check_writable([p for _, params in parts for p in params if p._grad is not None])
        states = self.state
        for group, params in parts:
            decoupled = group.get("decoupled_weight_decay", self.decoupled_weight_decay)
            maximize = group.get("maximize", False)
            wd = 0.0 if self.decays_in_update else float(group.get("weight_decay", 0.0))
            decay = 1.0 - lr_of(group) * wd if decoupled and wd != 0.0 else 1.0
            # (an update set on the instance, as one a subclass writes, takes every step)
            own = "update" not in vars(self)
            kernel = _kernel(self.looped_kernel(group)) \
                if own and _loops_its_update(type(self)) else None
            # (the library's own update: each dtype's path is called directly, so float32
            # takes no dtype test; a subclass's update takes every step, and its
            # super().update picks the path by the dtype)
            direct = own and type(self).update is ElementwiseOptimizer.update
            smallest = self.looped_min_size(group) if kernel is not None else 0
            looped = []  # (parameter, gradient array, state arrays, state): numba's pass
            for p in params:
                grad = p._grad
                if grad is None:
                    continue
                if not isinstance(grad, Tensor):  # a sparse gradient
                    fresh = p not in states
                    state = states[p]
                    self.sparse_update(p, grad, state, group)
                    _count_writes(p, state)
                    if fresh and not state:  # (SGD without momentum keeps none, as below)
                        del states[p]
                    continue
                data = p._data
                if data.dtype.kind == "c" and not self.supports_complex:
                    raise RuntimeError(f"{type(self).__name__} does not support complex "
                                       "parameters")
                # (one look-up: a state is kept only once it holds something, as PyTorch's,
                # so SGD without momentum makes no entry; an entry the user made stays)
                state = states.get(p)
                kept = state is not None
                if not kept:
                    state = {}
                if not state:
                    self.init_state(p, state, group)
                if state and not kept:
                    states[p] = state
                    kept = True
                if p._device.is_meta:  # (no values to update; its state exists and counts
                    if isinstance(state.get("step"), Tensor):  # the steps, as PyTorch's)
                        next_step(state)
                    continue
                g = grad._data
                if kernel is not None and data.dtype.kind != "c" and data.size >= smallest:
                    arrays = self.looped_states(state, group)
                    # (a gradient in the parameter's memory, p.grad = p.detach(), is shrunk
                    # by NumPy's decoupled decay before the update reads it, as PyTorch's)
                    if arrays is not None and _loopable(data, g, arrays) and \
                            not (decay != 1.0 and np.may_share_memory(g, data)):
                        looped.append((p, g, arrays, state))
                        continue
                if g.dtype.kind == "c":
                    # (read only: off NumPy, which views any layout as pairs, a copy in C
                    # order serves where the memory cannot be; a 0-d one stays 0-d)
                    if not (g.flags.c_contiguous or isinstance(g, np.ndarray)):
                        g = p._device.xp.ascontiguousarray(g)
                    g = _pairs(g)
                if maximize:
                    g = -g
                target = real_pairs(p)  # complex: each part a real parameter, as PyTorch's
                half = data.dtype.itemsize == 2  # (float16 or bfloat16: there is no complex32)
                if wd != 0.0:
                    if decoupled:
                        scale_(target._data, decay)
                    elif half:  # (PyTorch's grad.add(param, alpha=weight_decay))
                        g = half_add(p._device.xp, g, target._data, wd)
                    else:
                        g = g + wd * target._data
                try:
                    if target is not p:
                        self._update_pairs(p, target, g, state, group)
                    elif not direct:
                        self.update(p, g, state, group)
                    elif half:
                        self.update_half(p, g, state, group)
                    else:
                        self.update_float(p, g, state, group)
                except (ValueError, KeyError) as err:  # (NumPy's broadcast error, or a state
                    # Adafactor makes for another number of dims: when the state tells why)
                    self._check_state_shapes(p, state, group, err)
                    raise
                _count_writes(p, state)
                if not kept and state:
                    states[p] = state
            if looped:
                self._step_looped(kernel, looped, group, decay, 0.0 if decoupled else wd,
                                  bool(maximize))

    def _check_state_shapes(self, p: Tensor, state: dict[str, Any], group: dict[str, Any],
                            err: Exception | None) -> None:
        """A ShapeError, raised from ``err``, for a state tensor of another shape than a fresh
        state of ``p`` has (``p``'s, if not made at the start), or one a fresh state has not
        (Adafactor's factored ones, for a vector): ``p`` changed shape after its state was
        made (``p.data = ...``)."""
        fresh: dict[str, Any] = {}
        self.init_state(p, fresh, group)
        for name, value in state.items():
            want = fresh.get(name, p if self.state_shaped_like_params else None)
            if not isinstance(value, Tensor) or not value.ndim or \
                    isinstance(want, Tensor) and value.shape == want.shape:
                continue
            needs = [f"{k!r} of shape {tuple(v.shape)}" for k, v in fresh.items()
                     if isinstance(v, Tensor) and v.ndim and k not in state]
            needs_text = f"needs {tuple(want.shape)}" if isinstance(want, Tensor) else \
                f"needs none ({', '.join(needs)} instead)"
            raise ShapeError(
                f"{type(self).__name__}.step: state {name!r} has shape {tuple(value.shape)} "
                f"where its parameter, now of shape {tuple(p.shape)}, {needs_text} (it changed "
                "shape after the optimizer made its state, e.g. by p.data = ...). Hint: make "
                "the optimizer after the model takes its final shapes, or del "
                "optimizer.state[p] to start it afresh") from err

    def _update_pairs(self, p: Tensor, pairs: Tensor, g: Any, state: dict[str, Any],
                      group: dict[str, Any]) -> None:
        """:meth:`update` of the complex ``p`` as its real ``pairs``: the complex state is
        handed over as real views of it, and state the update makes (SGD's first momentum
        buffer) is kept as complex values of ``p``'s shape."""
        views = {k: real_pairs(v) if isinstance(v, Tensor) else v for k, v in state.items()}
        work = dict(views)
        self.update(pairs, g, work, group)
        for key, value in work.items():
            if views.get(key) is not value:
                made = isinstance(value, Tensor) and value.shape == pairs.shape
                state[key] = _wrap(value._device.xp.ascontiguousarray(value._data).view(
                    p._data.dtype).reshape(p.shape), p._device) if made else value

    def _step_looped(self, kernel: Callable[..., None], looped: list, group: dict[str, Any],
                     decay: float, l2: float, negate: bool) -> None:
        """Steps ``looped``'s parameters by numba's one-pass ``kernel``, one call each, on this
        thread: on the shared 2-core machine two cores lost to one at every load measured
        (gpt's compiled AdamW 7.5 against 3.8 ms; a core another process holds, or
        OpenBLAS's spinning thread, keeps the other share waiting)."""
        rounded: dict[tuple, Any] = {}  # the hyperparameters in each dtype, made once
        for p, g, arrays, state in looped:
            data = p._data
            key = (data.dtype, decay, l2, negate, *self.looped_hyper(state, group))
            hyper = rounded.get(key)
            if hyper is None:
                hyper = rounded[key] = np.array(key[1:], dtype=data.dtype)
            kernel(data.reshape(-1), g.reshape(-1), *(a.reshape(-1) for a in arrays), hyper)
            _count_writes(p, state)

    def sparse_update(self, p: Tensor, grad: Any, state: dict[str, Any],
                      group: dict[str, Any]) -> None:
        """One step from a sparse COO gradient; refused, as PyTorch refuses, unless the
        optimizer overrides it (SGD, Adagrad, SparseAdam)."""
        raise RuntimeError(f"{self.sparse_refusal} does not support sparse gradients"
                           + (", please consider SparseAdam instead"
                              if self.sparse_refusal == "Adam" else "")
                           + ". Hint: nn.Embedding(sparse=False) gives dense gradients")

    @property
    def sparse_refusal(self) -> str:
        """The name PyTorch's refusal of sparse gradients gives (AdamW's says Adam)."""
        return type(self).__name__

    def init_state(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        """Fills the empty ``state`` of parameter ``p`` before its first update."""

    def looped_kernel(self, group: dict[str, Any]) -> str | None:
        """The name of the one-pass numba kernel (:mod:`ember.optim.update_numba`) that steps
        ``group``'s parameters, or None (every step then goes through :meth:`update`)."""
        return None

    def looped_min_size(self, group: dict[str, Any]) -> int:
        """The fewest elements of a parameter the kernel steps (smaller ones go through
        :meth:`update`, where NumPy's few passes cost less than the kernel's call)."""
        return 0

    def looped_states(self, state: dict[str, Any], group: dict[str, Any]) -> tuple | None:
        """The state arrays the kernel updates, in its order, or None to leave this step to
        :meth:`update` (SGD's first, which makes the momentum buffer)."""
        return None

    def looped_hyper(self, state: dict[str, Any], group: dict[str, Any]) -> tuple:
        """The kernel's hyperparameters after ``decay, l2, negate`` for the parameter with
        ``state``, counting its step where the update counts steps."""
        raise NotImplementedError

    def update(self, p: Tensor, g: Any, state: dict[str, Any], group: dict[str, Any]) -> None:
        """Writes one step into ``p._data`` (and the state) from the gradient array ``g``,
        which already carries ``maximize`` and L2 weight decay: :meth:`update_half` for a
        float16/bfloat16 ``p``, else :meth:`update_float`. A subclass that overrides it
        takes every step, and its ``super().update(...)`` picks the path the same way."""
        if p._data.dtype.itemsize == 2:  # (float16 or bfloat16: there is no complex32)
            self.update_half(p, g, state, group)
        else:
            self.update_float(p, g, state, group)

    def update_float(self, p: Tensor, g: Any, state: dict[str, Any],
                     group: dict[str, Any]) -> None:
        """:meth:`update` of a float32/float64 ``p`` (complex ones as their real pairs);
        compute with ``p._device.xp``, in place."""
        raise NotImplementedError

    def update_half(self, p: Tensor, g: Any, state: dict[str, Any],
                    group: dict[str, Any]) -> None:
        """:meth:`update` of a float16/bfloat16 ``p`` (``g`` of its dtype), where PyTorch's
        ops each compute in float32 and round once; by default :meth:`update_float`."""
        self.update_float(p, g, state, group)


def scale_(data: Any, decay: float) -> None:
    """``data *= decay`` in place (decoupled weight decay, ASGD's, momentum buffers), a
    half-precision ``data`` through float32 and one rounding, as PyTorch's ``mul_`` computes
    with its scalar in float32 (NumPy's in-place ``*=`` rounds ``decay`` to float16 first for
    float16 data: 0.99 → 0.98974609; bfloat16 promotes it to float32)."""
    if data.dtype.itemsize == 2:  # (float16 or bfloat16: Ember has no complex32)
        np.multiply(data, np.float32(decay), out=data, casting="unsafe")
    else:
        data *= decay


def rounded(xp: Any, x: Any, half: Any) -> Any:
    """``x`` (float32 values) rounded to the half-precision dtype ``half`` and read back as
    float32: one PyTorch op's result on a float16/bfloat16 tensor, as the next op reads it."""
    return xp.asarray(x, dtype=xp.float32).astype(half).astype(xp.float32)


def half_sqrt_add_eps(xp: Any, v: Any, eps: float, divisor: float | None = None) -> Any:
    """PyTorch's ``v.sqrt()`` (``.div_(divisor)``) ``.add_(eps)`` of a half-precision ``v``
    (an optimizer's denominator): each op in float32 and rounded once, ``eps`` rounded to
    the dtype as ``add_`` rounds its scalar; the result's float32 values."""
    half, f32 = v.dtype, xp.float32
    root = rounded(xp, xp.sqrt(v.astype(f32)), half)
    if divisor is not None:
        root = rounded(xp, root / f32(divisor), half)
    return rounded(xp, root + f32(as_half(eps, half)), half)


def half_lerp_(xp: Any, a: Any, b: Any, weight: float) -> Any:
    """PyTorch's ``a.lerp_(b, weight)`` of a half-precision ``a`` (``b`` of its values, in
    any float dtype): fused in float32 from the nearer end, rounded once; returns ``a``."""
    a32, b32 = a.astype(xp.float32), b.astype(xp.float32)
    w = float(xp.float32(weight))
    if w < 0.5:
        total = a32.astype(xp.float64) + w * (b32 - a32).astype(xp.float64)
    else:
        total = b32.astype(xp.float64) - (1.0 - w) * (b32 - a32).astype(xp.float64)
    a[...] = total.astype(xp.float32)
    return a


def half_decay_squares_(xp: Any, v: Any, decay: float, g: Any, weight: float) -> Any:
    """PyTorch's ``v.mul_(decay).addcmul_(g, g, value=weight)`` of a half-precision ``v``
    (``g`` in float32): each op in float32, its scalar too, rounded once, the ``addcmul_`` as
    ``fma(weight * g, g, v)`` (float64 holds the product of two float32 exactly); returns
    ``v``."""
    scale_(v, decay)
    v[...] = half_addc(xp, v, g, g, weight, divide=False)
    return v


def half_addcdiv_(xp: Any, a: Any, t1: Any, t2: Any, value: float) -> Any:
    """PyTorch's ``a.addcdiv_(t1, t2, value=value)`` of a half-precision ``a``:
    ``a + (value * t1) / t2`` in float32 and one rounding; returns ``a``."""
    a[...] = half_addc(xp, a, t1, t2, value, divide=True)
    return a


def _kernel(name: str | None) -> Callable[..., None] | None:
    """numba's kernel ``name``, or None: no name, numba off or failing."""
    if name is None or not compiled.numba_enabled():
        return None
    kernels = compiled.load(_KERNELS)
    return None if kernels is None else getattr(kernels, name)


@functools.cache
def _loops_its_update(cls: type) -> bool:
    """Whether ``cls``'s kernel is its ``update_float``'s: a subclass that writes its own
    ``update`` or ``update_float`` (and not its own ``looped_kernel``) has every step go
    through it."""
    def owner(name: str) -> type:
        return next(k for k in cls.__mro__ if name in k.__dict__)
    return owner("update") is ElementwiseOptimizer and \
        owner("update_float") is owner("looped_kernel")


def _loopable(data: Any, g: Any, arrays: tuple) -> bool:
    """Whether numba's kernel can step a parameter in place: NumPy float32 or float64 arrays
    of one dtype and shape, C-contiguous, writable but for the gradient."""
    dtype, shape = data.dtype, data.shape
    if type(data) is not np.ndarray or type(g) is not np.ndarray or \
            not (_same(dtype, _FLOAT32) or _same(dtype, _FLOAT64)) or \
            not _same(g.dtype, dtype) or g.shape != shape or not g.flags.c_contiguous:
        return False
    for a in (data, *arrays):
        flags = a.flags
        if type(a) is not np.ndarray or not _same(a.dtype, dtype) or a.shape != shape or \
                not (flags.c_contiguous and flags.writeable):
            return False
    return True


_FLOAT32, _FLOAT64 = np.dtype(np.float32), np.dtype(np.float64)


def _same(a: np.dtype, b: np.dtype) -> bool:
    """``a == b``, first by identity: NumPy's native dtypes are mostly one object each (an
    unpickled array's is not), and ``is`` costs a third of ``==``."""
    return a is b or a == b


def real_pairs(t: Tensor) -> Tensor:
    """``t`` itself if not complex; a complex ``t`` as a real tensor sharing its memory, each
    element two reals, as PyTorch's optimizers step ``view_as_real`` of a complex parameter:
    shape ``(..., 2)`` for ``(...)``, whatever its strides (a transposed weight too)."""
    data = t._data
    if data.dtype.kind != "c":
        return t
    return _wrap(_pairs(data), t._device)


def _pairs(data: Any) -> Any:
    """A complex backend array as real pairs sharing its memory, of shape ``(..., 2)``: NumPy
    changes the dtype of a new last dimension of size 1 whatever the strides; CuPy only in C
    order (elsewhere a clear error, not a copy the update would be lost in)."""
    if isinstance(data, np.ndarray):
        return data[..., None].view(data.real.dtype)
    if not data.flags.c_contiguous:
        raise ArgumentError("optimizer: a complex parameter off the CPU must be contiguous to be "
                            "stepped in place (CuPy views complex memory as real pairs only in C "
                            "order). Hint: make it with .contiguous() before the optimizer")
    return data.reshape(*data.shape, 1).view(data.real.dtype)


def full_state(p: Tensor, value: float = 0.0) -> Tensor:
    """A state tensor like ``p`` (same shape, dtype, device and memory layout), filled; a
    complex one with ``value`` in both parts (as PyTorch's Adagrad and Rprop start theirs)."""
    xp = p._device.xp
    data = xp.zeros_like(p._data)
    if value:
        data[...] = complex(value, value) if data.dtype.kind == "c" else value
    return _wrap(data, p._device)


def scalar_state(p: Tensor, value: float) -> Tensor:
    """A 0-d float32 state tensor (``step``, NAdam's ``mu_product``), as PyTorch keeps them;
    on the CPU for a meta parameter (a count needs a value; 0-d CPU tensors meet any
    device)."""
    dev = CPU if p._device.is_meta else p._device
    return _wrap(dev.xp.asarray(value, dtype=dev.xp.float32), dev)


def next_step(state: dict[str, Any]) -> float:
    """Counts one more step in ``state["step"]`` and returns the new count."""
    step = state["step"]._data
    step[()] = step.item() + 1.0  # (``step += 1`` on a 0-d array: ~3 µs, ×50 parameters)
    return float(step)


def lr_of(group: dict[str, Any]) -> Any:
    """The group's ``lr`` for scalar arithmetic: a float, or a tensor's value as a NumPy scalar
    of its dtype, so ``lr / bias_correction`` rounds to float32 for a float32 tensor as in
    PyTorch (where it is tensor arithmetic); a float64 tensor's as a float, which (a weak
    scalar, as PyTorch's 0-d tensor) leaves float32 parameters' arithmetic in float32."""
    return weak(tensor_scalar(group["lr"]))


def tensor_scalar(value: Any) -> Any:
    """A hyperparameter as a float, or a tensor's value as a NumPy scalar of its dtype: NumPy
    promotes two such scalars as PyTorch promotes two 0-d tensors (float32 and float64 give
    float64), and one with a float keeps the scalar's dtype, as a 0-d tensor with a number.
    A NumPy float scalar stays one (PyTorch's Python arithmetic with it is NumPy's)."""
    if isinstance(value, np.floating):
        return value
    if not isinstance(value, Tensor):
        return float(value)
    return value.detach().numpy().reshape(())[()]


def weak(value: Any) -> Any:
    """A :func:`tensor_scalar` result for arithmetic with parameter-sized arrays: a float64
    scalar as a float (PyTorch computes a tensor with a 0-d tensor in the tensor's dtype; a
    float64 NumPy scalar would make a float32 array's arithmetic float64)."""
    return float(value) if isinstance(value, np.float64) else value


def bias_correction(beta: Any, t: float) -> Any:
    """``1 - beta ** t``; a NumPy scalar ``beta`` (a tensor's) in its dtype, cubed as
    ``beta * beta * beta`` as PyTorch's pow kernel cubes a tensor (two roundings where
    ``powf`` has one: float32 ``1 - 0.999 ** 3`` is 2e-5 apart, relatively)."""
    if t == 3.0 and isinstance(beta, np.generic):
        return 1.0 - beta * beta * beta
    return 1.0 - beta ** t


def check_one_element(name: str, value: Any) -> None:
    """Rejects a tensor hyperparameter of other than one element, with PyTorch's message."""
    if isinstance(value, Tensor) and value.numel() != 1:
        raise ArgumentError(f"Tensor {name} must be 1-element (got shape {tuple(value.shape)})")


def _is_pair(betas: Any) -> bool:
    """Whether ``betas`` holds two items: a list or tuple, or an array or tensor of size 2
    along its first axis (PyTorch unpacks any of them)."""
    if isinstance(betas, list | tuple):
        return len(betas) == 2
    return isinstance(betas, np.ndarray | Tensor) and tuple(betas.shape[:1]) == (2,)


def _is_number(value: Any) -> bool:
    """Whether ``value`` is a real number, a tensor, or a 0-d NumPy array of a real dtype
    (``np.array(0.01)``, which PyTorch's range checks read as a number)."""
    if isinstance(value, numbers.Real | Tensor):
        return True
    return isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biuf"


def check_hyper(**values: Any) -> None:
    """Rejects a tensor ``lr`` or beta of other than one element, negative hyperparameters and
    betas outside [0, 1), with PyTorch's messages."""
    check_one_element("lr", values.get("lr"))
    betas = values.get("betas", (0.0, 0.0))
    if not _is_pair(betas):
        raise ArgumentError(f"betas must be a pair (beta1, beta2), got {betas!r}")
    for i, beta in enumerate(betas):
        check_one_element(f"betas[{i}]", beta)
    for key, value in values.items():
        for v in value if key == "betas" else (value,):
            if not _is_number(v):
                raise ArgumentTypeError(f"{key} must be a number, got {type(v).__name__} {v!r}")
    names = {"lr": "learning rate", "eps": "epsilon value", "weight_decay": "weight_decay value",
             "momentum": "momentum value", "alpha": "alpha value", "rho": "rho value",
             "lr_decay": "lr_decay value", "momentum_decay": "momentum_decay value",
             "initial_accumulator_value": "initial_accumulator_value value"}
    for key, value in values.items():
        if key == "betas":
            for i, beta in enumerate(value):
                if not 0.0 <= float(beta) < 1.0:
                    raise ArgumentError(f"Invalid beta parameter at index {i}: {beta} "
                                        "(betas must be in [0, 1))")
        elif key == "rho" and not 0.0 <= value <= 1.0:
            raise ArgumentError(f"Invalid rho value: {value} (must be in [0, 1])")
        elif not float(value) >= 0.0:  # (NaN too)
            raise ArgumentError(f"Invalid {names.get(key, key)}: {value} (must be >= 0)")


def coalesced_rows(grad: Any, maximize: bool = False) -> tuple[tuple[Any, ...], Any]:
    """A sparse gradient's distinct index (a tuple of index arrays, for fancy indexing of the
    parameter's array) and its summed values (negated under ``maximize``)."""
    grad = grad.coalesce()
    values = grad._values().numpy()
    return tuple(grad._indices().numpy()), -values if maximize else values


def add_sparse_(p: Tensor, grad: Any, alpha: float) -> None:
    """``p += alpha * grad`` in place, for a sparse ``grad`` (repeated entries add up)."""
    index, values = coalesced_rows(grad)
    p._data[index] += alpha * values


def _count_writes(p: Tensor, state: dict[str, Any]) -> None:
    """Moves the version counters of a stepped parameter and of its state's tensors, which
    the update wrote in place (a compiled function that read one's value traces again)."""
    p._vc.value += 1
    for value in state.values():
        if isinstance(value, Tensor):
            value._vc.value += 1

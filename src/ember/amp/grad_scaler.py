"""``GradScaler``: multiplies the loss by a scale so small low-precision gradients do not
underflow, unscales the gradients before the optimizer step, skips steps whose gradients hold
inf/NaN and adapts the scale (``torch.amp.GradScaler``'s algorithm and state)."""

from __future__ import annotations

import enum
import math
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ember.dtypes import float16, float32
from ember.errors import ArgumentError, ArgumentTypeError
from ember.layouts import strided
from ember.ops.creation import tensor
from ember.optim.optimizer import OPTIMIZER_TRACE, traced
from ember.tensor import Tensor

__all__ = ["GradScaler", "OptState"]


class OptState(enum.Enum):
    """Where an optimizer is in a scaler's iteration, as ``torch.amp.grad_scaler.OptState``:
    READY, then UNSCALED after ``unscale_``, STEPPED after ``step`` (READY again after
    ``update``)."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


_READY, _UNSCALED, _STEPPED = OptState.READY, OptState.UNSCALED, OptState.STEPPED


class GradScaler:
    """Dynamic loss scaling.

    Each iteration: ``scaler.scale(loss).backward()``, optionally ``scaler.unscale_(opt)``
    (before gradient clipping), ``scaler.step(opt)`` (skipped if a gradient is inf/NaN), then
    ``scaler.update()``: the scale is multiplied by ``backoff_factor`` after a skipped step and
    by ``growth_factor`` after ``growth_interval`` clean steps in a row. Inside
    ``ember.jit.compile`` the same calls compile: the scale is a float32 tensor the graph reads,
    and unscaling, the (possibly skipped) step and the update are effects run each call.

    Example:
        >>> model = ember.nn.Linear(3, 1)
        >>> optimizer = ember.optim.SGD(model.parameters(), lr=0.1)
        >>> scaler = ember.amp.GradScaler()
        >>> loss = model(ember.ones(2, 3)).sum()
        >>> scaler.scale(loss).backward()
        >>> scaler.step(optimizer)
        >>> scaler.update()
        >>> scaler.get_scale()
        65536.0
    """

    def __init__(self, device: str = "cpu", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        if growth_factor <= 1.0:
            raise ArgumentError(f"GradScaler: growth_factor must be > 1, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ArgumentError(f"GradScaler: backoff_factor must be in (0, 1), got "
                                f"{backoff_factor}")
        if growth_interval <= 0:
            raise ArgumentError(f"GradScaler: growth_interval must be positive, got "
                                f"{growth_interval}")
        if str(device).startswith("cuda"):  # no CUDA device: disabled, as PyTorch's without one
            if enabled:
                warnings.warn("GradScaler: device 'cuda' was given, but CUDA is not available "
                              "(Ember computes on the CPU). Disabling.", UserWarning,
                              stacklevel=2)
            enabled, device = False, "cpu"
        self._enabled = enabled
        self._scale_tensor = tensor(float(init_scale), dtype=float32, device=device)
        self._init_scale = float(init_scale)  # (what get_scale gives before scale(), as torch)
        self._set_scale(init_scale)
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer: dict[int, dict[str, Any]] = {}
        self._used = False  # scale() has run (PyTorch's scale tensor, made lazily there)

    def _check_used(self, method: str) -> None:
        """PyTorch's check that ``scale`` ran first: without it, ``step`` would divide
        unscaled gradients by the scale and step with them silently."""
        if not self._used:
            raise RuntimeError(f"GradScaler.{method}: scale() has not been called yet, so the "
                               "gradients are not scaled. Hint: scaler.scale(loss).backward() "
                               f"before scaler.{method}(...)")

    def _set_scale(self, value: float) -> None:
        """The scale, as a number and in the tensor ``scale`` multiplies by (written in
        place, as array data: a compiled step reads the new value, untraced); both float32,
        as PyTorch keeps it."""
        self._scale = _float32(value)
        self._scale_tensor._data[...] = self._scale
        self._scale_tensor._vc.value += 1

    def __getstate__(self) -> dict[str, Any]:
        """Pickling (and ``copy.deepcopy``) between iterations only, as PyTorch's: the stages
        noted per optimizer name this process's optimizers."""
        if self._enabled and self._per_optimizer:
            raise RuntimeError("A GradScaler instance may only be pickled at the beginning of "
                               "an iteration, or at the end after scaler.update(). Hint: "
                               "pickle it (or its state_dict()) after update()")
        return self.__dict__.copy()

    def jit_state(self) -> dict[str, Any]:
        """The tensors a compiled step reads from the scaler (``ember.jit`` looks here): the
        scale."""
        return {"scale": self._scale_tensor}

    def is_enabled(self) -> bool:
        """Whether scaling is on (with ``enabled=False`` every method is a pass-through)."""
        return self._enabled

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or a list/tuple of them, nested) multiplied by the scale;
        another iterable of tensors gives a lazy ``map``, as PyTorch's."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if not isinstance(outputs, Tensor):
            if isinstance(outputs, Iterable) and not isinstance(outputs, (str, Mapping)):
                return map(self.scale, outputs)
            raise ArgumentError("GradScaler.scale: outputs must be a Tensor or an iterable of "
                                f"Tensors, got {type(outputs).__name__}. Hint: scale the loss "
                                "tensor, e.g. scaler.scale(loss).backward()")
        self._used = True
        scale = self._scale_tensor
        return outputs * (scale if scale.device == outputs.device else scale.to(outputs.device))

    def _state(self, optimizer: Any) -> dict[str, Any]:
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY,
                                                              "found_inf": None})

    def unscale_(self, optimizer: Any) -> None:
        """Divides ``optimizer``'s gradients by the scale in place (once per step) and notes
        whether any is inf/NaN. Call it before clipping gradients."""
        if not self._enabled:
            return
        if OPTIMIZER_TRACE.tracer is not None:  # inside ember.jit.compile: an effect
            return traced("scaler_unscale", self, lambda: self.unscale_(optimizer), optimizer)
        self._check_used("unscale_")
        state = self._state(optimizer)
        if state["stage"] is _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if state["stage"] is _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        grads = [p for group in optimizer.param_groups for p in group["params"]
                 if p.grad is not None]
        for p in grads:  # (all checked before any is unscaled)
            if p.grad.dtype is float16:
                raise ArgumentError(f"Attempting to unscale FP16 gradients (a parameter of "
                                    f"shape {tuple(p.shape)}). GradScaler.unscale_ refuses "
                                    "them as PyTorch's does. Hint: keep parameters in "
                                    "float32 and let autocast run the ops in float16")
        # PyTorch's float32 reciprocal; a float32 scalar also makes bfloat16 gradients multiply
        # in float32, where 1/scale (2**-25 and below) does not underflow to 0
        inv = np.float32(1.0 / self._scale)
        found = None  # (None: no gradient to check)
        for p in grads:
            g = p.grad
            if g.layout is not strided:  # sparse: its values are checked and scaled
                found = found or not bool(g.device.xp.isfinite(g._values()._data).all())
                p.grad = g * float(inv)
                continue
            data = g._data
            xp = g.device.xp
            found = found or not bool(xp.isfinite(data).all())
            if data.flags.writeable:
                xp.multiply(data, inv, out=data)
            else:
                p.grad = g * inv
        state["found_inf"], state["stage"] = found, _UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscales (if :meth:`unscale_` was not called) and runs ``optimizer.step()`` unless a
        gradient is inf/NaN; returns what ``step`` returns (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        if OPTIMIZER_TRACE.tracer is not None:  # inside ember.jit.compile: an effect
            return traced("scaler_step", self, lambda: self.step(optimizer, *args, **kwargs),
                          optimizer)
        self._check_used("step")
        state = self._state(optimizer)
        if state["stage"] is _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is _READY:
            self.unscale_(optimizer)
        if state["found_inf"] is None:
            raise RuntimeError("No inf checks were recorded for this optimizer: none of its "
                               "parameters has a gradient. Hint: call scaler.scale(loss)"
                               ".backward() before scaler.step(optimizer)")
        result = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return result

    def update(self, new_scale: float | Any | None = None) -> None:
        """Adapts the scale after the iteration's steps (or sets ``new_scale``)."""
        if not self._enabled:
            return
        if OPTIMIZER_TRACE.tracer is not None:  # inside ember.jit.compile: an effect
            return traced("scaler_update", self, lambda: self.update(new_scale), new_scale)
        self._check_used("update")
        if new_scale is not None:
            self._set_scale(_checked_new_scale(new_scale))
        else:
            checked = [s for s in self._per_optimizer.values() if s["found_inf"] is not None]
            if not checked:
                raise RuntimeError("No inf checks were recorded prior to update.")
            if any(s["found_inf"] for s in checked):
                self._set_scale(self._scale * self._backoff_factor)
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    grown = _float32(self._scale * self._growth_factor)
                    if math.isfinite(grown):  # (PyTorch keeps the scale when it would overflow)
                        self._set_scale(grown)
                    self._growth_tracker = 0
        self._per_optimizer = {}

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled; before :meth:`scale`, ``init_scale`` as
        given, not yet rounded to float32, as PyTorch's)."""
        if not self._enabled:
            return 1.0
        return self._scale if self._used else self._init_scale

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = int(new_interval)

    def state_dict(self) -> dict[str, Any]:
        """``{"scale", "growth_factor", "backoff_factor", "growth_interval",
        "_growth_tracker"}`` (empty when disabled), as PyTorch."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores :meth:`state_dict`."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._set_scale(state_dict["scale"])
        self._init_scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])


def _checked_new_scale(value: Any) -> float:
    """``update``'s ``new_scale`` as a number: a real number, or a one-element tensor that does
    not require grad (PyTorch's rule); anything else is refused with what was given."""
    if isinstance(value, Tensor):
        if value.numel() != 1 or value.requires_grad:
            raise ArgumentError("GradScaler.update: new_scale must be a float or a one-element "
                                f"tensor that does not require grad, got a {value.dtype.name} "
                                f"tensor of shape {tuple(value.shape)}"
                                f"{' that requires grad' if value.requires_grad else ''}. "
                                "Hint: pass a float, e.g. scaler.update(2.0 ** 16)")
        return value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ArgumentTypeError("GradScaler.update: new_scale must be a float or a one-element "
                                f"tensor, got {type(value).__name__} {value!r}")
    return float(value)


def _float32(value: float) -> float:
    """``value`` rounded to float32 (inf beyond its range)."""
    with np.errstate(over="ignore"):
        return float(np.float32(value))

"""``autocast``: ops chosen by one policy table run in a lower-precision dtype, the ones that
need range or accuracy in float32, as ``torch.autocast``.

It is a dispatch handler (see :func:`ember.ops.primitive.push_handler`): while it is active,
every primitive application is looked up in :data:`POLICY` by name and its floating inputs are
cast (differentiably) before the op runs. The eager path pays nothing when autocast is off.
On the CPU, bfloat16/float16 GEMMs are emulated: operands are stored in the low dtype and the
product is computed in the dtype :func:`ember.backend.compute_dtype` reports (float32); the
gain is the memory of what backward keeps.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from ember import dtypes
from ember.backend import compute_dtype
from ember.dtypes import DType
from ember.errors import ArgumentError, ArgumentTypeError, DTypeError, describe
from ember.jit import switches as _jit_switches
from ember.ops import convert as _convert
from ember.ops.convert import cast
from ember.ops.primitive import DISPATCH, apply_below, pop_handler, push_handler, run_below
from ember.utils import checkpoint as _checkpoint

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "POLICY",
           "set_autocast_enabled", "set_autocast_dtype", "is_autocast_cache_enabled",
           "set_autocast_cache_enabled", "clear_autocast_cache", "is_autocast_cpu_enabled",
           "set_autocast_cpu_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
           "get_autocast_gpu_dtype", "set_autocast_gpu_dtype", "autocast_increment_nesting",
           "autocast_decrement_nesting"]

LOWER, FLOAT32, PROMOTE = "lower", "float32", "promote"

# The one table: primitive name -> what autocast does with its floating inputs.
#   lower:   cast to the autocast dtype (GEMMs: matmul, einsum, conv; so linear, bmm, baddbmm,
#            addmm, attention)
#   float32: cast to float32: PyTorch's CPU float32 list (prod, some losses, linear algebra);
#            composite losses on it are float32_under_autocast functions; softmax, exp/log,
#            sum/mean, norms keep a low input's dtype, as on PyTorch's CPU (CUDA's list differs)
#   promote: cast to the widest floating dtype among the inputs (ops that need one dtype)
POLICY: dict[str, str] = {
    **dict.fromkeys(("matmul", "einsum", "conv", "scaled_dot_product_attention", "prelu"),
                    LOWER),
    **dict.fromkeys((
        "prod", "binary_cross_entropy", "smooth_l1_loss", "ctc_loss",
        # linear algebra, which has no low-precision kernels (PyTorch's CPU list)
        "linalg_cholesky", "linalg_det", "linalg_eig", "linalg_eigh", "linalg_inv",
        "linalg_ldl_factor", "linalg_ldl_solve", "linalg_lu_factor", "linalg_matrix_exp",
        "linalg_pinv", "linalg_qr", "linalg_slogdet", "linalg_solve", "linalg_solve_triangular",
        "linalg_svd", "geqrf",
    ), FLOAT32),
    **dict.fromkeys(("cat", "where", "index_put", "maximum", "minimum", "fmax", "fmin"),
                    PROMOTE),
}

_LOW_DTYPES = (dtypes.bfloat16, dtypes.float16)
_GEMMS = ("matmul", "einsum", "conv")  # (whose operands must share one dtype)


class _State(threading.local):
    """Autocast's state, one per thread (as PyTorch's): a thread starts with autocast off."""

    def __init__(self) -> None:
        self.enabled = False
        self.dtype: DType = dtypes.bfloat16
        self.cache_enabled = True
        self.pushed_by_setter = False  # set_autocast_enabled(True) put the handler in place
        # CUDA's flags: set and read as PyTorch's; no op follows them (there is no CUDA op)
        self.cuda_enabled = False
        self.cuda_dtype: DType = dtypes.float16
        self.nesting = 0  # autocast_increment_nesting's counter


STATE = _State()


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for ``device_type``; with no argument, CUDA's, as in PyTorch
    (False unless :func:`set_autocast_enabled` turned that flag on: ``autocast('cuda')``
    disables itself without a CUDA device).

    Example:
        >>> with ember.autocast("cpu"):
        ...     ember.is_autocast_enabled("cpu"), ember.is_autocast_enabled()
        (True, False)
    """
    _check_device("is_autocast_enabled", device_type)
    return STATE.cuda_enabled if device_type == "cuda" else STATE.enabled


def get_autocast_dtype(device_type: str = "cpu") -> DType:
    """The lower-precision dtype autocast uses on ``device_type`` (bfloat16 on the CPU,
    float16 for CUDA, unless set).

    Example:
        >>> ember.get_autocast_dtype("cpu")
        ember.bfloat16
    """
    _check_device("get_autocast_dtype", device_type)
    return STATE.cuda_dtype if device_type == "cuda" else STATE.dtype


_UNSET: Any = object()


def set_autocast_enabled(device_type: Any = _UNSET, enabled: Any = _UNSET) -> None:
    """Turns autocast on or off from now on, as ``torch.set_autocast_enabled(device_type,
    enabled)`` (positional or keywords); ``autocast`` is the scoped way. The older form
    ``(enabled)`` is CUDA's, as in PyTorch, and CUDA's flag is only a flag (no op here runs on
    CUDA).

    Example:
        >>> ember.set_autocast_enabled("cpu", True)
        >>> ember.ones(2, 2).matmul(ember.ones(2, 2)).dtype
        ember.bfloat16
        >>> ember.set_autocast_enabled("cpu", False)
    """
    if enabled is _UNSET:
        if device_type is _UNSET or isinstance(device_type, str):
            raise TypeError("set_autocast_enabled: expected (device_type, enabled) or "
                            "(enabled,); enabled is missing. Hint: "
                            "set_autocast_enabled('cpu', True)")
        device_type, enabled = "cuda", device_type  # the older form, (enabled)
    elif device_type is _UNSET:
        device_type = "cuda"
    _check_device("set_autocast_enabled", device_type)
    enabled = _flag("set_autocast_enabled", "enabled", enabled)
    if device_type == "cuda":
        STATE.cuda_enabled = enabled
        return
    if enabled and _handler not in DISPATCH.stack:
        push_handler(_handler, ambient=True)  # (casting inside ember.cond's branches too)
        STATE.pushed_by_setter = True
    elif not enabled and STATE.pushed_by_setter and _handler in DISPATCH.stack:
        pop_handler(_handler)
        STATE.pushed_by_setter = False
    STATE.enabled = DISPATCH.casting = enabled


def set_autocast_dtype(device_type: str, dtype: DType) -> None:
    """Sets the dtype autocast lowers GEMMs to (bfloat16 or float16), as
    ``torch.set_autocast_dtype``.

    Example:
        >>> ember.set_autocast_dtype("cpu", ember.float16)
        >>> ember.get_autocast_dtype("cpu")
        ember.float16
        >>> ember.set_autocast_dtype("cpu", ember.bfloat16)
    """
    _check_device("set_autocast_dtype", device_type)
    if device_type == "cuda":
        STATE.cuda_dtype = _check_dtype("set_autocast_dtype", dtype)
    else:
        STATE.dtype = _check_dtype("set_autocast_dtype", dtype)


def is_autocast_cache_enabled() -> bool:
    """The cast-cache flag of ``torch.is_autocast_cache_enabled`` (True unless set). Ember
    keeps no cache of casts (each op casts its inputs again), so the flag changes nothing;
    it is kept for code that saves and restores it."""
    return STATE.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Sets the flag :func:`is_autocast_cache_enabled` reads (no effect: Ember caches no
    casts)."""
    STATE.cache_enabled = _flag("set_autocast_cache_enabled", "enabled", enabled)


def clear_autocast_cache() -> None:
    """As ``torch.clear_autocast_cache``; Ember keeps no cache of casts, so there is nothing
    to clear."""


def _flag(op: str, name: str, value: Any) -> bool:
    """``value``, ``op``'s argument ``name`` (``enabled``, ``cache_enabled``): a Python bool,
    as PyTorch's setters take it; a string (``bool("no")`` is True), an int, a NumPy bool or a
    tensor is a TypeError naming the op, the argument and the value's type."""
    if type(value) is not bool:
        raise ArgumentTypeError(f"{op}: {name} must be a bool, got {_type_name(value)} "
                                f"{value!r}. Hint: pass True or False")
    return value


def _type_name(value: Any) -> str:
    """The name of ``value``'s type, with its package unless a builtin: ``numpy.bool`` (NumPy
    2 calls its bool type ``bool`` too), ``ember.Tensor``, ``str``."""
    kind = type(value)
    package = kind.__module__.partition(".")[0]
    return kind.__qualname__ if package == "builtins" else f"{package}.{kind.__qualname__}"


def _check_device(op: str, device_type: Any) -> None:
    if not isinstance(device_type, str):  # (an array's ``in`` compares elementwise)
        raise ArgumentTypeError(f"{op}: device_type must be a str, 'cpu' or 'cuda', got "
                                f"{_type_name(device_type)}")
    if device_type not in ("cpu", "cuda"):
        raise ArgumentError(f"{op}: device_type must be 'cpu' or 'cuda', got {device_type!r}")


def _check_dtype(op: str, dtype: Any) -> DType:
    if dtype not in _LOW_DTYPES:
        raise ArgumentError(f"{op}: dtype must be ember.bfloat16 or ember.float16, got "
                            f"{getattr(dtype, 'name', dtype)}")
    return dtype


def _deprecated(name: str, fn: Callable, device: str = "cpu") -> Callable:
    """PyTorch's deprecated ``*_autocast_cpu_*`` (or ``_gpu_``, CUDA's) form of ``fn`` (it
    warns, as PyTorch's)."""
    def deprecated(*args: Any) -> Any:
        warnings.warn(f"ember.{name}() is deprecated, as torch's is; use ember."
                      f"{fn.__name__}({device!r}, ...)", DeprecationWarning, stacklevel=2)
        return fn(device, *args)
    deprecated.__name__ = deprecated.__qualname__ = name
    deprecated.__doc__ = f"Deprecated: ``{fn.__name__}({device!r}, ...)``."
    return deprecated


is_autocast_cpu_enabled = _deprecated("is_autocast_cpu_enabled", is_autocast_enabled)
set_autocast_cpu_enabled = _deprecated("set_autocast_cpu_enabled", set_autocast_enabled)
get_autocast_cpu_dtype = _deprecated("get_autocast_cpu_dtype", get_autocast_dtype)
set_autocast_cpu_dtype = _deprecated("set_autocast_cpu_dtype", set_autocast_dtype)
get_autocast_gpu_dtype = _deprecated("get_autocast_gpu_dtype", get_autocast_dtype, "cuda")
set_autocast_gpu_dtype = _deprecated("set_autocast_gpu_dtype", set_autocast_dtype, "cuda")


def autocast_increment_nesting() -> int:
    """Adds one to this thread's autocast nesting counter (which entering an autocast context
    adds one to, and leaving it takes one from) and returns it, as
    ``torch.autocast_increment_nesting`` (Ember keeps no cast cache for it to clear at 0).

    Example:
        >>> ember.autocast_increment_nesting(), ember.autocast_decrement_nesting()
        (1, 0)
    """
    STATE.nesting += 1
    return STATE.nesting


def autocast_decrement_nesting() -> int:
    """Takes one from the counter :func:`autocast_increment_nesting` adds to and returns it
    (it may go below 0, as PyTorch's)."""
    STATE.nesting -= 1
    return STATE.nesting


def _eligible(t: Any) -> bool:
    # as PyTorch: float64 tensors are left alone
    return t.dtype.is_floating_point and t.dtype is not dtypes.float64


def _handler(prim: Any, inputs: tuple, params: dict) -> Any:
    kind = POLICY.get(prim.name) if STATE.enabled and DISPATCH.casting else None
    if kind is None or not inputs:
        return apply_below(_handler, prim, inputs, params)
    if kind is LOWER:
        target = STATE.dtype
    elif kind is FLOAT32:
        target = dtypes.float32
    else:
        floats = [t.dtype for t in inputs if t.dtype.is_floating_point]
        if len(set(floats)) < 2:
            return apply_below(_handler, prim, inputs, params)
        target = functools.reduce(dtypes.promote_types, floats)
    if any(_eligible(t) and t.dtype is not target for t in inputs):
        inputs = tuple(run_below(_handler, cast, t, target)
                       if _eligible(t) and t.dtype is not target else t for t in inputs)
        if "compute" in params:  # a GEMM: compute in what the device is fast in for target
            acc = compute_dtype(inputs[0].device, inputs[0].dtype, "gemm")
            params = dict(params, compute=None if acc is inputs[0].dtype else acc)
    if kind is LOWER and len(seen := {t.dtype for t in inputs}) > 1:  # (common case: one)
        shown = ", ".join(describe(t.shape, t.dtype) for t in inputs)
        if dtypes.float64 in seen and sum(d.is_floating_point for d in seen) > 1:
            raise DTypeError(f"{prim.name} under autocast: its operands ({shown}) differ, as "
                             f"autocast lowers float32 ones to {target.name} and leaves float64 "
                             "ones as they are, as PyTorch's. Hint: convert the float64 operand "
                             "with .float(), or run this op under autocast(enabled=False)")
        if prim.name in _GEMMS:
            # (an integer or bool operand beside a floating one: refused as outside autocast)
            raise DTypeError(f"{prim.name} under autocast: operands must have the same dtype, "
                             f"got {shown}; autocast casts only floating operands, as "
                             "PyTorch's. Hint: convert the integer operand with .float()")
    return apply_below(_handler, prim, inputs, params)


class autocast:
    """Context manager and decorator: mixed precision by op policy, as ``torch.autocast``.

    Inside, GEMMs (matmul, linear, conv, einsum, attention) run in ``dtype`` and the ops of
    PyTorch's CPU float32 list (``prod``, the losses, linear algebra, 3-D pools) in float32;
    ops listed as promote take the widest dtype of their inputs. ``enabled=False`` turns it
    off inside an enclosing autocast. ``dtype`` defaults to the current autocast dtype
    (:func:`get_autocast_dtype`); one that is neither bfloat16 nor float16 disables autocast
    with a warning, as PyTorch's. Call ``backward`` outside it.

    Example:
        >>> model = ember.nn.Linear(4, 3)
        >>> with ember.autocast("cpu", dtype=ember.bfloat16):
        ...     y = model(ember.randn(2, 4))
        >>> y.dtype
        ember.bfloat16
    """

    def __init__(self, device_type: str = "cpu", dtype: DType | None = None,
                 enabled: bool = True, cache_enabled: bool | None = None) -> None:
        _check_device("autocast", device_type)
        if dtype is not None and not isinstance(dtype, DType):  # (a string, a NumPy type)
            raise ArgumentTypeError(f"autocast: dtype must be an ember dtype, got "
                                    f"{_type_name(dtype)} {dtype!r}. Hint: pass "
                                    "ember.bfloat16 or ember.float16")
        self.device = self.device_type = device_type
        # no CUDA device: as PyTorch's without one, a CUDA autocast warns, is disabled and
        # leaves the CPU's autocast state alone (its ops never follow a CUDA autocast)
        self._inert = device_type == "cuda"
        # saved states: a stack per thread (keyed by the thread object, as a finished thread's
        # id is reused), for one object entered in several threads at once; each thread's own
        # ops and state are per thread already
        self._saved: dict[threading.Thread, list[tuple]] = {}
        if self._inert:
            if enabled:
                warnings.warn("autocast: device_type 'cuda' was given, but CUDA is not "
                              "available (Ember computes on the CPU). Disabling autocast; "
                              "use autocast('cpu', ...) for mixed precision here.", stacklevel=2)
            self.fast_dtype = dtypes.float16 if dtype is None else dtype  # (PyTorch's CUDA default)
            self.cache_enabled = True if cache_enabled is None else bool(cache_enabled)
            self.enabled = False
            return
        enabled = _flag("autocast", "enabled", enabled)
        self.fast_dtype = STATE.dtype if dtype is None else dtype
        self.cache_enabled = STATE.cache_enabled if cache_enabled is None else \
            _flag("autocast", "cache_enabled", cache_enabled)
        if enabled and self.fast_dtype not in _LOW_DTYPES:
            name = device_type.upper()
            warnings.warn(f"In {name} autocast, but the target dtype is not supported. "
                          f"Disabling autocast.\n{name} Autocast only supports dtypes of "
                          "ember.bfloat16, ember.float16 currently.", stacklevel=2)
            enabled = False
        self.enabled = bool(enabled)

    def __enter__(self) -> autocast:
        STATE.nesting += 1  # (every autocast entered counts, as PyTorch's, disabled or not)
        if self._inert:
            return self
        # one handler in the stack; inside enabled=False it stays there and passes ops through
        pushed = self.enabled and _handler not in DISPATCH.stack
        # a stack of saved states: the same object entered again inside itself restores each
        self._saved.setdefault(threading.current_thread(), []).append(
            (STATE.enabled, STATE.dtype, STATE.cache_enabled, DISPATCH.casting, pushed))
        STATE.enabled, STATE.dtype = self.enabled, self.fast_dtype
        STATE.cache_enabled = self.cache_enabled
        DISPATCH.casting = self.enabled
        if pushed:
            push_handler(_handler, ambient=True)  # (active inside ember.cond's branches too)
        return self

    def __exit__(self, *exc: object) -> None:
        STATE.nesting -= 1
        if self._inert:
            return
        # left in a thread that did not enter it (a generator closed elsewhere): as PyTorch,
        # the state saved at the latest entry is restored here; the entering thread's stays
        thread = threading.current_thread()
        if thread not in self._saved and not self._saved:
            raise RuntimeError("autocast: __exit__ without entering this autocast object "
                               "first. Hint: use it as `with ember.autocast(...):`")
        entered = thread if thread in self._saved else next(reversed(self._saved))
        *saved, pushed = self._saved[entered].pop()
        if not self._saved[entered]:  # (no record kept of a finished thread)
            del self._saved[entered]
        if pushed and entered == thread:
            pop_handler(_handler)
        STATE.enabled, STATE.dtype, STATE.cache_enabled, DISPATCH.casting = saved
        if STATE.enabled and _handler not in DISPATCH.stack:
            # set_autocast_enabled(False) inside took out the handler the setter had put in
            # before: back in, the setter's again, or the restored state would not cast
            push_handler(_handler, ambient=True)
            STATE.pushed_by_setter = True

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.device_type, self.fast_dtype, self.enabled, self.cache_enabled):
                return fn(*args, **kwargs)
        return wrapper


def autocast_decorator(autocast_instance: autocast, func: Callable) -> Callable:
    """``func`` run under ``autocast_instance``'s settings at each call (what
    ``@autocast(...)`` does), as ``torch.amp.autocast_mode.autocast_decorator``.

    Example:
        >>> from ember.amp.autocast_mode import autocast_decorator
        >>> inside = autocast_decorator(ember.autocast("cpu"), ember.is_autocast_enabled)
        >>> inside("cpu"), ember.is_autocast_enabled("cpu")
        (True, False)
    """
    return autocast_instance(func)


def __getattr__(name: str) -> Any:
    """``custom_fwd``, ``custom_bwd`` and ``is_autocast_available``, which PyTorch's
    ``autocast_mode`` holds (Ember's ``custom_function`` holds them: it imports this module)."""
    if name in ("custom_fwd", "custom_bwd", "is_autocast_available"):
        from ember.amp import custom_function
        return getattr(custom_function, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _run_in(state: tuple, fn: Callable) -> Any:
    enabled, dtype, cache_enabled = state
    with autocast("cpu", dtype, enabled, cache_enabled):
        return fn()


@contextlib.contextmanager
def _set_aside() -> Iterator[None]:
    """Autocast off (its handler out of the stack) inside the block, back as it was after."""
    saved = STATE.enabled, DISPATCH.casting, _handler in DISPATCH.ambient
    pop_handler(_handler)
    STATE.enabled = DISPATCH.casting = False
    try:
        yield
    finally:
        push_handler(_handler, ambient=saved[2])
        STATE.enabled, DISPATCH.casting = saved[:2]


def _state() -> tuple[bool, DType, bool]:
    return STATE.enabled, STATE.dtype, STATE.cache_enabled


# checkpoint recomputes under the autocast state its forward ran in; a compiled function
# called under autocast traces one graph per state, with autocast entered inside
_checkpoint.CONTEXTS["autocast"] = (_state, _run_in)
_jit_switches.CONTEXTS[_handler] = (_state, _run_in, _set_aside)
# composites on the lower list (transposed convolutions, attention) cast to this dtype
_convert.AUTOCAST_DTYPE["autocast"] = lambda: STATE.dtype

"""Process-wide numerics settings under PyTorch's names: deterministic algorithms, float32
matmul precision and "warn always".

What they mean in Ember:

- **Deterministic algorithms.** Every Ember op on the CPU is deterministic: NumPy's kernels
  and Ember's own threaded ones split work into fixed blocks and combine them in a fixed
  order, so the same inputs give the same bits on every run. There is therefore nothing to
  refuse or warn about, and the switch only records the mode (so code that sets and reads
  it back, as test suites do, ports unchanged). Random ops are reproducible through
  ``ember.manual_seed``, not through this switch.
- **float32 matmul precision.** NumPy's float32 GEMMs always run in full float32, which is
  PyTorch's ``"highest"``; ``"high"`` and ``"medium"`` (which allow TF32 or bfloat16 passes on
  GPUs) are recorded and read back but change no CPU result.
- **Warn always.** Ember warns through Python's :mod:`warnings`, whose filters decide
  repetition; the flag is kept for code that reads it.

Example:
    >>> ember.use_deterministic_algorithms(True)
    >>> ember.are_deterministic_algorithms_enabled(), ember.get_deterministic_debug_mode()
    (True, 2)
    >>> ember.use_deterministic_algorithms(False)
"""

from __future__ import annotations

import warnings

from ember.errors import ArgumentTypeError, type_name

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "set_warn_always", "is_warn_always_enabled",
           "set_flush_denormal"]


class _Settings:
    deterministic = False
    warn_only = False
    matmul_precision = "highest"
    warn_always = False


_DEBUG_MODES = ("default", "warn", "error")
_PRECISIONS = ("highest", "high", "medium")


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Asks for deterministic algorithms (``warn_only``: warn instead of raising where an op
    has none). Ember's CPU ops are all deterministic, so this records the mode only.

    Example:
        >>> ember.use_deterministic_algorithms(True, warn_only=True)
        >>> ember.is_deterministic_algorithms_warn_only_enabled()
        True
        >>> ember.use_deterministic_algorithms(False)
    """
    if not isinstance(mode, bool) or not isinstance(warn_only, bool):
        raise ArgumentTypeError(f"use_deterministic_algorithms: mode and warn_only must be "
                                f"bools, got {type(mode).__name__} and "
                                f"{type(warn_only).__name__}")
    _Settings.deterministic, _Settings.warn_only = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """Whether :func:`use_deterministic_algorithms` turned deterministic mode on.

    Example:
        >>> ember.are_deterministic_algorithms_enabled()
        False
    """
    return _Settings.deterministic


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether deterministic mode was turned on with ``warn_only=True``.

    Example:
        >>> ember.is_deterministic_algorithms_warn_only_enabled()
        False
    """
    return _Settings.warn_only


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """Deterministic mode by level: ``"default"``/0 (off), ``"warn"``/1 (on, warn only) or
    ``"error"``/2 (on).

    Example:
        >>> ember.set_deterministic_debug_mode("warn"); ember.get_deterministic_debug_mode()
        1
        >>> ember.set_deterministic_debug_mode(0)
    """
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("set_deterministic_debug_mode: invalid value of debug_mode, "
                               f"expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        level = _DEBUG_MODES.index(debug_mode)
    elif isinstance(debug_mode, int):  # (a bool too: True is 1, as in PyTorch)
        if debug_mode not in (0, 1, 2):
            raise RuntimeError("set_deterministic_debug_mode: invalid value of debug_mode, "
                               f"expected 0, 1, or 2, but got {debug_mode}")
        level = debug_mode
    else:
        raise ArgumentTypeError("set_deterministic_debug_mode: debug_mode must be str or int, "
                                f"but got {type_name(debug_mode)}")
    use_deterministic_algorithms(level > 0, warn_only=level == 1)


def get_deterministic_debug_mode() -> int:
    """The level :func:`set_deterministic_debug_mode` sets: 0 off, 1 warn only, 2 on.

    Example:
        >>> ember.get_deterministic_debug_mode()
        0
    """
    if not _Settings.deterministic:
        return 0
    return 1 if _Settings.warn_only else 2


def set_float32_matmul_precision(precision: str) -> None:
    """Records ``"highest"``, ``"high"`` or ``"medium"``; NumPy's float32 GEMMs are always
    ``"highest"``. An unknown name warns and changes nothing, as in PyTorch.

    Example:
        >>> ember.set_float32_matmul_precision("high"); ember.get_float32_matmul_precision()
        'high'
        >>> ember.set_float32_matmul_precision("highest")
    """
    if not isinstance(precision, str):  # (an array's ``in`` compares elementwise)
        raise ArgumentTypeError(f"set_float32_matmul_precision: precision must be a str, got "
                                f"{type_name(precision)}")
    if precision not in _PRECISIONS:
        warnings.warn(f"set_float32_matmul_precision: {precision} is not one of 'highest', "
                      "'high', or 'medium'; the call has no effect", UserWarning, stacklevel=2)
        return
    _Settings.matmul_precision = precision


def get_float32_matmul_precision() -> str:
    """The precision :func:`set_float32_matmul_precision` recorded (``"highest"`` at start).

    Example:
        >>> ember.get_float32_matmul_precision()
        'highest'
    """
    return _Settings.matmul_precision


def set_warn_always(b: bool) -> None:
    """Sets the "warn always" flag (Python's warning filters decide Ember's repetitions).

    Example:
        >>> ember.set_warn_always(True); ember.is_warn_always_enabled()
        True
        >>> ember.set_warn_always(False)
    """
    if not isinstance(b, bool):
        raise ArgumentTypeError(f"set_warn_always: expected a bool, got {type_name(b)}")
    _Settings.warn_always = b


def is_warn_always_enabled() -> bool:
    """The flag :func:`set_warn_always` sets.

    Example:
        >>> ember.is_warn_always_enabled()
        False
    """
    return _Settings.warn_always


def set_flush_denormal(mode: bool) -> bool:
    """Asks to flush denormal floats to zero, as ``torch.set_flush_denormal``; returns whether
    the request took effect. NumPy exposes no control of the processor's flush-to-zero and
    denormals-are-zero flags, so on the CPU it takes no effect and returns False (as PyTorch
    does on a CPU without them): denormals keep their values.

    Example:
        >>> ember.set_flush_denormal(True)
        False
    """
    if not isinstance(mode, bool):
        raise ArgumentTypeError(f"set_flush_denormal: expected a bool, got {type_name(mode)}")
    return False

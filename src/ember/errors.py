"""Ember's exception classes.

Each subclasses the built-in exception a PyTorch user would catch (``ValueError`` for shapes,
``TypeError`` for dtypes, ``RuntimeError`` for devices and autograd), so existing ``except``
clauses keep working. Messages name the op, the shapes/dtypes/devices involved and a hint.
"""

from __future__ import annotations


class EmberError(Exception):
    """Base class of every error Ember raises on purpose."""


class ShapeError(EmberError, ValueError):
    """Shapes do not fit an op, e.g. ``matmul: (32, 784) @ (512, 10): inner sizes differ``."""


class DTypeError(EmberError, TypeError):
    """A dtype an op cannot take, e.g. a gradient asked of an integer tensor."""


class DeviceError(EmberError, RuntimeError):
    """Tensors on different devices meet in one op, or a device is unknown."""


class IndexOutOfRange(EmberError, IndexError):
    """An index tensor or integer points outside the dimension it indexes."""


class GradError(EmberError, RuntimeError):
    """Autograd cannot do what was asked: a freed graph, a modified saved tensor, …"""


class OpError(EmberError, RuntimeError):
    """An op failed for a reason no more specific class describes."""


class DivisionByZero(OpError, ZeroDivisionError):
    """Integer division or remainder by zero, e.g. ``tensor([2]) // 0`` (floats give inf or
    nan instead). A RuntimeError as PyTorch's is, and a ZeroDivisionError as Python's is."""


class ValueOverflow(OpError, OverflowError):
    """A number cannot be stored in a tensor's dtype without wrapping around, e.g.
    ``uint8_tensor.fill_(300)``."""


class RecomputeError(GradError):
    """``checkpoint``'s recomputation did not reproduce its first run (a different number,
    shape or dtype of saved values). PyTorch's ``torch.utils.checkpoint.CheckpointError``:
    importable under that name from :mod:`ember.utils.checkpoint` (it is not
    :class:`CheckpointError`, which is about checkpoint files)."""


class UninitializedError(EmberError, ValueError):
    """A lazy module's parameter or buffer (``nn.UninitializedParameter``) was computed with
    before its first call gave it a shape. A ValueError, as PyTorch's."""


class CheckpointError(EmberError, ValueError):
    """A checkpoint file is truncated, corrupted or hostile, or an object cannot be saved.

    Messages name the file and the problem, e.g. ``ckpt.safetensors: tensor 'fc.weight':
    data_offsets [0, 4096] run past the end of the data (1024 bytes); the file is truncated``.
    """


def describe(shape: tuple[int, ...], dtype: object) -> str:
    """Formats a shape and dtype the way every message shows them: ``(3, 4) float32``."""
    return f"{tuple(shape)} {getattr(dtype, 'name', dtype)}"

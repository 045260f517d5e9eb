"""What kind of tensor this is, as PyTorch asks: the device and format predicates
(``is_sparse``, …: a dense Ember tensor is strided, on the CPU, the meta device or CUDA; sparse
ones are ``ember.sparse``'s own class), ``cuda()``, ``as_subclass`` and
``Tensor._make_subclass``, ``name`` and ``volatile`` (PyTorch's leftovers), and
``ember.get_device``."""

from __future__ import annotations

import warnings
from typing import Any

from ember.backend import device as to_device
from ember.backend.device import no_backend_error
from ember.errors import type_name
from ember.layouts import check_format, preserve_format
from ember.ops.convert import to
from ember.ops.shape import view
from ember.tensor import STATE_SLOTS, Tensor, method

__all__ = ["get_device"]

# Kinds of tensor an ember.Tensor never is (other devices; sparse and quantized tensors are
# classes of their own; nested, MKL-DNN layouts): each predicate is False for every one.
_NEVER = ("is_mps", "is_xpu", "is_xla", "is_ipu", "is_mtia", "is_maia",
          "is_vulkan", "is_mkldnn", "is_sparse", "is_sparse_csr", "is_quantized", "is_nested")
for _name in _NEVER:
    setattr(Tensor, _name, property(lambda self: False, doc=f"False: a dense tensor is not "
                                    f"{_name.removeprefix('is_')}."))

Tensor.name = property(lambda self: None,
                       doc="None, as PyTorch's for tensors that are not named dimensions.")


def _volatile(self: Tensor) -> bool:
    warnings.warn("volatile was removed (Tensor.volatile is always False); use "
                  "ember.no_grad() instead", UserWarning, stacklevel=2)
    return False


Tensor.volatile = property(_volatile, doc="Always False (it warns, as PyTorch's).")


def get_device(input: Tensor) -> int:
    """The CUDA device index of ``input``, or -1 on the CPU (``x.get_device()``).

    Example:
        >>> ember.get_device(ember.zeros(1))
        -1
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"get_device: expected a tensor, got {type_name(input)}")
    return input.get_device()


@method()
def cuda(self: Tensor, device: Any = None, non_blocking: bool = False,
         memory_format: Any = preserve_format) -> Tensor:
    """The tensor on a CUDA device (``device``: an index or a device; the first by default);
    an error when this build has no CUDA backend, as PyTorch's.

    Example:
        >>> ember.zeros(1).cuda()
        Traceback (most recent call last):
        ...
        ember.backend.device.DeviceUnavailableError: cuda(): device 'cuda': this build...
    """
    check_format("cuda", memory_format)
    target = to_device("cuda" if device is None else f"cuda:{device}" if isinstance(device, int)
                       else device)
    if not target.has_backend:
        raise no_backend_error(str(target), "cuda()")
    return to(self, device=target, memory_format=memory_format)


@method()
def as_subclass(self: Tensor, cls: type) -> Tensor:
    """A tensor of class ``cls`` (a subclass of :class:`Tensor`) on the same memory, still in
    the autograd graph (a view of ``self``).

    Example:
        >>> class Tagged(ember.Tensor):
        ...     pass
        >>> x = ember.ones(2, requires_grad=True)
        >>> y = x.as_subclass(Tagged)
        >>> type(y).__name__, y.requires_grad
        ('Tagged', True)
    """
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass: {cls!r} does not inherit from ember.Tensor; only a "
                        "Tensor subclass can be made from a tensor")
    return _retyped(view(self, tuple(self._data.shape)), cls)


def _retyped(t: Tensor, cls: type) -> Tensor:
    out = object.__new__(cls)
    for slot in STATE_SLOTS:
        setattr(out, slot, getattr(t, slot))
    return out


def _make_subclass(cls: type, data: Tensor, require_grad: bool = False) -> Tensor:
    """A leaf of class ``cls`` on ``data``'s memory, outside its graph, that requires grad if
    ``require_grad``: PyTorch's ``Tensor._make_subclass``, with which a Parameter-like class
    builds itself in ``__new__``.

    Example:
        >>> class Weight(ember.Tensor):
        ...     def __new__(cls, data):
        ...         return ember.Tensor._make_subclass(cls, data, True)
        >>> w = Weight(ember.zeros(2))
        >>> type(w).__name__, w.requires_grad, w.is_leaf
        ('Weight', True, True)
    """
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"_make_subclass: {cls!r} does not inherit from ember.Tensor; only a "
                        "Tensor subclass can be made from a tensor")
    if not isinstance(data, Tensor):
        raise TypeError(f"_make_subclass(): argument 'data' (position 2) must be Tensor, not "
                        f"{type(data).__name__}")
    return _retyped(data.detach(), cls).requires_grad_(require_grad)


Tensor._make_subclass = staticmethod(_make_subclass)

"""The base of the typed tensors: a :class:`~ember.Tensor` subclass whose type says what the
data is (an image, a video, a mask, boxes), so that ``transforms.v2`` can treat each input of
a sample as its type asks."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

import ember
from ember.errors import ArgumentError
from ember.tensor import STATE_SLOTS, Tensor, _new

_SELF_RETURNING = {f"__i{op}__" for op in ("add", "sub", "mul", "matmul", "truediv", "floordiv",
                                           "mod", "pow", "and", "or", "xor", "lshift", "rshift")
                   } | {"float", "double", "half", "bfloat16", "long", "int", "short", "char",
                        "byte", "bool", "type", "type_as", "cpu", "cuda", "contiguous"}


def _as_tensor(data: Any, dtype: ember.DType | None, device: Any,
               requires_grad: bool | None) -> Tensor:
    """``data`` as a tensor: a tensor is moved/cast (keeping ``requires_grad`` unless given),
    anything else goes through ``ember.as_tensor``."""
    if isinstance(data, Tensor):
        out = data.to(dtype=dtype, device=device) if dtype is not None or device is not None \
            else data
        requires_grad = data.requires_grad if requires_grad is None else requires_grad
    else:
        out = ember.as_tensor(data, dtype=dtype, device=device)
        requires_grad = bool(requires_grad)
    return out.requires_grad_(requires_grad) if requires_grad != out.requires_grad else out


class TVTensor(Tensor):
    """The base class of :class:`Image`, :class:`Video`, :class:`Mask` and
    :class:`BoundingBoxes`.

    As in torchvision, an operation on a tv_tensor gives a plain :class:`~ember.Tensor`
    (``image + 1`` is no longer known to be an image); ``clone``, ``to``, ``detach`` and
    ``requires_grad_`` keep the type, and so do the ``transforms.v2`` functions. An in-place
    operation changes the tv_tensor and returns it as a plain tensor. Use :func:`wrap` to give
    a result the type (and metadata) of another tv_tensor.

    Example:
        >>> from ember.vision import tv_tensors
        >>> img = tv_tensors.Image(ember.zeros(3, 2, 2))
        >>> type(img + 1).__name__, type(img.clone()).__name__
        ('Tensor', 'Image')
    """

    def __new__(cls, data: Any, *, dtype: ember.DType | None = None, device: Any = None,
                requires_grad: bool | None = None) -> TVTensor:
        return cls._wrap(_as_tensor(data, dtype, device, requires_grad))

    @classmethod
    def _wrap(cls, tensor: Tensor, **metadata: Any) -> TVTensor:
        """``tensor``'s data and autograd history under this type, without a copy."""
        out = _alias(cls, tensor)
        out.__dict__.update(metadata)
        return out

    def _metadata(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def _rewrap(self, out: Tensor) -> Tensor:
        return out if out is self else type(self)._wrap(out, **self._metadata())

    def as_subclass(self, cls: type) -> Tensor:
        """The same tensor (data and history) under type ``cls``; ``as_subclass(ember.Tensor)``
        drops the tv_tensor type."""
        return _plain(self) if cls is Tensor else cls._wrap(self, **self._metadata())

    def clone(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._rewrap(super().clone(*args, **kwargs))

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._rewrap(super().to(*args, **kwargs))

    def detach(self) -> Tensor:
        return self._rewrap(super().detach())

    def __deepcopy__(self, memo: dict) -> Tensor:
        if id(self) not in memo:
            memo[id(self)] = self._rewrap(super().__deepcopy__(memo))
        return memo[id(self)]

    def __reduce__(self) -> Any:
        return _rebuild, (type(self), super().__reduce__(), self._metadata())

    def __repr__(self) -> str:
        name = type(self).__name__
        body = super().__repr__()[len("tensor("):-1].replace("\n" + " " * len("tensor("),
                                                             "\n" + " " * (len(name) + 1))
        extra = "".join(f", {k}={v}" for k, v in self._metadata().items())
        return f"{name}({body}{extra})"


class set_return_type:  # (torchvision's lower-case name)
    """torchvision's switch for what tensor operations on a tv_tensor return. ``"Tensor"``
    (case-insensitive) is Ember's behaviour, plain tensors: as a call or a context manager it
    changes nothing. ``"TVTensor"`` is not built (torchvision's works through
    ``__torch_function__``, which Ember's functions do not consult, so ``ember.cat`` of boxes
    would silently give a plain tensor, which the v2 transforms take for an image): it raises,
    pointing to :func:`wrap`.

    Example:
        >>> from ember.vision import tv_tensors
        >>> with tv_tensors.set_return_type("Tensor"):
        ...     type(tv_tensors.Image(ember.zeros(1, 2, 2)) + 1).__name__
        'Tensor'
    """

    def __init__(self, return_type: str) -> None:
        kind = return_type.lower() if isinstance(return_type, str) else None
        if kind == "tvtensor":
            raise NotImplementedError(
                "set_return_type('TVTensor') is not built in Ember: its functions consult no "
                "__torch_function__, so results stay plain tensors. Give a result a tv_tensor's "
                "type and metadata with tv_tensors.wrap(out, like=x)")
        if kind != "tensor":
            raise ArgumentError(f"set_return_type: return_type must be 'TVTensor' or 'Tensor', "
                                f"got {return_type!r}")

    def __enter__(self) -> set_return_type:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


def _plain_result(name: str) -> Callable[..., Any]:
    """``Tensor`` method ``name`` for tv_tensors where it may return the tv_tensor itself (an
    in-place operation, a conversion that changes nothing): the result is a plain tensor, as
    in torchvision."""
    method = getattr(Tensor, name)

    @wraps(method)
    def inplace(self: TVTensor, *args: Any, **kwargs: Any) -> Any:
        out = method(self, *args, **kwargs)
        return _plain(out) if out is self else out

    return inplace


for _name in dir(Tensor):
    if _name != "requires_grad_" and (_name.endswith("_") and not _name.startswith("_")
                                      or _name in _SELF_RETURNING):
        setattr(TVTensor, _name, _plain_result(_name))


def _rebuild(cls: type, reduced: tuple, metadata: dict) -> TVTensor:
    fn, args = reduced
    return cls._wrap(fn(*args), **metadata)


def _alias(cls: type, t: Tensor) -> Tensor:
    """A ``cls`` object on ``t``'s data and autograd history. A leaf that requires grad is
    aliased by a view, so that gradients reach it, as PyTorch's ``as_subclass`` does."""
    if t.requires_grad and t._node is None:
        t = t.view(tuple(t.shape))
    out = _new(cls)
    for slot in STATE_SLOTS:
        setattr(out, slot, getattr(t, slot))
    return out


def _plain(t: Tensor) -> Tensor:
    """``t``'s data and history as a plain tensor."""
    return _alias(Tensor, t)

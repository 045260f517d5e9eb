"""``nn.Parameter`` (a tensor a module trains) and ``nn.Buffer`` (a tensor it keeps but does not
train).

A :class:`Parameter` is a :class:`~ember.Tensor` subclass with no extra state, so it is a leaf
tensor in every op; the ops themselves return plain tensors.
"""

from __future__ import annotations

from typing import Any

from ember.tensor import Tensor


def _share(cls: type, data: Tensor | None, requires_grad: bool) -> Any:
    """A ``cls`` object sharing ``data``'s memory and version counter, with no history."""
    if data is None:
        from ember.ops.creation import empty

        data = empty(0)
    if not isinstance(data, Tensor):
        raise TypeError(f"{cls.__name__}: expected a tensor, got {type(data).__name__}")
    out = object.__new__(cls)
    for slot in Tensor.__slots__[:-1]:
        setattr(out, slot, getattr(data, slot))
    out._node, out._idx, out.grad, out._hooks, out._retains, out._view = (None, 0, None, None,
                                                                          False, None)
    out.requires_grad = False
    if requires_grad:
        out.requires_grad_(True)
    return out


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning one to a module attribute registers it.

    It shares memory with ``data`` and requires grad unless told otherwise.

    Example:
        >>> p = nn.Parameter(ember.zeros(3))
        >>> p.requires_grad, isinstance(p, ember.Tensor)
        (True, True)
    """

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        return _share(cls, data, requires_grad)

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        pass  # everything happens in __new__; Tensor.__init__ would copy ``data`` again

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce__(self) -> Any:
        return Parameter, (self.detach(), self.requires_grad)

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        from ember.autograd.grad_mode import no_grad

        with no_grad():
            out = Parameter(self.detach().clone(), self.requires_grad)
        if self.grad is not None:
            with no_grad():
                out.grad = self.grad.detach().clone()
        memo[id(self)] = out
        return out


class Buffer(Tensor):
    """Marks a tensor as a module buffer: ``self.stats = nn.Buffer(t, persistent=False)``
    registers it as :meth:`Module.register_buffer` would. The module stores a plain tensor
    sharing ``data``'s memory, not the marker (as PyTorch does).

    Example:
        >>> m = nn.Module(); m.count = nn.Buffer(ember.zeros(()))
        >>> list(dict(m.named_buffers()))
        ['count']
    """

    __slots__ = ("persistent",)

    def __new__(cls, data: Tensor, *, persistent: bool = True) -> Buffer:
        out = _share(cls, data, False)
        out.requires_grad = data.requires_grad
        out.persistent = persistent
        return out

    def __init__(self, data: Tensor, *, persistent: bool = True) -> None:
        pass

    def unwrap(self) -> Tensor:
        """The plain tensor this marker stands for."""
        from ember.tensor import _wrap

        return _wrap(self._data, self._device, self.requires_grad, None, 0, self._vc)

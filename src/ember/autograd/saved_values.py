"""Tools over what backward saves, as in ``torch.autograd.graph``: :class:`save_on_cpu`,
:func:`disable_saved_tensors_hooks`, :func:`allow_mutation_on_saved_tensors` and
:func:`increment_version`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from ember.autograd.saved_hooks import SAVED_HOOKS, saved_tensors_hooks
from ember.errors import ArgumentTypeError
from ember.tensor import Tensor

__all__ = ["save_on_cpu", "disable_saved_tensors_hooks", "allow_mutation_on_saved_tensors",
           "increment_version"]


class save_on_cpu(saved_tensors_hooks):
    """Context manager: what backward saves is kept in host memory and moved back to its
    device when backward reads it, as ``torch.autograd.graph.save_on_cpu`` (GPU memory for
    CPU memory and transfers). A CPU tensor is kept as it is. ``pin_memory`` is accepted;
    Ember does not pin host memory, so it makes a plain host copy, as PyTorch does when no
    accelerator is available. ``device_type`` is PyTorch's and has no effect.

    Example:
        >>> x = ember.ones(3, requires_grad=True)
        >>> with ember.autograd.graph.save_on_cpu():
        ...     y = (x * x).sum()
        >>> y.backward()
        >>> x.grad
        tensor([2., 2., 2.])
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor: Tensor) -> tuple[Any, Tensor]:
            return tensor.device, tensor.to("cpu", copy=pin_memory)

        def unpack_from_cpu(packed: tuple[Any, Tensor]) -> Tensor:
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
    """Context manager: entering :class:`saved_tensors_hooks` (or :class:`save_on_cpu`,
    ``checkpoint``) inside it raises ``RuntimeError(error_message)``, as does entering it
    while such hooks are active, as in PyTorch (for code the hooks would break).

    Example:
        >>> with ember.autograd.graph.disable_saved_tensors_hooks("not here"):
        ...     with ember.autograd.graph.save_on_cpu():
        ...         pass
        Traceback (most recent call last):
        ...
        RuntimeError: not here
    """
    if SAVED_HOOKS.stack:
        raise RuntimeError(error_message)
    previous, SAVED_HOOKS.disabled = SAVED_HOOKS.disabled, error_message
    try:
        yield
    finally:
        SAVED_HOOKS.disabled = previous


class _CopiedSaves(saved_tensors_hooks):
    """The hooks of :func:`allow_mutation_on_saved_tensors`: each saved value (parameters
    too) is a private copy, read back only while the context is open."""

    def __init__(self) -> None:
        self.open = True
        super().__init__(self._copy, self._read)

    @staticmethod
    def _copy(tensor: Tensor) -> Tensor:
        return tensor.detach().clone()

    def _read(self, copy: Tensor) -> Tensor:
        if not self.open:
            raise AssertionError("Trying to backward outside of the "
                                 "'allow_mutation_on_saved_tensors' context in which the graph "
                                 "was originally recorded.")
        return copy


@contextlib.contextmanager
def allow_mutation_on_saved_tensors() -> Iterator[_CopiedSaves]:
    """Context manager: tensors saved for backward may be modified in place afterwards;
    backward uses the values they had when saved (instead of raising the in-place error), as
    PyTorch's. Backward must run inside the same context.

    Ember copies every saved value when it is saved (PyTorch copies one only when it is
    modified): the same gradients, more memory while the graph lives.

    Example:
        >>> with ember.autograd.graph.allow_mutation_on_saved_tensors():
        ...     a = ember.tensor([1., 2., 3.], requires_grad=True)
        ...     b = a.clone()
        ...     out = (b ** 2).sum()
        ...     _ = b.sin_()
        ...     out.backward()
        >>> a.grad
        tensor([2., 4., 6.])
    """
    if any(hooks[0] is _CopiedSaves._copy for hooks in SAVED_HOOKS.stack):
        raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
    hooks = _CopiedSaves()
    try:
        with hooks:
            yield hooks
    finally:
        hooks.open = False


def increment_version(tensor: Tensor | Iterable[Tensor]) -> None:
    """Moves the version counter of ``tensor`` (or of each tensor of an iterable) on by one,
    as an in-place op does: for code that writes a tensor's memory behind autograd's back,
    so backward notices the values it saved have changed.

    Example:
        >>> x = ember.ones(2)
        >>> ember.autograd.graph.increment_version(x)
        >>> x._version
        1
    """
    if not isinstance(tensor, (Tensor, Iterable)):
        raise ArgumentTypeError(f"increment_version expects a tensor or an iterable of tensors, "
                                f"got {type(tensor).__name__}")
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        if not isinstance(t, Tensor):  # (those before it moved on, as in PyTorch)
            raise ArgumentTypeError("increment_version expects each element of the iterable to "
                                    f"be a tensor, got {type(t).__name__}")
        t._vc.value += 1

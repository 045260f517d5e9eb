"""``ember.autograd.backward`` and ``ember.autograd.grad`` through MaskedTensors, as torch's:
a MaskedTensor among the outputs, their gradients or the inputs stands for its data (autograd
goes through the data, as its ``backward()`` does), and ``grad`` gives a MaskedTensor input's
gradient back as a MaskedTensor with the input's mask, as its ``.grad`` would be.

Example:
    >>> mt = ember.masked.masked_tensor(ember.tensor([1.0, 2.0]),
    ...                                 ember.tensor([True, False]), requires_grad=True)
    >>> ember.autograd.grad((mt * mt).sum(), [mt])
    (MaskedTensor(
      [  2.0000,       --]
    ),)
"""

from __future__ import annotations

from typing import Any

from ember.autograd.engine import backward, grad
from ember.masked.tensor import MaskedTensor

__all__: list[str] = []


def _data(x: Any) -> Any:
    """``x`` with each MaskedTensor (alone or in a list or tuple) as its data."""
    if isinstance(x, MaskedTensor):
        return x._masked_data
    if isinstance(x, (list, tuple)):
        return [_data(v) for v in x]
    return x


def differentiate(op: Any, args: tuple, kwargs: dict) -> Any:
    """``backward`` or ``grad`` (``op``) of MaskedTensor arguments, on their data."""
    if op is backward:
        tensors, grad_tensors = args
        return backward(_data(tensors), _data(grad_tensors), **{
            k: _data(v) for k, v in kwargs.items()})
    outputs, inputs, grad_outputs = args
    listed = [inputs] if isinstance(inputs, MaskedTensor) else list(inputs)
    found = grad(_data(outputs), _data(listed), _data(grad_outputs), **kwargs)
    return tuple(MaskedTensor._wrap(g, x._mask) if isinstance(x, MaskedTensor) and g is not None
                 else g for x, g in zip(listed, found))

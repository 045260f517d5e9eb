"""``parameters_to_vector`` / ``vector_to_parameters``: parameters as one flat vector."""

from __future__ import annotations

from collections.abc import Iterable

import ember
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated (differentiable).

    Example:
        >>> nn.utils.parameters_to_vector(nn.Linear(2, 3).parameters()).shape
        ember.Size([9])
    """
    return ember.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Points each parameter's ``data`` at its consecutive slice of ``vec``, as PyTorch does:
    the parameters then share ``vec``'s memory (writes to ``vec`` show in them) and take its
    dtype; the parameter objects stay, so optimizers still hold them.

    Example:
        >>> m = nn.Linear(2, 1)
        >>> nn.utils.vector_to_parameters(ember.arange(3.0), m.parameters())
        >>> m.weight.tolist(), m.bias.tolist()
        ([[0.0, 1.0]], [2.0])
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"vector_to_parameters: expected an ember Tensor, got {type(vec).__name__}")
    if vec.ndim != 1:
        raise ArgumentError(f"vector_to_parameters: expected a 1-D vector, got shape "
                            f"{tuple(vec.shape)}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if total != vec.numel():
        raise ArgumentError(f"vector_to_parameters: the vector has {vec.numel()} elements but the "
                            f"parameters have {total}")
    offset = 0
    with ember.no_grad():
        for p in params:
            n = p.numel()
            p.data = vec[offset:offset + n].view_as(p)
            offset += n

"""``parameters_to_vector`` / ``vector_to_parameters``: parameters as one flat vector."""

from __future__ import annotations

from collections.abc import Iterable

import ember
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
    """Copies consecutive slices of ``vec`` into ``parameters`` in place (under no_grad)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"vector_to_parameters: expected an ember Tensor, got {type(vec).__name__}")
    if vec.ndim != 1:
        raise ValueError(f"vector_to_parameters: expected a 1-D vector, got shape "
                         f"{tuple(vec.shape)}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if total != vec.numel():
        raise ValueError(f"vector_to_parameters: the vector has {vec.numel()} elements but the "
                         f"parameters have {total}")
    offset = 0
    with ember.no_grad():
        for p in params:
            n = p.numel()
            p[...] = vec[offset:offset + n].reshape(tuple(p.shape))
            offset += n

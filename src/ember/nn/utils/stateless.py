"""PyTorch's older spelling ``nn.utils.stateless.functional_call`` of
:func:`ember.func.functional_call`, deprecated: it warns with a ``FutureWarning``, as PyTorch's
does since 2.0."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ember.nn.utils._functional_call import functional_call as _functional_call

__all__ = ["functional_call"]


def functional_call(module: Any, parameters_and_buffers: Mapping | Sequence[Mapping],
                    args: Any = None, kwargs: dict | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """:func:`ember.func.functional_call` under its older name, with PyTorch's argument name
    ``parameters_and_buffers`` (``ember.func``'s is ``parameter_and_buffer_dicts``).

    Example:
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     functional_call(nn.Linear(2, 1), {"weight": ember.ones(1, 2),
        ...                                       "bias": ember.zeros(1)}, ember.ones(1, 2))
        tensor([[2.]])
    """
    warnings.warn("`nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 (and "
                  "in Ember); use `ember.func.functional_call` instead, a drop-in "
                  "replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)

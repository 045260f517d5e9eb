"""PyTorch's older spelling ``nn.utils.stateless.functional_call`` of
:func:`ember.func.functional_call`, deprecated: it warns with a ``FutureWarning``, as PyTorch's
does since 2.0."""

from __future__ import annotations

import functools
import warnings
from typing import Any

from ember.nn.utils._functional_call import functional_call as _functional_call

__all__ = ["functional_call"]


@functools.wraps(_functional_call)
def functional_call(*args: Any, **kwargs: Any) -> Any:
    warnings.warn("`nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 (and "
                  "in Ember); use `ember.func.functional_call` instead, a drop-in "
                  "replacement.", FutureWarning, stacklevel=2)
    return _functional_call(*args, **kwargs)

"""``nn.DataParallel`` as PyTorch runs it on a machine without accelerators: the wrapper
calls the module itself (``device_ids`` are ignored), so scripts written for GPUs run
unchanged and their checkpoints keep the ``module.`` prefix. For several processes use
``ember.nn.parallel.DistributedDataParallel``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.nn.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Wraps ``module``; on the CPU its forward is the module's (as PyTorch's without CUDA).

    Example:
        >>> dp = DataParallel(nn.Linear(2, 3))
        >>> dp(ember.ones(4, 2)).shape, list(dp.state_dict())
        (ember.Size([4, 3]), ['module.weight', 'module.bias'])
    """

    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None,
                 output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids: list = []
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)


def data_parallel(module: Module, inputs: Any, device_ids: Sequence[Any] | None = None,
                  output_device: Any = None, dim: int = 0,
                  module_kwargs: dict | None = None) -> Any:
    """The functional :class:`DataParallel`: ``module(*inputs, **module_kwargs)`` here.

    Example:
        >>> data_parallel(nn.Linear(2, 3), ember.ones(1, 2)).shape
        ember.Size([1, 3])
    """
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    return module(*inputs, **(module_kwargs or {}))

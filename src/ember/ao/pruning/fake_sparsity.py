"""``FakeSparsity``, the parametrization a sparsifier puts on each tensor it sparsifies
(``weight = mask * original``), and the helpers that find a tensor from its dotted name."""

from __future__ import annotations

from typing import Any

from ember.errors import ShapeError
from ember.nn.module import Module
from ember.nn.utils.parametrize import is_parametrized
from ember.tensor import Tensor

__all__ = ["FakeSparsity", "module_to_fqn", "fqn_to_module", "get_arg_info_from_tensor_fqn",
           "module_contains_param"]


class FakeSparsity(Module):
    """Multiplies the tensor it parametrizes by the buffer ``mask`` (which sparsifiers update
    in place, so the one object stays shared with their ``state``). Its state dict is empty,
    as PyTorch's.

    Example:
        >>> FakeSparsity(ember.tensor([1.0, 0.0]))(ember.tensor([3.0, 4.0]))
        tensor([3., 0.])
    """

    def __init__(self, mask: Tensor) -> None:
        super().__init__()
        self.register_buffer("mask", mask)

    def forward(self, x: Tensor) -> Tensor:
        if self.mask.shape != x.shape:
            raise ShapeError(f"FakeSparsity: mask shape ({tuple(self.mask.shape)}) must match "
                             f"x shape ({tuple(x.shape)})")
        return self.mask * x

    def state_dict(self, *args: Any, **kwargs: Any) -> dict:
        return {}


def module_to_fqn(model: Module, module: Module, prefix: str = "") -> str | None:
    """The dotted name of ``module`` within ``model`` (``""`` for ``model`` itself), or None
    when it is not a submodule.

    Example:
        >>> m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
        >>> module_to_fqn(m, m[1][0])
        '1.0'
    """
    if module is model:
        return ""
    for name, child in model.named_children():
        fqn = module_to_fqn(child, module, ".")
        if isinstance(fqn, str):
            return prefix + name + fqn
    return None


def fqn_to_module(model: Module | None, path: str) -> Any:
    """The submodule or tensor at dotted name ``path`` of ``model``, or None.

    Example:
        >>> fqn_to_module(nn.Sequential(nn.Linear(2, 3)), "0.weight").shape
        ember.Size([3, 2])
    """
    if path != "":
        for name in path.split("."):
            model = getattr(model, name, None)
    return model


def get_arg_info_from_tensor_fqn(model: Module, tensor_fqn: str) -> dict[str, Any]:
    """``module_fqn``, ``module``, ``tensor_name`` and ``tensor_fqn`` of the tensor at
    ``tensor_fqn``.

    Example:
        >>> info = get_arg_info_from_tensor_fqn(nn.Sequential(nn.Linear(2, 3)), "0.weight")
        >>> info["module_fqn"], info["tensor_name"]
        ('0', 'weight')
    """
    tensor_name = tensor_fqn.rsplit(".", maxsplit=1)[-1]
    module_fqn = tensor_fqn[: -len(tensor_name) - ("." in tensor_fqn)]
    return {"module_fqn": module_fqn, "module": fqn_to_module(model, module_fqn),
            "tensor_name": tensor_name, "tensor_fqn": tensor_fqn}


def module_contains_param(module: Module, parametrization: type) -> bool:
    """Whether one of ``module``'s parametrizations is a ``parametrization``."""
    return is_parametrized(module) and any(
        isinstance(p, parametrization) for plist in module.parametrizations.values()
        for p in plist)

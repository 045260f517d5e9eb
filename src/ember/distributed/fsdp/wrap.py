"""Which submodules become their own FSDP units: PyTorch's auto-wrap policies and the
``enable_wrap`` / ``wrap`` pair for wrapping by hand.

A policy is called as ``policy(module=m, recurse=r, nonwrapped_numel=n)``: with
``recurse=True`` it says whether to look inside ``m``; with ``recurse=False`` whether to wrap
``m``, whose parameters not yet in a nested unit number ``n``. Children are wrapped before
their parents, so each unit flattens only what its nested units left.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ember import nn

_WRAP_CONTEXT: list[tuple[type, dict]] = []


def _is_unit(module: nn.Module) -> bool:
    return hasattr(module, "_fsdp_wrapped_module")


def _module_wrap_policy(module: nn.Module, recurse: bool, module_classes: tuple) -> bool:
    return True if recurse else isinstance(module, module_classes)


class ModuleWrapPolicy:
    """Wraps every submodule that is an instance of one of ``module_classes``.

    Example:
        >>> FSDP(gpt, auto_wrap_policy=ModuleWrapPolicy({Block}))
    """

    def __init__(self, module_classes: Iterable[type[nn.Module]]) -> None:
        self._module_classes = tuple(set(module_classes))

    def __call__(self, module: nn.Module, recurse: bool, *args: Any, **kwargs: Any) -> bool:
        return _module_wrap_policy(module, recurse, self._module_classes)

    def __repr__(self) -> str:
        return f"ModuleWrapPolicy({set(self._module_classes)})"


def transformer_auto_wrap_policy(module: nn.Module, recurse: bool, nonwrapped_numel: int,
                                 transformer_layer_cls: Iterable[type[nn.Module]]) -> bool:
    """Wraps instances of ``transformer_layer_cls`` (bind it with ``functools.partial``).

    Example:
        >>> policy = functools.partial(transformer_auto_wrap_policy,
        ...                            transformer_layer_cls={Block})
    """
    return _module_wrap_policy(module, recurse, tuple(transformer_layer_cls))


def lambda_auto_wrap_policy(module: nn.Module, recurse: bool, nonwrapped_numel: int,
                            lambda_fn: Callable[[nn.Module], bool]) -> bool:
    """Wraps the submodules for which ``lambda_fn(module)`` is true.

    Example:
        >>> policy = functools.partial(lambda_auto_wrap_policy,
        ...                            lambda_fn=lambda m: isinstance(m, nn.Linear))
    """
    return True if recurse else bool(lambda_fn(module))


def size_based_auto_wrap_policy(module: nn.Module, recurse: bool, nonwrapped_numel: int,
                                min_num_params: int = int(1e8),
                                force_leaf_modules: set[type] | None = None,
                                exclude_wrap_modules: set[type] | None = None) -> bool:
    """Wraps a submodule once at least ``min_num_params`` of its parameters are not in a
    nested unit; never looks inside ``force_leaf_modules`` (``MultiheadAttention``) and
    never wraps ``exclude_wrap_modules`` (``ModuleList``, ``ModuleDict``).

    Example:
        >>> policy = functools.partial(size_based_auto_wrap_policy, min_num_params=10_000)
    """
    force_leaf = tuple(force_leaf_modules if force_leaf_modules is not None
                       else size_based_auto_wrap_policy.FORCE_LEAF_MODULES)
    exclude = tuple(exclude_wrap_modules if exclude_wrap_modules is not None
                    else size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES)
    if recurse:
        return not isinstance(module, force_leaf)
    return nonwrapped_numel >= min_num_params and not isinstance(module, exclude)


size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES = {nn.ModuleList, nn.ModuleDict}
size_based_auto_wrap_policy.FORCE_LEAF_MODULES = {nn.MultiheadAttention}


def recursive_wrap(module: nn.Module, policy: Callable, wrapper_cls: type,
                   ignored_modules: list[nn.Module], only_wrap_children: bool = False,
                   **kwargs: Any) -> tuple[nn.Module, int]:
    """Wraps the submodules of ``module`` the policy picks, deepest first; returns the
    (maybe wrapped) module and how many parameters were wrapped."""
    ignored = {id(p) for m in ignored_modules for p in m.parameters()}
    numel = sum(p.numel() for p in module.parameters() if id(p) not in ignored)
    if not policy(module=module, recurse=True, nonwrapped_numel=numel):
        return module, 0
    wrapped = 0
    for name, child in list(module.named_children()):
        if any(child is m for m in ignored_modules) or _is_unit(child):
            continue
        new, count = recursive_wrap(child, policy, wrapper_cls, ignored_modules, **kwargs)
        if new is not child:
            setattr(module, name, new)
        wrapped += count
    if not only_wrap_children and policy(module=module, recurse=False,
                                         nonwrapped_numel=numel - wrapped):
        return wrapper_cls(module, ignored_modules=ignored_modules, **kwargs), numel
    return module, wrapped


@contextlib.contextmanager
def enable_wrap(*, wrapper_cls: Any, **wrapper_kwargs: Any) -> Iterator[None]:
    """Within the block, :func:`wrap` wraps modules in ``wrapper_cls(module,
    **wrapper_kwargs)``.

    Example:
        >>> with enable_wrap(wrapper_cls=FSDP, sharding_strategy=ShardingStrategy.FULL_SHARD):
        ...     net = nn.Sequential(wrap(nn.Linear(4, 4)), nn.ReLU(), wrap(nn.Linear(4, 2)))
        >>> model = FSDP(net)
    """
    _WRAP_CONTEXT.append((wrapper_cls, wrapper_kwargs))
    try:
        yield
    finally:
        _WRAP_CONTEXT.pop()


def wrap(module: nn.Module, **wrap_overrides: Any) -> nn.Module:
    """Wraps ``module`` as :func:`enable_wrap` set up (``wrap_overrides`` replace its
    arguments); outside an ``enable_wrap`` block returns ``module`` unchanged.

    Example:
        >>> with enable_wrap(wrapper_cls=FSDP):
        ...     layer = wrap(nn.Linear(4, 4))
    """
    if not _WRAP_CONTEXT:
        return module
    wrapper_cls, kwargs = _WRAP_CONTEXT[-1]
    return wrapper_cls(module, **{**kwargs, **wrap_overrides})

"""``BaseSparsifier`` (``torch.ao.pruning.BaseSparsifier``): puts a :class:`FakeSparsity` mask
on each configured tensor (``prepare``), recomputes the masks (``step``, by the subclass's
``update_mask``), folds them into the tensors (``squash_mask``) and swaps masked modules for
sparse ones (``convert``)."""

from __future__ import annotations

import abc
import copy
from collections import defaultdict
from typing import Any

import ember
from ember import nn
from ember.ao.pruning.fake_sparsity import (
    FakeSparsity,
    get_arg_info_from_tensor_fqn,
    module_contains_param,
    module_to_fqn,
)
from ember.errors import ArgumentError
from ember.nn.module import Module
from ember.nn.module_hooks import transfer_forward_hooks
from ember.nn.utils import parametrize

__all__ = ["BaseSparsifier"]

SUPPORTED_MODULES = {nn.Linear}
_KEYS_NOT_IN_STATE_DICT = ("module", "module_fqn", "tensor_name")


class BaseSparsifier(abc.ABC):
    """The base of sparsifiers; a subclass implements ``update_mask(module, tensor_name,
    **group)``, which writes the new mask into ``module.parametrizations[tensor_name][0]
    .mask`` in place. ``defaults`` fill the keys a group's config leaves out.

    Example:
        >>> class Halves(BaseSparsifier):
        ...     def update_mask(self, module, tensor_name, **kwargs):
        ...         mask = module.parametrizations[tensor_name][0].mask
        ...         mask.data = (module.parametrizations[tensor_name].original.abs() > 0.5
        ...                      ).float()
        >>> model = nn.Sequential(nn.Linear(2, 2))
        >>> sparsifier = Halves()
        >>> sparsifier.prepare(model, config=None)
        >>> [g["tensor_fqn"] for g in sparsifier.groups]
        ['0.weight']
    """

    def __init__(self, defaults: dict[str, Any] | None = None) -> None:
        self.defaults: dict[str, Any] = defaults or {}
        self.state: dict[str, dict] = defaultdict(dict)
        self.groups: list[dict[str, Any]] = []
        self.enable_mask_update = True

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "groups": self.groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.groups):
            lines += [f"\tGroup {i}", f"\t    module: {group['module']}"]
            lines += [f"\t    {key}: {group[key]}" for key in sorted(group) if key != "module"]
        return "\n".join(lines) + "\n)"

    def state_dict(self) -> dict[str, Any]:
        """``state`` (the masks by tensor name) and ``groups`` (each group's config, without
        the module objects), as PyTorch's."""
        groups = [{k: v for k, v in group.items() if k not in _KEYS_NOT_IN_STATE_DICT}
                  for group in self.groups]
        return {"state": self.state, "groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        """Restores ``state`` and ``groups`` into the model :meth:`prepare` was given: each
        saved mask goes into its tensor's ``FakeSparsity`` (registered if missing)."""
        groups = copy.deepcopy(state_dict["groups"])
        states = state_dict["state"]
        for tensor_fqn, state in states.items():
            info = get_arg_info_from_tensor_fqn(self.model, tensor_fqn)
            module, tensor_name = info["module"], info["tensor_name"]
            if module is None:
                if strict:
                    raise RuntimeError(f"Error loading {tensor_fqn} into the model: the model "
                                       "has no such module")
                continue
            current = module.parametrizations[tensor_name] \
                if parametrize.is_parametrized(module, tensor_name) else []
            found = [p for p in current if isinstance(p, FakeSparsity)]
            if found:
                fake = found[0]
            else:
                fake = FakeSparsity(ember.ones(getattr(module, tensor_name).shape))
                parametrize.register_parametrization(module, tensor_name, fake)
            if state.get("mask") is not None:
                fake.mask = state.pop("mask")
            for group in groups:
                if group["tensor_fqn"] == tensor_fqn:
                    group.update(info)
        self.__setstate__({"state": states, "groups": groups})

    def make_config_from_model(self, model: Module,
                               SUPPORTED_MODULES: set[type] = SUPPORTED_MODULES) -> None:  # noqa: N803
        """``config``: the weights of every submodule of a ``SUPPORTED_MODULES`` type."""
        self.config = []
        stack = [model]
        while stack:
            module = stack.pop()
            for _, child in module.named_children():
                if type(child) in SUPPORTED_MODULES:
                    self.config.append({"tensor_fqn": module_to_fqn(model, child) + ".weight"})
                else:
                    stack.append(child)

    def prepare(self, model: Module, config: list[dict[str, Any]] | None) -> None:
        """Registers a mask (all ones, or the config's ``mask``) on each tensor of ``config``
        (dicts with ``tensor_fqn`` and per-group settings; None: every ``Linear`` weight).
        Modifies ``model`` in place."""
        self.model, self.config = model, config
        if self.config is None:
            self.make_config_from_model(model)
        for module_config in self.config:
            if not isinstance(module_config, dict):
                raise TypeError("config elements should be dicts not modules i.e.: "
                                "[{`tensor_fqn`: `foo.bar.weight`}, {`tensor_fqn`: ... }, ...], "
                                f"got {type(module_config).__name__}")
            local_args = {**copy.deepcopy(self.defaults), **module_config}
            tensor_fqn = local_args.get("tensor_fqn")
            if tensor_fqn is None:
                raise ArgumentError("tensor_fqn is a required argument in the sparsity config "
                                    "which replaces previous `module` and [module]`fqn` arguments")
            info = get_arg_info_from_tensor_fqn(model, tensor_fqn)
            if info["module"] is None or not isinstance(
                    getattr(info["module"], info["tensor_name"], None), ember.Tensor):
                raise ArgumentError(f"{type(self).__name__}.prepare: the model has no tensor "
                                    f"{tensor_fqn!r}")
            for key, value in info.items():
                if key in local_args and local_args[key] is not value \
                        and local_args[key] != value:
                    raise ArgumentError(f"Given both `{key}` and `tensor_fqn` in the config, it is "
                                        "expected them to agree!")
            local_args.update(info)
            self.groups.append(local_args)
        self._prepare()

    def _prepare(self) -> None:
        for config in self.groups:
            module, tensor_name = config["module"], config["tensor_name"]
            parametrization = config.get("parametrization", FakeSparsity)
            mask = config.get("mask", ember.ones_like(getattr(module, tensor_name).detach()))
            self.state[config["tensor_fqn"]]["mask"] = mask
            parametrize.register_parametrization(module, tensor_name, parametrization(mask))

    def squash_mask(self, params_to_keep: tuple[str, ...] | None = None,
                    params_to_keep_per_layer: dict[str, tuple[str, ...]] | None = None,
                    *args: Any, **kwargs: Any) -> None:
        """Removes the masks, leaving each tensor masked; with ``params_to_keep`` (for all
        groups) or ``params_to_keep_per_layer`` (by module name), the named group settings
        are kept in the module's ``sparse_params`` dict."""
        for config in self.groups:
            module = config["module"]
            parametrize.remove_parametrizations(module, config["tensor_name"],
                                                leave_parametrized=True)
            sparse_params = {}
            if params_to_keep is not None:
                sparse_params.update({k: config[k] for k in params_to_keep})
            if params_to_keep_per_layer is not None:
                params = params_to_keep_per_layer.get(config["module_fqn"])
                if params is not None:
                    sparse_params.update({k: config[k] for k in params})
            if sparse_params:
                module.sparse_params = sparse_params

    def convert(self, module: Module, mapping: dict[type, type] | None = None,
                inplace: bool = False, parameterization: type = FakeSparsity) -> Module:
        """``module`` with each submodule that has a ``parameterization`` and a ``mapping``
        entry replaced by ``mapping[type].from_dense(submodule)`` (hooks carry over)."""
        if mapping is None:
            raise NotImplementedError("convert: Need to auto generate mapping; Ember has no "
                                      "default sparse modules, so pass mapping={DenseType: "
                                      "SparseType} (SparseType.from_dense(module))")
        if not inplace:
            module = copy.deepcopy(module)
        for name, child in list(module.named_children()):
            base = parametrize.type_before_parametrizations(child)
            if module_contains_param(child, parameterization) and base in mapping:
                new = mapping[base].from_dense(child)
                transfer_forward_hooks(child, new)
                module._modules[name] = new
            else:
                module._modules[name] = self.convert(child, mapping, True, parameterization)
        return module

    def step(self, use_path: bool = True) -> None:
        """Recomputes every group's mask (unless ``enable_mask_update`` is off)."""
        if not self.enable_mask_update:
            return
        with ember.no_grad():
            for config in self.groups:
                self.update_mask(**config)

    @abc.abstractmethod
    def update_mask(self, module: Module, tensor_name: str, **kwargs: Any) -> None:
        """Writes the new mask of ``module``'s ``tensor_name`` in place."""

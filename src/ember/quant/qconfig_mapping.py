"""``QConfigMapping``: which qconfig each module of a model gets, by module type, by dotted
name or by a name pattern, over a global default (``torch.ao.quantization.QConfigMapping``).
Ember's eager ``propagate_qconfig_``, ``prepare``, ``prepare_qat`` and ``quantize_dynamic``
take one where PyTorch's eager functions take a ``qconfig_dict``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ember import nn
from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.quant.fake_quantize import default_weight_fake_quant
from ember.quant.observer import default_placeholder_observer, default_weight_observer
from ember.quant.qconfig import (
    QConfig,
    default_reuse_input_qconfig,
    get_default_qat_qconfig,
    get_default_qconfig,
)
from ember.quant.special_observers import (
    FixedQParamsFakeQuantize,
    default_fixed_qparams_range_0to1_observer,
    default_fixed_qparams_range_neg1to1_observer,
)

__all__ = ["QConfigMapping", "get_default_qconfig_mapping", "get_default_qat_qconfig_mapping"]

_KEYS = ("", "object_type", "module_name_regex", "module_name")


class QConfigMapping:
    """Qconfigs by increasing priority: the global one, by module type (or function or method
    name, kept for PyTorch's FX mode), by the first matching module-name regex, by module name
    (a module's own, else its nearest named parent's). A module's own ``qconfig`` attribute
    wins over all of them in the eager workflow.

    Example:
        >>> from ember.ao.quantization import default_qconfig
        >>> qm = QConfigMapping().set_global(default_qconfig).set_module_name("head", None)
        >>> qm.qconfig_for(nn.Linear, "head.fc") is None, qm.qconfig_for(nn.Linear, "body")
        (True, QConfig(...))
    """

    def __init__(self) -> None:
        self.global_qconfig: Any = None
        self.object_type_qconfigs: dict[Callable | str, Any] = {}
        self.module_name_regex_qconfigs: dict[str, Any] = {}
        self.module_name_qconfigs: dict[str, Any] = {}

    def set_global(self, global_qconfig: Any) -> QConfigMapping:
        """Sets the qconfig of modules no other rule matches."""
        self.global_qconfig = global_qconfig
        return self

    def set_object_type(self, object_type: Callable | str, qconfig: Any) -> QConfigMapping:
        """Sets the qconfig of modules of type ``object_type`` (exactly, not subclasses)."""
        self.object_type_qconfigs[object_type] = qconfig
        return self

    def set_module_name_regex(self, module_name_regex: str, qconfig: Any) -> QConfigMapping:
        """Sets the qconfig of modules whose dotted name matches ``module_name_regex`` from its
        start (``re.match``); the regexes are tried in the order they were first set."""
        try:
            re.compile(module_name_regex)
        except re.error as e:
            raise ArgumentError(f"QConfigMapping.set_module_name_regex: {module_name_regex!r} is "
                                f"not a valid regex ({e}). Hint: escape literal dots and brackets "
                                "with re.escape") from None
        self.module_name_regex_qconfigs[module_name_regex] = qconfig
        return self

    def set_module_name(self, module_name: str, qconfig: Any) -> QConfigMapping:
        """Sets the qconfig of the module named ``module_name`` and of its submodules."""
        self.module_name_qconfigs[module_name] = qconfig
        return self

    def qconfig_for(self, module_type: type, module_name: str) -> Any:
        """The qconfig for a module of ``module_type`` at dotted name ``module_name`` (the
        rules of PyTorch's ``_maybe_adjust_qconfig_for_module_type_or_name``)."""
        qconfig = self.object_type_qconfigs.get(module_type, self.global_qconfig)
        for pattern, regex_qconfig in self.module_name_regex_qconfigs.items():
            if re.match(pattern, module_name):
                qconfig = regex_qconfig
                break
        name = module_name
        while name:
            if name in self.module_name_qconfigs:
                return self.module_name_qconfigs[name]
            name = name.rpartition(".")[0]
        return qconfig

    def to_dict(self) -> dict[str, Any]:
        """The rules as PyTorch's ``qconfig_dict``: ``""`` → the global qconfig, the other
        keys → lists of ``(key, qconfig)`` pairs."""
        return {"": self.global_qconfig,
                "object_type": list(self.object_type_qconfigs.items()),
                "module_name_regex": list(self.module_name_regex_qconfigs.items()),
                "module_name": list(self.module_name_qconfigs.items()),
                "module_name_object_type_order": []}

    @classmethod
    def from_dict(cls, qconfig_dict: dict[str, Any]) -> QConfigMapping:
        """The mapping a ``qconfig_dict`` (as :meth:`to_dict` makes) describes."""
        if qconfig_dict.get("module_name_object_type_order"):
            raise NotImplementedError(
                "QConfigMapping.from_dict: 'module_name_object_type_order' rules pick qconfigs "
                "by the order of calls in a traced graph (PyTorch's FX mode), which Ember's "
                "eager workflow has not; use 'module_name' rules instead")
        unknown = set(qconfig_dict) - set(_KEYS) - {"module_name_object_type_order"}
        if unknown:
            raise ArgumentError(f"QConfigMapping.from_dict: unknown keys {sorted(unknown)}; "
                                f"expected some of {list(_KEYS)}")
        mapping = cls()
        if "" in qconfig_dict:
            mapping.set_global(qconfig_dict[""])
        for key, setter in (("object_type", mapping.set_object_type),
                            ("module_name_regex", mapping.set_module_name_regex),
                            ("module_name", mapping.set_module_name)):
            for name, qconfig in qconfig_dict.get(key, []):
                setter(name, qconfig)
        return mapping

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} (", " global_qconfig", f"  {self.global_qconfig}"]
        for style in ("object_type_qconfigs", "module_name_regex_qconfigs",
                      "module_name_qconfigs"):
            rules = getattr(self, style)
            lines.append(f" {style}")
            lines += [f"  {key}: {qconfig}" for key, qconfig in rules.items()] or ["  {}"]
        return "\n".join(lines) + "\n)"


def _default_mapping(qconfig: QConfig, is_qat: bool, backend: str) -> QConfigMapping:
    default_weight = default_weight_fake_quant if is_qat else default_weight_observer
    # (fbgemm's transposed convolutions take per-tensor weights; qnnpack's are per tensor)
    transpose = qconfig if backend == "qnnpack" else QConfig(activation=qconfig.activation,
                                                             weight=default_weight)
    layer_norm = QConfig(activation=qconfig.activation, weight=default_placeholder_observer)
    mapping = QConfigMapping().set_global(qconfig).set_object_type(
        "reshape", default_reuse_input_qconfig)
    for op in (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d,
               F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d):
        mapping.set_object_type(op, transpose)
    mapping.set_object_type(F.layer_norm, layer_norm).set_object_type(nn.LayerNorm, layer_norm)
    for observer, ops in ((default_fixed_qparams_range_0to1_observer,
                           (nn.Hardsigmoid, F.hardsigmoid, "hardsigmoid", "hardsigmoid_",
                            nn.Sigmoid, F.sigmoid, "sigmoid", "sigmoid_", nn.Softmax)),
                          (default_fixed_qparams_range_neg1to1_observer,
                           (nn.Tanh, F.tanh, "tanh", "tanh_"))):
        activation = FixedQParamsFakeQuantize.with_args(observer=observer) if is_qat \
            else observer
        fixed = QConfig(activation=activation, weight=default_weight)
        for op in ops:
            mapping.set_object_type(op, fixed)
    return mapping


def get_default_qconfig_mapping(backend: str = "x86", version: int = 0) -> QConfigMapping:
    """PyTorch's default mapping for post-training quantization: :func:`get_default_qconfig`
    globally, per-tensor weights for transposed convolutions, float weights for layer norms
    and fixed quantization parameters for sigmoid, hardsigmoid, softmax and tanh.

    Example:
        >>> qm = get_default_qconfig_mapping("x86")
        >>> type(qm.qconfig_for(nn.Sigmoid, "act").activation()).__name__
        'FixedQParamsObserver'
    """
    return _default_mapping(get_default_qconfig(backend, version), False, backend)


def get_default_qat_qconfig_mapping(backend: str = "x86", version: int = 1) -> QConfigMapping:
    """:func:`get_default_qconfig_mapping` for quantization-aware training: fake quantizers
    (:func:`get_default_qat_qconfig`) in place of observers.

    Example:
        >>> qm = get_default_qat_qconfig_mapping("x86")
        >>> type(qm.global_qconfig.activation()).__name__
        'FusedMovingAvgObsFakeQuantize'
    """
    return _default_mapping(get_default_qat_qconfig(backend, version), True, backend)

"""The eager-mode workflow (``torch.ao.quantization.quantize``): ``propagate_qconfig_``,
``prepare`` (observers after the modules to quantize), ``prepare_qat`` (QAT modules and fake
quantizers), ``convert`` (quantized modules in their place), the one-call ``quantize`` and
``quantize_qat``, and ``quantize_dynamic``."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from ember import nn
from ember.dtypes import float16
from ember.errors import ArgumentError, ArgumentTypeError
from ember.nn.module import Module
from ember.nn.module_hooks import transfer_forward_hooks
from ember.nn.utils.parametrize import is_parametrized, type_before_parametrizations
from ember.quant.mappings import (
    DEFAULT_MODULE_TO_ACT_POST_PROCESS,
    QUANTIZED_PASSTHROUGH_MAPPINGS,
    get_default_dynamic_quant_module_mappings,
    get_default_qat_module_mappings,
    get_default_qconfig_propagation_list,
    get_default_static_quant_module_mappings,
)
from ember.quant.modules.functional_modules import FloatFunctional
from ember.quant.modules.intrinsic import _FusedModule
from ember.quant.modules.qat import _ConvBn
from ember.quant.qconfig import (
    default_dynamic_qconfig,
    float16_dynamic_qconfig,
    float_qparams_weight_only_qconfig,
    float_qparams_weight_only_qconfig_4bit,
)
from ember.quant.qconfig_mapping import QConfigMapping
from ember.quant.qtypes import qint8, quint4x2, quint8
from ember.quant.stubs import DeQuantStub, QuantWrapper

__all__ = ["propagate_qconfig_", "prepare", "prepare_qat", "convert", "quantize", "quantize_qat",
           "quantize_dynamic", "swap_module", "add_quant_dequant"]


def propagate_qconfig_(module: Module, qconfig_dict: dict | QConfigMapping | None = None
                       ) -> None:
    """Gives every submodule a ``qconfig``. With a dict (PyTorch's eager ``qconfig_dict``):
    its own if set, else the dict's for its type or its dotted name, else its parent's. With a
    :class:`QConfigMapping`: its own if set, else the nearest ancestor's own, else the
    mapping's for its type and dotted name.

    Example:
        >>> m = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        >>> propagate_qconfig_(m, QConfigMapping().set_object_type(nn.Linear, default_qconfig))
        >>> m[0].qconfig is default_qconfig, m[1].qconfig
        (True, None)
    """
    _check_rules("propagate_qconfig_", "qconfig_dict", qconfig_dict)
    if isinstance(qconfig_dict, QConfigMapping):
        _propagate_mapping(module, qconfig_dict, None, "")
    else:
        _propagate(module, qconfig_dict or {}, None, "")


def _check_rules(op: str, name: str, rules: Any) -> None:
    if rules is not None and not isinstance(rules, (dict, QConfigMapping)):
        raise ArgumentTypeError(f"{op}: {name} must be a QConfigMapping or a dict (None: none), "
                                f"got {type(rules).__name__}. Hint: for one qconfig everywhere "
                                "pass QConfigMapping().set_global(qconfig), or set model.qconfig")


def _type(module: Module) -> type:
    """``module``'s type, that of the layer a parametrization (a sparsifier's mask) wraps."""
    return type_before_parametrizations(module)


def _propagate(module: Module, qconfig_dict: dict, parent: Any, prefix: str) -> None:
    qconfig = qconfig_dict.get(_type(module), parent)
    qconfig = qconfig_dict.get(prefix, qconfig)
    qconfig = getattr(module, "qconfig", qconfig)
    module.qconfig = qconfig
    for name, child in module.named_children():
        _propagate(child, qconfig_dict, qconfig, f"{prefix}.{name}" if prefix else name)


def _propagate_mapping(module: Module, mapping: QConfigMapping, explicit: Any,
                       prefix: str) -> None:
    """``explicit``: a one-element tuple holding the nearest ancestor's own qconfig, if any."""
    if "qconfig" in module.__dict__:
        explicit = (module.qconfig,)
    module.qconfig = explicit[0] if explicit else mapping.qconfig_for(_type(module), prefix)
    for name, child in module.named_children():
        _propagate_mapping(child, mapping, explicit, f"{prefix}.{name}" if prefix else name)


def _observer_forward_hook(module: Module, args: tuple, output: Any) -> Any:
    return module.activation_post_process(output)


def _needs_observation(module: Module) -> bool:
    return getattr(module, "qconfig", None) is not None


def _insert_observer(module: Module, hook: bool = True, observer: Any = None) -> None:
    observer = module.qconfig.activation if observer is None else observer
    module.add_module("activation_post_process", observer())
    if hook:
        module._observer_hook = module.register_forward_hook(_observer_forward_hook)


def _is_leaf(module: Module) -> bool:
    """Whether ``module`` has no children but its parametrizations (PyTorch's
    ``has_no_children_ignoring_parametrizations``)."""
    children = {name for name, _ in module.named_children()}
    return not children or (is_parametrized(module) and children == {"parametrizations"})


def _add_observers(module: Module, allow: set, non_leaf: set) -> None:
    for child in module.children():
        kind = _type(child)
        if kind is nn.Dropout:
            continue
        if isinstance(child, FloatFunctional):
            if _needs_observation(child):  # (by its methods)
                _insert_observer(child, hook=False)
        elif isinstance(child, _FusedModule):
            if _needs_observation(child):  # (as PyTorch, the observer runs as the fusion's last
                _insert_observer(child)  # member and again in the hook: a moving average
                # moves twice per call)
        elif kind in non_leaf:
            if _needs_observation(child):
                _insert_observer(child)
        elif child.training and kind in DEFAULT_MODULE_TO_ACT_POST_PROCESS:
            if _needs_observation(child):  # (a known output range: fixed parameters)
                _insert_observer(child, observer=DEFAULT_MODULE_TO_ACT_POST_PROCESS[kind])
        else:
            _add_observers(child, allow, non_leaf)
    if _is_leaf(module) and _type(module) in allow and _needs_observation(module) and \
            not isinstance(module, (nn.Sequential, DeQuantStub)):  # (dequantized: float)
        _insert_observer(module)


def prepare(model: Module, inplace: bool = False, allow_list: set | None = None,
            observer_non_leaf_module_list: set | None = None, *,
            qconfig_mapping: QConfigMapping | None = None) -> Module:
    """A copy of ``model`` (or ``model`` itself with ``inplace``) with an observer after
    each module that has a ``qconfig`` and a quantized twin; run calibration data through it,
    then :func:`convert`. ``qconfig_mapping`` (Ember's addition) gives the modules without a
    ``qconfig`` attribute theirs (see :func:`propagate_qconfig_`).

    Example:
        >>> m = nn.Sequential(QuantStub(), nn.Linear(2, 2), DeQuantStub())
        >>> m.qconfig = default_qconfig
        >>> p = prepare(m.eval())
        >>> type(p[1].activation_post_process).__name__
        'MinMaxObserver'
    """
    _check_rules("prepare", "qconfig_mapping", qconfig_mapping)
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model, qconfig_mapping)
    if not any(_needs_observation(m) for m in model.modules()):
        warnings.warn("None of the submodule got qconfig applied. Make sure you passed correct "
                      "configuration through `qconfig_dict` or by assigning the `.qconfig` "
                      "attribute directly on submodules", stacklevel=2)
    _add_observers(model, allow_list or get_default_qconfig_propagation_list(),
                   observer_non_leaf_module_list or set())
    return model


def prepare_qat(model: Module, mapping: dict | None = None, inplace: bool = False, *,
                qconfig_mapping: QConfigMapping | None = None) -> Module:
    """A copy of ``model`` (in training mode) for quantization-aware training: layers become
    their QAT versions (fake-quantized weights) and fake quantizers observe the outputs;
    ``qconfig_mapping`` as in :func:`prepare`.

    Example:
        >>> m = nn.Sequential(QuantStub(), nn.Linear(2, 2), DeQuantStub())
        >>> m.qconfig = get_default_qat_qconfig("x86")
        >>> type(prepare_qat(m)[1]).__name__
        'Linear'
    """
    if not model.training:
        raise ArgumentError("prepare_qat only works on models in training mode. Hint: call "
                            "model.train() first")
    _check_rules("prepare_qat", "qconfig_mapping", qconfig_mapping)
    mapping = get_default_qat_module_mappings() if mapping is None else mapping
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model, qconfig_mapping)
    convert(model, mapping=mapping, inplace=True, remove_qconfig=False)
    prepare(model, observer_non_leaf_module_list=set(mapping.values()), inplace=True)
    return model


def swap_module(mod: Module, mapping: dict) -> Module:
    """``mod``'s quantized twin from ``mapping`` (``from_float``) if it has a qconfig and a
    mapping entry; else ``mod``. Its forward pre-hooks and hooks carry over (to run on
    quantized tensors), but the observer's, as PyTorch's."""
    if getattr(mod, "qconfig", None) is None or _type(mod) not in mapping:
        return mod
    new = mapping[_type(mod)].from_float(mod)
    transfer_forward_hooks(mod, new, but=_observer_forward_hook)
    new.train(mod.training)
    return new


def _convert(module: Module, mapping: dict) -> None:
    for name, child in list(module.named_children()):
        if not isinstance(child, (_FusedModule, _ConvBn)):  # (their members stay float)
            _convert(child, mapping)
        module._modules[name] = swap_module(child, mapping)


def _remove_qconfig(module: Module) -> None:
    """Drops the qconfigs, and the output observers (with their hooks) of modules that
    ``convert`` left in place (as PyTorch)."""
    for m in list(module.modules()):
        if "qconfig" in m.__dict__:
            del m.qconfig
        handle = m.__dict__.pop("_observer_hook", None)
        if handle is not None:
            handle.remove()
            m._modules.pop("activation_post_process", None)


def convert(module: Module, mapping: dict | None = None, inplace: bool = False,
            remove_qconfig: bool = True) -> Module:
    """A copy of a prepared and calibrated (or QAT-trained) model with each observed module
    replaced by its quantized twin: ``QuantStub`` → ``Quantize``, ``Linear`` → quantized
    ``Linear``, …; with the default mapping, ``ReLU`` and ``MaxPool2d`` in the quantized
    region become versions that take quantized tensors.

    Example:
        >>> m = nn.Sequential(QuantStub(), nn.Linear(2, 2), DeQuantStub())
        >>> m.qconfig = default_qconfig
        >>> p = prepare(m.eval())
        >>> _ = p(ember.randn(8, 2))
        >>> q = convert(p)
        >>> [type(c).__name__ for c in q]
        ['Quantize', 'Linear', 'DeQuantize']
        >>> q(ember.randn(3, 2)).shape
        ember.Size([3, 2])
    """
    if mapping is None:
        mapping = {**get_default_static_quant_module_mappings(), **QUANTIZED_PASSTHROUGH_MAPPINGS}
    if not inplace:
        module = copy.deepcopy(module)
    _convert(module, mapping)
    if remove_qconfig:
        _remove_qconfig(module)
    return module


def quantize(model: Module, run_fn: Callable, run_args: Any, mapping: dict | None = None,
             inplace: bool = False) -> Module:
    """Post-training static quantization in one call: ``model`` (a copy unless ``inplace``)
    in eval mode is prepared, calibrated by ``run_fn(prepared, *run_args)`` and converted with
    ``mapping`` (default: the static mappings).

    Example:
        >>> m = nn.Sequential(QuantStub(), nn.Linear(2, 2), DeQuantStub())
        >>> m.qconfig = default_qconfig
        >>> q = quantize(m, lambda model, x: model(x), (ember.randn(8, 2),))
        >>> [type(c).__name__ for c in q]
        ['Quantize', 'Linear', 'DeQuantize']
    """
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    prepare(model, inplace=True)
    run_fn(model, *run_args)
    return convert(model, mapping, inplace=True)


def quantize_qat(model: Module, run_fn: Callable, run_args: Any, inplace: bool = False
                 ) -> Module:
    """Quantization-aware training in one call: ``model`` (a copy unless ``inplace``) in
    training mode is prepared with :func:`prepare_qat`, trained by ``run_fn(prepared,
    *run_args)`` and converted (still in training mode, as PyTorch leaves it).

    Example:
        >>> m = nn.Sequential(QuantStub(), nn.Linear(2, 2), DeQuantStub())
        >>> m.qconfig = get_default_qat_qconfig("x86")
        >>> q = quantize_qat(m, lambda model, x: model(x), (ember.randn(8, 2),))
        >>> type(q[1]).__module__
        'ember.quant.modules.quantized'
    """
    if not inplace:
        model = copy.deepcopy(model)
    model.train()
    prepare_qat(model, inplace=True)
    run_fn(model, *run_args)
    return convert(model, inplace=True)


def default_eval_fn(model: Module, calib_data: Iterable) -> None:
    """Runs ``model`` on the inputs of ``calib_data``, an iterable of ``(input, target)``
    pairs (a dataset or loader): a ``run_fn`` for :func:`quantize`.

    Example:
        >>> m = nn.Sequential(QuantStub(), nn.Linear(2, 2), DeQuantStub())
        >>> m.qconfig = default_qconfig
        >>> data = [(ember.randn(4, 2), ember.zeros(4))]
        >>> type(quantize(m, default_eval_fn, [data])[1]).__name__
        'Linear'
    """
    for data, _target in calib_data:
        model(data)


def _dynamic_defaults(dtype: Any) -> tuple[Any, tuple]:
    """The qconfig ``quantize_dynamic`` gives for ``dtype``, and the types it picks by
    default (PyTorch's)."""
    recurrent = (nn.Linear, nn.LSTM, nn.GRU, nn.LSTMCell, nn.RNNCell, nn.GRUCell)
    if dtype is qint8:
        return default_dynamic_qconfig, recurrent
    if dtype is float16:
        return float16_dynamic_qconfig, recurrent
    if dtype is quint8:
        return float_qparams_weight_only_qconfig, (nn.EmbeddingBag, nn.Embedding)
    if dtype is quint4x2:
        return float_qparams_weight_only_qconfig_4bit, (nn.EmbeddingBag,)
    raise ArgumentError(f"quantize_dynamic: don't know how to quantize with default settings for "
                        f"{dtype!r}: dtype must be ember.qint8, ember.float16, ember.quint8 or "
                        "ember.quint4x2")


def quantize_dynamic(model: Module, qconfig_spec: Any = None, dtype: Any = qint8,
                     mapping: dict | None = None, inplace: bool = False) -> Module:
    """A copy of ``model`` with its ``Linear``, ``LSTM``, ``GRU`` layers and recurrent cells
    (``RNNCell``, ``LSTMCell``, ``GRUCell``) (or the types or
    names in ``qconfig_spec``: a set, a dict or a :class:`QConfigMapping`) dynamically
    quantized: int8 weights, activations quantized per call. With ``dtype=ember.float16``
    their weights become float16 (``float16_dynamic_qconfig``); with ``dtype=ember.quint8``
    ``Embedding`` and ``EmbeddingBag`` tables are quantized per row
    (``float_qparams_weight_only_qconfig``), with ``dtype=ember.quint4x2`` ``EmbeddingBag``
    tables to 4 bits.

    Example:
        >>> q = quantize_dynamic(nn.Sequential(nn.Linear(4, 3), nn.ReLU()))
        >>> type(q[0]).__module__, q(ember.randn(2, 4)).shape
        ('ember.quant.modules.dynamic', ember.Size([2, 3]))
        >>> quantize_dynamic(nn.Sequential(nn.Linear(4, 3)), dtype=ember.float16)[0]
        DynamicQuantizedLinear(in_features=4, out_features=3, dtype=ember.float16)
    """
    if qconfig_spec is None or isinstance(qconfig_spec, set):
        qconfig, default_types = _dynamic_defaults(dtype)
        qconfig_spec = dict.fromkeys(default_types if qconfig_spec is None else qconfig_spec,
                                     qconfig)
    _check_rules("quantize_dynamic", "qconfig_spec (or a set of types and names)", qconfig_spec)
    mapping = get_default_dynamic_quant_module_mappings() if mapping is None else mapping
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    propagate_qconfig_(model, qconfig_spec)
    return convert(model, mapping, inplace=True)


def add_quant_dequant(module: Module) -> Module:
    """Wraps each leaf submodule that has a ``qconfig`` in a :class:`QuantWrapper` (in
    place); ``module`` itself when it is such a leaf (then the wrapper is returned).

    Example:
        >>> m = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        >>> m[0].qconfig = default_qconfig
        >>> type(add_quant_dequant(m)[0]).__name__
        'QuantWrapper'
    """
    if _is_leaf(module) and getattr(module, "qconfig", None):
        return QuantWrapper(module)
    for name, child in module.named_children():
        module._modules[name] = add_quant_dequant(child)
    return module

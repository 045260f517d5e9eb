"""``QConfig``: which observer (or fake quantizer) watches a module's output activations and
which its weight; PyTorch's defaults for its x86/fbgemm and qnnpack backends."""

from __future__ import annotations

import warnings
from collections import namedtuple
from typing import Any

from ember.dtypes import float16, float32
from ember.errors import ArgumentError
from ember.nn import Identity
from ember.nn.module import Module
from ember.quant.fake_quantize import (
    FakeQuantize,
    FusedMovingAvgObsFakeQuantize,
    default_embedding_fake_quant,
    default_embedding_fake_quant_4bit,
    default_fake_quant,
    default_fused_act_fake_quant,
    default_fused_per_channel_wt_fake_quant,
    default_fused_wt_fake_quant,
    default_per_channel_weight_fake_quant,
    default_weight_fake_quant,
)
from ember.quant.histogram_observer import HistogramObserver
from ember.quant.observer import (
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    PerChannelMinMaxObserver,
    PlaceholderObserver,
    _PartialWrapper,
    default_dynamic_quant_observer,
    default_float_qparams_observer,
    default_float_qparams_observer_4bit,
    default_observer,
    default_per_channel_weight_observer,
    default_placeholder_observer,
    default_weight_observer,
)
from ember.quant.qtypes import per_channel_symmetric, per_tensor_symmetric, qint8, quint8
from ember.quant.special_observers import (
    NoopObserver,
    ReuseInputObserver,
    default_debug_observer,
)

__all__ = ["QConfig", "default_qconfig", "default_per_channel_qconfig", "default_qat_qconfig",
           "default_dynamic_qconfig", "per_channel_dynamic_qconfig",
           "default_debug_qconfig", "default_dynamic_fake_quant", "default_dynamic_qat_qconfig",
           "float_qparams_weight_only_qconfig", "default_embedding_qat_qconfig",
           "default_qat_qconfig_v2", "default_weight_only_qconfig",
           "default_activation_only_qconfig", "default_reuse_input_qconfig",
           "get_default_qconfig", "get_default_qat_qconfig", "QConfigDynamic", "qconfig_equals",
           "get_default_qconfig_dict", "get_default_qat_qconfig_dict", "QConfigAny",
           "float16_dynamic_qconfig", "float16_static_qconfig",
           "float_qparams_weight_only_qconfig_4bit", "default_embedding_qat_qconfig_4bit",
           "default_symmetric_qnnpack_qconfig", "default_per_channel_symmetric_qnnpack_qconfig",
           "default_symmetric_qnnpack_qat_qconfig",
           "default_per_channel_symmetric_qnnpack_qat_qconfig", "default_quint8_weight_qconfig"]

_BACKENDS = ("x86", "fbgemm", "qnnpack")


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """Factories (``Observer.with_args(...)`` or classes) for a module's output activation
    observer and its weight observer; observer instances raise PyTorch's ``ValueError``.

    Example:
        >>> qc = QConfig(activation=default_observer.with_args(quant_min=0, quant_max=127),
        ...              weight=default_weight_observer)
        >>> qc.activation().quant_max
        127
    """

    __slots__ = ()

    def __new__(cls, activation: Any, weight: Any) -> QConfig:
        if isinstance(activation, Module) or isinstance(weight, Module):
            raise ArgumentError("QConfig received observer instance, please pass observer class "
                                "instead. Use MyObserver.with_args(x=1) to override arguments to "
                                "constructor if needed")
        return super().__new__(cls, activation, weight)


QConfigAny = QConfig | None  # (a module's qconfig: None leaves it float)

default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_per_channel_qconfig = QConfig(activation=default_observer,
                                      weight=default_per_channel_weight_observer)
default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)
default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                  weight=default_weight_observer)
per_channel_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                      weight=default_per_channel_weight_observer)
default_debug_qconfig = QConfig(activation=default_debug_observer, weight=default_weight_observer)
default_dynamic_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, is_dynamic=True,
    dtype=quint8, averaging_constant=1)
float_qparams_weight_only_qconfig = QConfig(activation=default_placeholder_observer,
                                           weight=default_float_qparams_observer)
float_qparams_weight_only_qconfig_4bit = QConfig(activation=default_placeholder_observer,
                                                weight=default_float_qparams_observer_4bit)
default_embedding_qat_qconfig = QConfig(activation=NoopObserver.with_args(dtype=float32),
                                        weight=default_embedding_fake_quant)
default_embedding_qat_qconfig_4bit = QConfig(activation=NoopObserver.with_args(dtype=float32),
                                             weight=default_embedding_fake_quant_4bit)
default_dynamic_qat_qconfig = QConfig(activation=default_dynamic_fake_quant,
                                      weight=default_weight_fake_quant)
default_qat_qconfig_v2 = QConfig(activation=default_fused_act_fake_quant,
                                weight=default_fused_wt_fake_quant)
default_weight_only_qconfig = QConfig(activation=Identity, weight=default_weight_fake_quant)
default_activation_only_qconfig = QConfig(activation=default_fake_quant, weight=Identity)
default_reuse_input_qconfig = QConfig(activation=ReuseInputObserver, weight=NoopObserver)
default_quint8_weight_qconfig = QConfig(activation=HistogramObserver, weight=MinMaxObserver)
float16_dynamic_qconfig = QConfig(
    activation=PlaceholderObserver.with_args(dtype=float16, is_dynamic=True),
    weight=PlaceholderObserver.with_args(dtype=float16))
float16_static_qconfig = QConfig(activation=PlaceholderObserver.with_args(dtype=float16),
                                 weight=PlaceholderObserver.with_args(dtype=float16))

# qnnpack's symmetric presets: int8 activations over [-128, 127] and weights over [-127, 127]
# (XNNPACK's constraints), the scale at least 2**-12
_QNNPACK_EPS = 2 ** -12
_symmetric_qnnpack_activation = HistogramObserver.with_args(dtype=qint8, reduce_range=False,
                                                            eps=_QNNPACK_EPS)
_symmetric_qnnpack_weight = dict(quant_min=-127, quant_max=127, dtype=qint8, eps=_QNNPACK_EPS)
_symmetric_qnnpack_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=qint8,
    reduce_range=False, eps=_QNNPACK_EPS)
default_symmetric_qnnpack_qconfig = QConfig(
    activation=_symmetric_qnnpack_activation,
    weight=MinMaxObserver.with_args(qscheme=per_tensor_symmetric, **_symmetric_qnnpack_weight))
default_per_channel_symmetric_qnnpack_qconfig = QConfig(
    activation=_symmetric_qnnpack_activation,
    weight=PerChannelMinMaxObserver.with_args(qscheme=per_channel_symmetric,
                                              **_symmetric_qnnpack_weight))
default_symmetric_qnnpack_qat_qconfig = QConfig(
    activation=_symmetric_qnnpack_fake_quant,
    weight=FusedMovingAvgObsFakeQuantize.with_args(
        observer=MovingAverageMinMaxObserver, qscheme=per_tensor_symmetric,
        **_symmetric_qnnpack_weight))
default_per_channel_symmetric_qnnpack_qat_qconfig = QConfig(
    activation=_symmetric_qnnpack_fake_quant,
    weight=FusedMovingAvgObsFakeQuantize.with_args(
        observer=MovingAveragePerChannelMinMaxObserver, qscheme=per_channel_symmetric,
        **_symmetric_qnnpack_weight))


class QConfigDynamic(namedtuple("QConfigDynamic", ["activation", "weight"])):
    """PyTorch's deprecated qconfig for dynamic quantization (a :class:`QConfig` does the
    same): factories of the activation and weight observers, ``Identity`` by default.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     QConfigDynamic(weight=default_weight_observer).activation.__name__
        'Identity'
    """

    __slots__ = ()

    def __new__(cls, activation: Any = Identity, weight: Any = Identity) -> QConfigDynamic:
        warnings.warn("`QConfigDynamic` is going to be deprecated in PyTorch 1.12, please use "
                      "`QConfig` instead", FutureWarning, stacklevel=2)
        if isinstance(weight, Module):
            raise ArgumentError("QConfigDynamic received observer instance, please pass observer "
                                "class instead. Use MyObserver.with_args(x=1) to override "
                                "arguments to constructor if needed")
        return super().__new__(cls, activation, weight)


def _factories_equal(a: Any, b: Any) -> bool:
    """Whether two observer or fake-quantizer factories build the same thing: the same class
    and arguments for ``with_args`` ones (an ``observer`` argument compared the same way)."""
    if not (isinstance(a, _PartialWrapper) and isinstance(b, _PartialWrapper)):
        return a == b
    if a.cls != b.cls or a.kwargs.keys() != b.kwargs.keys():
        return False
    return all(_factories_equal(a.kwargs[k], b.kwargs[k]) if k == "observer"
               else a.kwargs[k] == b.kwargs[k] for k in a.kwargs)


def qconfig_equals(q1: Any, q2: Any) -> bool:
    """Whether two qconfigs (or None) have equal activation and weight factories; separate
    ``with_args`` calls with the same arguments are equal.

    Example:
        >>> qconfig_equals(default_qconfig, QConfig(MinMaxObserver.with_args(quant_min=0,
        ...     quant_max=127), default_weight_observer))
        True
        >>> qconfig_equals(default_qconfig, None)
        False
    """
    if q1 is None or q2 is None:
        return q1 == q2
    try:
        return (_factories_equal(q1.activation, q2.activation)
                and _factories_equal(q1.weight, q2.weight))
    except AttributeError:
        return q1 == q2


def _check_backend(backend: str) -> None:
    if backend not in _BACKENDS:
        raise ArgumentError(f"backend {backend!r} is not supported; Ember computes as PyTorch's "
                            f"x86/fbgemm and qnnpack backends: use one of {list(_BACKENDS)}")


def get_default_qconfig(backend: str = "x86", version: int = 0) -> QConfig:
    """PyTorch's default post-training qconfig for ``backend``: a histogram observer of uint8
    activations and symmetric int8 weights; for 'x86' and 'fbgemm' (the same) the activation
    range halved (as fbgemm needs) and per-channel weights, for 'qnnpack' the full range and
    per-tensor weights.

    Example:
        >>> type(get_default_qconfig("x86").activation()).__name__
        'HistogramObserver'
        >>> get_default_qconfig("qnnpack").activation().quant_max
        255
    """
    _check_backend(backend)
    if version != 0:
        raise ArgumentError(f"get_default_qconfig: version must be 0, got {version}")
    if backend == "qnnpack":
        return QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                       weight=default_weight_observer)
    return QConfig(activation=HistogramObserver.with_args(reduce_range=True),
                   weight=default_per_channel_weight_observer)


def get_default_qat_qconfig(backend: str = "x86", version: int = 1) -> QConfig:
    """PyTorch's default quantization-aware-training qconfig for ``backend``: moving-average
    min/max fake quantization of uint8 activations and symmetric int8 weights (for 'x86' and
    'fbgemm', the same, the activation range halved and per-channel weights; for 'qnnpack' the
    full range and per-tensor weights); with ``version=1`` (the default) in
    :class:`FusedMovingAvgObsFakeQuantize` modules, with ``version=0`` in ``FakeQuantize``
    ones (whose scales and zero points are the observers' own).

    Example:
        >>> get_default_qat_qconfig("x86").activation().quant_max
        127
    """
    _check_backend(backend)
    if version not in (0, 1):
        raise ArgumentError(f"get_default_qat_qconfig: version must be 0 or 1, got {version}")
    fake_quant = FusedMovingAvgObsFakeQuantize if version == 1 else FakeQuantize
    per_tensor = backend == "qnnpack"
    weight = {(1, False): default_fused_per_channel_wt_fake_quant,
              (1, True): default_fused_wt_fake_quant,
              (0, False): default_per_channel_weight_fake_quant,
              (0, True): default_weight_fake_quant}[version, per_tensor]
    return QConfig(activation=fake_quant.with_args(observer=MovingAverageMinMaxObserver,
                                                   quant_min=0, quant_max=255,
                                                   reduce_range=not per_tensor),
                   weight=weight)


def get_default_qconfig_dict(backend: str = "x86", version: int = 0) -> dict:
    """PyTorch's deprecated form of :func:`get_default_qconfig_mapping`: its ``to_dict()``.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     sorted(get_default_qconfig_dict())
        ['', 'module_name', 'module_name_object_type_order', 'module_name_regex', 'object_type']
    """
    from ember.quant.qconfig_mapping import get_default_qconfig_mapping  # (it builds on this)

    _deprecated("get_default_qconfig_dict", "get_default_qconfig_mapping")
    return get_default_qconfig_mapping(backend, version).to_dict()


def get_default_qat_qconfig_dict(backend: str = "x86", version: int = 1) -> dict:
    """PyTorch's deprecated form of :func:`get_default_qat_qconfig_mapping`: its
    ``to_dict()``.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     type(get_default_qat_qconfig_dict("qnnpack")[""].weight()).__name__
        'FusedMovingAvgObsFakeQuantize'
    """
    from ember.quant.qconfig_mapping import get_default_qat_qconfig_mapping

    _deprecated("get_default_qat_qconfig_dict", "get_default_qat_qconfig_mapping")
    return get_default_qat_qconfig_mapping(backend, version).to_dict()


def _deprecated(name: str, replacement: str) -> None:
    warnings.warn(f"`torch.ao.quantization.{name}` is deprecated and will be removed in a "
                  f"future version. Please use `torch.ao.quantization.{replacement}` instead.",
                  FutureWarning, stacklevel=3)

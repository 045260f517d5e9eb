"""``QConfig``: which observer (or fake quantizer) watches a module's output activations and
which its weight; PyTorch's defaults for the x86/fbgemm backend."""

from __future__ import annotations

from typing import Any, NamedTuple

from ember.dtypes import float32
from ember.nn import Identity
from ember.quant.fake_quantize import (
    FakeQuantize,
    FusedMovingAvgObsFakeQuantize,
    default_embedding_fake_quant,
    default_fake_quant,
    default_fused_act_fake_quant,
    default_fused_per_channel_wt_fake_quant,
    default_fused_wt_fake_quant,
    default_per_channel_weight_fake_quant,
    default_weight_fake_quant,
)
from ember.quant.histogram_observer import HistogramObserver
from ember.quant.observer import (
    MovingAverageMinMaxObserver,
    default_dynamic_quant_observer,
    default_float_qparams_observer,
    default_observer,
    default_per_channel_weight_observer,
    default_placeholder_observer,
    default_weight_observer,
)
from ember.quant.qtypes import quint8
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
           "get_default_qconfig",
           "get_default_qat_qconfig"]

_BACKENDS = ("x86", "fbgemm")


class QConfig(NamedTuple):
    """Factories (``Observer.with_args(...)`` or classes) for a module's output activation
    observer and its weight observer.

    Example:
        >>> qc = QConfig(activation=default_observer.with_args(quant_min=0, quant_max=127),
        ...              weight=default_weight_observer)
        >>> qc.activation().quant_max
        127
    """

    activation: Any
    weight: Any


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
default_embedding_qat_qconfig = QConfig(activation=NoopObserver.with_args(dtype=float32),
                                        weight=default_embedding_fake_quant)
default_dynamic_qat_qconfig = QConfig(activation=default_dynamic_fake_quant,
                                      weight=default_weight_fake_quant)
default_qat_qconfig_v2 = QConfig(activation=default_fused_act_fake_quant,
                                weight=default_fused_wt_fake_quant)
default_weight_only_qconfig = QConfig(activation=Identity, weight=default_weight_fake_quant)
default_activation_only_qconfig = QConfig(activation=default_fake_quant, weight=Identity)
default_reuse_input_qconfig = QConfig(activation=ReuseInputObserver, weight=NoopObserver)


def _check_backend(backend: str) -> None:
    if backend not in _BACKENDS:
        raise ValueError(f"backend {backend!r} is not supported; Ember computes as PyTorch's "
                         f"x86/fbgemm backend: use one of {list(_BACKENDS)}")


def get_default_qconfig(backend: str = "x86", version: int = 0) -> QConfig:
    """PyTorch's default post-training qconfig for ``backend`` ('x86' or 'fbgemm', the same):
    a histogram observer of activations (uint8, range halved, as fbgemm needs) and per-channel
    symmetric int8 weights.

    Example:
        >>> type(get_default_qconfig("x86").activation()).__name__
        'HistogramObserver'
    """
    _check_backend(backend)
    if version != 0:
        raise ValueError(f"get_default_qconfig: version must be 0, got {version}")
    return QConfig(activation=HistogramObserver.with_args(reduce_range=True),
                   weight=default_per_channel_weight_observer)


def get_default_qat_qconfig(backend: str = "x86", version: int = 1) -> QConfig:
    """PyTorch's default quantization-aware-training qconfig for ``backend`` ('x86' or
    'fbgemm', the same): moving-average min/max fake quantization of activations (uint8,
    range halved), per-channel symmetric int8 weights; with ``version=1`` (the default) in
    :class:`FusedMovingAvgObsFakeQuantize` modules, with ``version=0`` in ``FakeQuantize``
    ones (whose scales and zero points are the observers' own).

    Example:
        >>> get_default_qat_qconfig("x86").activation().quant_max
        127
    """
    _check_backend(backend)
    if version not in (0, 1):
        raise ValueError(f"get_default_qat_qconfig: version must be 0 or 1, got {version}")
    fake_quant = FusedMovingAvgObsFakeQuantize if version == 1 else FakeQuantize
    weight = default_fused_per_channel_wt_fake_quant if version == 1 \
        else default_per_channel_weight_fake_quant
    return QConfig(activation=fake_quant.with_args(observer=MovingAverageMinMaxObserver,
                                                   quant_min=0, quant_max=255,
                                                   reduce_range=True),
                   weight=weight)

"""Which float module becomes which quantized, QAT or dynamically quantized one."""

from __future__ import annotations

from collections.abc import Callable

from ember import nn
from ember.quant.modules import activations as nnqa
from ember.quant.modules import batchnorm as nnqb
from ember.quant.modules import conv_transpose as nnqt
from ember.quant.modules import dynamic as nnqd
from ember.quant.modules import dynamic_cells as nnqdc
from ember.quant.modules import dynamic_rnn as nnqdr
from ember.quant.modules import embedding_ops as nnqe
from ember.quant.modules import functional_modules as nnqf
from ember.quant.modules import intrinsic as nni
from ember.quant.modules import normalization as nnqn
from ember.quant.modules import passthrough as nnqpt
from ember.quant.modules import pooling as nnqp
from ember.quant.modules import qat as nnqat
from ember.quant.modules import qat_embedding as nnqate
from ember.quant.modules import quantized as nnq
from ember.quant.special_observers import (
    default_fixed_qparams_range_0to1_fake_quant,
    default_fixed_qparams_range_neg1to1_fake_quant,
)
from ember.quant.stubs import DeQuantStub, QuantStub

__all__ = ["DEFAULT_STATIC_QUANT_MODULE_MAPPINGS", "DEFAULT_QAT_MODULE_MAPPINGS",
           "DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS", "DEFAULT_MODULE_TO_ACT_POST_PROCESS",
           "get_default_static_quant_module_mappings", "get_default_qat_module_mappings",
           "get_default_dynamic_quant_module_mappings", "get_default_qconfig_propagation_list",
           "get_embedding_qat_module_mappings", "get_embedding_static_quant_module_mappings",
           "get_static_quant_module_class", "get_dynamic_quant_module_class",
           "get_default_compare_output_module_list"]

DEFAULT_STATIC_QUANT_MODULE_MAPPINGS: dict[type, type] = {
    QuantStub: nnq.Quantize,
    DeQuantStub: nnq.DeQuantize,
    nn.Linear: nnq.Linear,
    nn.modules.linear.NonDynamicallyQuantizableLinear: nnq.Linear,
    nn.Conv1d: nnq.Conv1d,
    nn.Conv2d: nnq.Conv2d,
    nn.Conv3d: nnq.Conv3d,
    nn.ConvTranspose1d: nnqt.ConvTranspose1d,
    nn.ConvTranspose2d: nnqt.ConvTranspose2d,
    nn.ConvTranspose3d: nnqt.ConvTranspose3d,
    nn.Dropout: nnq.Dropout,
    nn.BatchNorm2d: nnqb.BatchNorm2d,
    nn.BatchNorm3d: nnqb.BatchNorm3d,
    nn.LayerNorm: nnqn.LayerNorm,
    nn.GroupNorm: nnqn.GroupNorm,
    nn.InstanceNorm1d: nnqn.InstanceNorm1d,
    nn.InstanceNorm2d: nnqn.InstanceNorm2d,
    nn.InstanceNorm3d: nnqn.InstanceNorm3d,
    nn.ReLU6: nnqa.ReLU6,
    nn.Hardswish: nnqa.Hardswish,
    nn.LeakyReLU: nnqa.LeakyReLU,
    nn.ELU: nnqa.ELU,
    nn.PReLU: nnqa.PReLU,
    nn.Embedding: nnqe.Embedding,
    nn.EmbeddingBag: nnqe.EmbeddingBag,
    nnqf.FloatFunctional: nnqf.QFunctional,
    nni.LinearReLU: nnq.LinearReLU,
    nni.ConvReLU1d: nnq.ConvReLU1d,
    nni.ConvReLU2d: nnq.ConvReLU2d,
    nni.ConvReLU3d: nnq.ConvReLU3d,
    nni.BNReLU2d: nnqb.BNReLU2d,
    nni.BNReLU3d: nnqb.BNReLU3d,
    nnqat.Linear: nnq.Linear,
    nnqat.Conv1d: nnq.Conv1d,
    nnqate.Embedding: nnqe.Embedding,
    nnqate.EmbeddingBag: nnqe.EmbeddingBag,
    nnqat.Conv2d: nnq.Conv2d,
    nnqat.Conv3d: nnq.Conv3d,
    nnqat.LinearReLU: nnq.LinearReLU,
    nnqat.ConvReLU1d: nnq.ConvReLU1d,
    nnqat.ConvReLU2d: nnq.ConvReLU2d,
    nnqat.ConvReLU3d: nnq.ConvReLU3d,
    nnqat.ConvBn1d: nnq.Conv1d,
    nnqat.ConvBn2d: nnq.Conv2d,
    nnqat.ConvBn3d: nnq.Conv3d,
    nnqat.ConvBnReLU1d: nnq.ConvReLU1d,
    nnqat.ConvBnReLU2d: nnq.ConvReLU2d,
    nnqat.ConvBnReLU3d: nnq.ConvReLU3d,
}

# Modules PyTorch runs unchanged on quantized tensors (its functions take them); Ember's take
# ordinary tensors only, so convert swaps these for quantized twins. They have no observer.
QUANTIZED_PASSTHROUGH_MAPPINGS: dict[type, type] = {
    nn.ReLU: nnq.ReLU,
    nn.MaxPool2d: nnq.MaxPool2d,
    nn.AdaptiveAvgPool2d: nnqp.AdaptiveAvgPool2d,
    nn.AvgPool2d: nnqp.AvgPool2d,
    nn.Hardtanh: nnqpt.Hardtanh,
    nn.Threshold: nnqpt.Threshold,
    nn.Upsample: nnqpt.Upsample,
    nn.UpsamplingNearest2d: nnqpt.UpsamplingNearest2d,
    nn.UpsamplingBilinear2d: nnqpt.UpsamplingBilinear2d,
    nn.Sigmoid: nnqa.Sigmoid,
    nn.Tanh: nnqa.Tanh,
    nn.Hardsigmoid: nnqa.Hardsigmoid,
}

# What observes these activations' outputs in training mode (prepare_qat): their ranges are
# known, so their quantization parameters are fixed
DEFAULT_MODULE_TO_ACT_POST_PROCESS: dict[type, object] = {
    nn.Hardsigmoid: default_fixed_qparams_range_0to1_fake_quant,
    nn.Sigmoid: default_fixed_qparams_range_0to1_fake_quant,
    nn.Softmax: default_fixed_qparams_range_0to1_fake_quant,
    nn.Tanh: default_fixed_qparams_range_neg1to1_fake_quant,
}

DEFAULT_QAT_MODULE_MAPPINGS: dict[type, type] = {
    nn.Linear: nnqat.Linear,
    nn.modules.linear.NonDynamicallyQuantizableLinear: nnqat.Linear,
    nn.Conv2d: nnqat.Conv2d,  # (not Conv1d, as PyTorch: it stays float until convert)
    nn.Conv3d: nnqat.Conv3d,
    nni.LinearReLU: nnqat.LinearReLU,
    nni.ConvReLU2d: nnqat.ConvReLU2d,
    nni.ConvReLU3d: nnqat.ConvReLU3d,
    nni.ConvBn1d: nnqat.ConvBn1d,
    nni.ConvBn2d: nnqat.ConvBn2d,
    nni.ConvBn3d: nnqat.ConvBn3d,
    nni.ConvBnReLU1d: nnqat.ConvBnReLU1d,
    nni.ConvBnReLU2d: nnqat.ConvBnReLU2d,
    nni.ConvBnReLU3d: nnqat.ConvBnReLU3d,
}

DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS: dict[type, type] = {
    nn.Linear: nnqd.Linear,
    nn.modules.linear.NonDynamicallyQuantizableLinear: nnqd.Linear,
    nni.LinearReLU: nnqd.LinearReLU,
    nn.LSTM: nnqdr.LSTM,
    nn.GRU: nnqdr.GRU,
    nn.RNNCell: nnqdc.RNNCell,
    nn.LSTMCell: nnqdc.LSTMCell,
    nn.GRUCell: nnqdc.GRUCell,
    nn.EmbeddingBag: nnqe.EmbeddingBag,  # (weight-only: float_qparams_weight_only_qconfig)
    nn.Embedding: nnqe.Embedding,
}


def get_default_static_quant_module_mappings() -> dict[type, type]:
    """Float (or QAT) module type → statically quantized module type (a copy)."""
    return dict(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS)


def get_default_qat_module_mappings() -> dict[type, type]:
    """Float module type → quantization-aware-training module type (a copy)."""
    return dict(DEFAULT_QAT_MODULE_MAPPINGS)


def get_default_dynamic_quant_module_mappings() -> dict[type, type]:
    """Float module type → dynamically quantized module type (a copy)."""
    return dict(DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS)


def get_default_qconfig_propagation_list() -> set[type]:
    """Module types whose outputs ``prepare`` observes (when they have a qconfig)."""
    return (set(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS) | set(DEFAULT_QAT_MODULE_MAPPINGS)
            | set(DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS) | {nn.Sequential})


def get_embedding_qat_module_mappings() -> dict[type, type]:
    """The QAT mappings plus ``Embedding`` and ``EmbeddingBag`` (for ``prepare_qat(model,
    mapping=...)`` with ``default_embedding_qat_qconfig``)."""
    return {**DEFAULT_QAT_MODULE_MAPPINGS, nn.EmbeddingBag: nnqate.EmbeddingBag,
            nn.Embedding: nnqate.Embedding}


def get_embedding_static_quant_module_mappings() -> dict[type, type]:
    """The static mappings (which convert QAT embeddings too)."""
    return dict(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS)


def get_combined_dict(default_dict: dict, additional_dict: dict) -> dict:
    """A copy of ``default_dict`` updated with ``additional_dict`` (its entries win).

    Example:
        >>> get_combined_dict(dict(a=1, b=1), dict(b=2, c=3))
        {'a': 1, 'b': 2, 'c': 3}
    """
    return {**default_dict, **additional_dict}


def _module_class(kind: str, defaults: dict, float_module_class: Callable,
                  additional: dict | None) -> type:
    found = get_combined_dict(defaults, additional or {}).get(float_module_class)
    if found is None:
        raise AssertionError(f"Floating point module class {float_module_class} does not have a "
                             f"corresponding {kind} module class")
    return found


def get_static_quant_module_class(float_module_class: Callable,
                                  additional_static_quant_mapping: dict | None = None,
                                  is_reference: bool = False) -> type:
    """The statically quantized module type of a float (or QAT) one, from the default
    mappings and ``additional_static_quant_mapping``; raises if it has none. (Reference
    modules, ``is_reference=True``, are FX-mode ones: not provided.)

    Example:
        >>> get_static_quant_module_class(nn.Conv2d).__name__
        'Conv2d'
    """
    if is_reference:
        raise NotImplementedError("get_static_quant_module_class: reference quantized modules "
                                  "(is_reference=True, FX graph mode) are not provided")
    return _module_class("quantized", DEFAULT_STATIC_QUANT_MODULE_MAPPINGS, float_module_class,
                         additional_static_quant_mapping)


def get_dynamic_quant_module_class(float_module_class: Callable,
                                   additional_dynamic_quant_mapping: dict | None = None
                                   ) -> type:
    """The dynamically quantized module type of a float one, from the default mappings and
    ``additional_dynamic_quant_mapping``; raises if it has none.

    Example:
        >>> get_dynamic_quant_module_class(nn.LSTM).__module__
        'ember.quant.modules.dynamic_rnn'
    """
    return _module_class("dynamically quantized", DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS,
                         float_module_class, additional_dynamic_quant_mapping)


def get_default_compare_output_module_list() -> set[type]:
    """The module types whose outputs PyTorch's numeric suite records: every float, QAT and
    quantized type of the default mappings, plus ``Sequential``.

    Example:
        >>> nn.LSTM in get_default_compare_output_module_list()
        True
    """
    mappings = (DEFAULT_STATIC_QUANT_MODULE_MAPPINGS, DEFAULT_QAT_MODULE_MAPPINGS,
                DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS)
    return {t for m in mappings for t in (*m, *m.values())} | {nn.Sequential}

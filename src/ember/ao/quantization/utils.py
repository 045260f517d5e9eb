"""``torch.ao.quantization.utils``: ``get_combined_dict``, ``calculate_qmin_qmax`` and the
helpers that read a ``QConfig`` (its activation and weight dtypes, which kind of quantization it
asks for) or an observer (its quantization parameters as a dict)."""

from __future__ import annotations

from typing import Any

from ember.dtypes import float8_e4m3fn, float8_e5m2, float16, int8, int16, int32, uint8
from ember.errors import ArgumentError
from ember.quant.mappings import get_combined_dict
from ember.quant.observer import PlaceholderObserver, calculate_qmin_qmax
from ember.quant.qtypes import (
    per_channel_affine,
    per_channel_affine_float_qparams,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
    qint8,
    qint32,
    quint4x2,
    quint8,
)
from ember.quant.quant_type import QuantType

__all__ = ["get_combined_dict", "calculate_qmin_qmax", "is_per_tensor", "is_per_channel",
           "get_qparam_dict", "activation_dtype", "weight_dtype", "get_qconfig_dtypes",
           "activation_is_statically_quantized", "activation_is_dynamically_quantized",
           "activation_is_int8_quantized", "activation_is_int32_quantized",
           "weight_is_quantized", "weight_is_statically_quantized",
           "op_is_int8_dynamically_quantized", "get_quant_type", "validate_qmin_qmax"]

_INT8 = (quint8, qint8, uint8, int8)
_FLOAT8 = (float8_e5m2, float8_e4m3fn)
_STATIC = (*_INT8, qint32, quint4x2, int16, int32, *_FLOAT8)


def is_per_tensor(qscheme: Any) -> bool:
    """Whether ``qscheme`` is ``per_tensor_affine`` or ``per_tensor_symmetric``."""
    return qscheme in (per_tensor_affine, per_tensor_symmetric)


def is_per_channel(qscheme: Any) -> bool:
    """Whether ``qscheme`` is one of the three per-channel schemes."""
    return qscheme in (per_channel_affine, per_channel_symmetric,
                       per_channel_affine_float_qparams)


def get_qparam_dict(observer_or_fake_quant: Any) -> dict:
    """The quantization parameters an observer (or fake quantizer) gives: ``qscheme`` (a
    symmetric one as its affine twin, as quantized tensors hold), ``dtype``, ``scale``,
    ``zero_point``, ``axis`` (per channel), ``quant_min``/``quant_max``.

    Example:
        >>> from ember.ao.quantization import MinMaxObserver
        >>> obs = MinMaxObserver()
        >>> _ = obs(ember.tensor([0.0, 2.55]))
        >>> list(get_qparam_dict(obs))
        ['qscheme', 'dtype', 'scale', 'zero_point', 'quant_min', 'quant_max']
    """
    qscheme = getattr(observer_or_fake_quant, "qscheme", None)
    dtype = observer_or_fake_quant.dtype
    if not qscheme or isinstance(observer_or_fake_quant, PlaceholderObserver):
        return {"qscheme": None, "dtype": dtype}
    params: dict = {"qscheme": qscheme, "dtype": dtype}  # torch's key order
    if is_per_tensor(qscheme):
        params["qscheme"] = per_tensor_affine
    elif is_per_channel(qscheme):
        params["qscheme"] = (per_channel_affine if qscheme is per_channel_symmetric
                             else qscheme)
        params["axis"] = observer_or_fake_quant.ch_axis
    else:
        raise ArgumentError(f"get_qparam_dict: unrecognized qscheme {qscheme!r}")
    params["scale"], params["zero_point"] = observer_or_fake_quant.calculate_qparams()
    for name in ("quant_min", "quant_max"):
        if hasattr(observer_or_fake_quant, name):
            params[name] = getattr(observer_or_fake_quant, name)
    return params


def _made(qconfig: Any, what: str, part: str) -> Any:
    if qconfig is None:
        raise ArgumentError(f"{what}: a qconfig is needed (got None)")
    return getattr(qconfig, part)()


def get_qconfig_dtypes(qconfig: Any) -> tuple:
    """``(activation dtype, weight dtype, activation is dynamic)`` of ``qconfig``.

    Example:
        >>> from ember.ao.quantization import default_dynamic_qconfig
        >>> get_qconfig_dtypes(default_dynamic_qconfig)
        (ember.quint8, ember.qint8, True)
    """
    activation = _made(qconfig, "get_qconfig_dtypes", "activation")
    weight = _made(qconfig, "get_qconfig_dtypes", "weight")
    return activation.dtype, weight.dtype, getattr(activation, "is_dynamic", False)


def activation_dtype(qconfig: Any) -> Any:
    """The dtype of ``qconfig``'s activation observer."""
    return _made(qconfig, "activation_dtype", "activation").dtype


def weight_dtype(qconfig: Any) -> Any:
    """The dtype of ``qconfig``'s weight observer."""
    return _made(qconfig, "weight_dtype", "weight").dtype


def activation_is_dynamically_quantized(qconfig: Any) -> bool:
    """Whether ``qconfig`` quantizes activations dynamically (per call)."""
    return bool(get_qconfig_dtypes(qconfig)[2])


def activation_is_statically_quantized(qconfig: Any) -> bool:
    """Whether ``qconfig`` quantizes activations (to an integer type, float16 or float8)
    with observed parameters, not dynamically."""
    return activation_dtype(qconfig) in (*_INT8, qint32, int16, int32, float16, *_FLOAT8) \
        and not activation_is_dynamically_quantized(qconfig)


def activation_is_int8_quantized(qconfig: Any) -> bool:
    """Whether ``qconfig`` quantizes activations to 8-bit integers."""
    return activation_dtype(qconfig) in _INT8


def activation_is_int32_quantized(qconfig: Any) -> bool:
    """Whether ``qconfig`` quantizes activations to 32-bit integers."""
    return activation_dtype(qconfig) in (qint32, int32)


def weight_is_quantized(qconfig: Any) -> bool:
    """Whether ``qconfig`` quantizes weights (to integers, float16 or float8)."""
    return weight_dtype(qconfig) in (*_INT8, float16, quint4x2, int16, int32, *_FLOAT8)


def weight_is_statically_quantized(qconfig: Any) -> bool:
    """Whether ``qconfig`` quantizes weights to 8-bit integers."""
    return weight_dtype(qconfig) in _INT8


def op_is_int8_dynamically_quantized(qconfig: Any) -> bool:
    """Whether ``qconfig`` is int8 dynamic quantization (uint8 activations chosen per call,
    int8 weights)."""
    act, weight, dynamic = get_qconfig_dtypes(qconfig)
    return act in (quint8, uint8) and weight in (qint8, int8) and bool(dynamic)


def get_quant_type(qconfig: Any) -> QuantType:
    """The :class:`QuantType` that ``qconfig`` asks for.

    Example:
        >>> from ember.ao.quantization import default_qconfig
        >>> get_quant_type(default_qconfig)
        <QuantType.STATIC: 1>
    """
    act, weight, dynamic = get_qconfig_dtypes(qconfig)
    if weight in _STATIC:
        return QuantType.DYNAMIC if dynamic else (
            QuantType.STATIC if act in _STATIC else QuantType.WEIGHT_ONLY)
    if weight is float16 and (dynamic or act is float16):
        return QuantType.DYNAMIC if dynamic else QuantType.STATIC
    raise ArgumentError(f"get_quant_type: unrecognized dtype combination: activation {act!r}, "
                        f"weight {weight!r}")


def validate_qmin_qmax(quant_min: int, quant_max: int) -> None:
    """Checks a user-given quantization range: it must hold 0, and ``quant_min < quant_max``."""
    if not quant_min <= 0 <= quant_max:
        raise ArgumentError(f"validate_qmin_qmax: the quantization range [{quant_min}, "
                            f"{quant_max}] must include 0")
    if quant_min >= quant_max:
        raise ArgumentError(f"validate_qmin_qmax: quant_min ({quant_min}) must be less than "
                            f"quant_max ({quant_max})")

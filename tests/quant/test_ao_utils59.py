"""``torch.ao.quantization.utils``' qconfig and observer helpers, against PyTorch's."""

import pytest
import torch
import torch.ao.quantization as tq
import torch.ao.quantization.utils as tu

import ember
import ember.ao.quantization as eq
import ember.ao.quantization.utils as eu

_QCONFIGS = ["default_qconfig", "default_dynamic_qconfig", "float16_dynamic_qconfig",
             "float16_static_qconfig", "float_qparams_weight_only_qconfig",
             "float_qparams_weight_only_qconfig_4bit", "default_weight_only_qconfig",
             "default_activation_only_qconfig", "per_channel_dynamic_qconfig",
             "default_qat_qconfig", "default_dynamic_qat_qconfig", "default_per_channel_qconfig",
             "default_embedding_qat_qconfig", "default_qat_qconfig_v2"]
_FNS = ["activation_dtype", "weight_dtype", "get_qconfig_dtypes",
        "activation_is_statically_quantized", "activation_is_dynamically_quantized",
        "activation_is_int8_quantized", "activation_is_int32_quantized", "weight_is_quantized",
        "weight_is_statically_quantized", "op_is_int8_dynamically_quantized", "get_quant_type"]


def _shown(v):
    return str(v).replace("torch.", "").replace("ember.", "")


@pytest.mark.parametrize("name", _QCONFIGS)
def test_qconfig_helpers_as_torch(name):
    for fn in _FNS:
        try:
            want = _shown(getattr(tu, fn)(getattr(tq, name)))
        except Exception:  # noqa: BLE001 - torch refuses: so must Ember
            with pytest.raises((ember.errors.ArgumentError, AttributeError)):
                getattr(eu, fn)(getattr(eq, name))
            continue
        assert _shown(getattr(eu, fn)(getattr(eq, name))) == want, fn


@pytest.mark.parametrize("observer", ["MinMaxObserver", "PerChannelMinMaxObserver",
                                      "PlaceholderObserver", "HistogramObserver"])
def test_get_qparam_dict_as_torch(observer):
    got = []
    for lib, q, u in ((torch, tq, tu), (ember, eq, eu)):
        kw = ({"qscheme": lib.per_channel_symmetric, "dtype": lib.qint8}
              if "PerChannel" in observer else {})
        obs = getattr(q, observer)(**kw)
        obs(lib.tensor([[0.0, -1.5, 2.55], [1.0, 0.5, -0.2]]))
        got.append([(k, _shown(v.tolist() if hasattr(v, "tolist") else v))
                    for k, v in u.get_qparam_dict(obs).items()])  # in torch's key order
    assert got[1] == got[0]


def test_qscheme_predicates_and_range_check():
    assert eu.is_per_tensor(ember.per_tensor_symmetric)
    assert not eu.is_per_tensor(ember.per_channel_affine)
    assert eu.is_per_channel(ember.per_channel_affine_float_qparams)
    eu.validate_qmin_qmax(-8, 7)
    with pytest.raises(ember.errors.ArgumentError, match="include 0"):
        eu.validate_qmin_qmax(1, 7)
    with pytest.raises(ember.errors.ArgumentError, match="a qconfig is needed"):
        eu.get_quant_type(None)


@pytest.mark.parametrize("act, weight, dynamic", [
    ("float8_e4m3fn", "float8_e4m3fn", False), ("float8_e5m2", "float8_e5m2", False),
    ("quint8", "float8_e4m3fn", True), ("float32", "float8_e5m2", False),
    ("float8_e5m2", "qint8", False)])
def test_float8_qconfigs_as_torch(act, weight, dynamic):
    # torch's readers list float8_e5m2 / float8_e4m3fn as static and weight dtypes
    got = []
    for lib, q, u in ((torch, tq, tu), (ember, eq, eu)):
        qc = q.QConfig(activation=q.PlaceholderObserver.with_args(
                           dtype=getattr(lib, act), is_dynamic=dynamic),
                       weight=q.PlaceholderObserver.with_args(dtype=getattr(lib, weight)))
        got.append([_shown(getattr(u, fn)(qc)) for fn in _FNS])
    assert got[1] == got[0]

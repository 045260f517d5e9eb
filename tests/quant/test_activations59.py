"""Quantized activation modules against PyTorch's (sweep59a)."""

import numpy as np
import pytest
import torch
import torch.ao.nn.quantized as tnnq

import ember
import ember.ao.nn.quantized as nnq

_DTYPES = {"quint8": (torch.quint8, ember.quint8, np.uint8, 0, 255),
           "qint8": (torch.qint8, ember.qint8, np.int8, -128, 127),
           "qint32": (torch.qint32, ember.qint32, np.int32, -300, 300)}


@pytest.mark.parametrize("dtype", ["quint8", "qint8", "qint32"])
@pytest.mark.parametrize("scale,zero_point", [(0.05, -5), (0.1, 100), (0.03, 0)])
def test_relu6_every_integer_as_torch(dtype, scale, zero_point):
    tdt, edt, npdt, low, high = _DTYPES[dtype]
    zero_point = int(np.clip(zero_point, low, high))
    ints = np.arange(low, high + 1).astype(npdt)
    t = torch._make_per_tensor_quantized_tensor(torch.tensor(ints), scale, zero_point)
    e = ember._make_per_tensor_quantized_tensor(ember.tensor(ints), scale, zero_point)
    assert t.dtype == tdt and e.dtype is edt
    yt, ye = tnnq.ReLU6()(t), nnq.ReLU6()(e)
    np.testing.assert_array_equal(ye.int_repr().numpy(), yt.int_repr().numpy())
    assert ye.dtype is edt and ye.q_scale() == yt.q_scale()

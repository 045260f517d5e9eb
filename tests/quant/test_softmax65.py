"""``ember.ao.nn.quantized.Softmax`` against PyTorch's ``torch.ao.nn.quantized.Softmax``
(sweep65c: it was missing)."""

import numpy as np
import pytest
import torch
import torch.ao.nn.quantized as tnnq

import ember
import ember.ao.nn.quantized as ennq
from tests.quant.helpers import TORCH_NAMES


@pytest.mark.parametrize("dtype,zero_point", [(ember.quint8, 131), (ember.qint8, -7)])
@pytest.mark.parametrize("shape,dim", [((4, 300), 1), ((2, 3, 5), 0), ((2, 3, 4, 5), -1),
                                       ((2, 3, 4), None), ((7,), None)])
@pytest.mark.parametrize("out", [(1.0 / 256, 0), (0.002, 3)])
def test_quantized_softmax_as_torch(dtype, zero_point, shape, dim, out):
    x = (np.random.default_rng(len(shape)).standard_normal(shape) * 3).astype(np.float32)
    t = tnnq.Softmax(dim, *out)(torch.quantize_per_tensor(torch.tensor(x), 0.05, zero_point,
                                                          TORCH_NAMES[dtype]))
    e = ennq.Softmax(dim, *out)(ember.quantize_per_tensor(ember.tensor(x), 0.05, zero_point,
                                                          dtype))
    assert e.dtype is dtype and (e.q_scale(), e.q_zero_point()) == (t.q_scale(), t.q_zero_point())
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())


def test_quantized_softmax_module_reads_as_torch():
    m = ennq.Softmax(1, 0.1, 2)
    assert repr(m) == repr(tnnq.Softmax(1, 0.1, 2)) == "QuantizedSoftmax(dim=1)"
    assert dict(m.state_dict()) == {}  # (scale and zero point are attributes, as torch's)
    assert isinstance(m, ember.nn.Softmax)
    x = ember.tensor([[1.0, 2.0]])
    np.testing.assert_allclose(m(x).numpy(), ember.softmax(x, 1).numpy())

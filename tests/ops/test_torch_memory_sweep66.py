"""as_tensor and asarray of a CPU torch.Tensor share its memory, as torch.as_tensor and
torch.asarray do, through NumPy's view of it (DLPack cost 8x more); what NumPy cannot view
(bfloat16, a pending conjugate or negative bit, one requiring grad) still converts."""

import pytest
import torch

import ember


@pytest.mark.parametrize("make", [ember.as_tensor, ember.asarray])
@pytest.mark.parametrize("source", [torch.arange(6.0), torch.arange(6).reshape(2, 3).t(),
                                    torch.ones(1).expand(3), torch.tensor(2.5)])
def test_a_torch_tensor_is_shared_as_torch_shares_it(make, source):
    out = make(source)
    assert torch.as_tensor(source).data_ptr() == source.data_ptr()
    assert out.tolist() == source.tolist() and out.shape == source.shape
    assert str(out.dtype).split(".")[1] == str(source.dtype).split(".")[1]
    if 0 not in source.stride():  # (an expanded one takes no in-place add)
        source.add_(7)
    assert out.tolist() == source.tolist()


def test_as_tensor_writes_through_to_the_torch_tensor():
    t = torch.zeros(3)
    ember.as_tensor(t)[1] = 4.0
    assert t.tolist() == [0.0, 4.0, 0.0]


@pytest.mark.parametrize("make", [ember.as_tensor, ember.asarray])
@pytest.mark.parametrize("source", [torch.tensor([1 + 2j, 3j]).conj(),
                                    torch.tensor([1.0, 2.0])._neg_view(),
                                    torch.tensor([1.0, 2.0], dtype=torch.bfloat16),
                                    torch.tensor([1.0, 2.0], requires_grad=True)])
def test_what_numpy_cannot_view_still_converts(make, source):
    out = make(source)
    assert out.tolist() == source.detach().tolist() and not out.requires_grad


def test_another_dtype_copies():
    t = torch.zeros(2)
    out = ember.as_tensor(t, dtype=ember.float64)
    t[0] = 1.0
    assert out.dtype == ember.float64 and out.tolist() == [0.0, 0.0]

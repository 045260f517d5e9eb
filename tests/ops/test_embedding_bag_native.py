"""ember.embedding_bag (ATen's signature, four outputs) against torch.embedding_bag."""

import numpy as np
import pytest
import torch

import ember

INDICES = [1, 2, 4, 5, 4, 3, 2, 9]
CASES = [([0, 4], False, None), ([0, 4, 4, 8], True, None), ([0, 0, 4], False, None),
         ([0, 4], False, 4), ([0, 4, 8], True, 2)]


@pytest.mark.parametrize("offsets,include_last_offset,padding_idx", CASES)
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_four_outputs_and_gradients_match_torch(offsets, include_last_offset, padding_idx, mode):
    w = np.random.default_rng(0).standard_normal((10, 3))
    ew, tw = ember.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    args = (include_last_offset, padding_idx)
    got = ember.embedding_bag(ew, ember.tensor(INDICES), ember.tensor(offsets), False, mode,
                              False, None, *args)
    want = torch.embedding_bag(tw, torch.tensor(INDICES), torch.tensor(offsets), False, mode,
                               False, None, *args)
    np.testing.assert_allclose(got[0].detach().numpy(), want[0].detach().numpy())
    assert len(got) == len(want) == 4
    for g, t in zip(got[1:], want[1:]):
        assert g.dtype is ember.int64 and g.tolist() == t.tolist()
    got[0].sum().backward()
    want[0].sum().backward()
    np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy())


def test_per_sample_weights_and_errors():
    w = np.arange(30.0).reshape(10, 3)
    psw = [0.5, 1.0, 2.0, 1.0, 1.0, 0.0, 3.0, 1.0]
    got = ember.embedding_bag(ember.tensor(w), ember.tensor(INDICES), ember.tensor([0, 4]),
                              per_sample_weights=ember.tensor(psw, dtype=ember.float64))
    want = torch.embedding_bag(torch.tensor(w), torch.tensor(INDICES), torch.tensor([0, 4]),
                               per_sample_weights=torch.tensor(psw, dtype=torch.float64))
    assert [t.tolist() for t in got] == [t.tolist() for t in want]
    with pytest.raises(ValueError, match="mode must be 0"):
        ember.embedding_bag(ember.tensor(w), ember.tensor(INDICES), ember.tensor([0]), mode=3)
    with pytest.raises(TypeError, match="1-D indices"):
        ember.embedding_bag(ember.tensor(w), ember.tensor([[1, 2]]), None)


@pytest.mark.parametrize("index_dtype,offset_dtype", [("int32", "int32"), ("int32", "int64"),
                                                      ("int64", "int32")])
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_int32_indices_give_torch_output_dtypes(index_dtype, offset_dtype, mode):
    w = np.arange(30.0).reshape(10, 3)
    got, want = (lib.embedding_bag(lib.tensor(w),
                                   lib.tensor(INDICES, dtype=getattr(lib, index_dtype)),
                                   lib.tensor([0, 4], dtype=getattr(lib, offset_dtype)),
                                   False, mode)
                 for lib in (ember, torch))
    for g, t in zip(got[1:], want[1:]):
        assert g.dtype.name == str(t.dtype).split(".")[1] and g.tolist() == t.tolist()


@pytest.mark.parametrize("bags", [[[0, 1]], [[1, 0]], [[1, 1]], [[2, 1], [1, 0], [0, 3]]])
def test_max_indices_read_nan_as_torch(bags):
    # a NaN first row is the bag's maximum, a later NaN is passed over (NumPy's argmax took
    # the first NaN; sweep60g)
    w = np.array([[1.0, 5.0], [np.nan, 2.0], [3.0, np.nan], [-2.0, 7.0]], np.float32)
    starts = [len(bags[0]) * i for i in range(len(bags))]
    want = torch.embedding_bag(torch.tensor(w), torch.tensor(bags).reshape(-1),
                               torch.tensor(starts), False, 2)
    got = ember.embedding_bag(ember.tensor(w), ember.tensor(bags).reshape(-1),
                              ember.tensor(starts), False, 2)
    for g, t in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), t.numpy())


@pytest.mark.parametrize("kwargs", [{"scale_grad_by_freq": True}, {"sparse": True},
                                    {"scale_grad_by_freq": True, "sparse": True}])
def test_max_mode_refuses_freq_scaling_and_sparse_as_torch(kwargs):
    """torch raises ValueError for mode='max' with scale_grad_by_freq (Ember scaled max's
    gradient by the frequency) or sparse, naming the frequency first when both are set; so
    does Ember, from the module and from F.embedding_bag."""
    what = "frequency" if "scale_grad_by_freq" in kwargs else "sparse"
    for lib in (torch, ember):
        bags = lib.tensor([[1, 1, 2]])
        with pytest.raises(ValueError, match=f"max mode does not support .*{what}"):
            lib.nn.EmbeddingBag(5, 2, mode="max", **kwargs)(bags)
        with pytest.raises(ValueError, match=f"max mode does not support .*{what}"):
            lib.nn.functional.embedding_bag(bags, lib.ones(5, 2), mode="max", **kwargs)


def test_max_mode_ignores_scale_grad_by_freq_as_torch_embedding_bag():
    """torch.embedding_bag (the ATen form) computes max with scale_grad_by_freq and leaves the
    gradient unscaled; Ember raised (and before that scaled max's gradient by the frequency)."""
    w = np.array([[1.0, 5.0], [3.0, 2.0], [0.0, 4.0]])
    grads = []
    for lib in (ember, torch):
        lw = lib.tensor(w, requires_grad=True)
        out = lib.embedding_bag(lw, lib.tensor([0, 1, 1, 2]), lib.tensor([0, 3]), True, 2)
        out[0].sum().backward()
        grads.append(lw.grad.numpy())
    np.testing.assert_array_equal(*grads)

"""ember.Size against torch.Size, and the constants."""

import math
import pickle

import pytest
import torch

import ember


def test_size_behaves_as_torch_size():
    s, ts = ember.Size([2, 3, 4]), torch.Size([2, 3, 4])
    assert repr(s) == repr(ts).replace("torch", "ember")
    assert s.numel() == ts.numel() and ember.Size([]).numel() == torch.Size([]).numel() == 1
    assert type(s[1:]) is ember.Size and s[1:] == (3, 4)
    assert isinstance(s[0], int) and s[-1] == 4
    assert type(s + (5,)) is ember.Size and type((1,) + s) is ember.Size
    assert (1,) + s == tuple((1,) + ts)
    assert type(s * 2) is ember.Size and s * 2 == tuple(ts * 2)
    assert s == (2, 3, 4) and (2, 3, 4) == s and s != (2, 3) and s < (3,)
    assert hash(s) == hash((2, 3, 4)) and s.count(3) == 1 and s.index(4) == 2
    assert ember.Size([ember.tensor(3)]) == (3,)
    assert pickle.loads(pickle.dumps(s)) == s and type(pickle.loads(pickle.dumps(s))) is ember.Size


def test_size_refuses_non_integers():
    with pytest.raises(TypeError, match="item 0 is 'float'"):
        ember.Size([2.5])
    with pytest.raises(TypeError):
        torch.Size([2.5])


def test_shape_and_size_are_sizes():
    x = ember.zeros(2, 3)
    assert type(x.shape) is ember.Size and type(x.size()) is ember.Size
    assert x.size(1) == 3 and x.shape == torch.zeros(2, 3).shape
    assert ember.zeros(x.shape).shape == (2, 3) and x.reshape(x.shape[::-1]).shape == (3, 2)


def test_constants_match_torch():
    assert (ember.e, ember.pi, ember.inf) == (torch.e, torch.pi, torch.inf)
    assert math.isnan(ember.nan) and ember.newaxis is torch.newaxis is None
    assert ember.zeros(3)[ember.newaxis].shape == (1, 3)


def test_broadcast_shapes_gives_a_size_and_takes_ints():
    got = ember.broadcast_shapes(ember.Size([2, 1]), (1, 3))
    assert type(got) is ember.Size and got == torch.broadcast_shapes(torch.Size([2, 1]), (1, 3))
    assert ember.broadcast_shapes(2, (3, 1)) == torch.broadcast_shapes(2, (3, 1))
    assert ember.broadcast_shapes() == torch.broadcast_shapes() == ()


def test_vmap_passes_a_size_argument_through_unbatched():
    x = ember.arange(6.0).reshape(2, 3)
    out = ember.func.vmap(lambda r, s: r.reshape(s) * r.shape[0], in_dims=(0, None))(
        x, ember.Size([3, 1]))
    want = torch.func.vmap(lambda r, s: r.reshape(s) * r.shape[0], in_dims=(0, None))(
        torch.arange(6.0).reshape(2, 3), torch.Size([3, 1]))
    assert out.shape == want.shape and out.tolist() == want.tolist()


def test_checkpoint_keeps_a_size_a_size(tmp_path):
    ember.save({"shape": ember.Size([2, 3]), "plain": (2, 3)}, tmp_path / "c.safetensors")
    back = ember.load(tmp_path / "c.safetensors")
    assert type(back["shape"]) is ember.Size and back["shape"] == (2, 3)
    assert type(back["plain"]) is tuple


def test_distribution_shape_errors_print_shapes_as_tuples():
    with pytest.raises(ValueError, match=r"got \(3, 3\)"):
        ember.distributions.MultivariateNormal(ember.zeros(2), ember.eye(3))
    with pytest.raises(ValueError, match=r"got \(2,\)"):
        ember.distributions.Wishart(df=3.0, covariance_matrix=ember.zeros(2))

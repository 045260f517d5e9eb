"""uint16/uint32/uint64 and the float8 dtypes against torch: creation, casts, comparisons, bit
ops, promotion refusals, printing, finfo/iinfo and safetensors files."""

import numpy as np
import pytest
import safetensors.torch
import torch

import ember

UINTS = ["uint16", "uint32", "uint64"]
FLOAT8S = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
           "float8_e8m0fnu"]


def _pair(name):
    return getattr(ember, name), getattr(torch, name)


@pytest.mark.parametrize("name", UINTS)
def test_wide_unsigned_ints_match_torch(name):
    e, t = _pair(name)
    data = [0, 1, 7, 65535]
    x, tx = ember.tensor(data, dtype=e), torch.tensor(data, dtype=t)
    assert x.dtype is e and x.tolist() == tx.tolist()
    assert repr(x) == repr(tx).replace("torch", "ember")
    assert (x == x).tolist() == (tx == tx).tolist() and (x == 1).tolist() == (tx == 1).tolist()
    assert (x & x).tolist() == (tx & tx).tolist() and (x ^ x).dtype is e
    assert (x * 2).dtype is e and (x + 1.5).dtype is ember.float32
    assert x.float().tolist() == tx.float().tolist() and x.to(ember.int64).dtype is ember.int64
    assert ember.zeros(2, dtype=e).dtype is e and ember.iinfo(e).max == torch.iinfo(t).max
    assert x.type() == tx.type().replace("torch", "ember")
    assert ember.from_numpy(np.array([1, 2], e.np)).dtype is e


@pytest.mark.parametrize("name", FLOAT8S)
def test_float8_casts_printing_and_finfo_match_torch(name):
    e, t = _pair(name)
    data = [1.0, 2.0, 0.3125, 4.0]
    x, tx = ember.tensor(data).to(e), torch.tensor(data).to(t)
    assert x.dtype is e and x.is_floating_point()
    assert x.float().tolist() == tx.float().tolist() and x.tolist() == tx.tolist()
    assert repr(x) == repr(tx).replace("torch", "ember")
    assert (x == x).tolist() == (tx == tx).tolist()
    assert x.to(ember.int32).tolist() == tx.to(torch.int32).tolist()
    assert x.type() == tx.type().replace("torch", "ember")
    fi, tfi = ember.finfo(e), torch.finfo(t)
    for attr in ("bits", "max", "min", "tiny", "resolution"):
        assert getattr(fi, attr) == getattr(tfi, attr), attr
    if name != "float8_e5m2fnuz":  # torch's eps there is 2**-3; the format's is 2**-2
        assert fi.eps == tfi.eps


@pytest.mark.parametrize("a,b", [("uint16", "int32"), ("uint32", "uint8"), ("uint64", "bool"),
                                 ("uint16", "uint32"), ("float8_e4m3fn", "float8_e5m2"),
                                 ("float8_e4m3fn", "float32"), ("float8_e5m2", "int64"),
                                 ("uint16", "float8_e4m3fn"), ("uint16", "complex64")])
def test_promotion_refused_where_torch_refuses(a, b):
    with pytest.raises(RuntimeError):
        torch.promote_types(getattr(torch, a), getattr(torch, b))
    with pytest.raises(ember.DTypeError, match="promotion for .* is not supported"):
        ember.promote_types(getattr(ember, a), getattr(ember, b))


@pytest.mark.parametrize("a,b", [("uint16", "float16"), ("uint64", "bfloat16"),
                                 ("uint32", "float32")])
def test_wide_unsigned_promote_to_floating(a, b):
    want = torch.promote_types(getattr(torch, a), getattr(torch, b))
    got = ember.promote_types(getattr(ember, a), getattr(ember, b))
    assert got.name == str(want).removeprefix("torch.")


def test_safetensors_round_trip_with_the_safetensors_package(tmp_path):
    path = tmp_path / "t.safetensors"
    tensors = {"e4m3": ember.tensor([1.0, -0.5]).to(ember.float8_e4m3fn),
               "e5m2": ember.tensor([3.0]).to(ember.float8_e5m2),
               "u16": ember.tensor([65535], dtype=ember.uint16),
               "u64": ember.tensor([2 ** 63], dtype=ember.uint64)}
    ember.save(tensors, path)
    theirs = safetensors.torch.load_file(path)
    for k, v in tensors.items():
        assert str(theirs[k].dtype).removeprefix("torch.") == v.dtype.name
        assert theirs[k].tolist() == v.tolist()
    safetensors.torch.save_file(theirs, path)
    ours = ember.load(path)
    assert {k: (v.dtype, v.tolist()) for k, v in ours.items()} == \
        {k: (v.dtype, v.tolist()) for k, v in tensors.items()}


_EDGES = [0.0, -0.0, 1.0, -3.0, 0.3, 447.0, 464.0, 1000.0, -1000.0, 57344.0, 1e6, 1e-45,
          float("inf"), -float("inf"), float("nan"), 1.5, 6.0, 2.0 ** 127 * 1.9]


@pytest.mark.parametrize("name", FLOAT8S)
@pytest.mark.parametrize("source", ["float32", "float64", "float16"])
def test_float8_casts_of_out_of_range_values_match_torch(name, source):
    # e4m3fn saturates to ±448 (inf too); e8m0fnu takes |x| and sends 0 to 2**-127
    e, t = _pair(name)
    x = ember.tensor(_EDGES, dtype=getattr(ember, source))
    tx = torch.tensor(_EDGES, dtype=getattr(torch, source))
    np.testing.assert_array_equal(x.to(e).double().numpy(), tx.to(t).double().numpy())
    np.testing.assert_array_equal(ember.tensor(_EDGES, dtype=e).double().numpy(),
                                  torch.tensor(_EDGES, dtype=t).double().numpy())


def test_uint64_data_beyond_int64_keeps_every_digit():
    data = [2 ** 63 + 5, 1, 2 ** 64 - 1]
    x = ember.tensor(data, dtype=ember.uint64)
    assert x.tolist() == torch.tensor(data, dtype=torch.uint64).tolist() == data
    assert x[0].item() == 2 ** 63 + 5


@pytest.mark.parametrize("name", FLOAT8S + ["bfloat16"])
@pytest.mark.parametrize("target", ["uint8", "int8", "int16", "int32", "int64"] + UINTS)
def test_low_precision_floats_cast_to_integers_as_torch(name, target):
    # every finite value of the format; torch converts through float, wrapping what is out of
    # range (-2.5 to uint8 is 254), where a direct ml_dtypes cast gives 0
    e, t = _pair(name)
    if name == "bfloat16":
        tx = torch.arange(-(2 ** 15), 2 ** 15, dtype=torch.int32).to(torch.int16).view(t)
    else:
        tx = torch.arange(256, dtype=torch.uint8).view(t)
    tx = tx[tx.float().isfinite()]
    x = ember.tensor(tx.float().numpy()).to(e)
    assert x.to(getattr(ember, target)).tolist() == tx.to(getattr(torch, target)).tolist()


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])
def test_float8_results_keep_the_graph_and_backpropagate_as_torch(name):
    # PyTorch records float8 ops like any floating ones (mul's gradient is a float8 product);
    # dropping requires_grad silently lost the gradient
    e, t = _pair(name)
    x = ember.tensor([1.0, 2.0, -3.0]).to(e).requires_grad_()
    tx = torch.tensor([1.0, 2.0, -3.0]).to(t).requires_grad_()
    c, tc = ember.tensor([2.0, 0.5, 4.0]).to(e), torch.tensor([2.0, 0.5, 4.0]).to(t)
    y, ty = x * c, tx * tc
    assert y.requires_grad and y[1:].requires_grad
    (y.float() * ember.tensor([1.0, 3.0, 5.0])).sum().backward()
    (ty.float() * torch.tensor([1.0, 3.0, 5.0])).sum().backward()
    assert x.grad.dtype is e and x.grad.tolist() == tx.grad.tolist()

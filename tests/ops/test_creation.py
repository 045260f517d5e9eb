"""Creation ops' argument errors (creation.py), against PyTorch's: negative sizes and ragged
data give Ember errors naming the call, not NumPy's messages. (Their values are checked in
tests/test_tensor.py.)"""

import numpy as np
import pytest
import torch

import ember
from ember.errors import ShapeError


@pytest.mark.parametrize("call, match", [
    (lambda m: m.zeros(-1), r"zeros: sizes must be non-negative, got shape \(-1,\)"),
    (lambda m: m.ones(2, -3), r"ones: sizes must be non-negative, got shape \(2, -3\)"),
    (lambda m: m.empty((-1, 2)), "empty: sizes must be non-negative"),
    (lambda m: m.full((2, -1), 1.0), r"full: sizes must be non-negative, got shape \(2, -1\)"),
    (lambda m: m.rand(-1), "rand: sizes must be non-negative"),
    (lambda m: m.randn(2, -1), "randn: sizes must be non-negative"),
    (lambda m: m.randint(3, (-1,)), "randint: sizes must be non-negative"),
    (lambda m: m.randperm(-1), "randperm: n must be non-negative, got -1"),
    (lambda m: m.eye(-1), "eye: n must be non-negative, got -1"),
    (lambda m: m.eye(2, -3), "eye: m must be non-negative, got -3"),
    (lambda m: m.linspace(0, 1, -1), "linspace: steps must be non-negative, got -1"),
])
def test_negative_sizes_are_shape_errors_like_torch(call, match):
    with pytest.raises(RuntimeError):
        call(torch)
    with pytest.raises(ShapeError, match=match):
        call(ember)


@pytest.mark.parametrize("data, match", [
    ([[1, 2], [3]], "expected a sequence of length 2 at dim 1 \\(got 1\\)"),
    ([[1.0], [2.0, 3.0]], "expected a sequence of length 1 at dim 1 \\(got 2\\)"),
    ([[[1], [2]], [[3], [4, 5]]], "expected a sequence of length 1 at dim 2 \\(got 2\\)"),
    ([[1, 2], []], "expected a sequence of length 2 at dim 1 \\(got 0\\)"),
    ([[1, 2], 3], "expected a sequence of length 2 at dim 1, got a number"),
    ([1, [2]], "expected a number at dim 1, got a sequence"),
])
def test_ragged_data_is_a_shape_error_like_torch(data, match):
    with pytest.raises((ValueError, TypeError)):  # (TypeError where numbers and lists mix)
        torch.tensor(data)
    with pytest.raises(ShapeError, match="tensor: ragged nested sequences: " + match):
        ember.tensor(data)


def test_non_numeric_data_is_still_a_type_error():
    with pytest.raises(TypeError, match="tensor: non-numeric data"):
        ember.tensor([None, 1])


@pytest.mark.parametrize("args, match", [
    ((0, 5, -1), "the range 0 to 5 goes against the sign of step -1"),
    ((5.0, 0.0, 0.5), "goes against the sign"),
    ((0, float("inf")), "must be finite"),
    ((0, 1, float("nan")), "must be finite"),
])
def test_arange_refuses_ranges_torch_refuses(args, match):
    with pytest.raises(RuntimeError):
        torch.arange(*args)
    with pytest.raises(ValueError, match="arange: .*" + match):
        ember.arange(*args)


@pytest.mark.parametrize("size", [2.5, True, (2.0, 3)])
def test_a_float_or_bool_size_is_refused_as_torch(size):
    # (it was truncated: zeros(2.5) gave shape (2,), zeros(True) shape (1,))
    with pytest.raises(TypeError):
        torch.zeros(size)
    with pytest.raises(TypeError, match="zeros: expected a shape of ints"):
        ember.zeros(size)


@pytest.mark.parametrize("data", [2 ** 63, [2 ** 63], [[1], [2 ** 64 - 1]], (2 ** 63, 5)])
def test_python_ints_past_int64_are_refused_as_torch(data):
    # (NumPy reads them as uint64, so ember.tensor(2**63) was a uint64 tensor where torch
    # infers int64 and refuses)
    with pytest.raises((ValueError, RuntimeError)):
        torch.tensor(data)
    with pytest.raises(ember.errors.ValueOverflow, match="int64"):
        ember.tensor(data)


def test_python_ints_past_int64_still_fill_an_explicit_uint64_tensor():
    with pytest.raises(ember.errors.ValueOverflow, match="does not fit int64.*dtype=ember.uint64"):
        ember.tensor([2 ** 63])
    t = ember.tensor([2 ** 64 - 1, 2 ** 63], dtype=ember.uint64)
    assert t.tolist() == torch.tensor([2 ** 64 - 1, 2 ** 63], dtype=torch.uint64).tolist()
    assert ember.tensor(np.array([2 ** 63], dtype=np.uint64)).dtype is ember.uint64
    assert ember.tensor([np.uint64(2 ** 63)]).dtype is ember.uint64  # (NumPy's own uint64s)
    assert ember.tensor(np.uint64(2 ** 63)).dtype is ember.uint64


@pytest.mark.parametrize("call", [
    lambda m, layout: m.tril_indices(3, 3, layout=layout),
    lambda m, layout: m.triu_indices(3, 3, 1, layout=layout),
    lambda m, layout: m.zeros_like(m.ones(2).to_sparse(), layout=layout),
    lambda m, layout: m.ones(2).new_zeros(3, layout=layout),
    lambda m, layout: m.ones(2).new_ones(3, layout=layout),
    lambda m, layout: m.ones(2).new_empty(3, layout=layout),
    lambda m, layout: m.ones(2).new_full((3,), 1.0, layout=layout),
    lambda m, layout: m.ones(2).new_empty_strided((3,), (1,), layout=layout),
], ids=["tril_indices", "triu_indices", "zeros_like_sparse", "new_zeros", "new_ones", "new_empty",
        "new_full", "new_empty_strided"])
def test_layout_argument_is_checked_as_torch(call):
    # (tril/triu_indices took any value; zeros_like of a sparse tensor raised a bare
    # AttributeError for "x"; the new_* methods took no layout=)
    for bad in ("x", 3, "contiguous_format"):
        for lib in (torch, ember):
            value = getattr(lib, bad) if bad == "contiguous_format" else bad
            with pytest.raises(TypeError, match="argument 'layout' must be"):
                call(lib, value)
    mine, ref = (call(lib, lib.strided) for lib in (ember, torch))
    assert mine.layout is ember.strided and tuple(mine.shape) == tuple(ref.shape)
    if not any(n.startswith("new_empty") for n in call.__code__.co_names):
        assert mine.tolist() == ref.tolist()


def test_tensor_reads_one_element_tensors_in_a_sequence_as_numbers():
    # torch.tensor([t([1.]), t([2.])]) is of shape (2,): a tensor in a list reads as a number
    # (Ember stacked them, shape (2, 1))
    def cases(lib):
        one, two = lib.tensor([1.0]), lib.tensor([[2.0]])
        return [lib.tensor([one, two]), lib.tensor([[one], [two]]), lib.tensor((one, 3.0)),
                lib.tensor([lib.tensor([4], dtype=lib.int32), one]),
                lib.tensor([lib.tensor([5.0], dtype=lib.float64)])]
    for got, want in zip(cases(ember), cases(torch), strict=True):
        assert tuple(got.shape) == tuple(want.shape) and str(got.dtype)[6:] == str(want.dtype)[6:]
        assert got.tolist() == want.tolist()
    # larger tensors still stack (PyTorch refuses them)
    assert ember.tensor([ember.ones(2), ember.zeros(2)]).shape == (2, 2)


@pytest.mark.parametrize("make", ["zeros", "ones", "empty", "rand", "randn"])
def test_size_keyword_must_be_a_sequence_as_torch(make):
    # torch's parser refuses zeros(size=3) and zeros(size=tensor): Ember read them as (3,)
    for lib in (ember, torch):
        for bad in (3, 2.0, lib.tensor([2, 3])):
            with pytest.raises(TypeError, match="argument 'size' must be tuple of ints"):
                getattr(lib, make)(size=bad)
        with pytest.raises(TypeError, match="argument 'size' must be tuple of ints"):
            lib.ones(1).new_zeros(size=3)
        assert tuple(getattr(lib, make)(size=[2]).shape) == (2,)
        assert tuple(getattr(lib, make)(size=lib.Size([1, 2])).shape) == (1, 2)


def test_tensor_reads_one_element_tensors_anywhere_in_a_sequence_without_an_op_call():
    # a one-element tensor after a number ([1, t([2.5])]) was refused as ragged; torch reads it
    # as a number wherever it is
    def cases(lib):
        return [lib.tensor([1, lib.tensor([2.5])]), lib.tensor([1, lib.tensor([2])]),
                lib.tensor([[1.0, 2.0], [lib.tensor([3.0]), lib.tensor(4.0)]]),
                lib.tensor([np.float32(1.0), lib.tensor([2.0])]),
                lib.tensor([[3.0], [lib.tensor([1.0])]]),
                lib.tensor([[lib.tensor([1.0])], [2.0, lib.tensor([[3.0]])][1:]])]
    for got, want in zip(cases(ember), cases(torch), strict=True):
        assert tuple(got.shape) == tuple(want.shape) and str(got.dtype)[6:] == str(want.dtype)[6:]
        assert got.tolist() == want.tolist()
    with pytest.raises(ShapeError, match="ragged"):
        ember.tensor([[1.0, 2.0], [ember.tensor([3.0])]])
    # each tensor's value is read as NumPy reads it: no reshape op per element (it was 10x
    # slower, and recorded autograd for tensors that require grad)
    data = [ember.tensor([1.0], requires_grad=True), ember.tensor([2.0])]
    with ember.profiler.profile() as prof:
        got = ember.tensor(data)
    assert [e.name for e in prof.events()] == [] and not got.requires_grad


@pytest.mark.parametrize("call", [
    lambda m, s: m.full(size=s, fill_value=1.0), lambda m, s: m.full(s, 1.0),
    lambda m, s: m.ones(1).new_full(size=s, fill_value=1.0), lambda m, s: m.ones(1).new_full(s, 1),
    lambda m, s: m.randint(5, size=s), lambda m, s: m.randint(1, 5, s),
    lambda m, s: m.empty_strided(size=s, stride=(1,)), lambda m, s: m.empty_permuted(s, (0,)),
    lambda m, s: m.normal(0.0, 1.0, size=s), lambda m, s: m.normal(0.0, 1.0, s)],
    ids=["full(size=)", "full", "new_full(size=)", "new_full", "randint(size=)", "randint",
         "empty_strided", "empty_permuted", "normal(size=)", "normal"])
def test_every_size_argument_must_be_a_sequence_as_torch(call):
    # a number, a tensor or a range as the one size argument: torch refuses; Ember read them
    for lib in (ember, torch):
        for bad in (3, lib.tensor([3]), range(3, 4)):
            with pytest.raises(TypeError, match="must be tuple of ints|invalid combination"):
                call(lib, bad)
        assert tuple(call(lib, [3]).shape) == (3,) == tuple(call(lib, lib.Size([3])).shape)


@pytest.mark.parametrize("call", [lambda m: m.zeros(size=None), lambda m: m.ones(size=None),
                                  lambda m: m.empty(size=None), lambda m: m.rand(size=None),
                                  lambda m: m.randn(size=None),
                                  lambda m: m.ones(1).new_zeros(size=None),
                                  lambda m: m.ones(1).new_empty(size=None),
                                  lambda m: m.eye(2).to_sparse().new_zeros(size=None)])
def test_size_none_is_refused_as_torch(call):
    # Ember read size=None as no size given: a 0-d tensor
    for lib in (ember, torch):
        with pytest.raises(TypeError, match="argument 'size' must be tuple of ints, not NoneType"):
            call(lib)

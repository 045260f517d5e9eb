"""tensor() data inference and reading against torch (sweep65h): bfloat16 tensors in lists,
int64 data read with floats, torch tensors and buffers as data; new_* take pin_memory."""

import array
import warnings

import numpy as np
import pytest
import torch

import ember


def _same(e, t):
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert e.tolist() == t.tolist()


@pytest.mark.parametrize("make", [
    lambda m: [m.tensor(1., dtype=m.bfloat16), 2],
    lambda m: [m.tensor(1., dtype=m.bfloat16), m.tensor(1., dtype=m.bfloat16)],
    lambda m: [m.tensor(1., dtype=m.bfloat16), 2.5],
    lambda m: [m.tensor(1., dtype=m.bfloat16), m.tensor(3, dtype=m.int8)],
    lambda m: [m.tensor(1., dtype=m.bfloat16), True],
    lambda m: [m.tensor(1.5, dtype=m.bfloat16), 1j],
    lambda m: [[m.tensor(1., dtype=m.bfloat16)], [m.tensor(2., dtype=m.float16)]],
    lambda m: [m.tensor([1.], dtype=m.bfloat16), m.tensor([2.], dtype=m.float16)],
])
def test_bfloat16_tensors_in_a_list_promote_as_torch(make):
    # (NumPy has no common dtype for bfloat16 and others: these were "non-numeric data")
    _same(ember.tensor(make(ember)), torch.tensor(make(torch)))


def test_ragged_data_with_bfloat16_still_names_where():
    with pytest.raises(ember.errors.ShapeError, match="ragged"):
        ember.tensor([[ember.tensor(1., dtype=ember.bfloat16)], [1., 2.]])


@pytest.mark.parametrize("data", [
    [2**62 + 1, 1.0], [[2**62 + 1], [-1.7]], [-2**62 - 1, 1.0], (2**62 + 1, True, 2.0)])
def test_int64_data_with_floats_keeps_every_digit(data):
    # (NumPy reads the list as float64: 2**62 + 1 was stored as 2**62)
    _same(ember.tensor(data, dtype=ember.int64), torch.tensor(data, dtype=torch.int64))


def test_int64_with_a_tensor_and_a_float_keeps_every_digit():
    e = ember.tensor([ember.tensor(2**62 + 1), 1.5], dtype=ember.int64)
    _same(e, torch.tensor([torch.tensor(2**62 + 1), 1.5], dtype=torch.int64))


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128, torch.int8, torch.float16,
                                   torch.bfloat16, torch.bool])
@pytest.mark.parametrize("build", ["tensor", "as_tensor", "asarray"])
def test_a_torch_tensor_keeps_its_dtype(dtype, build):
    # (float64 was read as the default float32; bfloat16 failed in NumPy)
    t = torch.tensor([1.5, 0.0]).to(dtype)
    _same(getattr(ember, build)(t), t)


def test_a_torch_tensor_requiring_grad_is_copied_detached():
    t = torch.tensor([1.5, 2.0], dtype=torch.float64, requires_grad=True)
    e = ember.tensor(t)
    assert e.dtype is ember.float64 and not e.requires_grad and e.tolist() == [1.5, 2.0]
    e.add_(1)
    assert t.tolist() == [1.5, 2.0]


@pytest.mark.parametrize("make", [
    lambda: bytearray(b"ab"), lambda: memoryview(b"ab"), lambda: array.array("h", [1, 2]),
    lambda: array.array("B", [1, 2]), lambda: array.array("f", [1.5]),
    lambda: array.array("d", [1.5]), lambda: memoryview(np.array([True])),
])
@pytest.mark.parametrize("build", ["tensor", "as_tensor"])
def test_a_buffer_reads_as_python_numbers(make, build):
    # (torch reads a buffer as a sequence: its ints are int64, its floats the default dtype)
    _same(getattr(ember, build)(make()), getattr(torch, build)(make()))


def test_a_buffer_of_ints_past_int64_is_refused():
    with pytest.raises(ValueError):
        torch.tensor(array.array("Q", [2**63]))
    with pytest.raises(ember.errors.ValueOverflow):
        ember.tensor(array.array("Q", [2**63]))


@pytest.mark.parametrize("name, args", [
    ("new_zeros", ((2,),)), ("new_ones", ((2,),)), ("new_empty", ((2,),)),
    ("new_full", ((2,), 1.5)), ("new_empty_strided", ((2,), (1,)))])
def test_new_constructors_take_pin_memory(name, args):
    e = getattr(ember.zeros(1, dtype=ember.float64), name)(*args, pin_memory=False)
    t = getattr(torch.zeros(1, dtype=torch.float64), name)(*args, pin_memory=False)
    assert e.dtype is ember.float64 and tuple(e.shape) == tuple(t.shape)


def test_new_tensor_takes_no_pin_memory_as_torch():
    with pytest.raises(TypeError):
        torch.zeros(1).new_tensor([1.], pin_memory=False)
    with pytest.raises(TypeError):
        ember.zeros(1).new_tensor([1.], pin_memory=False)


@pytest.mark.parametrize("make", [
    lambda m: np.broadcast_to(np.arange(3.), (2, 3)),
    lambda m: np.broadcast_to(np.arange(3.)[:, None, None], (3, 2, 4)),
    lambda m: np.broadcast_to(np.arange(6.).reshape(2, 3).T[:, None], (3, 4, 2)),
    lambda m: np.zeros((2, 3)).T,
    lambda m: np.zeros((4, 6))[::2, ::3],
    lambda m: m.arange(6.).reshape(2, 3).T,
    lambda m: m.arange(3.).expand(2, 3),
    lambda m: m.arange(6.).reshape(2, 3).T[:, None].expand(3, 4, 2),
    lambda m: m.arange(24.).reshape(2, 3, 4)[:, ::2, 1:3],
])
def test_copied_data_keeps_torchs_layout(make):
    # (NumPy's "K" copy laid a broadcast row out (1, 2)-strided, so view(6) failed; a tensor
    # was copied C-ordered where torch keeps a transpose's strides)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.tensor(make(torch))
    e = ember.tensor(make(ember))
    assert e.stride() == t.stride()
    assert e.tolist() == t.tolist()


def test_a_copied_broadcast_array_views_flat():
    e = ember.tensor(np.broadcast_to(np.arange(3.), (2, 3)))
    assert e.view(6).tolist() == [0., 1., 2., 0., 1., 2.]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int16])
def test_asarray_shares_a_torch_tensors_memory_as_torch_asarray(dtype):
    t = torch.zeros(3, dtype=dtype)
    e, ref = ember.asarray(t), torch.asarray(t)
    t[0] = 5
    assert e.tolist() == ref.tolist() == [5, 0, 0]
    assert str(e.dtype).split(".")[-1] == str(dtype).split(".")[-1]


def test_asarray_of_a_torch_tensor_copies_when_asked_or_converted():
    t = torch.zeros(3)
    copied, converted = ember.asarray(t, copy=True), ember.asarray(t, dtype=ember.float64)
    t[0] = 5
    assert copied.tolist() == converted.tolist() == [0, 0, 0]
    assert converted.dtype is ember.float64


def test_asarray_of_a_torch_tensor_requiring_grad_copies_it_detached():
    t = torch.zeros(3, requires_grad=True)
    e = ember.asarray(t)
    assert not e.requires_grad and e.tolist() == [0, 0, 0]


@pytest.mark.parametrize("size", [[2, 3], [], [0, 4]])
def test_legacy_new_reads_a_size_as_sizes(size):
    # (an ember.Size is a tuple: x.new(Size([2, 3])) made the data [2, 3], of shape (2,))
    e = ember.zeros(1, dtype=ember.int8).new(ember.Size(size))
    t = torch.zeros(1, dtype=torch.int8).new(torch.Size(size))
    assert tuple(e.shape) == tuple(t.shape) and e.dtype is ember.int8


@pytest.mark.parametrize("convert", [lambda m, x: x.bool(), lambda m, x: x.to(m.bool),
                                     lambda m, x: x.type(m.bool)])
def test_complex_to_bool_does_not_warn_as_torch(convert):
    # (bool reads both parts: nothing is discarded; ember warned as for float)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = convert(ember, ember.tensor([1j, 0j, 2 + 0j]))
        t = convert(torch, torch.tensor([1j, 0j, 2 + 0j]))
    assert e.tolist() == t.tolist() == [True, False, True]


def test_complex_to_float_still_warns():
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        ember.tensor([1 + 2j]).float()


def test_ml_dtypes_bfloat16_scalars_in_a_list_promote():
    # (as bfloat16 0-d tensors do in torch: [bf16, int] is bfloat16, [bf16, f16] float32)
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert ember.tensor([ml_dtypes.bfloat16(1.5), 2]).dtype is ember.bfloat16
    assert ember.tensor([ml_dtypes.bfloat16(1.5), np.float16(2)]).dtype is ember.float32
    with pytest.raises(TypeError):
        ember.tensor([ml_dtypes.bfloat16(1.5), "a"])


def test_tensor_of_a_meta_tensor_stays_meta_as_torch():
    # (it raised NoDataError reading the data; torch copies the meta tensor's layout)
    x = ember.zeros(2, 3, device="meta").t()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.tensor(torch.zeros(2, 3, device="meta").t(), dtype=torch.int8)
    out = ember.tensor(x, dtype=ember.int8)
    assert out.device.type == "meta" and out.dtype is ember.int8
    assert out.stride() == ref.stride() and tuple(out.shape) == tuple(ref.shape)
    assert ember.tensor(x, requires_grad=True).requires_grad
    with pytest.raises(ember.errors.NoDataError):
        ember.tensor(x, device="cpu")


def _lazy(kind):
    z = torch.tensor([1 + 2j, 3 + 4j])
    return {"imag of conj": z.conj().imag, "neg view": torch._neg_view(torch.tensor([1., 2.])),
            "conj": z.conj(), "conj of transpose": torch.tensor([[1 + 1j, 2j], [3, 4]]).t().conj(),
            "neg requiring grad": torch._neg_view(torch.tensor([1., 2.], requires_grad=True))}[kind]


@pytest.mark.parametrize("kind", ["imag of conj", "neg view", "conj", "conj of transpose",
                                  "neg requiring grad"])
@pytest.mark.parametrize("build", ["tensor", "as_tensor", "asarray"])
def test_a_torch_tensor_with_a_negative_or_conjugate_bit_reads_its_values(kind, build):
    # (DLPack dropped the negative bit: z.conj().imag read as [2, 4], torch's is [-2, -4]; a
    # conjugate bit failed with OpError)
    t = _lazy(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = getattr(torch, build)(t).resolve_conj().resolve_neg()
    _same(getattr(ember, build)(t), ref.detach())


@pytest.mark.parametrize("kind", ["imag of conj", "conj"])
def test_asarray_copies_a_torch_tensor_with_a_lazy_bit_so_refuses_copy_false(kind):
    # (torch shares it, keeping the bit; Ember has no such bits, so copies the values)
    t = _lazy(kind)
    assert ember.asarray(t).tolist() == t.resolve_conj().resolve_neg().tolist()
    with pytest.raises(ember.errors.ArgumentError, match="negative or conjugate bit"):
        ember.asarray(t, copy=False)


def test_torch_tensors_with_lazy_bits_in_a_list_read_their_values():
    neg, z = torch._neg_view(torch.tensor(1.)), torch.tensor(1 + 2j)
    for data in ([neg, 2.], [2, neg], [z.conj(), 2]):
        _same(ember.tensor(data), torch.tensor(data))


@pytest.mark.parametrize("data", [[2**63 - 1, 1.0], [-2**63, 1.0], [[2**63 - 1, 1.0], [3, 4.5]]])
def test_int64_data_at_the_ends_of_int64_with_floats_fits_as_torch(data):
    # (the range was checked on NumPy's float64 reading: 2**63 - 1 is 2.0**63 there)
    _same(ember.tensor(data, dtype=ember.int64), torch.tensor(data, dtype=torch.int64))


def test_int64_data_past_int64_with_floats_is_still_refused():
    with pytest.raises(ember.errors.ValueOverflow):
        ember.tensor([2**64, 1.0], dtype=ember.int64)


@pytest.mark.parametrize("make", [
    lambda: [torch.tensor(1.5, dtype=torch.bfloat16), 2],
    lambda: [[torch.tensor(1.5, dtype=torch.bfloat16)], [3]],
    lambda: [torch.tensor(1., dtype=torch.float64), 1],
    lambda: [1, torch.tensor(1., dtype=torch.float64)],
    lambda: [torch.tensor(1, dtype=torch.int32), torch.tensor(2, dtype=torch.int32)],
    lambda: [torch.tensor(1, dtype=torch.int16), 2.5],
])
def test_a_list_of_torch_0d_tensors_promotes_as_torch(make):
    # (bfloat16 raised 'unsupported ScalarType BFloat16'; a float64 one read as float32)
    _same(ember.tensor(make()), torch.tensor(make()))


@pytest.mark.parametrize("make", [
    lambda: torch.arange(3.).expand(2, 3),
    lambda: torch.arange(4.).reshape(1, 4, 1).expand(2, 4, 3),
    lambda: torch.arange(24.).reshape(2, 3, 4).permute(2, 0, 1),
    lambda: torch.arange(3., dtype=torch.bfloat16).expand(2, 3),
    lambda: torch.arange(3., requires_grad=True).expand(2, 3),
])
def test_a_copied_torch_tensor_keeps_torchs_layout(make):
    # (an expanded row was copied (1, 2)-strided by NumPy's "K" order; torch's is (3, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.tensor(make())
    out = ember.tensor(make())
    assert out.stride() == ref.stride()
    _same(out, ref.detach())


@pytest.mark.parametrize("make", [
    lambda: [torch.tensor([1.]), torch.tensor([2.])],
    lambda: [[torch.tensor([[1]])], [torch.tensor([2])]],
    lambda: [torch.tensor([1.], dtype=torch.bfloat16), torch.tensor([2.])],
    lambda: [torch._neg_view(torch.tensor([1.])), 2.],
    lambda: [torch.tensor(1.), torch.tensor(2.)],
])
def test_one_element_torch_tensors_in_a_list_read_as_numbers(make):
    # (NumPy stacked them: [t([1.]), t([2.])] was of shape (2, 1), torch's (2,))
    out, ref = ember.tensor(make()), torch.tensor(make())
    assert tuple(out.shape) == tuple(ref.shape)
    _same(out, ref)

"""``pad`` with negative amounts (crops) in every mode, against PyTorch and finite
differences (the positive cases are rows of test_indexing.py's table)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812 - the usual spelling

import ember
from ember.errors import ArgumentError, ArgumentTypeError, ShapeError
from tests.ops.optable import S, arg, op_tests
from tests.ops.test_indexing import pad_case

CASES = [
    # circular wraps around what is left once the negative side has cropped
    pad_case("pad_circular_crop_left", (-1, 2), "circular", [S(arg(2, 5))]),
    pad_case("pad_circular_crop_right", (2, -1), "circular", [S(arg(2, 5))]),
    pad_case("pad_circular_crop_to_one", (-4, 1), "circular", [S(arg(1, 5))]),
    pad_case("pad_circular_crop_2d", (1, -2, -1, 2), "circular", [S(arg(1, 4, 5))]),
    pad_case("pad_circular_crop_both", (-1, -2), "circular", [S(arg(1, 5))]),
    # reflect and replicate read the uncropped input, as PyTorch's do
    pad_case("pad_reflect_crop", (-1, 2, 2, -1), "reflect", [S(arg(1, 4, 5))]),
    pad_case("pad_reflect_crop_past_size", (-6, 2), "reflect", [S(arg(1, 5))]),
    pad_case("pad_replicate_crop", (-2, 3, 1, -2), "replicate", [S(arg(1, 4, 5))]),
    pad_case("pad_constant_crop_all", (-5, 1), "constant", [S(arg(2, 5))], 0.5),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


@pytest.mark.parametrize("mode, pad", [("constant", (-6, 2)), ("constant", (2, -6)),
                                       ("circular", (-6, 2)), ("circular", (-7, 3))])
def test_cropping_more_than_the_size_is_an_error(mode, pad):
    # (torch's constant mode fails in narrow(); its circular mode returns uninitialised memory)
    if mode == "constant":
        with pytest.raises(RuntimeError, match="narrow"):
            F.pad(torch.arange(5.0).reshape(1, 5), pad)
    with pytest.raises(ShapeError, match=rf"pad: negative padding \({pad[0]}, {pad[1]}\) crops "
                                         r"\d elements from dimension 1 of size 5"):
        ember.pad(ember.arange(5.0).reshape(1, 5), pad, mode=mode)


@pytest.mark.parametrize("pad", [(-3, 3), (4, -2), (-5, 1), (1, -5)])
def test_circular_padding_wider_than_the_cropped_size_is_an_error(pad):
    # (torch fails on overlapping copies, or returns uninitialised memory)
    with pytest.raises(ShapeError, match=r"circular padding .* wraps around dimension 1 of "
                                         r"size 5 \(\d once cropped\) more than once"):
        ember.pad(ember.arange(5.0).reshape(1, 5), pad, mode="circular")


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_negative_output_size_is_an_error(mode):
    with pytest.raises(RuntimeError):
        F.pad(torch.arange(5.0).reshape(1, 5), (-3, -3), mode=mode)
    with pytest.raises(ShapeError, match="plus padding -3 and -3, gives a negative output size"):
        ember.pad(ember.arange(5.0).reshape(1, 5), (-3, -3), mode=mode)


def test_a_constant_pad_value_that_is_not_a_number_is_a_clear_error():
    with pytest.raises(TypeError):
        torch.nn.functional.pad(torch.zeros(1, 1, 1), (1, 1, 1, 1), value=(1, 2))
    with pytest.raises(TypeError, match="pad: value must be a number, got tuple"):
        ember.pad(ember.zeros(1, 1, 1), (1, 1, 1, 1), value=(1, 2))


def test_a_complex_constant_fills_a_complex_input_as_constant_pad_nd():
    t = torch.constant_pad_nd(torch.ones(1, 3, dtype=torch.complex64), (1, 2), 1 + 2j)
    e = ember.constant_pad_nd(ember.ones(1, 3, dtype=ember.complex64), (1, 2), 1 + 2j)
    assert e.dtype == ember.complex64
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    x = torch.ones(1, 3, dtype=torch.complex128, requires_grad=True)
    torch.autograd.gradcheck(lambda x: torch.constant_pad_nd(x, (1, -1), 2j), (x,))
    xe = ember.ones(1, 3, dtype=ember.complex128, requires_grad=True)
    assert ember.autograd.gradcheck(lambda x: ember.constant_pad_nd(x, (1, -1), 2j), (xe,))


def test_a_complex_constant_for_a_real_input_needs_a_zero_imaginary_part():
    # torch keeps the real part of (1+0j) and refuses (1+2j), whose imaginary part would be lost
    t = torch.constant_pad_nd(torch.ones(2, dtype=torch.int64), (1, 1), 3 + 0j)
    e = ember.constant_pad_nd(ember.ones(2, dtype=ember.int64), (1, 1), 3 + 0j)
    assert e.dtype == ember.int64
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    with pytest.raises(RuntimeError):
        torch.constant_pad_nd(torch.ones(2), (1, 1), 1 + 2j)
    with pytest.raises(ArgumentError, match=r"pad: .*\(1\+2j\).* float32 input"):
        ember.constant_pad_nd(ember.ones(2), (1, 1), 1 + 2j)


_LAYOUTS = {
    "c": lambda m: m.arange(120.0, dtype=m.float64).reshape(2, 3, 4, 5),
    "channels_last": lambda m: m.arange(120.0, dtype=m.float64).reshape(2, 3, 4, 5)
    .contiguous(memory_format=m.channels_last),
    "transposed": lambda m: m.arange(120.0, dtype=m.float64).reshape(2, 3, 5, 4).transpose(2, 3),
    "expanded": lambda m: m.arange(15.0, dtype=m.float64).reshape(1, 3, 1, 5).expand(2, 3, 4, 5),
    "channels_last_3d": lambda m: m.arange(240.0, dtype=m.float64).reshape(2, 3, 2, 4, 5)
    .contiguous(memory_format=m.channels_last_3d),
}


@pytest.mark.parametrize("layout", list(_LAYOUTS))
@pytest.mark.parametrize("mode, pad", [("constant", (1, 2, 2, 1)), ("constant", (-1, 1)),
                                       ("reflect", (1, 2, 2, 1)), ("replicate", (2, 1, 1, 2)),
                                       ("circular", (1, 2, 2, 1))])
def test_padded_results_are_laid_out_as_torch(layout, mode, pad):
    # PyTorch: channels-last in, channels-last out (circular: C); else C order. Ember's
    # non-constant modes gave a gather's layout (strides (4, 1, 72, 8)) that view() refused
    if layout == "channels_last_3d" and mode != "constant":  # (torch: 3 pairs for 5-d)
        pad = (*pad, 1, 1)
    x, t = _LAYOUTS[layout](ember).requires_grad_(), _LAYOUTS[layout](torch).requires_grad_()
    mine, ref = ember.pad(x, pad, mode=mode), F.pad(t, pad, mode=mode)
    assert mine.stride() == ref.stride()
    torch.testing.assert_close(torch.from_numpy(mine.detach().numpy()), ref.detach())
    (mine * mine).sum().backward()
    (ref * ref).sum().backward()
    assert x.grad.stride() == t.grad.stride()
    torch.testing.assert_close(torch.from_numpy(x.grad.numpy()), t.grad)


@pytest.mark.parametrize("call", [
    lambda: ember.pad([1.0, 2.0], (1, 1)),
    lambda: ember.nn.ReflectionPad1d(1)([[1.0, 2.0, 3.0]]),
    lambda: ember.nn.ReplicationPad1d(1)(np.ones((2, 3), np.float32)),
])
def test_a_non_tensor_input_is_refused_naming_pad(call):
    with pytest.raises(ArgumentTypeError, match="pad: input must be a Tensor, got"):
        call()


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape, pad", [
    ((3,), (1, 1)), ((2, 3), (1, 1, 1, 1)), ((1, 2, 3), (1, 1, 1, 1, 1, 1)),
    ((2, 1, 3, 2), (1, 0)), ((1, 1, 2, 2, 2), (1, 1, 1, 1)),
    ((1, 1, 2, 2, 2), (1,) * 8), ((1, 1, 1, 2, 2, 2), (1,) * 6)])
def test_non_constant_modes_pad_the_ranks_torch_does(mode, shape, pad):
    with pytest.raises(NotImplementedError):
        F.pad(torch.zeros(shape), pad, mode=mode)
    with pytest.raises(ShapeError, match=r"not supported for a \d-D input.*2, 4 or 6"):
        ember.nn.functional.pad(ember.zeros(shape), pad, mode=mode)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("shape, pad", [
    ((2, 0, 3), (1, 1)), ((3, 0), (0, 0)), ((0, 3), (1, 1)), ((1, 0, 3, 3), (1, 1, 1, 1)),
    ((0, 3, 3), (1, 1, 1, 1)), ((2, 3, 0), (1, 1)),  # empty dimensions other than a batch
    ((1, 2, 3), (-3, 0)), ((2, 3), (1, -4)), ((1, 1, 3, 3), (-3, 0, -3, 0)),  # no output
    ((1, 1, 2, 3, 3), (0, -3, -3, 0, -2, 0))])
def test_reflect_and_replicate_refuse_what_torch_refuses(mode, shape, pad):
    with pytest.raises(RuntimeError):
        F.pad(torch.zeros(shape), pad, mode=mode)
    with pytest.raises(ShapeError, match="non-empty dimensions|too small"):
        ember.nn.functional.pad(ember.zeros(shape), pad, mode=mode)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape, pad", [
    ((0, 2, 3), (1, 1)), ((0, 1, 3, 3), (1, 1, 1, 1)), ((1, 1, 3, 3), (-3, 0, 0, 0)),
    ((1, 1, 2, 3, 3), (0, 0, 0, 0, -2, 0)), ((2, 3), (2, 2)), ((1, 2, 3), (0, 1, -1, 1)),
    ((2, 1, 2, 3, 3), (1, 2, 0, 1, 1, 1))])
def test_what_torch_takes_still_matches(mode, shape, pad):
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    want = F.pad(torch.tensor(x), pad, mode=mode).numpy()
    np.testing.assert_array_equal(ember.nn.functional.pad(ember.tensor(x), pad, mode=mode).numpy(),
                                  want)



def _outcome(call):
    try:
        return call().tolist()
    except (RuntimeError, ValueError, OverflowError):
        return "refused"


@pytest.mark.parametrize("value", [-1, -255, -256, 256])
def test_a_negative_int_fill_for_unsigned_is_refused_by_pad_and_wrapped_by_constant_pad_nd(value):
    # torch's F.pad checks the fill's range; constant_pad_nd wraps -1 to 255 as full does
    assert _outcome(lambda: F.pad(torch.zeros(1, dtype=torch.uint8), (1, 0), value=value)) \
        == "refused"
    with pytest.raises(OverflowError, match="pad: .*uint8"):
        ember.nn.functional.pad(ember.zeros(1, dtype=ember.uint8), (1, 0), value=value)
    t = _outcome(lambda: torch.constant_pad_nd(torch.zeros(1, dtype=torch.uint8), (1, 0), value))
    e = _outcome(lambda: ember.constant_pad_nd(ember.zeros(1, dtype=ember.uint8), (1, 0), value))
    assert e == t


def test_a_fill_value_nothing_is_filled_with_is_not_range_checked_as_torch():
    for amounts in ((0, 0), (-1, 0)):
        t = F.pad(torch.ones(2, dtype=torch.uint8), amounts, value=-1)
        e = ember.nn.functional.pad(ember.ones(2, dtype=ember.uint8), amounts, value=-1)
        assert e.tolist() == t.tolist()


@pytest.mark.parametrize("dtype", ["float32", "bool", "float16", "bfloat16", "int64"])
def test_a_fill_beyond_64_bits_is_read_as_a_double_as_torchs_pad(dtype):
    t = _outcome(lambda: F.pad(torch.ones(2, dtype=getattr(torch, dtype)), (1, 0), value=2**70))
    e = _outcome(lambda: ember.nn.functional.pad(ember.ones(2, dtype=getattr(ember, dtype)),
                                                 (1, 0), value=2**70))
    assert e == t

"""A value of the wrong kind where an op takes a Python bool, int, float or number (a tensor of
several elements for a flag, a string or a float for a size, a string for a fill value) raises
PyTorch's TypeError naming the op the user called and the argument, not the message of the
conversion (``bool() of a tensor with 2 elements is ambiguous``) without the op."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import ArgumentTypeError


def _both(call):
    """Torch's and Ember's errors of ``call(module, F)``."""
    errors = []
    for m in (torch, ember):
        with pytest.raises(Exception) as caught:
            call(m, m.nn.functional)
        errors.append(caught.value)
    return errors


@pytest.mark.parametrize("call, match", [
    (lambda m, F: m.ones(3, 4).sum(0, keepdim=m.tensor([1, 2])),
     r"^sum\(\): argument 'keepdim' must be bool, not a Tensor of shape \(2,\) int64"),
    (lambda m, F: m.logsumexp(m.ones(3, 4), 0, m.tensor([1, 2])),
     r"^logsumexp\(\): argument 'keepdim' must be bool, not a Tensor of shape \(2,\)"),
    # a tensor made of the argument (p < 0) is found by the argument's annotation
    (lambda m, F: F.dropout(m.ones(3, 4), m.tensor([0.1, 0.2])),
     r"^dropout\(\): argument 'p' must be float, not a Tensor of shape \(2,\) float32"),
])
def test_a_tensor_for_a_python_flag_names_the_op_and_the_argument(call, match):
    torch_error, error = _both(call)
    assert isinstance(error, ArgumentTypeError) and isinstance(error, type(torch_error))
    assert isinstance(error, TypeError) and isinstance(error, RuntimeError)
    assert error.args[0].endswith("Hint: pass a Python " + match.split("must be ")[1].split(
        ",")[0] + "; a one-element tensor's value is t.item()")
    with pytest.raises(ArgumentTypeError, match=match):
        call(ember, ember.nn.functional)


def test_outside_an_op_the_conversion_keeps_its_own_error():
    with pytest.raises(RuntimeError, match=r"^bool\(\) of a tensor with 2 elements is ambiguous"):
        bool(ember.ones(2))
    with pytest.raises(ValueError, match=r"^item\(\): a tensor with 2 elements"):
        ember.ones(2).item()
    with pytest.raises(TypeError, match="^only integer tensors of a single element"):
        [1, 2][ember.ones(2, dtype=ember.int64)]


def test_a_one_element_tensor_flag_still_passes():
    x = ember.arange(6.0).reshape(2, 3)
    assert x.sum(0, keepdim=ember.tensor(True)).shape == (1, 3)
    assert x.softmax(ember.tensor(1)).shape == (2, 3)


@pytest.mark.parametrize("call, match", [
    (lambda m, F: F.max_pool1d(m.ones(1, 2, 8), 2.5), "max_pool1d: kernel_size must be an int"),
    (lambda m, F: F.max_pool1d(m.ones(1, 2, 8), (2.0,)), "max_pool1d: kernel_size must be an int"),
    (lambda m, F: F.avg_pool1d(m.ones(1, 2, 8), "a"), "avg_pool1d: kernel_size must be an int"),
    (lambda m, F: F.adaptive_avg_pool1d(m.ones(1, 2, 8), 2.5),
     "adaptive_avg_pool1d: output_size must be an int"),
    (lambda m, F: F.conv2d(m.ones(1, 1, 4, 4), m.ones(1, 1, 2, 2), stride=1.5),
     "conv2d: stride must be an int"),
    (lambda m, F: m.ones(5).split_with_sizes([2.0, 3]),
     "split_with_sizes: split_sizes must be an int"),
    (lambda m, F: m.ones(4, 4).hsplit(2.5), "hsplit: indices_or_sections must be an int"),
    (lambda m, F: F.layer_norm(m.ones(3, 4), 2.5), "layer_norm: normalized_shape must be an int"),
    (lambda m, F: F.layer_norm(m.ones(3, 4), "a"), "layer_norm: normalized_shape must be an int"),
])
def test_a_float_or_string_size_is_a_type_error_naming_the_op(call, match):
    torch_error, error = _both(call)
    assert isinstance(torch_error, TypeError) and isinstance(error, ArgumentTypeError)
    with pytest.raises(ArgumentTypeError, match=match):
        call(ember, ember.nn.functional)


@pytest.mark.parametrize("call, match", [
    (lambda m: m.full((2,), "abc"), r"^full\(\): argument 'fill_value' must be a number, not str"),
    (lambda m: m.full_like(m.ones(2), "abc"),
     r"^full_like\(\): argument 'fill_value' must be a number, not str"),
    # (a sequence the shape of the tensor broadcast into it)
    (lambda m: m.full_like(m.ones(2), (5, 5)),
     r"^full_like\(\): argument 'fill_value' must be a number, not tuple \(5, 5\)"),
    (lambda m: m.isclose(m.ones(3), "abc"), r"^isclose\(\): argument 'other' must be a number"),
    # (None: every defaulted argument holds it too; the message named full's 'out')
    (lambda m: m.full((2,), None), r"^full\(\): argument 'fill_value' must be a number, not "),
    (lambda m: m.full_like(m.ones(2), None), r"^full_like\(\): argument 'fill_value' must be"),
    (lambda m: m.heaviside(m.ones(3), "abc"),
     r"^heaviside\(\): argument 'values' must be a number"),
])
def test_a_string_for_a_number_names_the_op_and_the_argument(call, match):
    with pytest.raises(TypeError):
        call(torch)
    with pytest.raises(ArgumentTypeError, match=match):
        call(ember)


def test_sizes_of_ints_still_pass():
    x = ember.ones(1, 2, 8)
    F = ember.nn.functional
    assert F.max_pool1d(x, [2]).shape == F.avg_pool1d(x, 2).shape == (1, 2, 4)
    assert F.adaptive_avg_pool1d(x, (ember.tensor(4),)).shape == (1, 2, 4)
    assert [p.shape[0] for p in ember.ones(5).split_with_sizes([2, 3])] == [2, 3]
    assert ember.full_like(ember.ones(2), ember.tensor(3.0)).tolist() == [3.0, 3.0]


def _x(m, *shape):
    return m.arange(1.0, 1 + m.ones(*shape).numel()).reshape(shape) / 100


# a string holding a number, or a float where an int belongs: float()/int() took them (silently
# truncated, or parsed), or raised Python's ValueError without the op
@pytest.mark.parametrize("call, match", [
    (lambda m, F: m.logit(_x(m, 3), "0.1"), "logit: eps must be a number, got str '0.1'"),
    (lambda m, F: m.logit(_x(m, 3), "abc"), "logit: eps must be a number"),
    (lambda m, F: m.nan_to_num(_x(m, 3), "0.5"), "nan_to_num: nan must be a number"),
    (lambda m, F: m.nan_to_num(_x(m, 3), posinf="1"), "nan_to_num: posinf must be a number"),
    (lambda m, F: m.quantile(_x(m, 3), "0.5"), "quantile: q must be a number"),
    (lambda m, F: F.elu(_x(m, 3), "1.0"), "elu: alpha must be a number"),
    (lambda m, F: F.leaky_relu(_x(m, 3), "0.1"), "leaky_relu: negative_slope must be a number"),
    (lambda m, F: F.softplus(_x(m, 3), 1, "20"), "softplus: threshold must be a number"),
    (lambda m, F: m.bernoulli(_x(m, 3), "0.5"), "bernoulli: p must be a number"),
    (lambda m, F: F.pdist(_x(m, 3, 2), "2"), "pdist: p must be a number"),
    (lambda m, F: m.cdist(_x(m, 3, 2), _x(m, 3, 2), "2"), "cdist: p must be a number"),
    (lambda m, F: m.pinverse(_x(m, 3, 2), "0.1"), "pinverse: rcond must be a number"),
    (lambda m, F: m.isclose(_x(m, 3), _x(m, 3), "0.1"), "isclose: rtol must be a number"),
    (lambda m, F: m.renorm(_x(m, 2, 2), "2", 0, 1.0), "renorm: p must be a number"),
    (lambda m, F: m.histc(_x(m, 3), 4, "0"), "histc: min must be a number"),
    (lambda m, F: m.histc(_x(m, 3), 4.5), "histc: bins must be an int, got float 4.5"),
    (lambda m, F: m.histc(_x(m, 3), "4"), "histc: bins must be an int, got str"),
    (lambda m, F: m.histogram(_x(m, 3), 4.5), "histogram: bins must be an int"),
    (lambda m, F: F.pixel_shuffle(_x(m, 1, 4, 2, 2), 2.0),
     "pixel_shuffle: upscale_factor must be an int"),
    (lambda m, F: F.pixel_unshuffle(_x(m, 1, 1, 4, 4), "2"),
     "pixel_unshuffle: downscale_factor must be an int"),
    (lambda m, F: F.channel_shuffle(_x(m, 1, 4, 2, 2), 2.0), "channel_shuffle: groups must be"),
    (lambda m, F: m.multinomial(_x(m, 3), 2.0), "multinomial: num_samples must be an int"),
    (lambda m, F: m.bincount(m.tensor([1, 2]), minlength=4.5), "bincount: minlength must be"),
    (lambda m, F: m.topk(_x(m, 3), 2.0), "topk: k must be an int"),
    (lambda m, F: m.kthvalue(_x(m, 3), 2.0), "kthvalue: k must be an int"),
    (lambda m, F: m.linspace(0, 1, 3.0), "linspace: steps must be an int"),
    (lambda m, F: m.randint(0, 5.0, (2,)), "randint: high must be an int"),
    (lambda m, F: F.embedding(m.tensor([1]), _x(m, 3, 2), 1.0),
     "embedding: padding_idx must be an int"),
    (lambda m, F: m.broadcast_to(_x(m, 3), (2, 3.0)), "expand: size must be an int, got float"),
    (lambda m, F: _x(m, 3).expand(2, 3.0), "expand: size must be an int, got float"),
    (lambda m, F: m.expand_copy(_x(m, 3), "23"), "expand: size must be an int, got str"),
    (lambda m, F: F.pad(_x(m, 3), (1.0, 1)), "pad: pad must be an int, got float 1.0"),
    (lambda m, F: F.pad(_x(m, 3), "11"), "pad: pad must be a sequence of ints, got str"),
    (lambda m, F: m.constant_pad_nd(_x(m, 3), (1.5, 1)), "pad: pad must be an int"),
    (lambda m, F: m.empty_permuted((2, 3.0), (0, 1)), "empty_permuted: size must be an int"),
    (lambda m, F: F.affine_grid(_x(m, 1, 2, 3), (1, 1, 2, 2.0)), "affine_grid: size must be"),
    (lambda m, F: _x(m, 4, 4).to_sparse_bsr((2, 2.0)), "to_sparse_bsr: blocksize must be an int"),
    (lambda m, F: _x(m, 4, 4).to_sparse_bsr("22"), "to_sparse_bsr: blocksize must be an int"),
    (lambda m, F: F.pad(_x(m, 3), b"\x01\x01"), "pad: pad must be a sequence of ints, got bytes"),
    (lambda m, F: m.broadcast_to(_x(m, 3), b"\x02\x03"), "broadcast_to: expand: size must be"),
    (lambda m, F: m.broadcast_to(_x(m, 3), 2.5), "broadcast_to: expand: size must be an int"),
    (lambda m, F: _x(m, 3).expand(2, 3.0), "expand: size must be an int, got float 3.0"),
    (lambda m, F: _x(m, 3).expand(2, -1.0), "expand: size must be an int, got float -1.0"),
    (lambda m, F: F.pad(_x(m, 3), (True, False)), "pad: pad must be an int, got bool True"),
    # (torch takes a bool size after the first, as view and reshape do; Ember refuses it
    # in any place, for all three)
    (lambda m, F: _x(m, 1, 3).expand(True, 3), "expand: size must be an int, got bool True"),
    (lambda m, F: _x(m, 1, 3).expand((True, 3)), "expand: size must be an int, got bool"),
    (lambda m, F: m.broadcast_to(_x(m, 1, 3), (False, 3)), "expand: size must be an int"),
])
def test_a_string_or_float_number_argument_is_a_type_error_naming_it(call, match):
    torch_error, error = _both(call)
    assert isinstance(torch_error, TypeError), torch_error
    assert isinstance(error, ArgumentTypeError), error
    assert match in str(error)


def test_a_many_element_tensor_for_an_int_keeps_the_message_naming_the_argument():
    with pytest.raises(ArgumentTypeError, match=r"^histc\(\): argument 'bins' must be int, not a "
                                                r"Tensor of shape \(5,\) float32"):
        ember.histc(_x(ember, 3), ember.ones(5))


def test_numbers_of_other_kinds_still_pass_where_a_float_or_int_belongs():
    x, np_float = _x(ember, 3), __import__("numpy").float32(0.1)
    assert ember.logit(x, np_float).allclose(ember.logit(x, 0.1))
    assert ember.logit(x, ember.tensor(0.1)).allclose(ember.logit(x, 0.1))
    assert ember.nn.functional.elu(x, 1).allclose(ember.nn.functional.elu(x, 1.0))
    assert ember.histc(x, ember.tensor(4), 0, 1).shape == (4,)
    assert ember.topk(x, ember.tensor(2)).values.shape == (2,)
    assert ember.broadcast_to(x, (2, ember.tensor(3))).shape == (2, 3)
    assert ember.nn.functional.pad(x, [1, __import__("numpy").int64(1)]).shape == (5,)


def test_nan_to_num_takes_none_for_nan_as_torch():
    nan = float("nan")
    assert ember.nan_to_num(ember.tensor([nan, 1.0]), None).tolist() == \
        torch.nan_to_num(torch.tensor([nan, 1.0]), None).tolist() == [0.0, 1.0]


# errors4: the last R6 sites (a float or a string where an int or a number belongs) and
# ignore_index, which took a float (compared with the targets: 1.0 == 1) or a string
@pytest.mark.parametrize("call, match", [
    (lambda m, F: F.cross_entropy(_x(m, 3, 4), m.tensor([0, 1, 2]), ignore_index=1.0),
     "cross_entropy: ignore_index must be an int, got float 1.0"),
    (lambda m, F: F.cross_entropy(_x(m, 3, 4), m.tensor([0, 1, 2]), ignore_index="1"),
     "cross_entropy: ignore_index must be an int, got str"),
    (lambda m, F: F.nll_loss(_x(m, 3, 4), m.tensor([0, 1, 2]), ignore_index=1.5),
     "nll_loss: ignore_index must be an int, got float 1.5"),
    (lambda m, F: F.nll_loss(_x(m, 3, 4), m.tensor([0, 1, 2]), ignore_index=True),
     "nll_loss: ignore_index must be an int, got bool"),
    (lambda m, F: F.linear_cross_entropy(_x(m, 3, 4), _x(m, 5, 4), m.tensor([0, 1, 2]),
                                         ignore_index=1.0),
     "linear_cross_entropy: ignore_index must be an int"),
    (lambda m, F: m.einsum(_x(m, 3, 3), [0.5, 1], [1]), "einsum: a subscript in a sublist must"),
    (lambda m, F: m.einsum(_x(m, 3, 3), ["a", 1], [1]), "einsum: a subscript in a sublist must"),
    (lambda m, F: m.frobenius_norm(_x(m, 3, 3), 1.5), "frobenius_norm: dim must be an int"),
    (lambda m, F: m.frobenius_norm(_x(m, 3, 3, 3), "abc"), "frobenius_norm: dim must be an int"),
    (lambda m, F: m.nuclear_norm(_x(m, 3, 3), "ab"), "matrix_norm: dim must be an int, got str"),
    (lambda m, F: m.linalg.norm(_x(m, 3, 3), dim="ab"), "linalg.norm: dim must be an int"),
    (lambda m, F: m.histogramdd(_x(m, 3, 2), bins=2.5), "histogramdd: bins must be an int"),
    (lambda m, F: m.histogramdd(_x(m, 3, 2), bins="ab"), "histogramdd: bins must be an int"),
    (lambda m, F: m.tensordot(_x(m, 3, 3), _x(m, 3, 3), dims=1.5),
     "tensordot: dims must be an int, got float 1.5"),
    (lambda m, F: m.tensordot(_x(m, 3, 3), _x(m, 3, 3), dims="ab"),
     "tensordot: dims must be an int, got str"),
    (lambda m, F: m.normal(_x(m, 3), "abc"), "normal: std must be a number, got str"),
    (lambda m, F: m.normal(_x(m, 3), "1"), "normal: std must be a number, got str '1'"),
    (lambda m, F: m.normal("0", _x(m, 3)), "normal: mean must be a number, got str"),
    (lambda m, F: F.local_response_norm(_x(m, 1, 3, 3), "abc"),
     "local_response_norm: size must be an int, got str"),
    (lambda m, F: F.local_response_norm(_x(m, 1, 3, 3), 2.0),
     "local_response_norm: size must be an int, got float 2.0"),
    (lambda m, F: F.local_response_norm(_x(m, 1, 3, 3), 2, alpha="0.1"),
     "local_response_norm: alpha must be a number, got str '0.1'"),
    (lambda m, F: F.local_response_norm(_x(m, 1, 3, 3), 2, k="abc"),
     "local_response_norm: k must be a number"),
    (lambda m, F: F.interpolate(_x(m, 1, 1, 4), size=5.5), "interpolate: size must be an int"),
    (lambda m, F: F.interpolate(_x(m, 1, 1, 4), size="5"), "interpolate: size must be an int"),
    (lambda m, F: F.interpolate(_x(m, 1, 1, 4, 4), size=(5.0, 5)),
     "interpolate: size must be an int, got float 5.0"),
    (lambda m, F: F.interpolate(_x(m, 1, 1, 4), scale_factor="2"),
     "interpolate: scale_factor must be a number, got str '2'"),
    (lambda m, F: F.rrelu(_x(m, 3), "0.1", "0.3"), "rrelu: lower must be a number, got str"),
    (lambda m, F: F.rrelu(_x(m, 3), 0.1, "abc"), "rrelu: upper must be a number"),
    (lambda m, F: F.celu(_x(m, 3), "abc"), "celu: alpha must be a number"),
    (lambda m, F: F.hardtanh(_x(m, 3), "-1", "1"), "hardtanh: min_val must be a number"),
    (lambda m, F: F.hardtanh(m.ones(3, dtype=m.int64), -1, "abc"),
     "hardtanh: max_val must be a number"),
    (lambda m, F: F.threshold(_x(m, 3), "abc", 0.0), "threshold: threshold must be a number"),
    (lambda m, F: F.threshold(m.ones(3, dtype=m.int64), 0, "abc"),
     "threshold: value must be a number"),
    (lambda m, F: F.dropout(_x(m, 3), "0.5"), "dropout: p must be a number, got str '0.5'"),
    (lambda m, F: F.alpha_dropout(_x(m, 3), "abc", True), "alpha_dropout: p must be a number"),
    (lambda m, F: F.dropout1d(_x(m, 2, 3), "abc"), "dropout1d: p must be a number"),
    (lambda m, F: F.feature_alpha_dropout(_x(m, 2, 3), "abc", True),
     "feature_alpha_dropout: p must be a number"),
])
def test_a_wrong_kind_of_number_is_torchs_error_class_naming_the_op(call, match):
    torch_error, error = _both(call)  # (torch's tensordot: RuntimeError; the rest TypeError)
    assert isinstance(error, ArgumentTypeError) and isinstance(error, type(torch_error)), error
    assert match in str(error)


def test_numbers_of_other_kinds_still_pass_at_the_errors4_sites():
    np = __import__("numpy")
    x, t = _x(ember, 3, 4), ember.tensor([0, 1, 2])
    F = ember.nn.functional
    for ignore_index in (np.int64(1), ember.tensor(1)):  # (a 0-d tensor raised an OpError)
        assert F.cross_entropy(x, t, ignore_index=ignore_index).allclose(
            F.cross_entropy(x, t, ignore_index=1))
        assert F.nll_loss(x, t, ignore_index=ignore_index).allclose(
            F.nll_loss(x, t, ignore_index=1))
    assert ember.einsum(x, [np.int64(0), 1], [1]).shape == (4,)
    assert ember.frobenius_norm(x, [0, 1]).allclose(ember.frobenius_norm(x, (0, 1)))
    assert ember.histogramdd(_x(ember, 3, 2), bins=np.int64(2)).hist.shape == (2, 2)
    assert ember.tensordot(x, x.T, dims=np.int64(1)).shape == (3, 3)
    assert ember.normal(x, 1).shape == (3, 4) and ember.normal(0, ember.ones(2)).shape == (2,)
    assert F.local_response_norm(_x(ember, 1, 3, 3), np.int64(2)).shape == (1, 3, 3)
    assert F.local_response_norm(x[None], 2, alpha=np.float32(0.5), beta=ember.tensor(1.0),
                                 k=2).allclose(F.local_response_norm(x[None], 2, 0.5, 1.0, 2.0))
    assert F.hardtanh(ember.tensor([-3, 5]), -2, 2).tolist() == [-2, 2]
    assert F.threshold(ember.tensor([1, 5]), 2, 2**60).tolist() == [2**60, 5]
    assert F.rrelu(x, np.float32(0.1), 1).shape == (3, 4) and F.celu(x, 2).shape == (3, 4)
    assert F.dropout(x, 0, True) is x and F.dropout(x, ember.tensor(0.0), True) is x


@pytest.mark.parametrize("call, match", [
    (lambda m, F: _x(m, 3, 3).sum_to_size(m.ones(2, dtype=m.int64)),
     r"^sum_to_size\(\): argument 'size' must be int, not a Tensor of shape \(2,\) int64"),
    (lambda m, F: _x(m, 3, 3).sum_to_size(1, 3.0), "^sum_to_size: size must be an int, got float"),
    (lambda m, F: _x(m, 3, 3).sum_to_size((1, "3")), "^sum_to_size: size must be an int, got str"),
    # PyTorch's setters take a Python bool only (bool("no") is True: autocast turned on)
    (lambda m, F: m.set_autocast_enabled("cpu", "no"),
     "^set_autocast_enabled: enabled must be a bool, got str 'no'"),
    (lambda m, F: m.set_autocast_enabled("cpu", m.ones(2)),
     "^set_autocast_enabled: enabled must be a bool, got ember.Tensor"),
    (lambda m, F: m.set_autocast_enabled(1), "^set_autocast_enabled: enabled must be a bool"),
    (lambda m, F: m.set_autocast_cache_enabled(m.tensor(True)),
     "^set_autocast_cache_enabled: enabled must be a bool, got ember.Tensor"),
])
def test_a_tensor_or_string_for_a_size_or_a_setters_flag_names_the_op(call, match):
    try:
        torch_error, error = _both(call)
    finally:
        torch.set_autocast_enabled("cpu", False)
        ember.set_autocast_enabled("cpu", False)
    assert isinstance(error, ArgumentTypeError) and isinstance(error, type(torch_error)), error
    assert not ember.is_autocast_enabled("cpu") and not ember.is_autocast_enabled()
    with pytest.raises(ArgumentTypeError, match=match):
        call(ember, ember.nn.functional)


def test_sum_to_size_still_takes_ints_of_other_kinds():
    x, np_int = _x(ember, 3, 3), __import__("numpy").int64(3)
    for size in ((1, 3), [3, 1], (ember.tensor(1), np_int), ember.Size([1, 3])):
        assert x.sum_to_size(size).shape == tuple(int(s) for s in size)
    assert x.sum_to_size(1, 3).allclose(ember.tensor(x.numpy().sum(0, keepdims=True)))


@pytest.mark.parametrize("ord_", [1j, None])
def test_vector_norm_names_itself_for_an_ord_that_is_no_real_number(ord_):
    # (a complex ord raised Python's "'<' not supported between instances of 'complex' and
    # 'int'", without the op)
    torch_error, ember_error = _both(lambda m, F: m.linalg.vector_norm(m.ones(3), ord=ord_))
    assert isinstance(torch_error, (TypeError, RuntimeError))
    assert isinstance(ember_error, ArgumentTypeError)  # (a TypeError and a RuntimeError)
    assert str(ember_error).startswith("linalg.vector_norm: ord must be a number")


@pytest.mark.parametrize("call", [
    lambda m, F: m.zeros("a"),
    lambda m, F: m.zeros(2, size=(3,)),
    lambda m, F: m.tensor(object()),
    lambda m, F: m.Tensor(1.5),
    lambda m, F: m.from_numpy([1]),
    lambda m, F: m.arange("a"),
    lambda m, F: m.lgamma(2.0),
    lambda m, F: m.digamma(1.0),
    lambda m, F: m.special.i0e([1.0]),
    lambda m, F: m.special.bessel_j0(1.0),
])
def test_factories_and_host_special_functions_raise_argument_type_error(call):
    # (they raised a plain TypeError, outside the project's error classes)
    theirs, ours = _both(call)
    assert isinstance(theirs, TypeError | RuntimeError)
    assert isinstance(ours, ArgumentTypeError)


@pytest.mark.parametrize("call", [
    lambda m, F: m.special.zeta(m.tensor([2.0]), "a"),
    lambda m, F: m.special.zeta([2.0], m.tensor([1.0])),
    lambda m, F: m.special.chebyshev_polynomial_t(m.tensor([0.5]), None),
    lambda m, F: m.float_power(m.tensor([2.0]), "a"),
    lambda m, F: m.add(m.tensor([2.0]), "a"),
])
def test_a_non_number_operand_beside_a_tensor_is_an_argument_type_error(call):
    # (a DTypeError: a str, list or None is a wrong kind of argument, not a wrong dtype)
    theirs, ours = _both(call)
    assert isinstance(theirs, TypeError)
    assert isinstance(ours, ArgumentTypeError)
    assert "cannot take an operand of type" in str(ours)


BOOL_DIM_CALLS = [
    ("sum", lambda m, x: x.sum(True)),  # (keepdim=True meant)
    ("softmax", lambda m, x: x.softmax(True)),
    ("cumsum", lambda m, x: x.cumsum(True)),
    ("unsqueeze", lambda m, x: x.unsqueeze(True)),
    ("select", lambda m, x: x.select(True, 0)),
    ("argmax", lambda m, x: x.argmax(True)),
    ("transpose", lambda m, x: x.transpose(True, 0)),
    ("fft", lambda m, x: m.fft.fft(x, dim=True)),
    ("fftshift", lambda m, x: m.fft.fftshift(x, True)),
]


@pytest.mark.parametrize("op,call", BOOL_DIM_CALLS, ids=[c[0] for c in BOOL_DIM_CALLS])
def test_a_bool_dim_is_refused_as_torch(op, call):
    # fftspecial54: operator.index(True) is 1, so a bool dim silently named dim 1
    with pytest.raises(TypeError):
        call(torch, torch.ones(2, 3))
    with pytest.raises(ArgumentTypeError, match=r"dim\w* must be an int.*, got bool"):
        call(ember, ember.ones(2, 3))


CACHED_DIM_CALLS = [
    ("sum", lambda m, x, d: x.sum(d)),
    ("mean", lambda m, x, d: x.mean(d)),
    ("amax", lambda m, x, d: x.amax(d)),
    ("flip", lambda m, x, d: x.flip(d)),
    ("logsumexp", lambda m, x, d: x.logsumexp(d)),
    ("normalize", lambda m, x, d: m.nn.functional.normalize(x, dim=d)),
]
# (a dim equal to an int dim, and hashing alike, that torch refuses; the int form runs first)
CACHED_LOOKALIKES = [((1, 0), (True, 0)), ([1], [True]), ((1, 0), (np.True_, 0)),
                     (1, np.True_), (1, 1.0), ((1, 0), (1.0, 0))]


@pytest.mark.parametrize("op,call", CACHED_DIM_CALLS, ids=[c[0] for c in CACHED_DIM_CALLS])
@pytest.mark.parametrize("ints,lookalike", CACHED_LOOKALIKES, ids=repr)
def test_a_bool_or_float_dim_is_refused_after_its_int_twin_ran(op, call, ints, lookalike):
    # review54d item 1: normalize_dims' cache took (True, 0) for the (1, 0) it had seen
    call(torch, torch.ones(2, 3), ints)
    with pytest.raises(TypeError):
        call(torch, torch.ones(2, 3), lookalike)
    call(ember, ember.ones(2, 3), ints)
    with pytest.raises(ArgumentTypeError, match=r"dim must be an int.*, got (bool|float)"):
        call(ember, ember.ones(2, 3), lookalike)

"""ember.masked.MaskedTensor against torch.masked.MaskedTensor: repr, masks of elementwise ops,
reductions and shape ops, values where the mask is True, gradients, and errors."""

import copy
import warnings

import numpy as np
import pytest
import torch

import ember
from ember.masked import MaskedTensor, as_masked_tensor, is_masked_tensor, masked_tensor
from tests.masked.helpers import DATA, MASK

warnings.filterwarnings("ignore", module="torch.masked")


def _pair(data=DATA, mask=MASK, requires_grad=False):
    return (masked_tensor(ember.tensor(data), ember.tensor(mask), requires_grad=requires_grad),
            torch.masked.masked_tensor(torch.tensor(data), torch.tensor(mask),
                                       requires_grad=requires_grad))


def assert_same(e, t):
    """Same type, mask and dtype, and equal data where the mask is True."""
    assert is_masked_tensor(e) and isinstance(t, torch.masked.MaskedTensor)
    mask = t.get_mask().numpy()
    np.testing.assert_array_equal(e.get_mask().numpy(), mask)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    np.testing.assert_allclose(np.asarray(e.get_data().detach().numpy())[mask],
                               t.get_data().detach().numpy()[mask], rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("data,mask", [
    (DATA, MASK), (np.arange(6).reshape(2, 3), MASK[:2, :3]), (DATA > 0, MASK),
    (np.array(2.5), np.array(True)), (np.array(2.5), np.array(False)),
    (DATA.reshape(3, 2, 2) * 100, MASK.reshape(3, 2, 2)), (np.array([1.5, -2.25e5]), [1, 1]),
])
def test_repr_matches_torch(data, mask):
    mask = np.asarray(mask, dtype=bool)
    e, t = _pair(np.asarray(data), mask)
    assert repr(e) == repr(t)


UNARY = [lambda x: x.exp(), lambda x: x.abs(), lambda x: -x, lambda x: x.clamp(-0.5, 0.5),
         lambda x: x ** 2, lambda x: x.sigmoid(), lambda x: x.isnan(), lambda x: x.round()]
NUMBER_OK = [lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x - y, lambda x, y: x / y,
             lambda x, y: x > y, lambda x, y: x == y]
BINARY = NUMBER_OK + [lambda x, y: x.maximum(y), lambda x, y: x.atan2(y)]  # tensors only


@pytest.mark.parametrize("fn", UNARY)
def test_unary_ops_keep_the_mask(fn):
    e, t = _pair()
    assert_same(fn(e), fn(t))


@pytest.mark.parametrize("lib_fn", [lambda lib, x: lib.round(x), lambda lib, x: lib.exp(x)])
def test_function_forms_of_unary_ops(lib_fn):
    # ember.round hands decimals=0 over, which was refused as a keyword-only argument
    e, t = _pair()
    assert_same(lib_fn(ember, e), lib_fn(torch, t))


# keywords PyTorch's argument parser folds into positional arguments before its MaskedTensor
# sees the call (refused before: "takes no keyword arguments")
KEYWORD_UNARY = [lambda x: x.clamp(min=0.0), lambda x: x.clamp(max=0.5),
                 lambda x: x.clamp(-0.5, max=0.5), lambda x: x.clip(min=0.0, max=1.0),
                 lambda x: x.pow(exponent=2), lambda x: (x / 9).logit(eps=0.1),
                 lambda x: x.log().nan_to_num(nan=1.0),
                 lambda x: x.log().nan_to_num(0.0, neginf=-2.0),
                 lambda x: x.clone().clamp_(max=0.5)]


@pytest.mark.parametrize("fn", KEYWORD_UNARY)
def test_unary_ops_take_positional_arguments_by_keyword(fn):
    e, t = _pair()
    assert_same(fn(e), fn(t))


def test_unary_keywords_keep_gradients_at_the_masked_in_elements():
    # (torch's MaskedTensor clamp has no backward: logical_and_ is not in its tables)
    e, _ = _pair(requires_grad=True)
    e.clamp(max=0.5).sum().backward()
    t = torch.tensor(DATA, requires_grad=True)
    t.clamp(max=0.5).sum().backward()
    np.testing.assert_array_equal(e.grad.get_mask().numpy(), MASK)
    np.testing.assert_array_equal(e.grad.get_data().numpy()[MASK], t.grad.numpy()[MASK])


@pytest.mark.parametrize("call,match", [
    (lambda e: e.clamp(mn=0.0), r"clamp: got an unexpected keyword argument 'mn' \(its arguments "
                                 r"are max, min\)"),
    (lambda e: e.clamp(0.0, min=0.0), "clamp: multiple values for argument 'min'"),
    (lambda e: e.exp(out=None), r"exp: got an unexpected keyword argument 'out' \(exp takes no "
                                r"arguments\)"),  # (it said "(no arguments)")
    (lambda e: e.round(decimals=1), r"round: takes no keyword-only arguments \(got decimals\)"),
    (lambda e: e.clamp(min=ember.zeros(4, dtype=ember.float64)), "no tensor arguments"),
])
def test_unary_keyword_errors(call, match):
    with pytest.raises(TypeError, match=match):
        call(_pair()[0])


@pytest.mark.parametrize("fn", BINARY)
def test_binary_ops_with_masked_tensors_tensors_and_numbers(fn):
    e, t = _pair()
    e2, t2 = _pair(DATA[::-1].copy())
    assert_same(fn(e, e2), fn(t, t2))
    assert_same(fn(e, ember.tensor(DATA[0])), fn(t, torch.tensor(DATA[0])))
    if fn in NUMBER_OK:
        assert_same(fn(e, 0.5), fn(t, 0.5))


PLAIN_LEFT = NUMBER_OK + [lambda x, y: x // y, lambda x, y: x % y, lambda x, y: x <= y,
                         lambda x, y: x != y, lambda x, y: (x > 0) & (y > 0),
                         lambda x, y: (x > 0) | (y > 0), lambda x, y: (x > 0) ^ (y > 0)]


@pytest.mark.parametrize("fn", PLAIN_LEFT)
def test_binary_operators_with_a_plain_tensor_on_the_left(fn):
    e, t = _pair()
    assert_same(fn(ember.tensor(DATA[0]), e), fn(torch.tensor(DATA[0]), t))
    assert_same(fn(ember.tensor(DATA), e), fn(torch.tensor(DATA), t))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "floor_divide", "remainder"])
def test_functions_with_a_plain_tensor_on_the_left(op):
    e, t = _pair()
    assert_same(getattr(ember, op)(ember.tensor(DATA[0]), e),
                getattr(torch, op)(torch.tensor(DATA[0]), t))


def test_plain_tensor_on_the_left_backward():
    e, t = _pair(requires_grad=True)
    (ember.tensor(DATA[2]) * e - 1.0).sum().backward()
    (torch.tensor(DATA[2]) * t - 1.0).sum().backward()
    assert_same(e.grad, t.grad)


def test_inplace_ops_and_reflected_numbers():
    e, t = _pair()
    e.mul_(2).add_(e)
    t.mul_(2).add_(t)
    assert_same(e, t)
    assert_same(1 / e, 1 / t)
    assert_same(3 + e, 3 + t)
    assert_same(ember.tensor(DATA[0]) < e, torch.tensor(DATA[0]) < t)  # comparisons reflect


@pytest.mark.parametrize("op,args", [
    ("sum", ()), ("sum", (1,)), ("sum", (0, True)), ("mean", ()), ("mean", (1,)),
    ("amax", (1,)), ("amin", ()), ("prod", (0,)), ("argmax", (1,)), ("argmin", ()),
    ("var", (1,)), ("std", ()), ("all", (1,)), ("softmax", (1,)), ("softmax", (0,)),
])
def test_reductions_mask_out_empty_slices(op, args):
    e, t = _pair()
    if op == "all":
        e, t = e > 0, t > 0
    assert_same(getattr(e, op)(*args), getattr(t, op)(*args))


@pytest.mark.parametrize("fn", [lambda x: x[1:], lambda x: x[:, 2], lambda x: x.transpose(0, 1),
                                lambda x: x.t(), lambda x: x.reshape(4, 3),
                                lambda x: x.view(-1), lambda x: x.unsqueeze(0),
                                lambda x: x.expand(2, 3, 4), lambda x: x.flatten(),
                                lambda x: x.split(2, 1)[1], lambda x: x.select(0, 2)])
def test_shape_ops_move_data_and_mask(fn):
    e, t = _pair()
    assert_same(fn(e), fn(t))


def test_where_and_to_tensor():
    e, t = _pair()
    cond = DATA > 0
    assert_same(e.where(ember.tensor(cond), e * 0), torch.where(torch.tensor(cond), t, t * 0))
    np.testing.assert_array_equal(e.to_tensor(-1.0).numpy(), t.to_tensor(-1.0).numpy())
    assert_same(e.to(ember.float32), t.to(torch.float32))


@pytest.mark.parametrize("fn", [lambda x: x.sum(), lambda x: (x * x).sum(1).sum(),
                                lambda x: x.softmax(1).mul(x.exp()).sum(),
                                lambda x: x.mean(0).sum(), lambda x: x.amax(1).sum()])
def test_backward_gives_a_masked_gradient(fn):
    e, t = _pair(requires_grad=True)
    fn(e).backward()
    fn(t).backward()
    assert_same(e.grad, t.grad)
    assert np.isfinite(e.grad.get_data().numpy()).all()


_AUTOGRAD_CALLS = {  # (each refused: "grad: does not take a MaskedTensor, torch's does")
    "grad": lambda lib, x, g: lib.autograd.grad((x * x).sum(), [x]),
    "grad one input": lambda lib, x, g: lib.autograd.grad((x * x).sum(), x),
    "grad given": lambda lib, x, g: lib.autograd.grad(x.exp(), [x], grad_outputs=[g]),
    "backward": lambda lib, x, g: lib.autograd.backward((x * x).sum()) or (x.grad,),
    "backward given": lambda lib, x, g: lib.autograd.backward([x * 3], [g]) or (x.grad,),
    "backward inputs": lambda lib, x, g: lib.autograd.backward(
        (x * x).sum(), inputs=[x]) or (x.grad,),
}


@pytest.mark.parametrize("name", sorted(_AUTOGRAD_CALLS))
def test_autograd_grad_and_backward_take_masked_tensors_as_torch(name):
    e, t = _pair(requires_grad=True)
    ge, gt = _pair()
    ours, theirs = (_AUTOGRAD_CALLS[name](lib, x, g)
                    for lib, x, g in ((ember, e, ge), (torch, t, gt)))
    assert len(ours) == len(theirs) == 1
    assert isinstance(ours[0], MaskedTensor)
    assert_same(ours[0], theirs[0])


def test_as_masked_tensor_keeps_the_graph_and_masked_tensor_cuts_it():
    x = ember.tensor(DATA, requires_grad=True)
    as_masked_tensor(x * 2, ember.tensor(MASK)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2.0 * MASK)
    leaf = masked_tensor(x * 2, ember.tensor(MASK))
    assert leaf.is_leaf and not leaf.requires_grad


def test_masked_reduction_functions_take_masked_tensors():
    e, t = _pair()
    np.testing.assert_allclose(ember.masked.mean(e, 1).numpy(),
                               torch.masked.mean(t, 1, mask=t.get_mask()).numpy())


@pytest.mark.parametrize("call,error,match", [
    (lambda e: e + masked_tensor(e.get_data(), ~e.get_mask()), ValueError, "masks must match"),
    (lambda e: e.pow(e.get_data()), TypeError, "no tensor arguments"),
    (lambda e: e.relu(), TypeError, r"relu: not supported.*to_tensor\(fill\)"),
    (lambda e: e @ e, TypeError, "__matmul__ is not supported"),
    (lambda e: bool(e), RuntimeError, "ambiguous"),
    (lambda e: e.get_data() ** e, TypeError, r"pow: does not take a MaskedTensor"),
    (lambda e: ember.sub(e.get_data(), e, alpha=2), TypeError, "no keyword-only arguments"),
    (lambda e: e.get_data() @ e, TypeError, r"matmul: does not take a MaskedTensor"),
    (lambda e: e.get_data().clone().add_(e), TypeError, r"add_: .*MaskedTensor.*in place"),
    (lambda e: e.get_data().clone().__imul__(e), TypeError, r"__imul__: .*MaskedTensor"),
    (lambda e: ember.cumsum(e, 0), TypeError,
     r"cumsum: does not take a MaskedTensor.*MaskedTensor's methods"),
    (lambda e: ember.flip(e, (0,)), AttributeError, r"flip: does not take a MaskedTensor.*mt\.exp"),
    (lambda e: ember.cat([e, e.get_data()]), TypeError, "expected only MaskedTensors"),
    (lambda e: e.to(ember.int64).softmax(0), TypeError, "expected floating point data"),
    (lambda e: masked_tensor(e.get_data(), e.get_mask()[0]), ValueError, "same shape"),
    (lambda e: masked_tensor(e.get_data(), e.get_mask().int()), TypeError, "dtype bool"),
    (lambda e: masked_tensor(e.get_data().tolist(), e.get_mask()), TypeError, "ember.Tensor"),
    (lambda e: masked_tensor(e.get_data().to(ember.complex64), e.get_mask()), TypeError,
     "not supported"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(_pair()[0])


def test_is_its_own_class():
    e, _ = _pair()
    assert isinstance(e, MaskedTensor) and not isinstance(e, ember.Tensor)
    assert not is_masked_tensor(ember.ones(2))
    assert e.shape == (3, 4) and e.dim() == 2 and e.numel() == 12 and len(e) == 3


INTEGER_CALLS = {
    "sum over (0, 2)": lambda x: x.sum((0, 2)), "sum keepdim": lambda x: x.sum(1, True),
    "amax": lambda x: x.amax(-1), "argmax keepdim": lambda x: x.argmax(2, True),
    "prod": lambda x: x.prod(0), "sum of all": lambda x: x.sum(), "ge": lambda x: x >= 3,
    "floordiv": lambda x: x // 2, "invert": lambda x: ~x,
}


@pytest.mark.parametrize("dtype", ["float64", "int64", "int32"])
@pytest.mark.parametrize("call", INTEGER_CALLS)
def test_three_dims_and_integer_data(dtype, call):
    if call == "invert" and dtype == "float64":
        return
    data = np.arange(24).reshape(2, 3, 4) % 7
    mask = (np.arange(24).reshape(2, 3, 4) % 3 == 0) & (np.arange(24).reshape(2, 3, 4) < 12)
    e, t = _pair(data.astype(dtype), mask)
    assert_same(INTEGER_CALLS[call](e), INTEGER_CALLS[call](t))


@pytest.mark.parametrize("convert", [lambda x: x.item(), bool, float, int])
def test_one_element_reads_as_torch_and_refuses_a_masked_out_one(convert):
    e, t = _pair(np.array(2.5), np.array(True))
    assert convert(e) == convert(t)
    e, _ = _pair(np.array(2.5), np.array(False))
    with pytest.raises(ValueError, match="masked out"):
        convert(e)


@pytest.mark.parametrize("fn", [lambda x: x.chunk(2, 1)[1], lambda x: x.mT, lambda x: x.bool(),
                                lambda x: x.int(), lambda x: x.long()])
def test_more_shape_and_dtype_ops_as_torch(fn):
    e, t = _pair()
    assert_same(fn(e), fn(t))


def test_copies_keep_data_mask_and_independence():
    e, t = _pair()
    deep = copy.deepcopy(e)
    assert_same(deep, t)
    deep.get_data().add_(1.0)
    assert_same(e, t)


# torch's MaskedTensor methods that raised "not supported" (or AttributeError) before
@pytest.mark.parametrize("fn", [
    lambda x: x.cpu(), lambda x: x.data, lambda x: x.to_dense(), lambda x: x.type(x.float().dtype),
    lambda x: x.clone().copy_(x * 2), lambda x: x.clone().copy_(x.get_data()[0].clone() * 3),
    lambda x: x.clone().copy_(x.get_data().clone().fill_(7.0).sum() * 0 + 4),
    lambda x: (x / 0).isfinite(), lambda x: x.type_as(x.float()),
    lambda x: x.type_as(x.get_data().int()),
])
def test_torch_methods_returning_masked_tensors(fn):
    e, t = _pair()
    assert_same(fn(e), fn(t))


@pytest.mark.parametrize("other", [1.0, np.zeros(1)])
def test_type_as_refuses_a_non_tensor_as_torch(other):  # (1.0: AttributeError; ndarray: cast)
    e, t = _pair()
    with pytest.raises(TypeError):
        t.type_as(other)
    with pytest.raises(TypeError, match="type_as: expected a tensor or MaskedTensor, got"):
        e.type_as(other)


@pytest.mark.parametrize("fn", [
    lambda x: x.is_contiguous(), lambda x: x.stride(), lambda x: x.stride(1),
    lambda x: x.is_sparse_coo(), lambda x: x.is_sparse_csr(), lambda x: x.is_same_size(x),
    lambda x: x.is_same_size(x[0]), lambda x: x.grad_fn is None, lambda x: (x * 2).grad_fn is None,
    lambda x: x.data.requires_grad, lambda x: x.type().split(".")[-1],
])
def test_torch_methods_returning_plain_values(fn):
    e, t = _pair(requires_grad=True)
    assert fn(e) == fn(t)


def test_copy_refuses_another_mask_and_keeps_gradients():
    e, _ = _pair()
    with pytest.raises(ValueError, match="copy_: input masks must match"):
        e.copy_(masked_tensor(e.get_data(), ~e.get_mask()))
    x = ember.tensor(DATA, requires_grad=True)
    target = as_masked_tensor(ember.zeros(3, 4, dtype=ember.float64), ember.tensor(MASK))
    target.copy_(x * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.where(MASK, 2.0, 0.0))


def test_like_constructors_keep_the_mask():
    e, t = _pair()
    assert_same(ember.ones_like(e), torch.ones_like(t))
    # (torch's MaskedTensor has ones_like only; the others follow it)
    for made, value in ((ember.zeros_like(e, dtype=ember.int64), 0),
                        (ember.full_like(e, 2.5), 2.5)):
        np.testing.assert_array_equal(made.get_mask().numpy(), MASK)
        np.testing.assert_array_equal(made.get_data().numpy(), np.full(MASK.shape, value))
    assert ember.ones_like(e, requires_grad=True).is_leaf


def _autograd_surface(mt):
    """torch's autograd attributes on a MaskedTensor leaf ``mt`` (raised before: no setter /
    not supported)."""
    mt.requires_grad = True
    mt.register_hook(lambda g: g * 2)
    y = mt * 3
    y.retain_grad()
    y.sum().backward()
    first = (mt.grad, y.grad)
    mt.grad = None
    assert mt.grad is None
    mt.sum().backward()
    return (*first, mt.grad)


def test_autograd_attributes_as_torch():
    e, t = _pair()
    for got, want in zip(_autograd_surface(e), _autograd_surface(t)):
        assert_same(got, want)


@pytest.mark.parametrize("fn", [
    lambda L, x: x.softmax(1, dtype=L.float32),
    lambda L, x: L.nn.functional.softmax(x, 1, dtype=L.float32),
    lambda L, x: L.nn.functional.softmin(x, 1),
    lambda L, x: L.nn.functional.softmin(x, dim=0, dtype=L.float32),
    lambda L, x: L.nn.functional.softmax(x),  # implicit dim: 1 for a 2-D input (was 0)
    lambda L, x: L.nn.functional.softmin(x.unsqueeze(0)),  # implicit dim 0 for 3-D
])
def test_softmax_forms_as_torch(fn):
    e, t = _pair()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the implicit dim's deprecation warning)
        assert_same(fn(ember, e), fn(torch, t))


def test_logical_functions_refuse_a_masked_tensor_clearly():
    # (they raised "bool() of a tensor with 2 elements is ambiguous")
    mt = masked_tensor(ember.ones(2), ember.tensor([True, False]))
    for fn in (ember.logical_and, ember.logical_or, ember.logical_xor):
        with pytest.raises(TypeError, match="does not take a MaskedTensor"):
            fn(mt, mt)
    with pytest.raises(TypeError, match="logical_xor: does not take a MaskedTensor"):
        ember.ones(2).logical_xor(mt)  # (the method form said only "other")
    with pytest.raises(TypeError, match="float_power: does not take a MaskedTensor"):
        ember.float_power(mt, 2.0)  # (it said "needs a tensor input or exponent")


def test_hasattr_and_getattr_default_answer_for_missing_tensor_methods():
    # (hasattr(mt, "cumsum") raised TypeError, so getattr(x, name, default) code broke)
    e, t = _pair()
    assert not e.is_nested and not t.is_nested
    assert hasattr(e, "cumsum") is False and getattr(e, "cumsum", None) is None
    with pytest.raises(TypeError, match="MaskedTensor.cumsum: not supported"):
        e.cumsum(0)


@pytest.mark.parametrize("name", ["is_cpu", "is_cuda", "itemsize", "nbytes", "is_meta",
                                  "is_quantized", "get_device", "is_floating_point",
                                  "is_complex", "is_signed", "element_size", "is_inference",
                                  "ndimension", "nelement", "storage_offset", "dim_order",
                                  "is_conj", "is_neg", "layout"])
def test_metadata_queries_answer_as_torch(name):
    # they raised "not supported on a MaskedTensor"; torch's MaskedTensor answers them
    e, t = _pair(DATA.astype(np.float32))
    got, want = getattr(e, name), getattr(t, name)
    got, want = (got(), want()) if callable(want) else (got, want)
    assert str(got).replace("ember.", "") == str(want).replace("torch.", "")

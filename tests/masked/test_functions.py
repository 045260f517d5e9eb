"""ember.masked's functions against torch.masked: values, dtypes, identities of fully masked-out
slices, gradients (at every element: where the mask is False Ember gives 0, as torch does except
for var/std, whose fully masked-out slices send nan back there), and float64 finite-difference
gradient checks."""

import warnings

import numpy as np
import pytest
import torch

import ember
import ember.masked as M
from ember.errors import ArgumentTypeError, IndexOutOfRange, ShapeError
from tests.masked.helpers import DATA, MASK, assert_close

warnings.filterwarnings("ignore", module="torch.masked")

# (name, positional args after the input, keywords); dims cover one, several and all
CASES = [
    ("sum", (1,), {}), ("sum", ((0, 1),), {"keepdim": True}), ("sum", (), {}),
    ("prod", (1,), {}), ("prod", ((0, 1),), {}),
    ("amax", (1,), {}), ("amax", (), {}), ("amin", (0,), {"keepdim": True}),
    ("argmax", (1,), {}), ("argmin", (), {}),
    ("mean", (1,), {}), ("mean", (), {}), ("mean", ((0, 1),), {"keepdim": True}),
    ("median", (1,), {}), ("median", (0,), {"keepdim": True}),
    ("logsumexp", (1,), {}), ("logsumexp", (), {}),
    ("norm", (2.0, 1), {}), ("norm", (1.0, 0), {}), ("norm", (float("inf"), 1), {}),
    ("norm", (float("-inf"), 1), {}), ("norm", (3.0, None), {}),
    ("var", (1,), {}), ("var", (0,), {"unbiased": False}), ("var", (), {"correction": 2}),
    ("std", (1,), {}), ("std", ((0, 1),), {"correction": 0, "keepdim": True}),
    ("cumsum", (1,), {}), ("cumprod", (0,), {}),
    ("softmax", (1,), {}), ("softmax", (0,), {}), ("log_softmax", (1,), {}),
    ("softmin", (-1,), {}), ("normalize", (2.0, 1), {}), ("normalize", (1.0, 0), {"eps": 0.5}),
]
INDICES = {"argmax", "argmin"}  # not differentiable; DATA has no ties or zeros for the rest


def _run(name, args, kwargs, mask):
    x = ember.tensor(DATA, requires_grad=True)
    t = torch.tensor(DATA, requires_grad=True)
    e_out = getattr(M, name)(x, *args, mask=ember.tensor(mask), **kwargs)
    t_out = getattr(torch.masked, name)(t, *args, mask=torch.tensor(mask), **kwargs)
    return x, t, e_out, t_out


@pytest.mark.parametrize("name,args,kwargs", CASES)
def test_values_and_gradients_match_torch(name, args, kwargs):
    x, t, e_out, t_out = _run(name, args, kwargs, MASK)
    assert_close(e_out, t_out)
    if not t_out.requires_grad:
        return
    finite = np.isfinite(t_out.detach().numpy())
    weights = np.linspace(0.5, 1.5, t_out.numel()).reshape(t_out.shape) * finite
    (e_out * ember.tensor(weights)).where(ember.tensor(finite), 0.0).sum().backward()
    t_out.where(torch.tensor(finite), 0.0).mul(torch.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[~MASK], 0.0)
    assert_close(x.grad, t.grad.where(torch.tensor(MASK), 0.0))


@pytest.mark.parametrize("name,args,kwargs", [c for c in CASES if c[0] not in INDICES])
def test_gradcheck(name, args, kwargs):
    mask = ember.tensor(MASK | np.eye(3, 4, dtype=bool))  # every row keeps something
    x = ember.tensor(DATA, requires_grad=True)
    assert ember.autograd.gradcheck(lambda a: getattr(M, name)(a, *args, mask=mask, **kwargs),
                                    (x,))


@pytest.mark.parametrize("name", ["sum", "softmax", "var"])
def test_gradgradcheck(name):
    mask = ember.tensor(MASK | np.eye(3, 4, dtype=bool))
    x = ember.tensor(DATA, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda a: getattr(M, name)(a, 1, mask=mask), (x,))


@pytest.mark.parametrize("name,args", [("sum", (1,)), ("prod", (1,)), ("amax", (1,)),
                                       ("amin", (0,)), ("argmax", (1,)), ("cumsum", (1,)),
                                       ("var", (1,)), ("std", ()), ("logsumexp", (1,)),
                                       ("median", (0,))])
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_integer_inputs_give_torch_dtypes(name, args, dtype):
    data = np.arange(12).reshape(3, 4) % 5
    mask = MASK | np.eye(3, 4, dtype=bool)
    e = getattr(M, name)(ember.tensor(data, dtype=getattr(ember, dtype)), *args,
                         mask=ember.tensor(mask))
    t = getattr(torch.masked, name)(torch.tensor(data, dtype=getattr(torch, dtype)), *args,
                                    mask=torch.tensor(mask))
    assert_close(e, t)


@pytest.mark.parametrize("dim", [1, None, (0, 1), [], ()])
@pytest.mark.parametrize("data_dtype,dtype", [("int8", "int32"), ("int8", None), ("bool", None),
                                              ("float64", None), ("float64", "int16"),
                                              ("int64", "float32")])
def test_prod_converts_to_dtype_first_as_torch(dim, data_dtype, dtype):
    # torch.masked.prod casts to dtype, then multiplies: an int32 dtype gives int64 (ember's
    # was int32); and dim=[] (a list) reduces nothing (ember's reduced all dims)
    data = np.arange(12).reshape(3, 4) % 5 - 1
    e = M.prod(ember.tensor(data).to(getattr(ember, data_dtype)), dim, mask=ember.tensor(MASK),
               dtype=dtype and getattr(ember, dtype))
    t = torch.masked.prod(torch.tensor(data).to(getattr(torch, data_dtype)), dim,
                          mask=torch.tensor(MASK), dtype=dtype and getattr(torch, dtype))
    assert_close(e, t)


def test_broadcast_and_integer_masks_and_no_mask():
    x, t = ember.tensor(DATA), torch.tensor(DATA)
    row = np.array([True, False, True, False])
    assert_close(M.sum(x, 1, mask=ember.tensor(row)),
                 torch.masked.sum(t, 1, mask=torch.tensor(row)))
    assert_close(M.mean(x, 0, mask=ember.tensor(MASK.astype(np.int64))),
                 torch.masked.mean(t, 0, mask=torch.tensor(MASK.astype(np.int64))))
    assert_close(M.var(x, 1), torch.masked.var(t, 1))
    assert_close(M.amax(x, dtype=ember.float32), torch.masked.amax(t, dtype=torch.float32))


def test_logaddexp_matches_torch():
    a, b = DATA, DATA[::-1].copy()
    e = M.logaddexp(ember.tensor(a), ember.tensor(b), input_mask=ember.tensor(MASK),
                    other_mask=ember.tensor(MASK[::-1].copy()))
    t = torch.masked.logaddexp(torch.tensor(a), torch.tensor(b), input_mask=torch.tensor(MASK),
                               other_mask=torch.tensor(MASK[::-1].copy()))
    assert_close(e, t)


@pytest.mark.parametrize("call,error,match", [
    (lambda x, m: M.sum(x, 1, mask=m.reshape(1, 3, 4)), IndexError, "more dimensions"),
    (lambda x, m: M.mean(x, 1, mask=m[:, :1].reshape(3)), ValueError,
     r"masked: mask of shape \(3,\) does not broadcast to the input of shape \(3, 4\)"),
    # dims read as a dense reduction's, with its error classes
    (lambda x, m: M.sum(x, (1, -1), mask=m), ShapeError,
     r"masked sum: a dim appears more than once in dims \(1, -1\)"),
    (lambda x, m: M.amax(x, 2, mask=m), IndexOutOfRange,
     r"masked amax: dimension 2 is out of range for a tensor of 2 dimension\(s\)"),
    (lambda x, m: M.softmax(x[0, 0], None, mask=m[0, 0]), IndexOutOfRange,
     "masked softmax: a 0-d input needs dim=0 or dim=-1, got dim=None"),
    (lambda x, m: M.mean(x.to(ember.int64), 1, mask=m), ValueError, "Could not infer"),
    (lambda x, m: M.median(x.to(ember.int64), 1, mask=m), ValueError, "fully masked out"),
    (lambda x, m: M.var(x, 1, unbiased=True, correction=1, mask=m), ValueError, "only one"),
    (lambda x, m: M.amax(x > 0, 1, mask=m), TypeError, "no identity value for ember.bool"),
    # a NumPy or Python operand: a clear error, not AttributeError from inside
    # (each names the function and the argument)
    (lambda x, m: M.sum(x.numpy(), 1, mask=m), ArgumentTypeError,
     "masked sum: input must be an ember.Tensor or a MaskedTensor, got ndarray"),
    (lambda x, m: M.softmax(x, 1, mask=m.numpy()), ArgumentTypeError,
     "masked softmax: mask must be an ember.Tensor or None, got ndarray"),
    (lambda x, m: M.logaddexp(x, 1.0), ArgumentTypeError,
     "masked logaddexp: other must be an ember.Tensor or a MaskedTensor, got float"),
    (lambda x, m: M.logaddexp(x, x, other_mask=[True]), ArgumentTypeError,
     "masked logaddexp: other_mask must be an ember.Tensor or None, got list"),
    (lambda x, m: M.var(x, 1, mask=m.tolist()), ArgumentTypeError,
     "masked var/std: mask must be an ember.Tensor or None, got list"),
    (lambda x, m: M.sum(x, 1.5, mask=m), TypeError, "masked sum: dim must be an int"),
    (lambda x, m: M.mean(x, (0, "1"), mask=m), TypeError, "masked mean: dim must be an int"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(ember.tensor(DATA), ember.tensor(MASK))


def test_numpy_integer_dims():
    x, m = ember.tensor(DATA), ember.tensor(MASK)
    want = torch.masked.sum(torch.tensor(DATA), 1, mask=torch.tensor(MASK))
    assert_close(M.sum(x, np.int64(1), mask=m), want)
    assert_close(M.sum(x, [np.int64(1)], mask=m), want)


def test_vmap_and_jit_see_a_composite():
    x, m = ember.tensor(DATA), ember.tensor(MASK)
    per_row = ember.vmap(lambda r, k: M.mean(r, 0, mask=k))(x, m)
    assert_close(per_row, torch.masked.mean(torch.tensor(DATA), 1, mask=torch.tensor(MASK)))
    compiled = ember.jit.compile(lambda a, k: M.softmax(a, 1, mask=k))
    assert_close(compiled(x, m), torch.masked.softmax(torch.tensor(DATA), 1,
                                                      mask=torch.tensor(MASK)))


@pytest.mark.parametrize("name,args", [("softmax", (1,)), ("var", (1,)), ("normalize", (2.0, 1)),
                                       ("logsumexp", (1,))])
def test_forward_mode_matches_torch(name, args):
    tangent = np.linspace(-1.0, 1.0, DATA.size).reshape(DATA.shape)
    e_mask, t_mask = ember.tensor(MASK), torch.tensor(MASK)
    _, e_tangent = ember.func.jvp(lambda a: getattr(M, name)(a, *args, mask=e_mask),
                                  (ember.tensor(DATA),), (ember.tensor(tangent),))
    _, t_tangent = torch.func.jvp(lambda a: getattr(torch.masked, name)(a, *args, mask=t_mask),
                                  (torch.tensor(DATA),), (torch.tensor(tangent),))
    assert_close(e_tangent, t_tangent)


@pytest.mark.parametrize("name", ["median", "cumsum", "cumprod", "softmax", "log_softmax",
                                  "softmin"])
@pytest.mark.parametrize("dim", [None, (1, 0), [-1]])
def test_one_dim_functions_take_the_first_of_several_dims_as_torch(name, dim):
    e = getattr(M, name)(ember.tensor(DATA), dim, mask=ember.tensor(MASK))
    t = getattr(torch.masked, name)(torch.tensor(DATA), dim, mask=torch.tensor(MASK))
    assert_close(e, t)

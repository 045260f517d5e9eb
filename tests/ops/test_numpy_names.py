"""NumPy's ``axis=``/``keepdims=`` for ``dim``/``keepdim``: taken exactly where PyTorch's
argument parser takes them, with PyTorch's values (ember.ops.numpy_names)."""

import inspect
import warnings

import numpy as np
import pytest
import torch

import ember
from ember.ops.numpy_names import WITHOUT


def _candidates():
    """(namespace name, name) of Ember's public callables with ``dim`` or ``keepdim``."""
    owners = {"ember": ember, "linalg": ember.linalg, "fft": ember.fft,
              "special": ember.special, "Tensor": ember.Tensor}
    for owner_name, owner in owners.items():
        for name in sorted(dir(owner)):
            fn = getattr(owner, name, None)
            if name.startswith("_") or not callable(fn) or isinstance(fn, type):
                continue
            try:
                parameters = inspect.signature(fn).parameters
            except (TypeError, ValueError):
                continue
            for param, alias in (("dim", "axis"), ("keepdim", "keepdims")):
                if param in parameters and alias not in parameters:
                    yield owner_name, name, alias


def _takes(module, owner_name, name, alias):
    """Whether ``module``'s function (or Tensor method) takes keyword ``alias``: any outcome
    but Python's unexpected-keyword TypeError."""
    owner = {"ember": module, "Tensor": module.Tensor}.get(owner_name) or \
        getattr(module, owner_name)
    fn = getattr(owner, name, None)
    if fn is None:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(module.ones(2, 2), **{alias: 0 if alias == "axis" else True})
    except TypeError as error:
        return f"unexpected keyword argument '{alias}'" not in str(error)
    except Exception:  # noqa: BLE001 (a value error of the probe: the keyword was taken)
        return True
    return True


def test_aliases_are_taken_exactly_where_torch_takes_them():
    differ, probed = [], 0
    for owner_name, name, alias in _candidates():
        expected = _takes(torch, owner_name, name, alias)
        if expected is None:  # (no such torch function: Ember's own)
            continue
        probed += 1
        got = _takes(ember, owner_name, name, alias)
        if got != expected and f"{owner_name}.{name}" not in WITHOUT:
            differ.append(f"{owner_name}.{name}({alias}=): torch {expected}, ember {got}")
    assert probed > 150
    assert not differ


def test_size_and_stride_keep_their_frame():
    assert {"Tensor.size", "Tensor.stride"} <= WITHOUT
    assert not hasattr(ember.Tensor.size, "__wrapped__")


@pytest.mark.parametrize("call", [
    lambda m, x: x.sum(axis=1),
    lambda m, x: x.sum(axis=0, keepdims=True),
    lambda m, x: m.sum(x, axis=(0, 1), keepdims=True),
    lambda m, x: x.mean(axis=-1, keepdims=True),
    lambda m, x: x.std(axis=0),
    lambda m, x: m.var_mean(x, axis=1)[0],
    lambda m, x: x.max(axis=0).values,
    lambda m, x: m.max(x, axis=1, keepdims=True)[1],
    lambda m, x: x.argmax(axis=1),
    lambda m, x: x.amax(axis=0, keepdims=True),
    lambda m, x: m.cat([x, x], axis=1),
    lambda m, x: m.stack([x, x], axis=1),
    lambda m, x: x.softmax(axis=1),
    lambda m, x: m.log_softmax(x, axis=0),
    lambda m, x: m.logsumexp(x, axis=1),
    lambda m, x: x.cumsum(axis=1),
    lambda m, x: m.gather(x, axis=1, index=m.tensor([[0, 2], [1, 1], [2, 0]])),
    lambda m, x: x.topk(2, axis=0).values,
    lambda m, x: m.sort(x, axis=0, descending=True).values,
    lambda m, x: x.unsqueeze(axis=0),
    lambda m, x: m.squeeze(x.unsqueeze(1), axis=1),
    lambda m, x: m.diff(x, axis=0),
    lambda m, x: x.index_select(axis=1, index=m.tensor([2, 0])),
    lambda m, x: m.linalg.vector_norm(x, axis=0, keepdims=True),
    lambda m, x: m.special.logsumexp(x, axis=0),
    lambda m, x: m.fft.fft(x, axis=0).real,
    lambda m, x: m.count_nonzero(x > 0, axis=0),
])
def test_values_match_torch(call):
    data = np.random.default_rng(0).standard_normal((3, 3))
    expected = call(torch, torch.tensor(data))
    got = call(ember, ember.tensor(data))
    np.testing.assert_allclose(np.asarray(got.numpy()), expected.numpy(), rtol=1e-12)


def test_out_form_takes_the_aliases_in_its_frame():
    x, out = ember.ones(2, 3), ember.empty(3)
    assert ember.sum(x, axis=0, out=out) is out
    assert out.tolist() == [2.0, 2.0, 2.0]
    assert ember.sum.__wrapped__ is ember.Tensor.sum.__wrapped__  # one op under both forms


@pytest.mark.parametrize("call,match", [
    (lambda x: x.sum(0, axis=1), r"sum\(\): got dim and axis"),
    (lambda x: x.sum(keepdim=True, axis=0, keepdims=False), r"got keepdim and keepdims"),
    # their default values given too (torch's parser refuses them as well)
    (lambda x: x.sum(None, axis=0), r"sum\(\): got dim and axis"),
    (lambda x: ember.mean(x, dim=None, axis=0), r"mean\(\): got dim and axis"),
    (lambda x: ember.sum(x, 0, False, keepdims=True, out=ember.empty(1, 3)),
     r"sum\(\): got keepdim and keepdims"),
    (lambda x: ember.gather(x, index=ember.zeros(1, 3, dtype=ember.int64)),
     r"gather\(\) missing required argument: 'dim'"),
    (lambda x: ember.gather(x, axis=0), r"gather\(\) missing required argument: 'index'"),
])
def test_a_parameter_given_twice_or_not_at_all_is_a_type_error(call, match):
    with pytest.raises(TypeError, match=match):
        call(ember.ones(2, 3))


def test_aliases_trace_under_jit_and_vmap():
    compiled = ember.jit.compile(lambda x: x.sum(axis=1, keepdims=True) * 2)
    x = ember.arange(6.0).reshape(2, 3)
    assert compiled(x).tolist() == [[6.0], [24.0]]
    assert ember.func.vmap(lambda r: r.softmax(axis=0))(x).shape == (2, 3)


def test_a_function_whose_dim_is_behind_a_wrapper_still_takes_numpy_names():
    import functools

    from ember.ops.numpy_names import takes_numpy_names

    def total(input, dim=None):
        return input.sum(dim)

    @functools.wraps(total)
    def wrapped(*args, **kwargs):  # (no dim in its own code: its signature is total's)
        return total(*args, **kwargs)

    assert takes_numpy_names("total", total) and takes_numpy_names("total", wrapped)
    assert not takes_numpy_names("flatten_all", lambda input, start=0: input)


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like"])
def test_like_factories_name_their_tensor_input_as_torch(name):
    # (they named it t: zeros_like(input=t) was a TypeError)
    t = ember.ones(2, 3, dtype=ember.float64)
    out = getattr(ember, name)(input=t)
    assert out.shape == (2, 3) and out.dtype == ember.float64
    assert ember.full_like(input=t, fill_value=2.0).tolist() == [[2.0] * 3] * 2

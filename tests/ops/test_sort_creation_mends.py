"""Sorting flags and creation arguments against PyTorch (mendsort): bool linspace/logspace of
at most one point, bool-only sort/topk flags, full's tensor fill values."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("steps", [0, 1])
@pytest.mark.parametrize("start, end", [(0, 1), (1, 0), (0, 0), (0.5, 3), (-1, 2), (1000, 2000),
                                        (-1000, 1), (1e-4, 2), (True, False)])
@pytest.mark.parametrize("op, base", [("linspace", None), ("logspace", 10), ("logspace", 0),
                                      ("logspace", -1), ("logspace", 0.5)])
def test_bool_linspace_and_logspace_of_at_most_one_point_are_torch_s(steps, start, end, op,
                                                                      base):
    # (one point is start, or base ** start, cast to bool: logspace(0, 1, 1) is [True]; Ember
    # refused bool for any number of steps)
    kwargs = {} if base is None else {"base": base}
    want = getattr(torch, op)(start, end, steps, dtype=torch.bool, **kwargs)
    got = getattr(ember, op)(start, end, steps, dtype=ember.bool, **kwargs)
    assert got.dtype is ember.bool and got.shape == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("op", ["linspace", "logspace"])
def test_bool_linspace_and_logspace_of_two_points_stay_refused(op):
    with pytest.raises(NotImplementedError, match="Bool"):
        getattr(torch, op)(0, 1, 2, dtype=torch.bool)
    with pytest.raises(ember.errors.DTypeError, match="not implemented for bool"):
        getattr(ember, op)(0, 1, 2, dtype=ember.bool)


NOT_BOOLS = [None, 0, 1, 1.0, "yes", np.bool_(True), np.int64(1), "tensor(False)",
             "tensor([True])"]
FLAGS = [
    ("topk", "largest", lambda lib, x, v: lib.topk(x, 2, largest=v)),
    ("topk", "sorted", lambda lib, x, v: x.topk(2, sorted=v)),
    ("sort", "descending", lambda lib, x, v: lib.sort(x, 0, v)),
    ("sort", "descending", lambda lib, x, v: x.sort(descending=v)),
    ("sort", "stable", lambda lib, x, v: lib.sort(x, stable=v)),
    ("argsort", "descending", lambda lib, x, v: lib.argsort(x, descending=v)),
    ("argsort", "stable", lambda lib, x, v: x.argsort(stable=v)),
    ("kthvalue", "keepdim", lambda lib, x, v: lib.kthvalue(x, 1, 0, v)),
    ("median", "keepdim", lambda lib, x, v: lib.median(x, 0, keepdim=v)),
    ("nanmedian", "keepdim", lambda lib, x, v: x.nanmedian(0, keepdim=v)),
    ("mode", "keepdim", lambda lib, x, v: lib.mode(x, 0, keepdim=v)),
]


@pytest.mark.parametrize("op, name, call", FLAGS)
@pytest.mark.parametrize("value", NOT_BOOLS, ids=repr)
def test_sort_flags_take_only_a_python_bool_as_torch(op, name, call, value):
    # (topk(x, 2, largest=0) gave the smallest, sort(descending=None) sorted ascending:
    # PyTorch's parser takes no int, float, string, NumPy bool or tensor for a bool argument)
    def run(lib):
        x = lib.tensor([3.0, 1.0, 2.0])
        v = value
        if isinstance(value, str) and value.startswith("tensor"):
            v = lib.tensor(False) if value == "tensor(False)" else lib.tensor([True])
        return call(lib, x, v)

    if op == "sort" and name == "stable" and value is None:  # (sort's stable is bool?)
        want, got = run(torch), run(ember)
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
        return
    with pytest.raises(TypeError):
        run(torch)
    with pytest.raises(ember.errors.ArgumentTypeError, match=f"{op}\\(\\): argument '{name}' "
                                                            "must be bool"):
        run(ember)


@pytest.mark.parametrize("op, name, call", FLAGS)
@pytest.mark.parametrize("value", [True, False])
def test_sort_flags_still_take_true_and_false(op, name, call, value):
    want = call(torch, torch.tensor([3.0, 1.0, 2.0, 1.0]), value)
    got = call(ember, ember.tensor([3.0, 1.0, 2.0, 1.0]), value)
    for w, g in zip(want if isinstance(want, tuple) else (want,),
                    got if isinstance(got, tuple) else (got,), strict=True):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


FILLS = {
    "one-element 1-D": (lambda lib: lib.tensor([3.0]), "shape \\(1,\\)"),
    "one-element 2-D": (lambda lib: lib.tensor([[3]]), "shape \\(1, 1\\)"),
    "two elements": (lambda lib: lib.tensor([3.0, 4.0]), "shape \\(2,\\)"),
    "requires grad": (lambda lib: lib.tensor(3.0, requires_grad=True), "requires grad"),
    "non-leaf": (lambda lib: lib.tensor(3.0, requires_grad=True) * 2, "requires grad"),
}
FILLERS = {
    "full": (lambda lib, fill, dtype: lib.full((2,), fill, dtype=dtype)),
    "full_like": (lambda lib, fill, dtype: lib.full_like(lib.zeros(2), fill, dtype=dtype)),
    "new_full": (lambda lib, fill, dtype: lib.zeros(2).new_full((2,), fill, dtype=dtype)),
}


@pytest.mark.parametrize("fill", FILLS, ids=str)
@pytest.mark.parametrize("op", FILLERS)
@pytest.mark.parametrize("dtype", [None, "float64"])
def test_full_refuses_a_fill_tensor_torch_reads_as_no_number(fill, op, dtype):
    # (a one-element 1-D fill was read as its number, a fill requiring grad filled a tensor
    # without its graph: PyTorch takes only a 0-d tensor requiring no grad as a number)
    make, shown = FILLS[fill]
    with pytest.raises(TypeError, match="must be Number"):
        FILLERS[op](torch, make(torch), dtype and getattr(torch, dtype))
    with pytest.raises(ember.errors.ArgumentTypeError,
                       match=f"{op}\\(\\): argument 'fill_value' must be a number, not .*{shown}"):
        FILLERS[op](ember, make(ember), dtype and getattr(ember, dtype))


@pytest.mark.parametrize("op", FILLERS)
@pytest.mark.parametrize("dtype", [None, "float64", "int32"])
def test_full_reads_a_detached_zero_dim_fill_as_its_number(op, dtype):
    want = FILLERS[op](torch, torch.tensor(3.5, requires_grad=True).detach(),
                       dtype and getattr(torch, dtype))
    got = FILLERS[op](ember, ember.tensor(3.5, requires_grad=True).detach(),
                      dtype and getattr(ember, dtype))
    assert str(got.dtype) == str(want.dtype).replace("torch", "ember")
    np.testing.assert_array_equal(got.numpy(), want.numpy())

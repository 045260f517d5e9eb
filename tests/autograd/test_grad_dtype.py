"""``Tensor.grad_dtype`` (PyTorch 2.13): a leaf's gradient dtype, its own unless set; backward
and ``autograd.grad`` cast to it, ``.grad =`` checks it, None takes any. Compared with torch."""

import pytest
import torch

import ember


def _both(fn):
    return fn(torch), fn(ember)


def _name(dtype):
    return None if dtype is None else str(dtype).split(".")[1]


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16"])
def test_grad_dtype_defaults_to_the_dtype(dtype):
    t, e = _both(lambda lib: lib.ones(2, dtype=getattr(lib, dtype)).grad_dtype)
    assert _name(t) == _name(e) == dtype


def test_backward_and_grad_cast_to_grad_dtype():
    def run(lib):
        x = lib.ones(2, requires_grad=True)
        x.grad_dtype = lib.float64
        (x * 2).sum().backward()
        (x * 3).sum().backward()
        w = lib.ones(2, requires_grad=True)
        w.grad_dtype = lib.float64
        g, = lib.autograd.grad((w * 2).sum(), w)
        return x.grad.dtype, x.grad.tolist(), g.dtype
    t, e = _both(run)
    assert (_name(t[0]), t[1], _name(t[2])) == (_name(e[0]), e[1], _name(e[2]))
    assert e[1] == [5.0, 5.0]


def test_assigned_grad_checks_grad_dtype_and_none_takes_any():
    for lib in (torch, ember):
        x = lib.ones(2, requires_grad=True)
        x.grad_dtype = lib.float64
        with pytest.raises(RuntimeError, match="grad_dtype"):
            x.grad = lib.ones(2)
        x.grad = lib.ones(2, dtype=lib.float64)
        x.grad_dtype = None
        x.grad = lib.ones(2, dtype=lib.float16)
        assert x.grad_dtype is None and _name(x.grad.dtype) == "float16"
        (x * 2).sum().backward()  # (None: the gradient keeps its own dtype)


def test_grad_dtype_is_a_leaf_attribute():
    for lib in (torch, ember):
        y = lib.ones(2, requires_grad=True) * 2
        with pytest.raises(RuntimeError, match="only be accessed on leaf tensors"):
            _ = y.grad_dtype
        with pytest.raises(RuntimeError, match="only be set on leaf tensors"):
            y.grad_dtype = lib.float64
    with pytest.raises(TypeError, match="gradients are floating or complex"):
        ember.ones(2, requires_grad=True).grad_dtype = ember.int64  # (torch's backward asserts)

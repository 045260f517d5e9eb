"""Tensor attributes and conversions against PyTorch (sweep66b): ``x.type(name)`` takes every
name ``x.type()`` gives and refuses others with a ValueError; ``requires_grad_`` takes only a
bool; ``x.grad = x`` is refused; ``del x.grad`` clears it."""

import numpy as np
import pytest
import torch

import ember

NAMED = ["complex64", "complex128", "uint16", "uint32", "uint64", "float8_e4m3fn",
         "float8_e5m2", "float16", "bfloat16", "bool", "int8"]


@pytest.mark.parametrize("name", NAMED)
def test_type_takes_the_names_type_gives(name):
    mine = ember.zeros(2, dtype=getattr(ember, name)).type()
    theirs = torch.zeros(2, dtype=getattr(torch, name)).type()
    assert mine == theirs.replace("torch.", "ember.")
    for given in (mine, theirs):  # (PyTorch's spelling is read too)
        got = ember.ones(2).type(given)
        assert got.dtype is getattr(ember, name)
        assert str(got.dtype).split(".")[1] == str(torch.ones(2).type(theirs).dtype).split(".")[1]


@pytest.mark.parametrize("name", ["foo", "torch.FooTensor", "torch.x.FloatTensor",
                                  "ember.NotATensor"])
def test_type_refuses_unknown_names_with_value_error_as_torch(name):
    with pytest.raises(ValueError):
        torch.zeros(1).type(name.replace("ember.", "torch."))
    with pytest.raises(ValueError, match=f"type: invalid type '{name}'"):
        ember.zeros(1).type(name)


@pytest.mark.parametrize("value", [1, "yes", None, 1.0])
def test_requires_grad_takes_only_a_bool(value):
    with pytest.raises(TypeError, match="must be bool"):
        torch.zeros(2).requires_grad_(value)
    x = ember.zeros(2)
    with pytest.raises(TypeError, match="requires_grad must be a bool"):
        x.requires_grad_(value)
    assert x.requires_grad is False  # (it stored the object before: 'yes' read back)
    with pytest.raises(TypeError, match="requires_grad must be a bool"):
        x.requires_grad = value


def test_a_tensor_is_not_its_own_grad():
    t = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="own grad"):
        t.grad = t
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="own gradient"):
        x.grad = x
    assert x.grad is None
    x.grad = x.detach()  # another tensor of the same memory is fine, as in PyTorch
    t.grad = t.detach()
    assert x.grad.data_ptr() == x.data_ptr()


def test_del_grad_clears_it():
    t, x = torch.ones(2, requires_grad=True), ember.ones(2, requires_grad=True)
    for y, lib in ((t, torch), (x, ember)):
        y.grad = lib.ones(2)
        del y.grad
        assert y.grad is None
        (y * 3).sum().backward()
        assert y.grad.tolist() == [3.0, 3.0]


@pytest.mark.parametrize("kwargs", [{"foo": 1}, {"non_blocking": 1}, {"async": "yes"}])
def test_type_refuses_unknown_keywords_and_non_bool_flags(kwargs):
    with pytest.raises(TypeError):
        torch.ones(2).type(torch.float64, **kwargs)
    with pytest.raises(TypeError, match="^type: "):
        ember.ones(2).type(ember.float64, **kwargs)


def test_type_takes_async_the_old_name_of_non_blocking():
    assert torch.ones(2).type(torch.float64, **{"async": True}).dtype is torch.float64
    assert ember.ones(2).type(ember.float64, **{"async": True}).dtype is ember.float64


def test_cpu_takes_memory_format():
    t, x = torch.ones(2, 3, 4, 5), ember.ones(2, 3, 4, 5)
    assert x.cpu() is x and x.cpu(memory_format=ember.contiguous_format) is x
    assert t.cpu(memory_format=torch.contiguous_format) is t
    assert x.cpu(memory_format=ember.channels_last).stride() == \
        t.cpu(memory_format=torch.channels_last).stride()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_type_takes_memory_format(dtype):
    t = torch.ones(2, 3, 4, 5).type(getattr(torch, dtype), memory_format=torch.channels_last)
    x = ember.ones(2, 3, 4, 5).type(getattr(ember, dtype), memory_format=ember.channels_last)
    assert x.stride() == t.stride() == (60, 1, 15, 3)
    x = ember.ones(2, 3, 4, 5).type("torch.DoubleTensor", memory_format=ember.channels_last)
    assert x.stride() == (60, 1, 15, 3)


@pytest.mark.parametrize("make", ["zeros(2, {})", "tensor([1.0], {})", "full((2,), 1.0, {})",
                                  "zeros_like(LIB.ones(2), {})", "ones(2).new_zeros(2, {})",
                                  "ones(2).new_tensor([1.0], {})", "arange(2.0, {})",
                                  "rand(2, {})", "randn(2, dtype=LIB.complex64, {})",
                                  "randint(0, 3, (2,), {})", "rand_like(LIB.ones(2), {})",
                                  "randn_like(LIB.ones(2), {})", "randperm(3, {})",
                                  "normal(0.0, 1.0, size=(2,), {})", "logspace(0, 1, 3, {})",
                                  "asarray([1.0], {})"])
@pytest.mark.parametrize("flag", ["1", "'yes'"])
def test_creation_takes_only_a_bool_requires_grad(make, flag):
    code = "LIB." + make.format(f"requires_grad={flag}")
    with pytest.raises(TypeError):
        eval(code.replace("LIB", "torch"), {"torch": torch})
    with pytest.raises(TypeError, match="requires_grad must be a bool"):  # (1 was kept as 1)
        eval(code.replace("LIB", "ember"), {"ember": ember})


def test_factories_read_requires_grad_none_as_false():
    assert torch.zeros(2, requires_grad=None).requires_grad is False
    assert ember.zeros(2, requires_grad=None).requires_grad is False
    assert ember.ones(2).new_zeros(2, requires_grad=None).requires_grad is False


@pytest.mark.parametrize("shape", [(), (3,), (2, 3, 4)])
def test_dense_tensors_answer_the_sparse_and_distributed_questions(shape):
    t, x = torch.zeros(shape), ember.zeros(shape)
    assert (x.sparse_dim(), x.dense_dim(), x.is_distributed()) == \
        (t.sparse_dim(), t.dense_dim(), t.is_distributed())


@pytest.mark.parametrize("left", [1, 2.5, [1.0, 2.0]])
def test_number_or_list_at_tensor_is_pythons_type_error(left):
    # (1 @ x raised a ShapeError, [1., 2.] @ x computed 3.; torch's __rmatmul__ gives way)
    with pytest.raises(TypeError, match="unsupported operand"):
        left @ torch.ones(2)
    with pytest.raises(TypeError, match="unsupported operand"):
        left @ ember.ones(2)
    assert ember.ones(2).__rmatmul__(left) is NotImplemented


def test_array_at_tensor_still_multiplies():
    got = np.ones((3, 2)) @ ember.ones(2)
    assert got.tolist() == [2.0, 2.0, 2.0] and got.dtype is ember.float64


def test_new_tensor_of_a_tensor_warns_as_torch():
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        torch.ones(2).new_tensor(torch.ones(2))
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        got = ember.ones(2).new_tensor(ember.ones(2, requires_grad=True))
    assert got.requires_grad is False and got.is_leaf

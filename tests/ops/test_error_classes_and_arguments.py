"""Bad input raises what a PyTorch user's ``except`` catches, naming the op and the operands:
shape, dtype and index errors are RuntimeErrors as PyTorch's; a non-tensor where a tensor
belongs is PyTorch's TypeError naming the argument; an allocation too large for memory is a
MemoryError and a RuntimeError naming the op, shape and dtype."""

import pytest
import torch

import ember
from ember.errors import AllocationError, DTypeError, IndexOutOfRange, ShapeError
from ember.ops.primitive import Primitive, apply, explain_failure


@pytest.mark.parametrize("call, error, match", [
    (lambda m: m.ones(3, 4) + m.ones(5), ShapeError, r"add: shapes \(3, 4\) and \(5,\)"),
    (lambda m: m.ones(2, 3) @ m.ones(4, 5), ShapeError, r"matmul: \(2, 3\) @ \(4, 5\)"),
    (lambda m: m.nn.functional.conv2d(m.ones(1, 4, 5, 5), m.ones(2, 3, 3, 3)), ShapeError,
     r"conv2d: input has 4 channels but weight expects 3"),
    (lambda m: m.ones(3, dtype=m.int64).softmax(0), DTypeError, r"softmax: .*int64"),
    (lambda m: m.ones(3).gather(0, m.tensor([7])), IndexOutOfRange,
     r"gather: .*index 7 .*size 3"),
])
def test_shape_dtype_and_index_errors_are_runtime_errors_as_in_pytorch(call, error, match):
    with pytest.raises(RuntimeError):
        call(torch)
    with pytest.raises(error, match=match) as caught:
        call(ember)
    assert isinstance(caught.value, RuntimeError)


def test_each_class_keeps_its_python_kind():
    assert issubclass(ShapeError, ValueError) and issubclass(IndexOutOfRange, IndexError)
    assert issubclass(DTypeError, TypeError) and issubclass(DTypeError, RuntimeError)
    # (not a NotImplementedError: fallbacks catching that must not swallow a dtype error)
    assert not issubclass(DTypeError, NotImplementedError)


def test_a_dtype_error_of_an_infer_rule_on_the_meta_device_is_the_ops_own():
    """(meta's fallback for rules that are missing, NotImplementedError, must not swallow a
    DTypeError)"""

    class Refuses(Primitive):
        name = "refuses"

        def infer(self, a):
            raise DTypeError("refuses: float32 is not taken here")

    with pytest.raises(DTypeError, match="refuses: float32"):
        apply(Refuses(), ember.empty(3, device="meta"))


@pytest.mark.parametrize("op, name, kind, call", [
    ("conv2d", "input", "list", lambda m: m.nn.functional.conv2d([1.0], m.ones(1, 1, 1, 1))),
    ("linalg.det", "A", "int", lambda m: m.linalg.det(3)),
    ("softmax", "input", "list", lambda m: m.nn.functional.softmax([1.0], 0)),
    ("abs_", "input", "int", lambda m: m.abs_(3)),
    ("layer_norm", "input", "list", lambda m: m.nn.functional.layer_norm([1.0], (1,))),
    ("dropout", "input", "list", lambda m: m.nn.functional.dropout([1.0])),
    ("gelu", "input", "NoneType", lambda m: m.nn.functional.gelu(None)),
    ("max_pool2d", "input", "list", lambda m: m.nn.functional.max_pool2d([1.0], 2)),
    ("split", "input", "list", lambda m: m.split([1.0, 2.0], 1)),
    ("cross_entropy", "input", "list",
     lambda m: m.nn.functional.cross_entropy([1.0], m.tensor([0]))),
    ("mm", "mat2", "int", lambda m: m.mm(m.ones(2, 2), 3)),
    ("unique", "input", "list", lambda m: m.unique([1, 2])),
])
def test_a_non_tensor_argument_names_the_op_and_argument(op, name, kind, call):
    with pytest.raises((TypeError, AttributeError)):  # (torch's softmax and split: the latter)
        call(torch)
    with pytest.raises(TypeError, match=rf"^{op}\(\): argument '{name}' must be Tensor, "
                                        rf"not {kind}\. Hint"):
        call(ember)


@pytest.mark.parametrize("call, shape", [
    (lambda: ember.zeros(2 ** 62), r"\(4611686018427387904,\) float32"),
    (lambda: ember.empty(2 ** 62, dtype=ember.float64), r"\(4611686018427387904,\) float64"),
    (lambda: ember.ones(2 ** 31, 2 ** 31), r"\(2147483648, 2147483648\) float32"),
    (lambda: ember.arange(2 ** 62), r"\(4611686018427387904,\) int64"),
    (lambda: ember.eye(2 ** 40), r"\(1099511627776, 1099511627776\) float32"),
    # (past NumPy's largest dimension, or a linspace/logspace of 2**62 steps, the bare NumPy
    # ValueError "Maximum allowed dimension exceeded" / "array is too big" leaked)
    (lambda: ember.zeros(2 ** 70), r"\(1180591620717411303424,\) float32"),
    (lambda: ember.empty(2 ** 65), r"\(36893488147419103232,\) float32"),
    (lambda: ember.full((2 ** 70,), 1.0), r"\(1180591620717411303424,\) float32"),
    (lambda: ember.eye(2 ** 70), r"\(1180591620717411303424, 1180591620717411303424\) float32"),
    (lambda: ember.linspace(0, 1, 2 ** 62), r"\(4611686018427387904,\) float32"),
    (lambda: ember.logspace(0, 1, 2 ** 62), r"\(4611686018427387904,\) float32"),
])
def test_an_allocation_past_any_array_names_the_op_shape_and_dtype(call, shape):
    with pytest.raises(AllocationError, match=rf"cannot allocate shape {shape} \(\d+\.\d EiB\)"
                       ) as caught:
        call()
    assert isinstance(caught.value, MemoryError) and isinstance(caught.value, RuntimeError)


def test_a_backend_out_of_memory_stays_a_memory_error_naming_the_op():
    from ember.ops.shape import Reshape

    error = explain_failure(Reshape, (ember.ones(2, 3),), {"shape": (6,)},
                            MemoryError("Unable to allocate 16.0 TiB"))
    assert isinstance(error, AllocationError) and isinstance(error, MemoryError)
    assert str(error).startswith("reshape: cannot allocate its result (inputs: (2, 3) float32)")


def test_the_flat_rnn_functions_name_their_signature():
    with pytest.raises(TypeError, match=r"^gru\(\): takes 9 arguments.*got 2"):
        ember.gru(ember.ones(3, 2, 4), ember.zeros(1, 2, 8))


@pytest.mark.parametrize("module, args", [
    (lambda nn: nn.LSTM(4, 8), lambda m: (m.ones(5, 2, 3),)),
    (lambda nn: nn.GRU(4, 8), lambda m: (m.ones(5, 2, 4), m.ones(1, 3, 8))),
    (lambda nn: nn.GRUCell(4, 8), lambda m: (m.ones(2, 4), m.ones(3, 8))),
])
def test_recurrent_shape_errors_are_runtime_errors_as_in_pytorch(module, args):
    with pytest.raises(RuntimeError):
        module(torch.nn)(*args(torch))
    with pytest.raises(ShapeError, match=r"^(LSTM|GRU|GRUCell): .*(Expected 4, got 3|"
                                         r"got \((1, )?3, 8\)|got \[1, 3, 8\])"):
        module(ember.nn)(*args(ember))


@pytest.mark.parametrize("call, match", [
    (lambda m: m.ones(3, 4).size(5), r"^size: dimension 5 is out of range .*\[-2, 1\]"),
    (lambda m: m.ones(3, 4).stride(-3), r"^stride: dimension -3 is out of range .*\[-2, 1\]"),
    (lambda m: m.tensor(1.0).size(0), r"^size: dimension 0 .* 0-d tensor"),
])
def test_size_and_stride_of_a_missing_dim_name_the_dim_and_range(call, match):
    with pytest.raises(IndexError):
        call(torch)
    with pytest.raises(IndexOutOfRange, match=match):
        call(ember)

"""ember.library.infer_schema gives torch.library.infer_schema's strings and errors."""

from collections.abc import Sequence
from typing import Optional

import pytest
import torch

import ember
from ember.library import infer_schema
from ember.library.schema import parse_schema


def signatures(T):
    """The same signatures over the tensor type ``T`` (ember's or torch's)."""
    def plain(x: T, n: int, a: float = 1.0, flag: bool = False, s: str = "x") -> T: ...

    def optional(x: T, y: Optional[T], o: float | None = None,  # noqa: UP045 - typing's form
                 m: int | None = None) -> T: ...

    def lists(xs: list[T], ns: Sequence[int], fs: list[float] = None, *, k: int = 3) -> T: ...

    def pair(x: T, w: T) -> tuple[T, T]: ...

    def writes(n: int, x: T, out: T) -> None: ...

    def scalar(x: T, s: int | float | bool) -> T: ...

    D = torch.dtype if T is torch.Tensor else ember.dtype

    def cast(x: T, dtype: D, other: D | None = None) -> T: ...

    return [(plain, ()), (optional, ()), (lists, ()), (pair, ()), (writes, ("out",)),
            (writes, "unknown"), (scalar, ()), (cast, ())]


@pytest.mark.parametrize("i", range(len(signatures(ember.Tensor))))
def test_schema_strings_match_torch(i):
    fe, mutates = signatures(ember.Tensor)[i]
    ft, _ = signatures(torch.Tensor)[i]
    assert infer_schema(fe, mutates_args=mutates) == \
        torch.library.infer_schema(ft, mutates_args=mutates)
    assert infer_schema(fe, mutates_args=mutates, op_name="lib::f").startswith("lib::f(")
    text = infer_schema(fe, mutates_args=mutates)
    assert parse_schema(text).text == text  # the string reads back as the same schema


def bad_signatures(T):
    def untyped(x): ...

    def no_return(x: T): ...

    def a_dict(x: dict) -> T: ...

    def varargs(x: T, *rest) -> T: ...

    return [(untyped, ()), (no_return, ()), (a_dict, ()), (varargs, ()), (no_return, ("y",))]


@pytest.mark.parametrize("i", range(5))
def test_schema_errors_match_torch(i):
    fe, mutates = bad_signatures(ember.Tensor)[i]
    ft, _ = bad_signatures(torch.Tensor)[i]
    with pytest.raises(ValueError) as torch_error:
        torch.library.infer_schema(ft, mutates_args=mutates)
    with pytest.raises(ValueError) as ember_error:
        infer_schema(fe, mutates_args=mutates)
    head = str(torch_error.value).split(" Got func")[0].split(" The valid types")[0]
    assert str(ember_error.value).startswith(head.split("<class")[0])


def test_kwarg_only_tensors_are_refused_as_in_torch():
    def f(x: ember.Tensor, *, y: ember.Tensor) -> ember.Tensor: ...

    with pytest.raises(NotImplementedError, match="kwarg-only Tensor args"):
        ember.library.custom_op("emschema::f", f, mutates_args=())


def test_custom_op_with_a_schema_string_and_define_impl():
    def scale(x, a):
        return x * a

    op = ember.library.custom_op("emschema::scale", scale, mutates_args=(),
                                 schema="(Tensor x, float a=2.0) -> Tensor")
    assert op(ember.ones(2)).tolist() == [2.0, 2.0]
    assert op.schema == "emschema::scale(Tensor x, float a=2.0) -> Tensor"
    torch.library.define("emschema::twice", "(Tensor x) -> Tensor")
    twice = ember.library.define("emschema::twice", "(Tensor x) -> Tensor")
    with pytest.raises(ember.errors.OpError, match="no.* kernel registered for cpu"):
        twice(ember.ones(2))
    ember.library.impl("emschema::twice", "cpu", lambda x: x * 2)
    assert ember.ops.emschema.twice(ember.ones(2)).tolist() == [2.0, 2.0]


def test_a_schema_that_disagrees_with_mutates_args_is_refused_as_in_torch():
    def f(x, out):
        pass

    schema = "(Tensor x, Tensor(a!) out) -> ()"
    with pytest.raises(ValueError, match="The schema suggests that the op mutates"):
        torch.library.custom_op("emschema::f", f, mutates_args=(), schema=schema)
    with pytest.raises(ValueError, match="The schema suggests that the op mutates"):
        ember.library.custom_op("emschema::f", f, mutates_args=(), schema=schema)
    op = ember.library.custom_op("emschema::f", f, mutates_args=("out",), schema=schema)
    assert op.schema == "emschema::f(Tensor x, Tensor(a1!) out) -> ()"


@pytest.mark.parametrize("schema", ["Tensor x -> Tensor", "(Tensor x) -> Device",
                                    "(Tensor[]? xs) -> Tensor",
                                    "(Tensor x, float a=oops) -> Tensor"])
def test_unreadable_schema_strings_are_refused(schema):
    with pytest.raises(ValueError, match="schema"):
        parse_schema(schema)


def test_dtype_parameters_named_returns_and_sized_lists_like_torch():
    def top(x, k=(1, 2)):
        return x.max(0).values * k[1], x.argmax(0)

    schema = "(Tensor x, int[2] k=[1, 2]) -> (Tensor values, Tensor indices)"
    torch.library.define("emschema::top", schema)
    torch.library.impl("emschema::top", "cpu", top)
    ember.library.define("emschema::top", schema)
    ember.library.impl("emschema::top", "cpu", top)
    x = [[1.0, 5.0], [3.0, 2.0]]
    for got, want in zip(ember.ops.emschema.top(ember.tensor(x), [1, 3]),
                         torch.ops.emschema.top(torch.tensor(x), [1, 3])):
        assert got.tolist() == want.tolist()

    @ember.library.custom_op("emschema::cast", mutates_args=())
    def cast(x: ember.Tensor, dtype: ember.dtype) -> ember.Tensor:
        return x.to(dtype).clone()

    assert cast.schema == "emschema::cast(Tensor x, ScalarType dtype) -> Tensor"
    assert cast(ember.ones(2), ember.int32).dtype is ember.int32
    with pytest.raises(ember.errors.OpError, match="Expected a value of type 'ScalarType'"):
        cast(ember.ones(2), "int32")

"""ember.library.infer_schema gives torch.library.infer_schema's strings and errors."""

from collections.abc import Sequence
from typing import Optional

import pytest
import torch

import ember
from ember.library import infer_schema


def signatures(T):
    """The same signatures over the tensor type ``T`` (ember's or torch's)."""
    def plain(x: T, n: int, a: float = 1.0, flag: bool = False, s: str = "x") -> T: ...

    def optional(x: T, y: Optional[T], o: float | None = None,  # noqa: UP045 - typing's form
                 m: int | None = None) -> T: ...

    def lists(xs: list[T], ns: Sequence[int], fs: list[float] = None, *, k: int = 3) -> T: ...

    def pair(x: T, w: T) -> tuple[T, T]: ...

    def writes(n: int, x: T, out: T) -> None: ...

    def scalar(x: T, s: int | float | bool) -> T: ...

    return [(plain, ()), (optional, ()), (lists, ()), (pair, ()), (writes, ("out",)),
            (writes, "unknown"), (scalar, ())]


@pytest.mark.parametrize("i", range(len(signatures(ember.Tensor))))
def test_schema_strings_match_torch(i):
    fe, mutates = signatures(ember.Tensor)[i]
    ft, _ = signatures(torch.Tensor)[i]
    assert infer_schema(fe, mutates_args=mutates) == \
        torch.library.infer_schema(ft, mutates_args=mutates)
    assert infer_schema(fe, mutates_args=mutates, op_name="lib::f").startswith("lib::f(")


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

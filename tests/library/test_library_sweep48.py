"""ember.library against torch.library where a ported extension met a different or unclear
error: a backward returning a non-tensor, a failed opcheck check whose exception has no text,
schema types PyTorch has and Ember's custom ops lack, and unsupported type hints."""

from typing import Optional

import pytest
import torch

import ember
from ember import Tensor
from ember.library.schema import parse_schema


def _doubling(name: str):
    @ember.library.custom_op(f"sweep48::{name}", mutates_args=())
    def op(x: Tensor) -> Tensor:
        return x * 2

    op.register_fake(lambda x: ember.empty_like(x))
    return op


@pytest.mark.parametrize("bad", [3.0, "a", [None]], ids=["float", "str", "list"])
def test_backward_returning_a_non_tensor_names_op_and_argument(bad):
    # torch: RuntimeError "expected Variable or None (got float)"; Ember raised
    # AttributeError "'float' object has no attribute 'detach'" from the engine
    op = _doubling("bad_grad")
    op.register_autograd(lambda ctx, g: bad)
    x = ember.randn(3, requires_grad=True)
    with pytest.raises(ember.errors.GradError, match=r"sweep48::bad_grad: the backward returned "
                       rf"{type(bad).__name__} as the gradient of 'x'.*Tensor or None"):
        op(x).sum().backward()

    t = torch.library.custom_op("sweep48::bad_grad", lambda x: x * 2, mutates_args=(),
                                schema="(Tensor x) -> Tensor")
    t.register_autograd(lambda ctx, g: bad)
    with pytest.raises(RuntimeError, match="expected Variable or None"):
        t(torch.randn(3, requires_grad=True)).sum().backward()


def test_opcheck_names_an_exception_without_text():
    # a vmap rule's bare `assert` failed opcheck with "test_vmap failed with " and nothing more
    op = _doubling("bare_assert")

    @op.register_vmap
    def _(info, in_dims, x):
        raise AssertionError  # (a bare assert in user code: no text)

    with pytest.raises(ember.library.OpCheckError,
                       match=r"test_vmap failed with AssertionError"):
        ember.library.opcheck(op, (ember.randn(3),), test_utils="test_vmap")


@pytest.mark.parametrize("schema, what", [
    ("(Tensor x, Tensor?[] ys) -> Tensor", r"'Tensor\?\[\]' .*not supported by Ember's custom"),
    ("(Tensor x, Device d) -> Tensor", r"'Device' .*not supported by Ember's custom"),
    ("(Tensor x, Layout l) -> Tensor", r"'Layout' .*not supported by Ember's custom"),
    ("(Tensor(a) x) -> Tensor(a)", r"returns a view of an input.*do not support"),
    ("(Tensor(a!) out, Tensor x) -> Tensor(a!)", r"returns a view of an input.*do not support"),
    ("(Tensor x) -> Tensor[]", r"'Tensor\[\]' return.*not supported"),
])
def test_schema_types_torch_has_are_named_not_unreadable(schema, what):
    torch.library.define(f"sweep48::s{abs(hash(schema)) % 10**6}", schema)  # torch reads them
    with pytest.raises(ValueError, match=what):
        parse_schema(schema)


def test_unreadable_schema_argument_still_says_so():
    with pytest.raises(ValueError, match="cannot read the argument 'Tensor'"):
        parse_schema("(Tensor) -> Tensor")


def test_unsupported_hint_lists_the_valid_types_as_torch():
    def tupled(x: Tensor, k: tuple[int, int]) -> Tensor: ...

    def optional_items(x: Tensor, ys: list[Optional[Tensor]]) -> Tensor: ...  # noqa: UP045

    with pytest.raises(ValueError, match=r"unsupported type tuple\[int, int\]\. We do not "
                       r"support Tuple inputs.*list\[int\]\. The valid types are: Tensor, "):
        ember.library.infer_schema(tupled, mutates_args=())
    with pytest.raises(ValueError, match=r"The valid types are: Tensor, Optional\[Tensor\]"):
        ember.library.infer_schema(optional_items, mutates_args=())


def test_meta_call_without_fake_rule_names_the_meta_device():
    @ember.library.custom_op("sweep48::meta_nofake", mutates_args=())
    def op(x: Tensor) -> Tensor:
        return x * 2

    with pytest.raises(ember.errors.OpError, match="no fake impl registered.*meta device"):
        op(ember.empty(3, device="meta"))


def test_dtype_defaults_as_torch():
    # torch: infer_schema writes "ScalarType dt=float32"; the op's own schema prints the
    # number ("ScalarType dt=7"); Ember refused the default and could not read either string
    def e(x: Tensor, dt: ember.dtype = ember.float64) -> Tensor:
        return x.to(dt)

    def t(x: torch.Tensor, dt: torch.dtype = torch.float64) -> torch.Tensor: ...

    text = torch.library.infer_schema(t, mutates_args=())
    assert ember.library.infer_schema(e, mutates_args=()) == text == \
        "(Tensor x, ScalarType dt=float64) -> Tensor"
    op = ember.library.custom_op("sweep48::to_dtype", e, mutates_args=())
    assert op(ember.ones(2)).dtype is ember.float64
    for written in (text, "(Tensor x, ScalarType dt=7) -> Tensor",
                    "(Tensor x, ScalarType dt=torch.float64) -> Tensor"):
        assert parse_schema(written).params[1].default is ember.float64
    assert parse_schema("(Tensor x, ScalarType? dt=None) -> Tensor").params[1].default is None
    with pytest.raises(ValueError, match="cannot read the dtype default 'float99'"):
        parse_schema("(Tensor x, ScalarType dt=float99) -> Tensor")

"""Overload packets under transforms, lookup of a packet, and schema errors (review48d)."""

import pytest

import ember
from ember.errors import ArgumentError, GradError, OpError
from ember.jit.sources import TraceError


def _packet(ns):
    """``ns::sh``: a float overload (100) and a Tensor one (200), told apart by the result."""
    ember.library.define(f"{ns}::sh", "(Tensor x, float s) -> Tensor")
    ember.library.impl(f"{ns}::sh", "cpu", lambda x, s: x * 0 + 100)
    ember.library.define(f"{ns}::sh.Tensor", "(Tensor x, Tensor s) -> Tensor")
    ember.library.impl(f"{ns}::sh.Tensor", "cpu", lambda x, s: x * 0 + 200)
    for op in (f"{ns}::sh", f"{ns}::sh.Tensor"):
        ember.library.register_fake(op, lambda x, s: ember.empty_like(x))
    return getattr(ember.ops, ns).sh


def test_packet_picks_the_same_overload_under_transforms():
    # under vmap the default overload's item() error was swallowed and the Tensor overload
    # ran (200, eager 100); now jit and vmap both raise their item() error, as a single op
    sh = _packet("mend48pk")
    x, s = ember.ones(2), ember.tensor(2.0)
    assert sh(x, s).tolist() == [100.0, 100.0]
    with pytest.raises(TraceError, match=r"item\(\)"):
        ember.jit.compile(lambda a, b: sh(a, b))(x, s)
    with pytest.raises(OpError, match=r"vmap: item\(\)"):
        ember.func.vmap(lambda a, b: sh(a, b))(ember.ones(3, 2), ember.ones(3))
    # a value that is no one-element tensor per sample goes to .Tensor in every mode
    s2 = ember.ones(2)
    assert sh(x, s2).tolist() == [200.0, 200.0]
    assert ember.jit.compile(lambda a, b: sh(a, b))(x, s2).tolist() == [200.0, 200.0]
    assert ember.func.vmap(lambda a, b: sh(a, b))(ember.ones(3, 2), ember.ones(3, 2)).tolist() \
        == [[200.0, 200.0]] * 3
    # an unbatched one-element tensor under vmap is read, as in eager
    assert ember.func.vmap(lambda a: sh(a, s))(ember.ones(3, 2)).tolist() == [[100.0] * 2] * 3


def test_lookup_of_a_packet():
    # a packet with only '.Tensor' raised "'ns::sh' is not a custom op"; one with several
    # silently meant its default
    ember.library.define("mend48lk::one.Tensor", "(Tensor x, Tensor s) -> Tensor")
    ember.library.impl("mend48lk::one.Tensor", "cpu", lambda x, s: x * s)
    one = ember.ops.mend48lk.one
    ember.library.register_fake(one, lambda x, s: ember.empty_like(x))
    assert ember.library.registry.lookup(one) is one.Tensor
    ember.library.opcheck(one, (ember.ones(2), ember.ones(2)))
    sh = _packet("mend48lk")
    with pytest.raises(ArgumentError, match=r"overloads \['default', 'Tensor'\]; pass one"):
        ember.library.register_fake(sh, lambda x, s: ember.empty_like(x))
    with pytest.raises(ArgumentError, match="pass one"):
        ember.library.opcheck(sh, (ember.ones(2), 1.0))


def test_schema_errors_are_argument_errors():
    with pytest.raises(ArgumentError, match="schema"):
        ember.library.define("mend48sc::bad", "(Tensor x, Device d) -> Tensor")

    def f(x: ember.Tensor, y: dict) -> ember.Tensor: ...

    with pytest.raises(ArgumentError, match="infer_schema"):
        ember.library.infer_schema(f, mutates_args=())


def test_optional_list_gradient_count_names_items():
    @ember.library.custom_op("mend48gr::opt", mutates_args=())
    def op(x: ember.Tensor, ys: list[ember.Tensor | None]) -> ember.Tensor:
        return x.clone()

    op.register_autograd(lambda ctx, g: (g, [None]))
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(GradError, match=r"'ys', which has 2 items in this call \(None ones"):
        op(x, [ember.ones(2), None]).sum().backward()

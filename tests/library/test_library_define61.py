"""sweep61i: defining an op's name twice, and a Library's ops going with it, as torch 2.13
(Ember replaced the earlier op silently, and kept a freed Library's ops)."""

import gc

import pytest
import torch

import ember


@pytest.mark.parametrize("lib", [torch.library, ember.library])
def test_define_an_existing_name_raises_as_torch(lib):
    ns = f"define61{'t' if lib is torch.library else 'e'}"
    lib.define(f"{ns}::f", "(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="with the same name and overload name multiple"):
        lib.define(f"{ns}::f", "(Tensor x, Tensor y) -> Tensor")
    with pytest.raises(RuntimeError, match="with the same name and overload name multiple"):
        lib.custom_op(f"{ns}::f", lambda x: x, mutates_args=(), schema="(Tensor x) -> Tensor")

    @lib.custom_op(f"{ns}::g", mutates_args=())
    def g(x: (torch if lib is torch.library else ember).Tensor) -> \
            (torch if lib is torch.library else ember).Tensor:
        return x + 1

    with pytest.raises(RuntimeError, match="with the same name and overload name multiple"):
        lib.define(f"{ns}::g", "(Tensor x) -> Tensor")
    lib.define(f"{ns}::g.Tensor", "(Tensor x, Tensor y) -> Tensor")  # (an overload: a new name)


@pytest.mark.parametrize("T", [torch, ember])
def test_library_kinds_and_lifetime_as_torch(T):
    ns = f"lib61{T.__name__}"

    def scoped():
        lib = T.library.Library(ns, "FRAGMENT")
        lib.define("f(Tensor x) -> Tensor")
        lib.impl("f", lambda x: x * 2, "CPU")
        return getattr(T.ops, ns).f(T.ones(1)).tolist()

    assert scoped() == scoped() == [2.0]  # (the op goes with its Library: defined again)
    gc.collect()
    assert not hasattr(getattr(T.ops, ns), "f")
    lib = T.library.Library(ns + "d", "DEF")
    lib.define("g(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="Only a single TORCH_LIBRARY"):
        T.library.Library(ns + "d", "DEF")
    fragment = T.library.Library(ns + "d", "FRAGMENT")
    with pytest.raises(RuntimeError, match="same name and overload name"):
        fragment.define("g(Tensor x) -> Tensor")
    lib._destroy()
    assert not hasattr(getattr(T.ops, ns + "d"), "g")
    T.library.Library(ns + "d", "DEF").define("g(Tensor x) -> Tensor")  # (free again)


@pytest.mark.parametrize("T", [torch, ember])
def test_impl_default_key_and_legacy_library_form_as_torch(T):
    # Ember refused "default" (torch's every-device key) and impl(lib, name, key)
    ns = f"impl61{T.__name__}"
    T.library.define(f"{ns}::f", "(Tensor x) -> Tensor")
    op = getattr(T.ops, ns).f
    T.library.impl(f"{ns}::f", "default", lambda x: x * 5)
    results = [op(T.ones(1)).tolist()]
    lib = T.library.Library(ns, "IMPL")
    T.library.impl(lib, "f", "CPU")(lambda x: x * 7)
    results.append(op(T.ones(1)).tolist())
    T.library.impl(f"{ns}::f", ["cpu", "default"], lambda x: x * 8)  # (each key gets it)
    results.append(op(T.ones(1)).tolist())
    assert results == [[5.0], [7.0], [8.0]]


@pytest.mark.parametrize("T", [torch, ember])
def test_impl_before_define_as_torch(T):
    # Ember raised "'ns::f' is not a custom op defined with ember.library.custom_op"
    ns = f"pending61{T.__name__}"
    T.library.impl(f"{ns}::f", "cpu", lambda x: x * 9)
    impl_lib = T.library.Library(ns, "IMPL")
    impl_lib.impl("g", lambda x: x * 4, "CompositeExplicitAutograd")
    T.library.define(f"{ns}::f", "(Tensor x) -> Tensor")
    lib = T.library.Library(ns, "FRAGMENT")
    lib.define("g(Tensor x) -> Tensor")
    ops = getattr(T.ops, ns)
    assert ops.f(T.ones(1)).tolist() == [9.0] and ops.g(T.ones(1)).tolist() == [4.0]


@pytest.mark.parametrize("T", [torch, ember])
def test_parenthesized_single_return_is_one_tensor_as_torch(T):
    # Ember read "-> (Tensor)" as a tuple of one (the kernel had to return (x,), the call
    # gave a tuple); torch reads it as one Tensor, and "-> ((Tensor))" as the tuple of one
    ns = f"ret61{T.__name__}"
    T.library.define(f"{ns}::one", "(Tensor x) -> (Tensor)")
    T.library.impl(f"{ns}::one", "cpu", lambda x: x + 1)
    assert getattr(T.ops, ns).one(T.ones(1)).tolist() == [2.0]
    T.library.define(f"{ns}::tup", "(Tensor x) -> ((Tensor))")
    T.library.impl(f"{ns}::tup", "cpu", lambda x: (x + 1,))
    out = getattr(T.ops, ns).tup(T.ones(1))
    assert isinstance(out, tuple) and len(out) == 1


def test_one_tuple_schema_text_as_torch():
    def f(x: ember.Tensor) -> tuple[ember.Tensor]: ...

    def g(x: torch.Tensor) -> tuple[torch.Tensor]: ...

    assert ember.library.infer_schema(f, mutates_args=()) == \
        torch.library.infer_schema(g, mutates_args=()) == "(Tensor x) -> ((Tensor))"


@pytest.mark.parametrize("T", [torch, ember])
def test_optional_tensor_return_in_a_schema_string_as_torch(T):
    # Ember refused "-> (Tensor, Tensor?)" ("the returns ... are not supported")
    ns = f"opt61{T.__name__}"
    T.library.define(f"{ns}::f", "(Tensor x, bool b) -> (Tensor, Tensor?)")
    T.library.impl(f"{ns}::f", "cpu", lambda x, b: (x + 1, x * 2 if b else None))
    T.library.register_fake(f"{ns}::f", lambda x, b: (T.empty_like(x),
                                                      T.empty_like(x) if b else None))
    seen = []

    def backward(ctx, g, g_opt):
        seen.append(g_opt is None)
        return g + (0 if g_opt is None else 2 * g_opt), None

    T.library.register_autograd(f"{ns}::f", backward)
    f = getattr(T.ops, ns).f
    x = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    a, b = f(x, True)
    (a.sum() + b.sum()).backward()
    assert x.grad.tolist() == [3.0, 3.0] and b.tolist() == [2.0, 4.0]
    a, none = f(x.detach(), False)
    assert none is None and a.tolist() == [2.0, 3.0]
    assert seen == [False]


def _plus(T, name, k):
    """The custom op ``name`` of torch or Ember (``T``): x + k."""
    @T.library.custom_op(name, mutates_args=())
    def f(x: T.Tensor) -> T.Tensor:
        return x + k

    return f


@pytest.mark.parametrize("T", [torch, ember])
def test_a_kept_handle_calls_the_op_defined_again_as_torch(T):
    # Ember's earlier handle ran the earlier op (x + 1: 2.0); torch's runs the new one
    old = _plus(T, f"again61{T.__name__}::f", 1)
    new = _plus(T, f"again61{T.__name__}::f", 2)
    assert old(T.ones(1)).tolist() == new(T.ones(1)).tolist() == [3.0]


@pytest.mark.parametrize("T", [torch, ember])
def test_registering_through_a_kept_handle_of_an_op_defined_again_raises(T):
    # (mend61lib, review61e #4: Ember accepted these and no call ever used them; torch 2.13
    # raises for register_kernel and register_vmap, and ignores the other two silently)
    old, new = _plus(T, f"kept61{T.__name__}::f", 1), _plus(T, f"kept61{T.__name__}::f", 2)
    registrations = {"register_kernel": lambda: old.register_kernel("cpu", lambda x: x + 10),
                     "register_vmap": lambda: old.register_vmap(lambda info, dims, x: (x, 0))}
    if T is ember:
        registrations.update(register_fake=lambda: old.register_fake(ember.empty_like),
                             register_autograd=lambda: old.register_autograd(lambda c, g: g))
    for register in registrations.values():
        with pytest.raises(AssertionError, match="Library object has been destroyed"):
            register()
    if T is ember:
        with pytest.raises(ember.errors.OpError, match=r"register_kernel: .* defined again .*"
                                                       r"Hint: register on the new op, "
                                                       r"ember.ops.kept61ember.f"):
            old.register_kernel("cpu")
        new.register_kernel("cpu", lambda x: x + 10)  # (the new handle's registrations reach
        assert old(T.zeros(1)).tolist() == new(T.zeros(1)).tolist() == [10.0]  # both)

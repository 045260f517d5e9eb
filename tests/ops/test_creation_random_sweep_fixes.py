"""Creation and random ops against PyTorch: cases a differential sweep found diverging (silent
wrap-arounds, lost signs and dtypes, missing arguments), each checked against torch."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import ShapeError

torch.set_num_threads(1)


# -- random -----------------------------------------------------------------------------------
@pytest.mark.parametrize("low, high, dtype", [
    (-3, 3, "uint8"), (0, 257, "uint8"), (0, 2 ** 40, "int16"), (0, 3, "bool"),
    (0, 70000, "float16"), (-2 ** 63, 0, "int32"),
])
def test_randint_out_of_dtype_bounds_raises_like_torch(low, high, dtype):
    with pytest.raises(RuntimeError, match="out of bounds"):
        torch.randint(low, high, (3,), dtype=getattr(torch, dtype))
    with pytest.raises(ValueError, match=f"randint: .* is out of bounds for {dtype}"):
        ember.randint(low, high, (3,), dtype=getattr(ember, dtype))


@pytest.mark.parametrize("low, high, dtype", [(0, 256, "uint8"), (-128, 128, "int8"),
                                              (0, 2, "bool"), (0, 2049, "float16")])
def test_randint_at_the_dtype_bounds_draws_inside_them(low, high, dtype):
    t = torch.randint(low, high, (2000,), dtype=getattr(torch, dtype))
    e = ember.randint(low, high, (2000,), dtype=getattr(ember, dtype))
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    v = e.to(ember.float64).numpy()
    assert v.min() >= low and v.max() <= high - 1


def test_randperm_past_the_dtype_raises_like_torch():
    with pytest.raises(RuntimeError):
        torch.randperm(300, dtype=torch.uint8)
    with pytest.raises(ValueError, match="randperm: to - 1 = 299 is out of bounds for uint8"):
        ember.randperm(300, dtype=ember.uint8)
    assert sorted(ember.randperm(256, dtype=ember.uint8).tolist()) == list(range(256))


def test_random_fill_bounds_follow_torch():
    # beyond bfloat16's exact integers: torch warns and draws; outside its range: an error
    for lib in (torch, ember):
        with pytest.warns(UserWarning):
            x = lib.zeros(100, dtype=lib.bfloat16).random_(0, 300)
        assert float(x.float().max()) <= 300
    with pytest.raises(RuntimeError):
        torch.zeros(3, dtype=torch.int8).random_(0, 300)
    with pytest.raises(ValueError, match="random_: to - 1 = 299 is out of bounds for int8"):
        ember.zeros(3, dtype=ember.int8).random_(0, 300)


@pytest.mark.parametrize("fn", ["rand", "randn"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_empty_complex_draws(fn, dtype):
    t = getattr(torch, fn)(0, 3, dtype=getattr(torch, dtype))
    e = getattr(ember, fn)(0, 3, dtype=getattr(ember, dtype))
    assert tuple(e.shape) == tuple(t.shape) and str(e.dtype)[6:] == str(t.dtype)[6:]


@pytest.mark.parametrize("call", [
    lambda m: m.randint(5, (2,), dtype=m.float32, requires_grad=True),
    lambda m: m.randperm(3, dtype=m.float64, requires_grad=True),
    lambda m: m.normal(0.0, 1.0, (2,), requires_grad=True),
    lambda m: m.rand_like(m.zeros(2), requires_grad=True),
    lambda m: m.randn_like(m.zeros(2), requires_grad=True),
    lambda m: m.randint_like(m.zeros(2), 0, 5, requires_grad=True),
])
def test_random_factories_take_requires_grad(call):
    t, e = call(torch), call(ember)
    assert e.requires_grad == t.requires_grad is True and e.is_leaf
    assert tuple(e.shape) == tuple(t.shape)


def test_random_like_arguments_as_in_torch():
    g = ember.Generator().manual_seed(1)
    a = ember.randint_like(ember.zeros(5, dtype=ember.int32), 10, generator=g)
    b = ember.randint_like(ember.zeros(5, dtype=ember.int32), 10,
                           generator=ember.Generator().manual_seed(1))
    assert a.dtype is ember.int32 and a.tolist() == b.tolist()
    assert ember.rand_like(ember.zeros(2), device="cpu").device.type == "cpu"
    x = ember.zeros(2, 3, 4, 5).permute(0, 2, 3, 1)
    r = ember.randn_like(x, requires_grad=True)
    assert r.stride() == torch.randn_like(torch.zeros(2, 3, 4, 5).permute(0, 2, 3, 1)).stride()
    for fn in ("rand_like", "zeros_like"):
        with pytest.raises(TypeError):
            getattr(torch, fn)([1.0])
        with pytest.raises(TypeError, match=f"{fn}: input must be a Tensor"):
            getattr(ember, fn)([1.0])


def test_randint_high_keyword():
    t = torch.randint(high=5, size=(100,))
    e = ember.randint(high=5, size=(100,))
    assert e.dtype is ember.int64 and tuple(e.shape) == tuple(t.shape)
    assert 0 <= int(e.min()) and int(e.max()) < 5


@pytest.mark.parametrize("dtype", ["int64", "bool", "uint8", "float64"])
def test_bernoulli_with_p_on_any_dtype(dtype):
    for lib in (torch, ember):
        x = lib.zeros(50, dtype=getattr(lib, dtype))
        out = lib.bernoulli(x, 1.0)
        assert str(out.dtype).split(".")[-1] == dtype and bool((out == 1).all())
        filled = x.bernoulli_(0.0)
        assert filled is x and bool((x == 0).all())


def test_bernoulli_fill_with_a_probability_tensor():
    p = [0.0, 1.0, 0.0]
    for lib in (torch, ember):
        x = lib.full((4, 3), 7.0).bernoulli_(lib.tensor(p))  # broadcast over the rows
        np.testing.assert_array_equal(x.numpy(), np.tile(p, (4, 1)))
        y = lib.zeros(2, 3, dtype=lib.int64).bernoulli_(lib.tensor(p, dtype=lib.float64))
        assert y.dtype == lib.int64 and y.tolist() == [[0, 1, 0]] * 2
    with pytest.raises(RuntimeError):
        torch.zeros(3).bernoulli_(torch.full((2, 3), 0.5))
    with pytest.raises(ShapeError, match="cannot expand shape"):
        ember.zeros(3).bernoulli_(ember.full((2, 3), 0.5))


def test_bernoulli_output_follows_a_grad_input_with_zero_gradient():
    for lib in (torch, ember):
        p = lib.full((3,), 0.5, requires_grad=True)
        out = lib.bernoulli(p)
        assert out.requires_grad
        out.sum().backward()
        assert p.grad.tolist() == [0.0, 0.0, 0.0]


def test_uniform_fill_refuses_an_infinite_range():
    with pytest.raises(RuntimeError):
        torch.zeros(2).uniform_(0, float("inf"))
    with pytest.raises(ValueError, match="uniform_: to=inf is out of bounds"):
        ember.zeros(2).uniform_(0, float("inf"))


# -- creation ---------------------------------------------------------------------------------
def _dtype_name(t):
    return str(t.dtype).split(".")[-1]


@pytest.mark.parametrize("make", [
    lambda m: [np.array([1.0, 2.0]), np.array([3.0, 4.0])],
    lambda m: [[np.float64(1.5)], [2.0]],
    lambda m: [np.float32(1.5), 2],
    lambda m: [m.tensor(1.0, dtype=m.float64), 1.5],
    lambda m: [1j, np.float64(2.0)],
    lambda m: [1.5, 2, True],
    lambda m: [np.float16(1.0), 2.5],
    lambda m: [[], []],
    lambda m: [()],
])
@pytest.mark.parametrize("default", ["float32", "float64"])
def test_tensor_infers_dtype_from_numpy_and_tensor_leaves(make, default):
    out = {}
    for lib in (torch, ember):
        lib.set_default_dtype(getattr(lib, default))
        try:
            out[lib] = lib.tensor(make(lib))
        finally:
            lib.set_default_dtype(lib.float32)
    assert _dtype_name(out[ember]) == _dtype_name(out[torch])
    np.testing.assert_allclose(out[ember].numpy(), out[torch].numpy())


def test_as_tensor_shares_numpy_memory_when_dtype_matches():
    for lib in (torch, ember):
        a = np.zeros(3, dtype=np.float32)
        same = lib.as_tensor(a, dtype=lib.float32)
        other = lib.as_tensor(a, dtype=lib.float64)
        a[0] = 7
        assert float(same[0]) == 7.0 and float(other[0]) == 0.0


def test_tensor_refuses_strings_with_any_dtype():
    for data in ("abc", ["a"]):
        with pytest.raises((TypeError, ValueError)):
            torch.tensor(data, dtype=torch.bool)
        with pytest.raises(TypeError, match="tensor: non-numeric data"):
            ember.tensor(data, dtype=ember.bool)


@pytest.mark.parametrize("dtype", [None, "float16", "float64", "complex64"])
def test_full_keeps_the_sign_of_negative_zero(dtype):
    t = torch.full((3,), -0.0, dtype=None if dtype is None else getattr(torch, dtype))
    e = ember.full((3,), -0.0, dtype=None if dtype is None else getattr(ember, dtype))
    np.testing.assert_array_equal(np.signbit(e.numpy().real), np.signbit(t.numpy().real))
    assert np.signbit(ember.full_like(ember.ones(2), -0.0).numpy()).all()


@pytest.mark.parametrize("args", [(-2.5, 2.5), (2.5,), (0, 5, 1.5), (10, 0.5, -2.5),
                                  (np.float32(0.1),), (0, 7, 2), (5, 0, -1)])
def test_arange_with_an_int64_dtype_truncates_its_arguments_like_torch(args):
    t = torch.arange(*args, dtype=torch.int64)
    e = ember.arange(*args, dtype=ember.int64)
    assert e.dtype is ember.int64 and e.tolist() == t.tolist()


def test_arange_step_truncated_to_zero_is_an_error():
    with pytest.raises(ValueError, match="step must be nonzero"):
        torch.arange(0, 1, 0.5, dtype=torch.int64)
    with pytest.raises(ValueError, match="arange: step 0.5 truncates to 0 in int64"):
        ember.arange(0, 1, 0.5, dtype=ember.int64)


@pytest.mark.parametrize("dtype", ["float16", "float64", "int32"])
def test_arange_and_range_take_tensor_bounds(dtype):
    t = torch.arange(torch.tensor(1), torch.tensor(5), dtype=getattr(torch, dtype))
    e = ember.arange(ember.tensor(1), ember.tensor(5), dtype=getattr(ember, dtype))
    assert _dtype_name(e) == _dtype_name(t) and e.tolist() == t.tolist()
    with pytest.warns(UserWarning):
        r = ember.range(ember.tensor(0), ember.tensor(2))
    assert r.tolist() == [0.0, 1.0, 2.0]
    assert ember.arange(end=3).tolist() == torch.arange(end=3).tolist()


@pytest.mark.parametrize("start, end, base, dtype", [
    (1 + 1j, 2, 10.0, None), (0, 1j, 2.0, None), (0, 1, -2.0, "complex64"),
    (-1.5, 2.5, np.e, "complex128"), (0, 2, 10.0, None), (0, 3, 2, "float64"),
])
def test_logspace_with_complex_ends_or_dtype(start, end, base, dtype):
    t = torch.logspace(start, end, 5, base=base,
                       dtype=None if dtype is None else getattr(torch, dtype))
    e = ember.logspace(start, end, 5, base=base,
                       dtype=None if dtype is None else getattr(ember, dtype))
    assert _dtype_name(e) == _dtype_name(t)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty", "rand", "randn"])
def test_factories_take_size_as_a_keyword(fn):
    t = getattr(torch, fn)(size=(2, 3), dtype=torch.float64)
    e = getattr(ember, fn)(size=(2, 3), dtype=ember.float64)
    assert tuple(e.shape) == tuple(t.shape) and e.dtype is ember.float64
    with pytest.raises(TypeError, match=rf"{fn}\(\) got multiple values for argument 'size'"):
        getattr(ember, fn)(2, size=(3,))


def test_generator_clone_state_draws_the_same_numbers():
    for lib in (torch, ember):
        g = lib.Generator().manual_seed(3)
        c = g.clone_state()
        assert c is not g and c.initial_seed() == 3
        assert lib.rand(4, generator=g).tolist() == lib.rand(4, generator=c).tolist()


def test_normal_refuses_size_with_a_tensor_mean():
    with pytest.raises(TypeError):
        torch.normal(torch.zeros(2), 1.0, size=(5,))
    with pytest.raises(TypeError, match="normal: size=\\(5,\\) goes with number mean and std"):
        ember.normal(ember.zeros(2), 1.0, size=(5,))


def test_asarray_reads_a_buffer_as_its_memory_like_torch():
    import array

    for lib in (torch, ember):
        assert lib.asarray(array.array("d", [1.0, 2.0])).tolist() == [0.0, 1.875, 0.0, 2.0]
        assert lib.asarray(array.array("i", [1, 2]), dtype=lib.int32).tolist() == [1, 2]
        buf = bytearray(4)
        shared = lib.asarray(buf, dtype=lib.uint8)
        copied = lib.asarray(buf, dtype=lib.uint8, copy=True)
        buf[0] = 5
        assert shared.tolist() == [5, 0, 0, 0] and copied.tolist() == [0, 0, 0, 0]
        assert lib.asarray(np.float64(1.5)).item() == 1.5  # a NumPy scalar is a number
        assert lib.asarray(bytearray(8), dtype=lib.float32, requires_grad=True).requires_grad


def test_multinomial_with_replacement_matches_the_weights_and_scales():
    w = [[0.0, 0.1, 0.0, 0.6, 0.3, 0.0], [0.0] * 5 + [2.0]]
    ember.manual_seed(0)
    e = ember.multinomial(ember.tensor(w), 100_000, True).numpy()
    t = torch.multinomial(torch.tensor(w), 100_000, True).numpy()
    for row in range(2):
        np.testing.assert_allclose(np.bincount(e[row], minlength=6) / 1e5,
                                   np.bincount(t[row], minlength=6) / 1e5, atol=0.01)
        assert set(e[row].tolist()) <= set(np.flatnonzero(w[row]).tolist())  # never weight 0
    # many categories and samples at once: a binary search, not a (samples x categories) table
    assert tuple(ember.multinomial(ember.rand(50_000), 100_000, True).shape) == (100_000,)


@pytest.mark.parametrize("args", [([1, 2],), ([[1, 2]],), (np.array([1, 2]),), (2, 3), (),
                                  ("size",), ([True],)])
def test_tensor_constructor_is_torch_legacy_constructor(args):
    out = []
    for lib in (torch, ember):
        a = tuple(lib.Size([2, 3]) if isinstance(x, str) else x for x in args)
        out.append(lib.Tensor(*a))
    t, e = out
    assert tuple(e.shape) == tuple(t.shape) and _dtype_name(e) == _dtype_name(t) == "float32"
    if not args or isinstance(args[0], (list, np.ndarray)):
        np.testing.assert_array_equal(e.numpy(), t.numpy())


_FACTORIES = {
    "zeros": lambda m, **k: m.zeros(2, **k), "empty": lambda m, **k: m.empty(2, **k),
    "full": lambda m, **k: m.full((2,), 1.0, **k), "arange": lambda m, **k: m.arange(2, **k),
    "linspace": lambda m, **k: m.linspace(0, 1, 2, **k), "eye": lambda m, **k: m.eye(2, **k),
    "logspace": lambda m, **k: m.logspace(0, 1, 2, **k),
    "rand": lambda m, **k: m.rand(2, **k), "randint": lambda m, **k: m.randint(3, (2,), **k),
    "randperm": lambda m, **k: m.randperm(2, **k),
    "scalar_tensor": lambda m, **k: m.scalar_tensor(1.0, **k),
    "empty_strided": lambda m, **k: m.empty_strided((2,), (1,), **k),
}
_LIKES = {
    "zeros_like": lambda m, **k: m.zeros_like(m.ones(2), **k),
    "full_like": lambda m, **k: m.full_like(m.ones(2), 1.0, **k),
    "randn_like": lambda m, **k: m.randn_like(m.ones(2), **k),
    "randint_like": lambda m, **k: m.randint_like(m.ones(2), 3, **k),
}


@pytest.mark.parametrize("name", [*_FACTORIES, *_LIKES])
def test_factories_take_layout_and_pin_memory(name):
    call = {**_FACTORIES, **_LIKES}[name]
    kwargs = {"layout": "strided"} if name in _LIKES else {"layout": "strided",
                                                           "pin_memory": False}
    for lib in (torch, ember):
        out = call(lib, **{k: getattr(lib, v) if k == "layout" else v for k, v in kwargs.items()})
        assert tuple(out.shape) == ((2,) if name not in ("eye", "scalar_tensor") else
                                    (2, 2) if name == "eye" else ())
    with pytest.raises(ValueError, match=f"{name}: makes dense tensors only"):
        call(ember, layout=ember.sparse_coo)


def test_random_fills_take_torchs_keyword_to():
    for lib in (torch, ember):
        r = lib.zeros(1000).random_(to=5)
        u = lib.zeros(1000).uniform_(to=0.5)
        assert 0 <= float(r.min()) and float(r.max()) <= 4 and float(u.max()) < 0.5


@pytest.mark.parametrize("call, match", [
    (lambda m: m.rand("a"), "rand: expected a shape of ints"),
    (lambda m: m.randperm("a"), "randperm: n must be an int"),
    (lambda m: m.eye("a"), "eye: n must be an int"),
    (lambda m: m.linspace(0, 1, "a"), "linspace: steps must be an int"),
    (lambda m: m.arange("a"), "arange: expected a number"),
    (lambda m: m.randint(0, "a", (2,)), "randint: expected a number"),
    (lambda m: m.multinomial(m.ones(3), "a"), "multinomial: expected a number"),
    (lambda m: m.normal([0.0], 1.0), "normal: expected a number"),
    (lambda m: m.poisson([1.0]), "poisson: input must be a Tensor"),
])
def test_wrong_argument_types_are_type_errors_naming_the_op(call, match):
    with pytest.raises(TypeError):
        call(torch)
    with pytest.raises(TypeError, match=match):
        call(ember)


@pytest.mark.parametrize("dtype", ["float8_e5m2", "float8_e4m3fn", "bfloat16", "complex128"])
@pytest.mark.parametrize("size, stride", [((2, 3), (1, 2)), ((0, 3), (3, 1)), ((2, 2), (0, 0))])
def test_empty_strided_in_every_dtype(dtype, size, stride):
    t = torch.empty_strided(size, stride, dtype=getattr(torch, dtype))
    e = ember.empty_strided(size, stride, dtype=getattr(ember, dtype))
    assert e.stride() == t.stride() and tuple(e.shape) == tuple(t.shape)
    assert _dtype_name(e) == _dtype_name(t)


@pytest.mark.parametrize("size", [np.array(3), np.int64(3), (np.int64(2), 3), [2, 3]])
def test_sizes_given_as_numpy_numbers(size):
    assert tuple(ember.zeros(size).shape) == tuple(torch.zeros(size).shape)
    if isinstance(size, tuple | list):  # (torch's full takes sequences only)
        assert tuple(ember.full(size, 1.0).shape) == tuple(torch.full(size, 1.0).shape)


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16"])
@pytest.mark.parametrize("args", [(0.5, 3.7), (0, 5.5, 1), (0, 5, 1.5), (1, 0, -0.5),
                                  (-2.5, 2.5), (0.5, 6.5, 2.5), (0, 10, 3)])
def test_arange_of_fractional_bounds_in_integer_dtypes_as_torch(dtype, args):
    # (int64 truncates the bounds and step first; the narrower integers count the float range)
    try:
        want = torch.arange(*args, dtype=getattr(torch, dtype)).tolist()
    except ValueError:  # (torch: "step must be nonzero")
        with pytest.raises(ValueError, match="truncates to 0"):
            ember.arange(*args, dtype=getattr(ember, dtype))
        return
    assert ember.arange(*args, dtype=getattr(ember, dtype)).tolist() == want


@pytest.mark.parametrize("number", [2.5, 1j, True, np.float64(2.5)])
def test_tensor_constructor_refuses_a_lone_number_as_torch(number):
    with pytest.raises(TypeError, match="data must be a sequence"):
        torch.Tensor(number)
    with pytest.raises(TypeError, match="data must be a sequence"):
        ember.Tensor(number)


@pytest.mark.parametrize("fn", [
    lambda m: m.full((1,), 1e300, dtype=m.complex64),
    lambda m: m.full((1,), complex(1, 1e300), dtype=m.complex64),
    lambda m: m.zeros(1, dtype=m.complex64).fill_(1e40),
    lambda m: m.zeros(1, dtype=m.complex64).masked_fill(m.tensor([True]), -1e40),
    lambda m: m.zeros(1, dtype=m.complex64).__setitem__(0, -1e300),
    lambda m: m.add(m.zeros(1, dtype=m.complex64), 1, alpha=1e39),
])
def test_a_number_past_complex64_s_parts_is_refused_as_torch(fn):
    # (check_fits skipped complex dtypes: full((1,), 1e300, dtype=complex64) was inf+0j)
    with pytest.raises(RuntimeError, match="without overflow"):
        fn(torch)
    with pytest.raises(ember.errors.ValueOverflow, match="complex64 without overflow"):
        fn(ember)


@pytest.mark.parametrize("value", [1e300, float("inf"), complex(float("nan"), 1), 3 + 4j])
def test_numbers_complex_dtypes_hold_still_fill_as_torch(value):
    for dtype in ("complex128",) + (() if value == 1e300 else ("complex64",)):
        want = torch.full((2,), value, dtype=getattr(torch, dtype))
        got = ember.full((2,), value, dtype=getattr(ember, dtype))
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_uniform_takes_int_bounds_past_64_bits_as_torch(dtype):
    """(its bounds are doubles in torch; since ff8fcc7c an int past 64 bits met the samples as
    a number and raised OverflowError)."""
    for lib in (torch, ember):
        x = lib.empty(64, dtype=getattr(lib, dtype)).uniform_(-2 ** 70, 2 ** 70)
        assert x.abs().max().item() > 2 ** 66 and x.abs().max().item() <= 2 ** 70


_WIDE_FILLS = {"normal_": (2 ** 70, 1), "normal_ std": (0, 2 ** 70), "exponential_": (2 ** 70,),
               "cauchy_": (2 ** 70, 1), "log_normal_": (2 ** 70, 1)}


@pytest.mark.parametrize("name", sorted(_WIDE_FILLS))
def test_random_fills_take_int_parameters_past_64_bits_as_torch(name):
    """(doubles in torch; since ff8fcc7c such an int met the samples as a number: OverflowError)."""
    for lib in (torch, ember):
        getattr(lib.empty(4, dtype=lib.float64), name.split()[0])(*_WIDE_FILLS[name])

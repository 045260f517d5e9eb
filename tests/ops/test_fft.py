"""ember.fft against torch.fft: values and dtypes for every function and its n/s, dim and norm
arguments, gradients of real losses, finite-difference checks, errors, vmap and jit."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import ArgumentError, IndexOutOfRange
from tests.ops.optable import OpCase, S, arg, op_tests, raises_like_torch

RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 4, 5))
Z = X + 1j * RNG.normal(size=(3, 4, 5))
INPUTS = {"float64": X, "complex128": Z, "float32": X.astype(np.float32),
          "complex64": Z.astype(np.complex64), "int64": np.round(X * 3).astype(np.int64)}


def call(lib, name, data, kwargs):
    """``lib.fft.name(tensor(data), **kwargs)``, or the exception it raises."""
    try:
        return getattr(lib.fft, name)(lib.tensor(data), **kwargs)
    except Exception as exc:  # noqa: BLE001 - compared between the two libraries
        return exc


def check_like_torch(name, kwargs, atol=1e-4):
    for data in INPUTS.values():
        mine, ref = call(ember, name, data, kwargs), call(torch, name, data, kwargs)
        if isinstance(ref, Exception):
            assert isinstance(mine, ember.EmberError | ValueError), (name, kwargs, ref, mine)
            continue
        assert not isinstance(mine, Exception), (name, kwargs, mine)
        assert mine.dtype.name == str(ref.dtype).removeprefix("torch."), (name, kwargs)
        assert tuple(mine.shape) == tuple(ref.shape), (name, kwargs)
        np.testing.assert_allclose(mine.numpy(), ref.resolve_conj().numpy(), atol=atol,
                                   rtol=1e-4, err_msg=f"{name} {kwargs} {data.dtype}")


ONE_DIM = [{}, {"n": 3}, {"n": 8}, {"dim": 0}, {"dim": 1, "n": 6, "norm": "ortho"},
           {"norm": "forward"}, {"n": 1}, {"norm": "backward", "dim": -2}]
SEVERAL = [{}, {"s": (3, 6)}, {"dim": (0, 2)}, {"s": (2, -1), "dim": (2, 0), "norm": "ortho"},
           {"norm": "forward"}, {"s": (4,)}]


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
@pytest.mark.parametrize("kwargs", ONE_DIM, ids=str)
def test_one_dim_transforms_match_torch(name, kwargs):
    check_like_torch(name, kwargs)


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn",
                                  "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn"])
@pytest.mark.parametrize("kwargs", SEVERAL, ids=str)
def test_several_dim_transforms_match_torch(name, kwargs):
    check_like_torch(name, kwargs)


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@pytest.mark.parametrize("kwargs", [{}, {"dim": 1}, {"dim": (0, 2)}], ids=str)
def test_shifts_match_torch(name, kwargs):
    check_like_torch(name, kwargs, atol=0)


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("n,d", [(1, 1.0), (4, 1.0), (5, 0.1), (6, 2.5)])
def test_frequencies_match_torch(name, n, d):
    mine, ref = getattr(ember.fft, name)(n, d), getattr(torch.fft, name)(n, d)
    assert mine.dtype is ember.float32
    np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-6)
    assert getattr(ember.fft, name)(n, dtype=ember.float64).dtype is ember.float64


def test_round_trips():
    x = ember.tensor(X)
    np.testing.assert_allclose(ember.fft.ifftn(ember.fft.fftn(x)).real.numpy(), X, atol=1e-12)
    np.testing.assert_allclose(ember.fft.irfft(ember.fft.rfft(x), n=5).numpy(), X, atol=1e-12)
    np.testing.assert_allclose(ember.fft.ihfft(ember.fft.hfft(ember.fft.ihfft(x), n=5)).numpy(),
                               ember.fft.ihfft(x).numpy(), atol=1e-12)


def test_errors():
    x = ember.tensor(X)
    with pytest.raises(ValueError, match="invalid normalization mode 'sideways'"):
        ember.fft.fft(x, norm="sideways")
    with pytest.raises(ember.ShapeError, match=r"invalid number of data points \(0\)"):
        ember.fft.fft(x, n=0)
    with pytest.raises(ember.ShapeError, match=r"invalid number of data points \(0\)"):
        ember.fft.irfft(ember.ones(3, 1))
    with pytest.raises(ember.ShapeError, match="FFT dims must be unique"):
        ember.fft.fftn(x, dim=(0, -3))
    with pytest.raises(ember.ShapeError, match="same length"):
        ember.fft.fftn(x, s=(2, 2), dim=(0,))
    with pytest.raises(ember.DTypeError, match="rfft: expects a real input"):
        ember.fft.rfft(ember.tensor(Z))
    with pytest.raises(ember.IndexOutOfRange if hasattr(ember, "IndexOutOfRange")
                       else ember.EmberError):
        ember.fft.fft(x, dim=3)


TRANSFORMS = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
              "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn"]


REAL = {n for n in TRANSFORMS if n.startswith(("r", "ir", "h", "ih"))}


@pytest.mark.parametrize("name", TRANSFORMS)
def test_a_0d_input_is_refused_as_torch(name):
    dims = {"dim": (0,) if name.endswith(("2", "n")) else 0}
    for kwargs in [{}, dims] if not name.endswith("n") else [dims]:
        with pytest.raises(IndexError, match="tensor has no dimensions"):
            getattr(torch.fft, name)(torch.tensor(1.0), **kwargs)
        with pytest.raises(IndexOutOfRange, match=f"{name}: dimension .* the input is 0-d"):
            getattr(ember.fft, name)(ember.tensor(1.0), **kwargs)
    if name.endswith("n"):  # all dims: none of a 0-d input
        if name in REAL:
            with pytest.raises(RuntimeError, match="must transform at least one axis"):
                getattr(torch.fft, name)(torch.tensor(1.0))
            with pytest.raises(ember.ShapeError, match=f"{name}: must transform at least one"):
                getattr(ember.fft, name)(ember.tensor(1.0))
        else:
            check_like_torch(name, {})


@pytest.mark.parametrize("name", [n for n in TRANSFORMS if n.endswith(("2", "n"))])
def test_real_transforms_need_a_dim_as_torch(name):
    for kwargs in [{"dim": ()}] + ([{"s": ()}] if name.endswith("n") else []):
        if name not in REAL:
            check_like_torch(name, kwargs)
            continue
        with pytest.raises(RuntimeError, match="must transform at least one axis"):
            getattr(torch.fft, name)(torch.ones(3, 4), **kwargs)
        with pytest.raises(ember.ShapeError, match=f"{name}: must transform at least one dim"):
            getattr(ember.fft, name)(ember.ones(3, 4), **kwargs)


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
@pytest.mark.parametrize("n", [-1, -2, 0])
def test_n_below_1_is_refused_as_torch(name, n):
    with pytest.raises(RuntimeError, match=rf"Invalid number of data points \({n}\)"):
        getattr(torch.fft, name)(torch.ones(4), n=n)
    with pytest.raises(ember.ShapeError, match=rf"{name}: invalid number of data points \({n}\)"):
        getattr(ember.fft, name)(ember.ones(4), n=n)


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_frequencies_need_a_floating_dtype_as_torch(name, dtype):
    with pytest.raises(RuntimeError, match="requires a floating point or complex dtype"):
        getattr(torch.fft, name)(4, dtype=getattr(torch, dtype))
    with pytest.raises(ember.DTypeError, match=f"{name}: requires a floating point or complex"):
        getattr(ember.fft, name)(4, dtype=getattr(ember, dtype))


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies_take_a_strided_layout_as_torch(name):
    # (layout= was a TypeError)
    theirs = getattr(torch.fft, name)(5, 0.5, dtype=torch.float64, layout=torch.strided)
    ours = getattr(ember.fft, name)(5, 0.5, dtype=ember.float64, layout=ember.strided)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(ArgumentError, match=f"{name}: makes dense tensors only"):
        getattr(ember.fft, name)(5, layout=ember.sparse_coo)
    for lib in (torch, ember):  # (no layout at all: a TypeError, as torch's; it was 'dense')
        with pytest.raises(TypeError, match=r"argument 'layout' must be (torch|ember)\.layout, "
                                            "not str"):
            getattr(lib.fft, name)(5, layout="x")


@pytest.mark.parametrize("name", TRANSFORMS)
def test_an_empty_transformed_dim_is_refused_as_torch(name):
    dim = {"dim": (0, 1)} if name.endswith(("2", "n")) else {"dim": 0}
    raises_like_torch(lambda lib: getattr(lib.fft, name)(lib.ones(0, 3), **dim), ember.ShapeError,
                      rf"{name}: invalid number of data points \(0\)")


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shift_dims_are_checked_as_torch(name):
    for make, dim, match in [(lambda lib: lib.tensor(1.0), 0, "0 specified, but the input is 0-d"),
                             (lambda lib: lib.ones(4), (0, 1), "1 is out of range")]:
        with pytest.raises(IndexError):
            getattr(torch.fft, name)(make(torch), dim=dim)
        with pytest.raises(IndexOutOfRange, match=f"{name}: dimension {match}"):
            getattr(ember.fft, name)(make(ember), dim=dim)
    check_like_torch(name, {"dim": (-1, -1)}, atol=0)  # a repeated dim shifts twice, as torch


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"])
def test_an_int_s_and_dim_read_as_torch(name):
    check_like_torch(name, {"s": 6})
    check_like_torch(name, {"s": 3, "dim": np.int64(1)})


def test_non_int_sizes_and_shift_dims():
    raises_like_torch(lambda lib: lib.fft.fft(lib.ones(6), n=5.5), TypeError,
                      "fft: the number of data points .* must be an int, got float")
    raises_like_torch(lambda lib: lib.fft.rfft2(lib.ones(6, 6), s=(2.5, 3)), TypeError,
                      "rfft2: the number of data points .* must be an int, got float")
    check_like_torch("fftshift", {"dim": np.int64(1)}, atol=0)

@pytest.mark.parametrize("name", ["rfft2", "rfftn", "ihfft", "ihfft2", "ihfftn"])
def test_a_complex_input_to_a_real_transform_names_the_op(name):
    raises_like_torch(lambda lib: getattr(lib.fft, name)(lib.ones(2, 2, dtype=lib.complex64)),
                      ember.DTypeError, f"{name}: expects a real input tensor")


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies_refuse_a_negative_n(name):
    # torch.fft.rfftfreq(-1) returns tensor([-0.]); Ember refuses it, as fftfreq(-1) in both
    raises_like_torch(lambda lib: lib.fft.fftfreq(-1), ember.ShapeError, "fftfreq: n must be "
                      "non-negative")
    with pytest.raises(ember.ShapeError, match=f"{name}: n must be non-negative, got n=-3"):
        getattr(ember.fft, name)(-3)
    with pytest.raises(TypeError, match=f"{name}: n must be an int, got float"):
        getattr(ember.fft, name)(4.0)

# -- gradients of real losses, against torch -----------------------------------------------------
H = RNG.normal(size=(3, 8)) + 1j * RNG.normal(size=(3, 8))
X2, Z2 = X[:, 0, :4].copy(), Z[:, 0, :4].copy()
LOSSES = {
    "fft_abs": lambda x, m, n, norm: m.fft.fft(x, n=n, norm=norm).abs().sum(),
    "ifft_parts": lambda x, m, n, norm: (m.fft.ifft(x, n=n, norm=norm).real ** 2
                                         + m.fft.ifft(x, n=n, norm=norm).imag * 3).sum(),
    "hfft": lambda x, m, n, norm: (m.fft.hfft(x, n=n, norm=norm) ** 2).sum(),
    "irfft": lambda x, m, n, norm: (m.fft.irfft(x, n=n, norm=norm) ** 3).sum(),
    "rfft_power": lambda x, m, n, norm: (m.fft.rfft(x.real, n=n, norm=norm).abs() ** 2).sum(),
    "ihfft": lambda x, m, n, norm: (m.fft.ihfft(x.real, n=n, norm=norm)
                                    * m.tensor(H[:, :(n or 4) // 2 + 1])).real.sum(),
    "fft2": lambda x, m, n, norm: m.fft.fft2(x, s=n and (2, n), norm=norm).abs().sum(),
    "rfftn": lambda x, m, n, norm: m.fft.rfftn(x.real, s=n and (2, n), norm=norm).abs().sum(),
    "irfft2": lambda x, m, n, norm: (m.fft.irfft2(x, s=n and (3, n), norm=norm) ** 2).sum(),
    "hfft2": lambda x, m, n, norm: (m.fft.hfft2(x, s=n and (2, n), norm=norm) ** 2).sum(),
    "ihfftn": lambda x, m, n, norm: m.fft.ihfftn(x.real, s=n and (3, n), norm=norm).abs().sum(),
    "spectral_filter": lambda x, m, n, norm: (m.fft.irfft(m.fft.rfft(x.real, n=n, norm=norm)
                                                          * m.tensor(H[:, :(n or 4) // 2 + 1]),
                                                          n=n or 4, norm=norm) ** 2).sum(),
}


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("n,norm", [(None, None), (3, "ortho"), (7, "forward")], ids=str)
@pytest.mark.parametrize("complex_input", [False, True])
def test_gradients_match_torch(name, n, norm, complex_input):
    if name in ("rfft_power", "ihfft", "rfftn", "ihfftn", "spectral_filter") and complex_input:
        pytest.skip("a real-input transform")
    data = Z2 if complex_input else X2
    grads = []
    for lib in (torch, ember):
        x = lib.tensor(data, requires_grad=True)
        LOSSES[name](x, lib, n, norm).backward()
        grads.append(x.grad)
    np.testing.assert_allclose(grads[1].numpy(), grads[0].resolve_conj().numpy(), atol=1e-10,
                               rtol=1e-8)


# -- real-to-real compositions: forward, backward, gradcheck, gradgradcheck, jvp ----------------
def _spectral_filter(lib):
    h = lib.tensor(H[0, :3])
    return lambda x: lib.fft.irfft(lib.fft.rfft(x) * h, n=x.shape[-1])


CASES = [
    OpCase("fft_of_complex", lambda x, y: ember.view_as_real(ember.fft.fft(ember.complex(x, y))),
           lambda x, y: torch.view_as_real(torch.fft.fft(torch.complex(x, y))),
           [S(arg(2, 5), arg(2, 5))]),
    OpCase("ifft_ortho_n", lambda x, y: ember.view_as_real(
        ember.fft.ifft(ember.complex(x, y), n=6, norm="ortho", dim=0)),
        lambda x, y: torch.view_as_real(torch.fft.ifft(torch.complex(x, y), n=6, norm="ortho",
                                                       dim=0)),
        [S(arg(4, 2), arg(4, 2))]),
    OpCase("rfft_abs", lambda x: ember.fft.rfft(x).abs(), lambda x: torch.fft.rfft(x).abs(),
           [S(arg(3, 6)), S(arg(5))], gradgrad=False),
    OpCase("rfft_parts", lambda x: ember.view_as_real(ember.fft.rfft(x, norm="forward")),
           lambda x: torch.view_as_real(torch.fft.rfft(x, norm="forward")),
           [S(arg(2, 5))]),
    OpCase("spectral_filter", lambda x: _spectral_filter(ember)(x),
           lambda x: _spectral_filter(torch)(x), [S(arg(2, 4)), S(arg(5))]),
    OpCase("irfft", lambda x, y: ember.fft.irfft(ember.complex(x, y), n=5),
           lambda x, y: torch.fft.irfft(torch.complex(x, y), n=5), [S(arg(2, 3), arg(2, 3))]),
    OpCase("fftn_rfft2", lambda x: ember.view_as_real(ember.fft.fftn(ember.fft.rfft2(x),
                                                                     s=(2, 3))),
           lambda x: torch.view_as_real(torch.fft.fftn(torch.fft.rfft2(x), s=(2, 3))),
           [S(arg(3, 4))]),
    OpCase("irfftn", lambda x, y: ember.fft.irfftn(ember.complex(x, y), s=(2, 4)),
           lambda x, y: torch.fft.irfftn(torch.complex(x, y), s=(2, 4)),
           [S(arg(3, 3), arg(3, 3))]),
    OpCase("hfft", lambda x, y: ember.fft.hfft(ember.complex(x, y), norm="ortho"),
           lambda x, y: torch.fft.hfft(torch.complex(x, y), norm="ortho"),
           [S(arg(5), arg(5))]),
    OpCase("hfftn", lambda x, y: ember.fft.hfftn(ember.complex(x, y), s=(3, 4)),
           lambda x, y: torch.fft.hfftn(torch.complex(x, y), s=(3, 4)),
           [S(arg(2, 3), arg(2, 3))]),
    OpCase("ihfft2", lambda x: ember.view_as_real(ember.fft.ihfft2(x, norm="ortho")),
           lambda x: torch.view_as_real(torch.fft.ihfft2(x, norm="ortho").resolve_conj()),
           [S(arg(3, 4))]),
    OpCase("fftshift", lambda x: ember.fft.fftshift(x, dim=0), lambda x: torch.fft.fftshift(
        x, dim=0), [S(arg(5, 2))]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


# -- transforms ------------------------------------------------------------------------------------
def test_vmap_matches_a_loop():
    x = ember.tensor(X)

    def f(t):
        spectrum = ember.fft.rfft2(t, s=(4, 6), norm="ortho")
        return ember.fft.irfftn(spectrum * 2, s=(4, 5)) + ember.fft.ifft(t, dim=0).abs()

    np.testing.assert_allclose(ember.vmap(f)(x).numpy(), np.stack([f(t).numpy() for t in x]),
                               atol=1e-12)


def test_jit_compiles_a_spectral_loss_and_its_gradient():
    h = ember.tensor(H[:, :3])

    def loss(x):
        return (ember.fft.irfft(ember.fft.rfft(x) * h, n=4) ** 2).sum()

    x = ember.tensor(X2, requires_grad=True)
    compiled = ember.jit.compile(ember.func.grad(loss))
    np.testing.assert_allclose(compiled(x).detach().numpy(),
                               ember.func.grad(loss)(x).detach().numpy(), atol=1e-12)


def test_ihfft_passes_gradcheck_and_gradgradcheck():
    x = ember.tensor(X2[0], requires_grad=True)

    def parts(t):
        return ember.view_as_real(ember.fft.ihfft(t, n=6, norm="forward"))

    assert ember.autograd.gradcheck(parts, (x,))
    assert ember.autograd.gradgradcheck(parts, (x,))


def test_flops_are_counted():
    from ember.ops.fft import FFTC2C
    from ember.ops.primitive import TensorSpec

    assert FFTC2C.flops(TensorSpec((8,), ember.complex64), dims=(0,), inverse=False,
                        norm="backward") == 5 * 8 * 3


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies_take_pin_memory_as_torch(name):
    # (a TypeError: unexpected keyword argument 'pin_memory')
    mine = getattr(ember.fft, name)(5, 0.5, pin_memory=False)
    ref = getattr(torch.fft, name)(5, 0.5, pin_memory=False)
    np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-6)

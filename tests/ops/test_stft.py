"""stft and istft against torch: values, dtypes and shapes over their arguments, errors and
warnings, gradients (finite differences and torch's), and the round trip."""

import warnings

import numpy as np
import pytest
import torch

import ember
from tests.ops.optable import OpCase, S, arg, op_tests, raises_like_torch

RNG = np.random.default_rng(0)
X = RNG.normal(size=(2, 23))
SIGNALS = {"1d": X[0], "batch": X, "complex": X[0] + 1j * X[1], "float32": X.astype(np.float32)}
STFT_ARGS = [dict(n_fft=8), dict(n_fft=8, hop_length=3, normalized=True),
             dict(n_fft=8, win_length=5, hop_length=3, center=False),
             # torch reads n_fft samples from each aligned frame's start, past the end of the
             # signal unless the last frame fits whole: these sizes keep it inside
             dict(n_fft=8, win_length=6, hop_length=3, center=False, align_to_window=True),
             dict(n_fft=7, onesided=False, pad_mode="constant"),
             dict(n_fft=6, hop_length=2, pad_mode="replicate"),
             dict(n_fft=6, hop_length=4, pad_mode="circular"), dict(n_fft=23, center=False)]


def _window(lib, kw, kind):
    n = kw.get("win_length", kw["n_fft"])
    return None if kind is None else lib.hann_window(n, dtype=getattr(lib, kind)) + 0.1


def _both(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(torch), fn(ember)


def _assert_like(ref, mine, atol=1e-5):
    assert tuple(mine.shape) == tuple(ref.shape)
    assert mine.dtype.name == str(ref.dtype).removeprefix("torch.")
    np.testing.assert_allclose(mine.numpy(), ref.resolve_conj().numpy(), atol=atol, rtol=1e-5)


@pytest.mark.parametrize("kw", STFT_ARGS, ids=str)
@pytest.mark.parametrize("window", [None, "float32", "float64"])
def test_stft_matches_torch(kw, window):
    for signal in SIGNALS.values():
        _assert_like(*_both(lambda lib, s=signal: lib.stft(
            lib.tensor(s), window=_window(lib, kw, window), return_complex=True, **kw)))


ISTFT_ARGS = [dict(n_fft=8), dict(n_fft=8, hop_length=3, normalized=True),
              dict(n_fft=8, win_length=5, hop_length=2), dict(n_fft=8, hop_length=2, length=20),
              dict(n_fft=8, hop_length=2, length=30), dict(n_fft=7, center=False, hop_length=2),
              dict(n_fft=8, onesided=False), dict(n_fft=8, return_complex=True, onesided=False)]


@pytest.mark.parametrize("kw", ISTFT_ARGS, ids=str)
@pytest.mark.parametrize("window", [None, "float64"])
def test_istft_matches_torch(kw, window):
    spectrum = RNG.normal(size=(2, 8, 6)) + 1j * RNG.normal(size=(2, 8, 6))
    freq = 8 if kw.get("onesided") is False else kw["n_fft"] // 2 + 1
    for data in (spectrum[0, :freq], spectrum[:, :freq], spectrum[:, :freq].astype(np.complex64)):
        _assert_like(*_both(lambda lib, d=data: lib.istft(
            lib.tensor(d), window=_window(lib, kw, window), **kw)))


def test_round_trip_and_methods():
    x = ember.tensor(X)
    w = ember.hann_window(8, dtype=ember.float64)
    spectrum = x.stft(8, 2, window=w, return_complex=True)
    np.testing.assert_allclose(spectrum.istft(8, 2, window=w, length=23).numpy(), X, atol=1e-12)


def test_stft_return_complex_false_is_the_real_view_and_warns():
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        mine = ember.stft(ember.tensor(X), 8, window=ember.ones(8), return_complex=False)
    ref = torch.stft(torch.tensor(X), 8, window=torch.ones(8), return_complex=False)
    _assert_like(ref, mine)


def test_missing_window_warns():
    with pytest.warns(UserWarning, match="rectangular window"):
        ember.stft(ember.tensor(X), 8, return_complex=True)
    with pytest.warns(UserWarning, match="rectangular window"):
        ember.istft(ember.ones(5, 3, dtype=ember.complex64), 8)


def test_stft_errors():
    x = X[0]
    cases = [
        ({"n_fft": 8}, ValueError, "return_complex parameter be given"),
        ({"n_fft": 24, "center": False, "return_complex": True}, ValueError, "0 < n_fft <= 23"),
        ({"n_fft": 8, "hop_length": 0, "return_complex": True}, ValueError, "hop_length > 0"),
        ({"n_fft": 8, "win_length": 9, "return_complex": True}, ValueError, "win_length <= n_fft"),
        ({"n_fft": 60, "return_complex": True}, ember.ShapeError, "reflect padding"),
        ({"n_fft": 8, "pad_mode": "bogus", "return_complex": True}, ValueError, "pad_mode"),
        ({"n_fft": 8, "align_to_window": True, "return_complex": True}, ValueError,
         "center=False"),
    ]
    for kw, error, match in cases:
        raises_like_torch(lambda lib, kw=kw: lib.stft(lib.tensor(x), **kw), error, match)
    raises_like_torch(lambda lib: lib.stft(lib.tensor(x), 8, window=lib.ones(7),
                                           return_complex=True), ember.ShapeError, "1-D window")
    raises_like_torch(lambda lib: lib.stft(lib.tensor(X[None]), 8, return_complex=True),
                      ember.ShapeError, "1-D or 2-D")
    raises_like_torch(lambda lib: lib.stft(lib.arange(30), 8, return_complex=True),
                      ember.DTypeError, "floating point or complex")
    raises_like_torch(lambda lib: lib.stft(lib.tensor(x + 1j), 8, onesided=True,
                                           return_complex=True), ValueError, "one-sided")


def test_istft_errors():
    z = RNG.normal(size=(5, 7)) + 1j * RNG.normal(size=(5, 7))
    cases = [
        (lambda lib: lib.istft(lib.tensor(z.real), 8), ember.DTypeError, "complex-valued"),
        (lambda lib: lib.istft(lib.tensor(z[None, None]), 8), ember.ShapeError, "2-D"),
        (lambda lib: lib.istft(lib.tensor(z), 8, hop_length=9), ValueError, "hop_length <="),
        (lambda lib: lib.istft(lib.tensor(z), 8, win_length=9), ValueError, "win_length <="),
        (lambda lib: lib.istft(lib.tensor(z), 8, window=lib.ones(7)), ember.ShapeError,
         "1-D window"),
        (lambda lib: lib.istft(lib.tensor(z), 10), ember.ShapeError, "expected 6 frequencies"),
        (lambda lib: lib.istft(lib.tensor(z[:, :0]), 8), ember.ShapeError, "cannot be empty"),
        (lambda lib: lib.istft(lib.tensor(z), 8, return_complex=True), ValueError, "one-sided"),
        (lambda lib: lib.istft(lib.tensor(z), 8, window=lib.ones(8, dtype=lib.complex64)),
         ember.DTypeError, "complex windows"),
        (lambda lib: lib.istft(lib.tensor(z), 8, window=lib.hann_window(8), center=False),
         ValueError, "NOLA"),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn, error, match in cases:
            raises_like_torch(fn, error, match)


def test_istft_pads_a_longer_length_with_a_warning():
    z = ember.tensor(RNG.normal(size=(5, 4)) + 0j)
    with pytest.warns(UserWarning, match="padded with zeros"):
        out = ember.istft(z, 8, window=ember.ones(8), length=30)
    assert out.shape == (30,) and not out[-10:].numpy().any()


# -- gradients: finite differences, gradgrad, jvp and torch's, through the op table ----------
def _stft_parts(lib, **kw):
    view = ember.view_as_real if lib is ember else torch.view_as_real

    def fn(x, w):
        return view(lib.stft(x, 6, window=w, return_complex=True, **kw))
    return fn


def _istft_of(lib, **kw):
    def fn(re, im, w):
        return lib.istft(lib.complex(re, im), 6, window=w + 1.0, **kw)
    return fn


CASES = [
    OpCase("stft", _stft_parts(ember, hop_length=2), _stft_parts(torch, hop_length=2),
           [S(arg(11), arg(6)), S(arg(2, 9), arg(6))]),
    OpCase("stft_window_short", _stft_parts(ember, win_length=4, center=False),
           _stft_parts(torch, win_length=4, center=False), [S(arg(9), arg(4))]),
    OpCase("istft", _istft_of(ember, hop_length=2), _istft_of(torch, hop_length=2),
           [S(arg(4, 4), arg(4, 4), arg(6))], atol=1e-4),
    OpCase("istft_length", _istft_of(ember, hop_length=3, length=9, normalized=True),
           _istft_of(torch, hop_length=3, length=9, normalized=True),
           [S(arg(4, 3), arg(4, 3), arg(6))], atol=1e-4),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def test_vmap_and_jit():
    x = ember.tensor(X)
    w = ember.hann_window(8, dtype=ember.float64)

    def power(t):
        return ember.stft(t, 8, 2, window=w, return_complex=True).abs() ** 2

    def inverse(s):
        return ember.istft(s, 8, 2, window=w)

    np.testing.assert_allclose(ember.vmap(power)(x).numpy(), power(x).numpy(), atol=1e-12)
    np.testing.assert_allclose(ember.jit.compile(power)(x).numpy(), power(x).numpy(), atol=1e-12)
    spectrum = ember.stft(x, 8, 2, window=w, return_complex=True)
    np.testing.assert_allclose(ember.jit.compile(inverse)(spectrum).numpy(),
                               inverse(spectrum).numpy(), atol=1e-12)


def test_stft_aligned_frames_past_the_end_raise_like_torch():
    # n_fft=8, win_length=7, hop=2 on 9 samples: 2 aligned frames, the last reading
    # samples 2..9 of n_fft, one past the end
    raises_like_torch(lambda lib: lib.stft(lib.arange(9.0), 8, 2, 7, lib.ones(7), center=False,
                                           return_complex=True, align_to_window=True),
                      ValueError, "align_to_window")


def test_istft_of_an_empty_signal_raises_like_torch():
    # one frame, centred, even n_fft: the trimmed signal has no samples
    # (n_fft=1, centred: PyTorch's end, -(n_fft // 2), is 0, an empty slice too)
    for kw in (dict(n_fft=8), dict(n_fft=8, center=False, length=0),
               dict(n_fft=1, hop_length=1)):
        raises_like_torch(lambda lib, kw=kw: lib.istft(
            lib.ones(kw["n_fft"] // 2 + 1, 1, dtype=lib.complex64), window=lib.ones(kw["n_fft"]),
            **kw),
                          ValueError, "no samples")


def test_istft_with_the_window_an_argument_under_jit_and_vmap():
    # the NOLA check runs on each call's window, not only on a constant one
    spectrum = ember.stft(ember.tensor(X), 8, 2, window=ember.hann_window(8, dtype=ember.float64),
                          return_complex=True)
    windows = ember.stack([ember.hann_window(8, dtype=ember.float64) + 0.1,
                           ember.ones(8, dtype=ember.float64)])

    def inverse(w):
        return ember.istft(spectrum, 8, 2, window=w)

    expected = ember.stack([inverse(w) for w in windows])
    np.testing.assert_allclose(ember.vmap(inverse)(windows).numpy(), expected.numpy(),
                               atol=1e-12)
    compiled = ember.jit.compile(inverse)
    np.testing.assert_allclose(compiled(windows[0]).numpy(), expected[0].numpy(), atol=1e-12)
    with pytest.raises(ValueError, match="NOLA"):
        compiled(ember.zeros(8, dtype=ember.float64))



@pytest.mark.parametrize("op,name,value", [
    (op, name, value) for op in ("stft", "istft")
    for name, value in [("n_fft", 4.0), ("n_fft", True), ("hop_length", 1.0), ("win_length", 4.0)]
] + [("istft", "length", 5.0)])
def test_sizes_that_are_not_ints_are_named_as_torch(op, name, value):
    # fftspecial54: floats leaked inner errors ("stft: pad: pad must be an int", "__getitem__:
    # slice indices must be integers", "istft: ones: expected a shape of ints") and n_fft=True
    # was read as 1 ("expected hop_length > 0, got hop_length=0")
    kw = {"n_fft": 4, name: value}
    tx = torch.ones(20) if op == "stft" else torch.ones(3, 11, dtype=torch.complex64)
    ex = ember.ones(20) if op == "stft" else ember.ones(3, 11, dtype=ember.complex64)
    extra = {"return_complex": True} if op == "stft" else {}
    with pytest.raises(TypeError):
        getattr(torch, op)(tx, window=torch.ones(4), **kw, **extra)
    with pytest.raises(TypeError, match=rf"^{op}: {name} must be an int, got "):
        getattr(ember, op)(ex, window=ember.ones(4), **kw, **extra)

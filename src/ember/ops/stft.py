"""Short-time Fourier transforms, ``stft`` and ``istft``, as ``torch.stft``/``torch.istft``.

Composites, so they differentiate (and run under ``vmap``/``jit``) with no rules of their own:
``stft`` frames the (centre-padded) signal as a strided view (``unfold``), multiplies each
frame by the window and transforms it with the FFT primitives; ``istft`` transforms each
frame back, multiplies it by the window again and overlap-adds the frames (``unfold``'s
adjoint, ``ember.ops.unfold.overlap_add``), dividing by the overlap-added squared window (the
"NOLA" envelope), which one primitive of its own, ``nola_check``, checks does not vanish.
"""

from __future__ import annotations

import warnings
from typing import Any

from ember.errors import (
    ArgumentError,
    ArgumentTypeError,
    DTypeError,
    ShapeError,
    dtype_name,
    is_complex_input,
    is_floating_input,
    type_name,
)
from ember.ops.complex_parts import view_as_real
from ember.ops.creation import ones
from ember.ops.fft import fft_c2c, fft_c2r, fft_r2c
from ember.ops.int_args import as_int
from ember.ops.pad import pad
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.shape import squeeze, transpose, unsqueeze
from ember.ops.unfold import overlap_add
from ember.tensor import Tensor, method

__all__ = ["stft", "istft"]

_PAD_MODES = ("constant", "reflect", "replicate", "circular")
_NO_WINDOW = ("A window was not provided. A rectangular window will be applied{why}. To suppress "
              "this warning and use a rectangular window, explicitly set "
              "`window=ember.ones(n_fft)`.")


def _tensor_window(window: Any, op: str) -> Tensor | None:
    """``window``, checked to be a tensor or None (a list leaked an AttributeError)."""
    if window is not None and not isinstance(window, Tensor):
        raise ArgumentTypeError(f"{op}: window must be a Tensor or None, got "
                                f"{type_name(window)}. Hint: make one with ember.tensor(...) "
                                "or a window function such as ember.hann_window(n_fft)")
    return window


def _check_window(window: Tensor | None, win_length: int, op: str) -> None:
    if window is not None and (window.ndim != 1 or window.shape[0] != win_length):
        raise ShapeError(f"{op}: expected a 1-D window of win_length={win_length} points, got "
                         f"a window of shape {tuple(window.shape)}")


def _int_sizes(op: str, n_fft: Any, hop_length: Any, win_length: Any) -> tuple[int, int, int]:
    """``n_fft``, the hop (``n_fft // 4`` by default) and ``win_length`` (``n_fft``), checked to
    be ints as PyTorch does (a float leaked an inner op's error, ``True`` was read as 1)."""
    n_fft = as_int(n_fft, op, "n_fft")
    return (n_fft, n_fft // 4 if hop_length is None else as_int(hop_length, op, "hop_length"),
            n_fft if win_length is None else as_int(win_length, op, "win_length"))


def _check_sizes(op: str, n_fft: int, hop: int, win_length: int) -> None:
    if hop <= 0:
        raise ArgumentError(f"{op}: expected hop_length > 0, got hop_length={hop}")
    if not 0 < win_length <= n_fft:
        raise ArgumentError(f"{op}: expected 0 < win_length <= n_fft={n_fft}, got "
                            f"win_length={win_length}")


@method("stft")
def stft(input: Tensor, n_fft: int, hop_length: int | None = None,
         win_length: int | None = None, window: Tensor | None = None, center: bool = True,
         pad_mode: str = "reflect", normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None, align_to_window: bool | None = None) -> Tensor:
    """The short-time Fourier transform of a signal ``(L,)`` or batch of signals ``(B, L)``:
    the DFT of each frame of ``n_fft`` samples, ``hop_length`` (``n_fft // 4``) apart, times
    ``window`` (``win_length`` points, ``n_fft`` by default, zero-padded on both sides to
    ``n_fft``; none: rectangular). Shape ``(B?, n_fft // 2 + 1, frames)`` for a one-sided
    transform (the default for real input and window), ``(B?, n_fft, frames)`` otherwise.

    ``center`` pads ``n_fft // 2`` samples on both sides (``pad_mode``) so frame ``t`` is
    centred on sample ``t * hop_length``; without it, ``align_to_window=True`` starts each
    frame's window, rather than the frame, at ``t * hop_length``. ``normalized`` scales by
    ``1 / sqrt(n_fft)``. ``return_complex`` must be given for a real input and window, as in
    PyTorch; ``False`` (deprecated) gives the real view, a last dim of 2.

    Example:
        >>> ember.stft(ember.tensor([1.0, 2.0, 3.0, 4.0]), n_fft=2, hop_length=2,
        ...            window=ember.ones(2), center=False, return_complex=True)
        tensor([[ 3.+0.j,  7.+0.j],
                [-1.+0.j, -1.+0.j]])
    """
    op = "stft"
    n_fft, hop, win_length = _int_sizes(op, n_fft, hop_length, win_length)
    window = _tensor_window(window, op)
    if center and align_to_window is not None:
        raise ArgumentError("stft: align_to_window should only be set when center=False")
    complex_window = window is not None and window.dtype.is_complex
    if return_complex is None:
        if not (is_complex_input(op, "input", input) or complex_window):
            raise ArgumentError("stft: requires the return_complex parameter be given for real "
                                "inputs. Hint: pass return_complex=True (return_complex=False is "
                                "deprecated)")
        return_complex = True
    elif not return_complex:
        warnings.warn("stft with return_complex=False is deprecated: pass return_complex=True "
                      "and use ember.view_as_real on the complex result for the old format",
                      UserWarning, stacklevel=2)
    if not (is_floating_input("stft", "input", input) or input.dtype.is_complex):
        raise DTypeError(f"stft: expected a tensor of floating point or complex values, got "
                         f"{input.dtype.name}")
    if input.ndim not in (1, 2):
        raise ShapeError(f"stft: expected a 1-D or 2-D (batch, time) signal, got shape "
                         f"{tuple(input.shape)}")
    x = unsqueeze(input, 0) if input.ndim == 1 else input
    if center:
        x = _center_pad(x, n_fft, pad_mode)
    length = x.shape[-1]
    if not 0 < n_fft <= length:
        raise ArgumentError(f"stft: expected 0 < n_fft <= {length} (the signal's length"
                            f"{', padded' if center else ''}), got n_fft={n_fft}")
    _check_sizes(op, n_fft, hop, win_length)
    _check_window(window, win_length, op)
    if window is None:
        warnings.warn(_NO_WINDOW.format(why=", which is known to cause spectral leakage"),
                      UserWarning, stacklevel=2)
    left = (n_fft - win_length) // 2
    # frames of the window's length: frame t starts at t * hop (+ left unless aligned)
    start, span = (0, win_length) if align_to_window else (left, n_fft)
    count = 1 + (length - span) // hop
    if align_to_window and (count - 1) * hop + n_fft > length + 2 * left:
        # PyTorch reads each aligned frame's n_fft samples from `left` before its window
        # (the signal padded by `left` on both sides): the last frame must fit in that
        raise ArgumentError(f"stft: with align_to_window=True the last of {count} frames "
                            f"(hop_length={hop}) needs n_fft={n_fft} samples starting "
                            f"{left} before its window, past the end of the signal (length "
                            f"{length}). Hint: make n_fft - win_length even (then every frame "
                            "fits) or use center=True")
    frames = x[:, start:].unfold(-1, win_length, hop)[:, :count]
    if window is not None:
        frames = frames * window
    if win_length < n_fft:
        frames = pad(frames, (left, n_fft - win_length - left))
    norm = "ortho" if normalized else "backward"
    is_complex = frames.dtype.is_complex
    onesided = not is_complex if onesided is None else onesided
    if is_complex and onesided:
        raise ArgumentError("stft: cannot have a one-sided output when the window or input is "
                            "complex. Hint: pass onesided=False")
    out = fft_r2c(frames, (2,), norm) if onesided else fft_c2c(frames, (2,), False, norm)
    out = transpose(out, 1, 2)
    if input.ndim == 1:
        out = squeeze(out, 0)
    return out if return_complex else view_as_real(out)


def _center_pad(x: Tensor, n_fft: int, pad_mode: str) -> Tensor:
    if pad_mode not in _PAD_MODES:
        raise ArgumentError(f"stft: unknown pad_mode {pad_mode!r}; expected one of "
                            f"{', '.join(_PAD_MODES)}")
    half = n_fft // 2
    if pad_mode == "reflect" and half >= x.shape[-1]:
        raise ShapeError(f"stft: reflect padding of n_fft // 2 = {half} needs a signal longer "
                         f"than that, got length {x.shape[-1]}. Hint: pad_mode='constant' or "
                         "a smaller n_fft")
    if x.ndim == 1:  # (the non-constant modes pad a 2-D or 3-D input, as PyTorch's)
        return pad(x.unsqueeze(0), (half, half), mode=pad_mode).squeeze(0)
    return pad(x, (half, half), mode=pad_mode)


@method("istft")
def istft(input: Tensor, n_fft: int, hop_length: int | None = None,
          win_length: int | None = None, window: Tensor | None = None, center: bool = True,
          normalized: bool = False, onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Tensor:
    """The inverse of :func:`stft`: the signal whose STFT (same ``n_fft``, ``hop_length``,
    ``win_length``, ``window``, ``center``, ``normalized``) is ``input``, a complex
    ``(B?, freq, frames)`` tensor, by least squares (frames inverse-transformed, windowed,
    overlap-added and divided by the overlap-added squared window, which must not vanish:
    the NOLA condition). ``length`` trims the result or pads it with zeros; ``onesided``
    defaults to whether ``freq != n_fft``; ``return_complex`` gives a complex signal (for a
    two-sided input).

    Example:
        >>> x = ember.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        >>> w = ember.hann_window(4)
        >>> ember.istft(ember.stft(x, 4, 1, window=w, return_complex=True), 4, 1, window=w)
        tensor([1., 2., 3., 4., 5., 6.])
    """
    op = "istft"
    n_fft, hop, win_length = _int_sizes(op, n_fft, hop_length, win_length)
    length = None if length is None else as_int(length, op, "length")
    window = _tensor_window(window, op)
    if not is_complex_input(op, "input", input):
        raise DTypeError(f"istft: requires a complex-valued input tensor matching the output "
                         f"of stft with return_complex=True, got "
                         f"{dtype_name(op, 'input', input)}. Hint: "
                         "ember.view_as_complex turns the old (..., 2) format into it")
    if input.ndim not in (2, 3):
        raise ShapeError(f"istft: expected a 2-D (freq, frames) or 3-D (batch, freq, frames) "
                         f"tensor, got shape {tuple(input.shape)}")
    _check_sizes(op, n_fft, hop, win_length)
    if hop > win_length:
        raise ArgumentError(f"istft: expected 0 < hop_length <= win_length={win_length}, got "
                            f"hop_length={hop}")
    _check_window(window, win_length, op)
    if window is None:
        warnings.warn(_NO_WINDOW.format(why=". Provide the window stft used to make the "
                                        "inversion lossless"), UserWarning, stacklevel=2)
    x = unsqueeze(input, 0) if input.ndim == 2 else input
    freq, count = x.shape[1], x.shape[2]
    onesided = freq != n_fft if onesided is None else onesided
    expected = n_fft // 2 + 1 if onesided else n_fft
    if freq != expected:
        raise ShapeError(f"istft: expected {expected} frequencies (n_fft={n_fft}, onesided="
                         f"{onesided}) in dim -2 of the input, got shape {tuple(input.shape)}")
    if x.numel() == 0:
        raise ShapeError(f"istft: input tensor cannot be empty, got shape {tuple(input.shape)}")
    total = n_fft + hop * (count - 1)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:  # PyTorch's end, -(n_fft // 2) when centred: for n_fft=1 that is 0, no samples
        end = total - start if start or not center else 0
    if min(end, total) <= start:
        raise ArgumentError(f"istft: the signal would have no samples ({count} frame(s) of "
                            f"n_fft={n_fft}, center={center}, length={length}). Hint: pass a "
                            "positive length or more frames")
    if return_complex and onesided:
        raise ArgumentError("istft: cannot have a one-sided input with return_complex=True. "
                            "Hint: pass the two-sided STFT and onesided=False")
    if not return_complex and window is not None and window.dtype.is_complex:
        raise DTypeError("istft: complex windows are incompatible with return_complex=False")
    if window is None:
        window = ones(win_length, dtype=input.dtype.to_real(), device=input.device)
    left = (n_fft - win_length) // 2
    window = pad(window, (left, n_fft - win_length - left))
    envelope = overlap_add((window * window).expand(1, count, n_fft), hop)
    envelope = apply(NolaCheck, envelope[:, start:end])
    norm = "ortho" if normalized else "backward"
    frames = transpose(x, 1, 2)
    if return_complex:
        frames = fft_c2c(frames, (2,), True, norm)
    else:
        frames = fft_c2r(frames[..., :n_fft // 2 + 1], (2,), n_fft, norm)
    signal = overlap_add(frames * window, hop)[:, start:end] / envelope
    if end > total:
        warnings.warn("istft: the signal is shorter than the length parameter; it is padded "
                      "with zeros at the end. Check the center and hop_length settings",
                      UserWarning, stacklevel=2)
        signal = pad(signal, (0, end - total))
    return squeeze(signal, 0) if input.ndim == 2 else signal


class NolaError(ArgumentError):
    """The overlap-added squared window vanishes where ``istft`` divides by it (a ValueError
    and, as PyTorch's, a RuntimeError)."""


@primitive
class NolaCheck(Primitive):
    """The overlap-added squared window ``(..., samples)``, unchanged, once checked not to
    vanish (below 1e-11) anywhere: the NOLA condition ``istft`` divides by. A primitive, so
    the check runs on each call's window under ``jit`` and ``vmap`` too."""

    name = "nola_check"
    complex_grad = True
    save_inputs = False  # its gradient passes through untouched

    def forward(self, xp, envelope):
        low = (xp.abs(envelope) < 1e-11).reshape(-1, envelope.shape[-1]).any(axis=0)
        if bool(low.any()):
            raise NolaError(f"istft: the window overlap-add (sum of squared windows) vanishes "
                             f"at output sample {int(xp.argmax(low))}: the window and "
                             "hop_length break the NOLA condition. Hint: use center=True, a "
                             "smaller hop_length or a window without zeros there")
        return envelope

    def infer(self, envelope):
        return TensorSpec(tuple(envelope.shape), envelope.dtype)

    def vjp(self, ctx, g):
        return g

    def jvp(self, ctx, da):
        return da

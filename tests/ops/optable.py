"""The op table: one row per op, checked against PyTorch and finite differences.

A row is an :class:`OpCase`: the op written in Ember and in PyTorch, and samples of inputs
(broadcasting, 0-d, empty, non-contiguous, negative dims…). ``op_tests(CASES)`` returns the
test functions a family's test module exposes:

- forward: same values, shapes and dtypes as PyTorch, in float32 and float64;
- backward: same gradients as ``torch.autograd.grad`` for a random output gradient;
- gradcheck / gradgradcheck: Ember's own derivatives against central differences (float64);
- jvp: the forward-mode rules against central differences along a random tangent.

Adding an op is one more row.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import torch

import ember
from ember.autograd.forward import jvp as forward_jvp
from ember.autograd.gradcheck import gradcheck, gradgradcheck


@dataclass(frozen=True)
class Arg:
    """A random floating input: ``arg(3, 4)``; ``grad=False`` for one not differentiated."""

    shape: tuple[int, ...]
    low: float = -2.0
    high: float = 2.0
    grad: bool = True
    noncontig: bool = False
    integer: bool = False  # integer-valued (for ops like floor whose FD derivative breaks)
    channels_last: bool = False  # an (N, C, *spatial) image laid out as (N, *spatial, C)

    def make(self, rng: np.random.Generator) -> np.ndarray:
        shape = self.shape[::-1] if self.noncontig else self.shape
        if self.channels_last:
            shape = (shape[0], *shape[2:], shape[1])
        a = rng.uniform(self.low, self.high, size=shape)
        if self.integer:
            a = np.asarray(np.round(a))  # a 0-d round gives a NumPy scalar
        if self.channels_last:
            return np.moveaxis(a, -1, 1)
        return a.T if self.noncontig else a


def arg(*shape: int, **kw: Any) -> Arg:
    return Arg(tuple(shape), **kw)


@dataclass(frozen=True)
class Const:
    """A fixed input passed to both frameworks as-is (indices, masks, …)."""

    value: Any

    def make(self, rng: np.random.Generator) -> Any:
        return self.value


@dataclass
class Sample:
    args: tuple
    kwargs: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        shown = ",".join("x".join(map(str, a.shape)) if isinstance(a, Arg) else "c"
                         for a in self.args)
        return shown + ("," + ",".join(f"{k}={getattr(v, '__name__', v)}"
                                       for k, v in self.kwargs.items()) if self.kwargs else "")


def S(*args: Any, **kwargs: Any) -> Sample:  # noqa: N802 - reads like a table row
    return Sample(args, kwargs)


@dataclass
class OpCase:
    name: str
    ember_fn: Callable
    torch_fn: Callable
    samples: list[Sample]
    grad: bool = True
    gradgrad: bool = True
    jvp: bool = True
    atol: float = 1e-5
    rtol: float = 1e-4
    float32: bool = True
    ember_kwargs: Callable[[dict], dict] | None = None  # when the kwarg spelling differs

    def __repr__(self) -> str:
        return self.name


def _to_ember(value: Any, dtype: Any, requires_grad: bool) -> Any:
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            t = ember.from_numpy(np.asarray(value, dtype=dtype.np) if value.dtype != dtype.np
                                 else value)
            return t.requires_grad_(requires_grad) if requires_grad else t
        return ember.from_numpy(value)
    return value


def _to_torch(value: Any, dtype: torch.dtype, requires_grad: bool) -> Any:
    if isinstance(value, np.ndarray):
        t = torch.from_numpy(value.copy() if not value.flags.writeable else value)
        if value.dtype.kind == "f":
            t = t.to(dtype)
            return t.requires_grad_(requires_grad) if requires_grad else t
        return t
    return value


def _inputs(case: OpCase, sample: Sample) -> list:
    rng = np.random.default_rng(zlib.crc32(f"{case.name}{sample!r}".encode()))
    return [a.make(rng) for a in sample.args]


def _outs(x: Any) -> list:
    if isinstance(x, (tuple, list)):
        return [o for o in x]
    return [x]


def _np(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):  # (torch's complex ops may leave lazy conj/neg bits)
        return x.detach().resolve_conj().resolve_neg().numpy()
    if isinstance(x, ember.Tensor):
        return np.asarray(x.detach()._data)
    return np.asarray(x)


def _wants_grad(sample: Sample) -> list[bool]:
    return [isinstance(a, Arg) and a.grad for a in sample.args]


def _run_ember(case: OpCase, sample: Sample, args: list) -> Any:
    kwargs = case.ember_kwargs(sample.kwargs) if case.ember_kwargs else sample.kwargs
    return case.ember_fn(*args, **kwargs)


def _pairs(case: OpCase) -> list:
    return [pytest.param(case, s, id=f"{case.name}[{s!r}]") for s in case.samples]


def check_forward(case: OpCase, sample: Sample) -> None:
    raw = _inputs(case, sample)
    for e_dt, t_dt in [(ember.float64, torch.float64), (ember.float32, torch.float32)]:
        if e_dt is ember.float32 and not case.float32:
            continue
        mine = _outs(_run_ember(case, sample, [_to_ember(v, e_dt, False) for v in raw]))
        ref = _outs(case.torch_fn(*[_to_torch(v, t_dt, False) for v in raw], **sample.kwargs))
        assert len(mine) == len(ref), f"{case.name}: {len(mine)} outputs, torch has {len(ref)}"
        tol = (case.rtol, case.atol) if e_dt is ember.float64 else (max(case.rtol, 1e-4),
                                                                     max(case.atol, 1e-5))
        for i, (m, r) in enumerate(zip(mine, ref)):
            if isinstance(r, torch.Tensor):
                assert isinstance(m, ember.Tensor), f"{case.name}: output {i} is not a tensor"
                assert tuple(m.shape) == tuple(r.shape), \
                    f"{case.name}: output {i} shape {tuple(m.shape)} vs torch {tuple(r.shape)}"
                assert m.dtype.name == str(r.dtype).removeprefix("torch."), \
                    f"{case.name}: output {i} dtype {m.dtype.name} vs torch {r.dtype}"
            np.testing.assert_allclose(_np(m).astype(np.float64) if _np(m).dtype != bool
                                       else _np(m), _np(r), rtol=tol[0], atol=tol[1],
                                       err_msg=f"{case.name} output {i} ({e_dt.name})")


def check_backward(case: OpCase, sample: Sample) -> None:
    raw = _inputs(case, sample)
    wants = _wants_grad(sample)
    if not any(wants):
        pytest.skip("no differentiable input")
    e_in = [_to_ember(v, ember.float64, w) for v, w in zip(raw, wants)]
    t_in = [_to_torch(v, torch.float64, w) for v, w in zip(raw, wants)]
    e_out = [o for o in _outs(_run_ember(case, sample, e_in))
             if isinstance(o, ember.Tensor) and o.requires_grad]
    t_out = [o for o in _outs(case.torch_fn(*t_in, **sample.kwargs))
             if isinstance(o, torch.Tensor) and o.requires_grad]
    rng = np.random.default_rng(1)
    seeds = [rng.standard_normal(tuple(o.shape)) for o in t_out]
    e_x = [x for x, w in zip(e_in, wants) if w]
    t_x = [x for x, w in zip(t_in, wants) if w]
    e_g = ember.autograd.grad(e_out, e_x, [ember.from_numpy(s) for s in seeds],
                              allow_unused=True)
    t_g = torch.autograd.grad(t_out, t_x, [torch.from_numpy(s) for s in seeds],
                              allow_unused=True)
    for i, (m, r) in enumerate(zip(e_g, t_g)):
        if r is None:
            assert m is None or not _np(m).any(), f"{case.name}: grad {i} should be zero/None"
            continue
        assert m is not None, f"{case.name}: no gradient for input {i}"
        np.testing.assert_allclose(_np(m), _np(r), rtol=case.rtol, atol=case.atol,
                                   err_msg=f"{case.name}: gradient of input {i}")
    _check_saved_values(case, sample, raw, wants, seeds, e_g)


def _check_saved_values(case: OpCase, sample: Sample, raw: list, wants: list, seeds: list,
                        expected: tuple) -> None:
    """Changing the inputs in place between forward and backward must either be reported
    (the rules read them) or not change the gradients (they do not): never a silent change.
    This checks every primitive's save_inputs / reads flags."""
    e_in = [_to_ember(np.array(v) if isinstance(v, np.ndarray) else v, ember.float64, w)
            for v, w in zip(raw, wants)]
    outs = [o for o in _outs(_run_ember(case, sample, e_in))
            if isinstance(o, ember.Tensor) and o.requires_grad]
    with ember.no_grad():
        for x, w in zip(e_in, wants):
            if w:
                x.add_(0.375)
    try:
        got = ember.autograd.grad(outs, [x for x, w in zip(e_in, wants) if w],
                                  [ember.from_numpy(s) for s in seeds], allow_unused=True)
    except ember.GradError as err:
        assert "modified in place" in str(err), err
        return
    for i, (m, r) in enumerate(zip(got, expected)):
        if r is not None and m is not None:
            np.testing.assert_allclose(_np(m), _np(r), rtol=case.rtol, atol=case.atol,
                                       err_msg=f"{case.name}: the gradient of input {i} "
                                       "silently used values changed in place after forward")


def _grad_inputs(case: OpCase, sample: Sample) -> tuple[list, Callable]:
    raw = _inputs(case, sample)
    wants = _wants_grad(sample)
    if not any(wants):
        pytest.skip("no differentiable input")
    xs = [_to_ember(v, ember.float64, w) for v, w in zip(raw, wants)]
    # non-contiguous views: gradcheck perturbs in place, so give it its own copies
    xs = [ember.from_numpy(np.array(x._data)).requires_grad_(True)
          if isinstance(x, ember.Tensor) and x.requires_grad else x for x in xs]
    return xs, lambda *a: _run_ember(case, sample, list(a))


def check_gradcheck(case: OpCase, sample: Sample) -> None:
    xs, fn = _grad_inputs(case, sample)
    assert gradcheck(fn, xs, atol=1e-5, rtol=1e-3)


def check_gradgradcheck(case: OpCase, sample: Sample) -> None:
    xs, fn = _grad_inputs(case, sample)
    assert gradgradcheck(fn, xs, atol=1e-5, rtol=1e-3)


def check_jvp(case: OpCase, sample: Sample) -> None:
    xs, fn = _grad_inputs(case, sample)
    rng = np.random.default_rng(2)
    tangents = [ember.from_numpy(rng.standard_normal(x.shape)) if isinstance(x, ember.Tensor)
                and x.requires_grad else None for x in xs]
    primals = [x.detach() if isinstance(x, ember.Tensor) else x for x in xs]
    _, dout = _jvp_all(fn, primals, tangents)
    eps = 1e-6
    plus = _outs(fn(*[p if t is None else p + eps * t for p, t in zip(primals, tangents)]))
    minus = _outs(fn(*[p if t is None else p - eps * t for p, t in zip(primals, tangents)]))
    for i, (d, a, b) in enumerate(zip(_outs(dout), plus, minus)):
        if not (isinstance(a, ember.Tensor) and a.dtype.is_floating_point):
            continue
        numerical = (_np(a) - _np(b)) / (2 * eps)
        # (where the output is NaN or infinite finite differences say nothing: torch's tangent
        # there may be finite, e.g. 0 for a NaN through a product with a constant)
        defined = np.isfinite(_np(a)) & np.isfinite(_np(b))
        np.testing.assert_allclose(_np(d)[defined], numerical[defined], rtol=1e-3, atol=1e-5,
                                   err_msg=f"{case.name}: jvp of output {i}")


def _jvp_all(fn: Callable, primals: list, tangents: list) -> tuple:
    """Forward-mode jvp of ``fn`` along tangents of its differentiable inputs only."""
    idx = [i for i, t in enumerate(tangents) if t is not None]

    def partial(*diff: Any) -> Any:
        args = list(primals)
        for i, d in zip(idx, diff):
            args[i] = d
        return fn(*args)

    return forward_jvp(partial, tuple(primals[i] for i in idx), tuple(tangents[i] for i in idx))


def _real_parts(lib: Any, out: Any) -> Any:
    """A complex output as its (real, imag) pairs; a real one as it is."""
    return lib.view_as_real(out.resolve_conj()) if out.is_complex() else out


def complex_case(name: str, fn: Callable, *shapes: tuple[int, ...], **kw: Any) -> OpCase:
    """A row for ``fn(lib, *complex tensors)``, each complex input of ``shapes`` made of two
    real inputs (its parts), each complex output given as its parts: complex ops get every
    check of the table (gradcheck in float64 through the parts, which is complex128)."""
    def build(lib):
        def run(*parts):
            zs = [lib.complex(parts[i], parts[i + 1]) for i in range(0, len(parts), 2)]
            out = fn(lib, *zs)
            if isinstance(out, tuple):
                return tuple(_real_parts(lib, o) for o in out)
            return _real_parts(lib, out)
        return run
    return OpCase(name, build(ember), build(torch),
                  [S(*(arg(*s) for s in shapes for _ in range(2)))], **kw)


def op_tests(cases: list[OpCase]) -> tuple[Callable, ...]:
    """The five parametrized test functions for a family's table."""
    every = [p for c in cases for p in _pairs(c)]
    grads = [p for c in cases if c.grad for p in _pairs(c)]
    second = [p for c in cases if c.grad and c.gradgrad for p in _pairs(c)]
    forward = [p for c in cases if c.grad and c.jvp for p in _pairs(c)]

    @pytest.mark.parametrize("case,sample", every)
    def test_forward(case: OpCase, sample: Sample) -> None:
        check_forward(case, sample)

    @pytest.mark.parametrize("case,sample", grads)
    def test_backward(case: OpCase, sample: Sample) -> None:
        check_backward(case, sample)

    @pytest.mark.parametrize("case,sample", grads)
    def test_gradcheck(case: OpCase, sample: Sample) -> None:
        check_gradcheck(case, sample)

    @pytest.mark.parametrize("case,sample", second)
    def test_gradgradcheck(case: OpCase, sample: Sample) -> None:
        check_gradgradcheck(case, sample)

    @pytest.mark.parametrize("case,sample", forward)
    def test_jvp(case: OpCase, sample: Sample) -> None:
        check_jvp(case, sample)

    return test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp


# -- one call in both frameworks -----------------------------------------------------------------
def same_as_torch(fn: Callable[[Any], Any], rtol: float = 0.0, atol: float = 0.0) -> None:
    """``fn(ember)`` and ``fn(torch)`` give the same dtypes, shapes and values (NaN equal to
    NaN; exactly, unless ``rtol``/``atol``), output by output."""
    assert_same(fn(ember), fn(torch), rtol, atol)


def assert_same(mine: Any, ref: Any, rtol: float = 0.0, atol: float = 0.0) -> None:
    """Ember's result ``mine`` and PyTorch's ``ref`` (tensors, numbers, or tuples of them) have
    the same dtypes, shapes and values (NaN equal to NaN; exactly, unless ``rtol``/``atol``)."""
    mine, ref = _outs(mine), _outs(ref)
    assert len(mine) == len(ref)
    for m, r in zip(mine, ref):
        if not isinstance(r, torch.Tensor):
            assert m == r, (m, r)
            continue
        assert m.dtype.name == str(r.dtype).removeprefix("torch."), (m.dtype, r.dtype)
        assert tuple(m.shape) == tuple(r.shape), (tuple(m.shape), tuple(r.shape))
        wide = "complex128" if r.is_complex() else "float64"
        got = _np(m.detach().to(getattr(ember, wide)))
        want = _np(r.detach().to(getattr(torch, wide)))
        if r.is_complex():  # both parts, apart (equal_nan takes nan+1j for nan+5j)
            got, want = np.stack([got.real, got.imag]), np.stack([want.real, want.imag])
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def assert_same_bits(mine: Any, ref: Any) -> None:
    """Ember's complex tensor ``mine`` and PyTorch's ``ref`` have one dtype and the same bits,
    part by part (signed zeros and NaN in place)."""
    part = np.float32 if ref.dtype == torch.complex64 else np.float64
    assert mine.dtype.name == str(ref.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(mine.numpy().reshape(-1).view(part),
                                  ref.numpy().reshape(-1).view(part))


def tensor_in(lib: Any, x: Any) -> Any:
    """``x`` (a NumPy array, copied, or data ``tensor`` takes) as a tensor of ``lib``."""
    return lib.from_numpy(x.copy()) if isinstance(x, np.ndarray) else lib.tensor(x)


def raises_like_torch(fn: Callable[[Any], Any], error: type, match: str) -> None:
    """PyTorch refuses ``fn(torch)``; Ember raises ``error`` with a message matching
    ``match``."""
    with pytest.raises((RuntimeError, NotImplementedError, TypeError, ValueError)):
        fn(torch)
    with pytest.raises(error, match=match):
        fn(ember)

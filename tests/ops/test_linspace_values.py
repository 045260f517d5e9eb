"""linspace gives PyTorch's exact values (histogram edges and grids then agree bit for bit)."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_linspace_gives_torch_s_exact_values(dtype):
    # (PyTorch counts half the points up from start and half down from end, one fused
    # multiply-add each: linspace(0, 1, 11)[6] is 0.6, not NumPy's 0.6000000000000001)
    rng = np.random.default_rng(0)
    for _ in range(60):
        steps = int(rng.integers(0, 200))
        a, b = (float(v) for v in rng.normal(size=2) * 10)
        if "complex" in dtype:
            a, b = complex(a, rng.normal()), complex(b, rng.normal())
        want = torch.linspace(a, b, steps, dtype=getattr(torch, dtype)).numpy()
        got = ember.linspace(a, b, steps, dtype=getattr(ember, dtype)).numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"linspace({a}, {b}, {steps})")


@pytest.mark.parametrize("op", ["linspace", "logspace"])
def test_complex_ends_with_a_real_dtype_are_refused_as_torch(op):
    # (the imaginary part was dropped silently, or a bare "float() argument" leaked)
    with pytest.raises(RuntimeError):
        getattr(torch, op)(1j, 2, 5, dtype=torch.float64)
    with pytest.raises(ember.errors.DTypeError, match=f"{op}: complex ends"):
        getattr(ember, op)(1j, 2, 5, dtype=ember.float64)


@pytest.mark.parametrize("op", ["linspace", "logspace"])
@pytest.mark.parametrize("start, end", [([1, 1], [3, 3]), ([1.0], 3.0), (1.0, [[3.0]])])
@pytest.mark.parametrize("steps", [1, 3])
def test_tensor_ends_must_be_zero_dimensional_as_torch(op, start, end, steps):
    # (steps=1 gave a silent [[1., 1.]], more steps a bare NumPy "only 0-dimensional arrays")
    with pytest.raises(RuntimeError, match="0-dimensional"):
        getattr(torch, op)(torch.tensor(start), torch.tensor(end), steps)
    with pytest.raises(ember.errors.ShapeError, match=f"{op}: .*0-dimensional"):
        getattr(ember, op)(ember.tensor(start), ember.tensor(end), steps)


@pytest.mark.parametrize("op", ["linspace", "logspace"])
def test_zero_dimensional_tensor_ends_match_torch(op):
    want = getattr(torch, op)(torch.tensor(1.0), torch.tensor(3), 5)
    got = getattr(ember, op)(ember.tensor(1.0), ember.tensor(3), 5)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("op", ["linspace", "logspace"])
@pytest.mark.parametrize("steps", [1, 2, 5])
@pytest.mark.parametrize("complex_start", [True, False])
def test_complex_zero_dimensional_tensor_ends_match_torch(op, steps, complex_start):
    # (a complex 0-d tensor end was spaced in float32: its imaginary part silently dropped)
    ends = [1 + 1j, 3] if complex_start else [0.5, 1j]
    want = getattr(torch, op)(*(torch.tensor(e) for e in ends), steps)
    got = getattr(ember, op)(*(ember.tensor(e) for e in ends), steps)
    assert got.dtype.name == str(want.dtype).removeprefix("torch.") == "complex64"
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
    with pytest.raises(RuntimeError, match="cast"):
        getattr(torch, op)(*(torch.tensor(e) for e in ends), steps, dtype=torch.float32)
    with pytest.raises(ember.errors.DTypeError, match=f"{op}: complex ends"):
        getattr(ember, op)(*(ember.tensor(e) for e in ends), steps, dtype=ember.float32)


@pytest.mark.parametrize("op", ["linspace", "logspace"])
@pytest.mark.parametrize("end", [[1, 2], [1, [2]], None, "1", (1,)])
def test_ends_that_are_not_numbers_or_tensors_are_refused_as_torch(op, end):
    # (a ragged list gave a bare NumPy ValueError, None a silent [nan, nan, nan], "1" passed)
    with pytest.raises(TypeError):
        getattr(torch, op)(0, end, 3)
    with pytest.raises(ember.errors.ArgumentTypeError, match=f"{op}\\(\\): argument 'end' must"):
        getattr(ember, op)(0, end, 3)


@pytest.mark.parametrize("op", ["linspace", "logspace"])
def test_numpy_bool_and_scalar_ends_are_numbers_as_torch(op):
    # (np.bool_ is no numbers.Number: it was refused, its message naming 'bool np.False_')
    for start in (np.bool_(False), np.float32(0.0), np.int64(0)):
        want = getattr(torch, op)(start, 1.0, 3)
        np.testing.assert_allclose(getattr(ember, op)(start, 1.0, 3).numpy(), want.numpy())
    with pytest.raises(ember.errors.ArgumentTypeError, match="not torch.Tensor"):
        getattr(ember, op)(torch.tensor(1.0), 2.0, 3)


@pytest.mark.parametrize("op", ["linspace", "logspace"])
@pytest.mark.parametrize("start, end, dtype", [
    (0, 300, "uint8"), (-200, 0, "int8"), (0, 70000, "int16"), (0, 70000, "float16"),
    (0, 1e39, "float32"), (0, 1e39, None), (0, 1e39, "bfloat16"), (0, 2**40, "int32")])
def test_ends_beyond_the_dtype_are_refused_as_torch(op, start, end, dtype):
    # (linspace(0, 300, 4, dtype=uint8) wrapped silently to [0, 100, 200, 44], and
    # linspace(0, 1e39, 3) in float32 gave [nan, nan, nan])
    kw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    with pytest.raises(RuntimeError, match="without overflow"):
        getattr(torch, op)(start, end, 4, **kw)
    kw = {} if dtype is None else {"dtype": getattr(ember, dtype)}
    with pytest.raises(ember.errors.ValueOverflow, match=f"{op}: the value .* without overflow"):
        getattr(ember, op)(start, end, 4, **kw)
    with pytest.raises(ember.errors.ValueOverflow, match=f"{op}: the value"):
        getattr(ember, op)(ember.tensor(start), ember.tensor(end, dtype=ember.float64), 4, **kw)


@pytest.mark.parametrize("start, end, dtype", [(-255, 0, "uint8"), (-1, 1, "uint8"),
                                               (0, float("inf"), "float32"), (-5, 5, "uint8"),
                                               (0, 1e39, "float64"), (-128, 127, "int8")])
def test_ends_that_the_dtype_holds_still_space_as_torch(start, end, dtype):
    # (an unsigned dtype takes negative ends down to -max, cast first as torch: linspace(-1, 1,
    # 4, dtype=uint8) is [255, 170, 85, 1], it gave [255, 0, 0, 1]; infinity is no overflow)
    want = torch.linspace(start, end, 3, dtype=getattr(torch, dtype))
    got = ember.linspace(start, end, 3, dtype=getattr(ember, dtype))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("op", ["linspace", "logspace"])
@pytest.mark.parametrize("start, end, dtype", [
    (0, 300, "uint8"), (300, 0, "uint8"), (0, 1e39, "float32"), (1e39, 0, "float32"),
    (0, -1e39, "float32"), (2, 3, "uint8"), (3, 0, "uint8"), (2.5, 0, "uint8"), (300, 0, "float32"),
    (40, 0, "float32"), (1e39, 0, "uint8")])
@pytest.mark.parametrize("steps", [0, 1, 2])
def test_only_the_points_the_steps_make_are_checked_as_torch(op, start, end, dtype, steps):
    # review54d item 4: linspace(0, 300, 1, dtype=uint8) is torch's [0] (no step reaches 300), and
    # no point at all is checked for 0 steps; logspace's one point is base ** start
    try:
        want = getattr(torch, op)(start, end, steps, dtype=getattr(torch, dtype))
    except RuntimeError:
        with pytest.raises(ember.errors.ValueOverflow, match=f"{op}: the value"):
            getattr(ember, op)(start, end, steps, dtype=getattr(ember, dtype))
        return
    got = getattr(ember, op)(start, end, steps, dtype=getattr(ember, dtype))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_integer_linspace_gives_torch_s_exact_values(dtype):
    # (the integer points are one fused multiply-add too, then truncated: linspace(7, -8, 10)
    # in int8 has 1 at [3], torch's 1.9999999999999998 truncated; Ember's plain product gave 2)
    assert ember.linspace(7, -8, 10, dtype=ember.int8).tolist() == \
        torch.linspace(7, -8, 10, dtype=torch.int8).tolist()
    rng = np.random.default_rng(1)
    low = 0 if dtype == "uint8" else -100
    for _ in range(200):
        start, end = (float(np.round(rng.uniform(low, 100), int(rng.integers(0, 3))))
                      for _ in range(2))
        steps = int(rng.integers(2, 40))
        want = torch.linspace(start, end, steps, dtype=getattr(torch, dtype)).tolist()
        assert ember.linspace(start, end, steps, dtype=getattr(ember, dtype)).tolist() == want, \
            (start, end, steps)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "int64"])
def test_integer_logspace_gives_torch_s_values(dtype):
    # (its ends cast to the dtype, wrapping: -4 is 252 in uint8; its exponents without a fused
    # multiply-add: logspace(-8.398, 7, 10) in int64 has 100 at [6], Ember's was 99)
    assert ember.logspace(-8.398, 7, 10, dtype=ember.int64).tolist() == \
        torch.logspace(-8.398, 7, 10, dtype=torch.int64).tolist()
    assert ember.logspace(-4, 0.3, 7, base=0.5, dtype=ember.uint8).tolist() == \
        torch.logspace(-4, 0.3, 7, base=0.5, dtype=torch.uint8).tolist()
    rng = np.random.default_rng(2)
    for _ in range(200):
        low = 0 if dtype == "uint8" else -6  # (torch refuses some negative uint8 ends)
        start, end = (float(np.round(rng.uniform(low, 4), 2)) for _ in range(2))
        steps, base = int(rng.integers(2, 12)), float(rng.choice([2.0, 10.0, 3.0, 1.5]))
        want = torch.logspace(start, end, steps, base, dtype=getattr(torch, dtype)).tolist()
        got = ember.logspace(start, end, steps, base, dtype=getattr(ember, dtype)).tolist()
        assert got == want, (start, end, steps, base)


def test_integer_logspace_computes_no_linspace_it_throws_away(monkeypatch):
    # integer logspace made linspace's float64 exponents, then replaced them with unfused ones
    # (25 of 53 ms for 10**6 steps); a float dtype still takes linspace's
    import ember.ops.constructors as constructors
    calls = []
    real = constructors.linspace
    monkeypatch.setattr(constructors, "linspace", lambda *a, **k: calls.append(a) or real(*a, **k))
    for dtype in ("int64", "uint8", "int16"):
        got = ember.logspace(0.5, 4.3, 9, base=3, dtype=getattr(ember, dtype))
        assert got.tolist() == torch.logspace(0.5, 4.3, 9, base=3,
                                              dtype=getattr(torch, dtype)).tolist()
    assert calls == []
    ember.logspace(0, 2, 3)
    assert len(calls) == 1
    with pytest.raises(ember.errors.AllocationError, match="logspace: cannot allocate shape"):
        ember.logspace(0, 2, 2 ** 50, dtype=ember.int64)


@pytest.mark.parametrize("steps", [2.5, "tensor"])
def test_a_steps_that_is_not_an_integer_is_refused_as_torch(steps):
    # integer logspace skipped linspace's check after 44d6585f: steps=2.5 gave [1, 100]
    steps = ember.tensor(2.5) if steps == "tensor" else steps
    with pytest.raises(TypeError, match="steps"):
        ember.logspace(0, 2, steps, dtype=ember.int64)
    with pytest.raises(TypeError):
        torch.logspace(0, 2, torch.tensor(2.5) if isinstance(steps, ember.Tensor) else steps,
                       dtype=torch.int64)

"""An explicit ``dtype=`` on a reduction, a norm or a softmax wins over autocast's float32
policy, as PyTorch's (its fp32_set_opt_dtype casts only when the caller passed no dtype);
Ember's autocast cast the requested bfloat16/float16 back to float32."""

import numpy as np
import pytest
import torch

import ember

OPS = {
    "sum": lambda lib, x, d: x.sum(dtype=d),
    "sum_dim": lambda lib, x, d: x.sum(1, dtype=d),
    "mean": lambda lib, x, d: x.mean(dtype=d),
    "prod": lambda lib, x, d: x.prod(dtype=d),
    "cumsum": lambda lib, x, d: x.cumsum(1, dtype=d),
    "cumprod": lambda lib, x, d: x.cumprod(1, dtype=d),
    "softmax": lambda lib, x, d: lib.softmax(x, 1, dtype=d),
    "log_softmax": lambda lib, x, d: x.log_softmax(1, dtype=d),
    "F.softmax": lambda lib, x, d: lib.nn.functional.softmax(x, 1, dtype=d),
    "F.softmax_positional": lambda lib, x, d: lib.nn.functional.softmax(x, 1, 3, d),
    "F.softmin": lambda lib, x, d: lib.nn.functional.softmin(x, 1, dtype=d),
    "nansum": lambda lib, x, d: lib.nansum(x, dtype=d),
    "nanmean": lambda lib, x, d: lib.nanmean(x, 1, dtype=d),
    "vector_norm": lambda lib, x, d: lib.linalg.vector_norm(x.to(d), dtype=d),
    "matrix_norm": lambda lib, x, d: lib.linalg.matrix_norm(x.to(d), dtype=d),
    "norm": lambda lib, x, d: lib.norm(x.to(d), dtype=d),
}


@pytest.mark.parametrize("dtypes", [("bfloat16", "float16"), ("float32", "bfloat16"),
                                    ("float16", "float16"), ("bfloat16", "float32")])
@pytest.mark.parametrize("name", list(OPS))
def test_an_explicit_dtype_wins_over_autocast_as_in_torch(name, dtypes):
    x = np.random.default_rng(0).uniform(0.5, 1.5, (3, 5)).astype(np.float32)
    results = []
    for lib in (ember, torch):
        t = lib.tensor(x).to(getattr(lib, dtypes[0])).requires_grad_()
        with lib.autocast("cpu"):
            y = OPS[name](lib, t, getattr(lib, dtypes[1]))
        y.float().sum().backward()
        results.append((str(y.dtype).split(".")[-1], y.detach().double().numpy(),
                        str(t.grad.dtype).split(".")[-1], t.grad.double().numpy()))
    (ours, ours_y, ours_g_dtype, ours_g), (theirs, theirs_y, theirs_g_dtype, theirs_g) = results
    assert ours == theirs == dtypes[1]  # (before: float32)
    assert ours_g_dtype == theirs_g_dtype
    np.testing.assert_allclose(ours_y, theirs_y, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(ours_g, theirs_g, rtol=2e-2, atol=2e-2)


def test_without_dtype_the_float32_policy_still_applies():
    # (torch's CPU float32 list holds prod and the losses, not sum/softmax/cumsum: those keep
    # bfloat16 inputs in bfloat16, as torch's CPU autocast; the list was CUDA's before)
    for lib in (ember, torch):
        with lib.autocast("cpu"):
            x = lib.ones(3, dtype=lib.bfloat16)
            assert x.prod().dtype is lib.float32
            assert lib.nn.functional.mse_loss(x, x).dtype is lib.float32
            assert x.sum().dtype is x.softmax(0).dtype is x.cumsum(0).dtype is lib.bfloat16


@pytest.mark.parametrize("args, kwargs", [((), {"device_type": "cpu", "enabled": True}),
                                          (("cpu",), {"enabled": True}),
                                          (("cpu", True), {})])
def test_set_autocast_enabled_takes_keywords_as_torchs(args, kwargs):
    states = []
    for lib in (torch, ember):
        try:
            lib.set_autocast_enabled(*args, **kwargs)
            y = lib.ones(2, 2) @ lib.ones(2, 2)
            states.append((lib.is_autocast_enabled("cpu"), str(y.dtype).split(".")[1]))
        finally:
            lib.set_autocast_enabled("cpu", False)
        states.append(lib.is_autocast_enabled("cpu"))
    assert states[:2] == states[2:] == [(True, "bfloat16"), False]


def test_set_autocast_enabled_in_cudas_older_form_and_with_device_type_alone():
    ember.set_autocast_enabled(enabled=True)  # (the older form: CUDA's flag)
    assert ember.is_autocast_enabled() and not ember.is_autocast_enabled("cpu")
    ember.set_autocast_enabled(False)
    assert not ember.is_autocast_enabled()
    with pytest.raises(TypeError, match="enabled"):
        ember.set_autocast_enabled(device_type="cpu")

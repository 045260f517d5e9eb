"""ember.amp.custom_fwd / custom_bwd / is_autocast_available against torch.amp's."""

import numpy as np
import pytest
import torch

import ember


def make_function(lib, cast_inputs, seen):
    amp = lib.amp

    class MatmulFn(lib.autograd.Function):
        @staticmethod
        @amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            seen.append(("forward", lib.is_autocast_enabled("cpu"), str(a.dtype)))
            return a @ b

        @staticmethod
        @amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            seen.append(("backward", lib.is_autocast_enabled("cpu")))
            return g @ b.transpose(0, 1), a.transpose(0, 1) @ g

    return MatmulFn


@pytest.mark.parametrize("cast", ["none", "float32"])
@pytest.mark.parametrize("autocasting", [False, True])
def test_matches_torch(cast, autocasting):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    results = []
    for lib in (torch, ember):
        seen = []
        fn = make_function(lib, None if cast == "none" else getattr(lib, cast), seen)
        ta = lib.tensor(a, dtype=lib.float32, requires_grad=True)
        tb = lib.tensor(b, dtype=lib.bfloat16, requires_grad=True)
        with lib.autocast("cpu", dtype=lib.bfloat16, enabled=autocasting):
            # (mixed dtypes only where autocast or cast_inputs reconciles them)
            out = fn.apply(ta, tb) if autocasting else fn.apply(ta, tb.to(lib.float32))
        out.float().sum().backward()
        results.append((str(out.dtype).split(".")[-1],
                        [(s[0], s[1], *(x.split(".")[-1] for x in s[2:])) for s in seen],
                        ta.grad.float().numpy(), tb.grad.float().numpy()))
    (t_dtype, t_seen, t_ga, t_gb), (e_dtype, e_seen, e_ga, e_gb) = results
    assert e_dtype == t_dtype and e_seen == t_seen
    np.testing.assert_allclose(e_ga, t_ga, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(e_gb, t_gb, rtol=2e-2, atol=2e-2)


def test_arguments_and_availability():
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            lib.amp.custom_fwd(lambda ctx: None, device_type=3)
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            lib.amp.custom_bwd(device_type=None)
        for device in ("cpu", "cuda", "meta"):
            assert ember.amp.is_autocast_available(device) == (device != "meta") == \
                torch.amp.is_autocast_available(device)
        with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
            lib.amp.is_autocast_available("foo")


def test_docstring_examples():
    import doctest

    import ember.amp.custom_function as module

    result = doctest.testmod(module, extraglobs={"ember": ember},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0

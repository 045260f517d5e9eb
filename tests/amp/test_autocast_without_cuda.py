"""autocast('cuda') and GradScaler('cuda') with no CUDA device, as PyTorch's without one:
they warn and are disabled, and the autocast leaves the CPU's autocast state alone (GPU scripts
ported to Ember compute in float32, unscaled)."""
import warnings

import numpy as np
import pytest
import torch

import ember

A = np.random.default_rng(0).standard_normal((3, 3)).astype(np.float32)


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_cuda_autocast_warns_and_casts_nothing(lib):
    a = lib.tensor(A)
    with pytest.warns(UserWarning, match="CUDA is not available"):
        ctx = lib.autocast(device_type="cuda", dtype=lib.float16)
    with ctx:
        assert (a @ a).dtype == lib.float32
        assert not lib.is_autocast_enabled("cuda")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        ctx = lib.amp.autocast("cuda")
    assert ctx.fast_dtype == lib.float16
    np.testing.assert_array_equal(np.asarray((a @ a).tolist(), np.float32),
                                  np.asarray((lib.tensor(A) @ lib.tensor(A)).tolist(), np.float32))


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_cuda_autocast_leaves_the_cpu_state_alone(lib):
    a = lib.tensor(A)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.autocast("cpu"):
            with lib.autocast("cuda", enabled=False):
                assert (a @ a).dtype == lib.bfloat16  # the CPU autocast still casts
                assert lib.is_autocast_enabled("cpu")
        with lib.cuda.amp.autocast(enabled=False):
            assert lib.autocast("cpu").fast_dtype == lib.bfloat16
            assert lib.get_autocast_dtype("cpu") == lib.bfloat16
        with lib.autocast("cuda", dtype=lib.float16):
            with lib.autocast("cpu"):
                assert (a @ a).dtype == lib.bfloat16


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_cuda_grad_scaler_warns_and_passes_through(lib):
    with pytest.warns(UserWarning, match="CUDA is not available"):
        scaler = lib.amp.GradScaler("cuda", init_scale=8.0)
    assert not scaler.is_enabled()
    model = lib.nn.Linear(3, 1)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    loss = model(lib.ones(2, 3)).sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 1.0


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_no_argument_and_the_old_setter_form_mean_cuda(lib):
    a = lib.tensor(A)
    with lib.autocast("cpu"):
        assert lib.is_autocast_enabled("cpu") and not lib.is_autocast_enabled()
        before = lib.is_autocast_enabled()  # the save/restore idiom stays on CUDA's flag
        lib.set_autocast_enabled(False)
        assert (a @ a).dtype == lib.bfloat16
        lib.set_autocast_enabled(before)
    try:
        lib.set_autocast_enabled(True)
        assert lib.is_autocast_enabled() and not lib.is_autocast_enabled("cpu")
        assert (a @ a).dtype == lib.float32  # (no op runs on CUDA)
    finally:
        lib.set_autocast_enabled(False)
    assert lib.get_autocast_dtype("cuda") == lib.float16
    assert lib.get_autocast_dtype("cpu") == lib.bfloat16

"""Model-level agreement with PyTorch: the same initial weights and batches give the same
losses for 10 optimizer steps (5 for ResNet-18, whose steps cost the most; momentum and Adam's
moments are in play from the second), the same gradients after the first step, and (ResNet)
the same BatchNorm running statistics.

Float32, except ResNet-18 in float64: BatchNorm over a batch of 4 makes its trajectory
chaotic, so float32 rounding differences (in either framework) grow past 1e-4 within a few
steps, while in float64 both frameworks agree to ~1e-14. Its images are 8×8 (not CIFAR's
32×32) to keep the test fast; every layer, downsample and the adaptive pool still run."""

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember import models
from tests.models import torch_twins

GPT_CONFIG = dict(vocab_size=256, block_size=16, n_layer=2, n_head=4, d_model=64)

# name -> (ember model, torch twin, make one batch from a NumPy RandomState, loss, dtype)
CASES = {
    "mlp": (models.mlp, torch_twins.mlp,
            lambda r: (r.randn(8, 1, 28, 28), r.randint(0, 10, 8)), "ce", np.float32),
    "cnn": (models.cnn, torch_twins.cnn,
            lambda r: (r.randn(4, 1, 28, 28), r.randint(0, 10, 4)), "ce", np.float32),
    "lenet5": (models.lenet5, torch_twins.lenet5,
               lambda r: (r.randn(4, 1, 28, 28), r.randint(0, 10, 4)), "ce", np.float32),
    "resnet18": (models.resnet18, torch_twins.ResNet18,
                 lambda r: (r.randn(4, 3, 8, 8), r.randint(0, 10, 4)), "ce", np.float64),
    "gpt": (lambda: models.gpt(**GPT_CONFIG), lambda: torch_twins.GPT(**GPT_CONFIG),
            lambda r: (r.randint(0, 256, (2, 16)), r.randint(0, 256, (2, 16))), "lm", np.float32),
}
OPTIMIZERS = {
    "sgd": (lambda m, opt: opt.SGD(m.parameters(), lr=0.01, momentum=0.9)),
    "adamw": (lambda m, opt: opt.AdamW(m.parameters(), lr=1e-4, weight_decay=0.01)),
}
STEPS = 10
FEWER_STEPS = {"resnet18": 5}  # its steps cost the most


def twins(name):
    make_ember, make_torch, batch, kind, dtype = CASES[name]
    ember.manual_seed(0)
    em, tm = make_ember(), make_torch()
    if dtype == np.float64:
        em, tm = em.double(), tm.double()
    e_state = em.state_dict()
    assert {n for n, _ in em.named_parameters()} == {n for n, _ in tm.named_parameters()}
    with torch.no_grad():
        for key, value in tm.state_dict().items():
            if key in e_state:
                value.copy_(torch.from_numpy(e_state[key].numpy().copy()))
    return em, tm, lambda rng: [a.astype(dtype) if a.dtype.kind == "f" else a
                                for a in batch(rng)], kind


def to_pair(array):
    array = np.ascontiguousarray(array)
    return ember.from_numpy(array.copy()), torch.from_numpy(array.copy())


def losses(kind, e_out, t_out, e_y, t_y):
    if kind == "lm":
        return (F.cross_entropy(e_out.reshape(-1, e_out.shape[-1]), e_y.reshape(-1)),
                torch.nn.functional.cross_entropy(t_out.reshape(-1, t_out.shape[-1]),
                                                  t_y.reshape(-1)))
    return F.cross_entropy(e_out, e_y), torch.nn.functional.cross_entropy(t_out, t_y)


def assert_close(e, t, what, rtol=1e-4, atol=0.0):
    e, t = np.asarray(e, dtype=np.float64), t.detach().double().numpy()
    scale = max(float(np.abs(t).max(initial=0.0)), 1e-12)
    np.testing.assert_allclose(e, t, rtol=rtol, atol=max(atol, rtol * scale), err_msg=what)


@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
@pytest.mark.parametrize("name", list(CASES))
def test_training_trajectory_matches_torch(name, opt_name):
    em, tm, batch, kind = twins(name)
    em.train(), tm.train()
    e_opt, t_opt = OPTIMIZERS[opt_name](em, ember.optim), OPTIMIZERS[opt_name](tm, torch.optim)
    rng = np.random.RandomState(1)
    e_losses, t_losses = [], []
    steps = FEWER_STEPS.get(name, STEPS)
    for step in range(steps):
        x, y = batch(rng)
        (e_x, t_x), (e_y, t_y) = to_pair(x), to_pair(y)
        e_loss, t_loss = losses(kind, em(e_x), tm(t_x), e_y, t_y)
        e_opt.zero_grad(), t_opt.zero_grad()
        e_loss.backward(), t_loss.backward()
        if step == 0:
            t_params = dict(tm.named_parameters())
            for pname, p in em.named_parameters():
                assert_close(p.grad.numpy(), t_params[pname].grad, f"{name}: grad of {pname}")
        e_opt.step(), t_opt.step()
        e_losses.append(e_loss.item())
        t_losses.append(t_loss.item())
    np.testing.assert_allclose(e_losses, t_losses, rtol=1e-4, err_msg=f"{name} losses")
    # Weights and BatchNorm running statistics. Adam moves a weight whose gradient is float32
    # noise by up to lr a step either way, hence the absolute tolerance.
    t_state = tm.state_dict()
    for key, value in em.state_dict().items():
        assert_close(value.numpy(), t_state[key], f"{name}: {key} after {steps} steps",
                     rtol=1e-3, atol=1e-4 * steps * 0.5)


def test_gpt_flash_attention_matches_matmul_softmax():
    ember.manual_seed(0)
    plain = models.gpt(**GPT_CONFIG)
    flash = models.gpt(**GPT_CONFIG, flash=True)
    flash.load_state_dict(plain.state_dict())
    idx = ember.randint(0, 256, (2, 16))
    with ember.no_grad():
        np.testing.assert_allclose(flash(idx).numpy(), plain(idx).numpy(), rtol=1e-5,
                                   atol=1e-5)


def test_eval_mode_uses_running_statistics():
    em, tm, batch, _ = twins("resnet18")
    rng = np.random.RandomState(2)
    for _ in range(2):                    # move the running statistics away from 0 and 1
        e_x, t_x = to_pair(batch(rng)[0])
        with ember.no_grad(), torch.no_grad():
            em(e_x), tm(t_x)
    em.eval(), tm.eval()
    e_x, t_x = to_pair(batch(rng)[0])
    with ember.no_grad(), torch.no_grad():
        assert_close(em(e_x).numpy(), tm(t_x), "resnet18 eval logits")

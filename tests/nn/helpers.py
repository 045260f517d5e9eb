"""Helpers for comparing an Ember module with the same torch module on the same weights."""

from __future__ import annotations

import numpy as np
import torch

import ember


def copy_state(torch_module: torch.nn.Module, ember_module: ember.nn.Module) -> None:
    """Loads torch's state dict into the Ember module through NumPy (strict: keys match)."""
    ember_module.load_state_dict({k: v.detach().numpy().copy()
                                  for k, v in torch_module.state_dict().items()})


def compare(torch_module, ember_module, *shapes, dtype=np.float64, train=True, seed=0,
            rtol=1e-7, atol=1e-9, inputs=None, grad_inputs=True):
    """Runs both modules on the same random inputs (or ``inputs``, NumPy arrays) and checks
    outputs, input gradients and parameter gradients; returns the Ember outputs."""
    rng = np.random.default_rng(seed)
    arrays = inputs if inputs is not None else [rng.standard_normal(s).astype(dtype)
                                                for s in shapes]
    torch_module.train(train)
    ember_module.train(train)
    floating = [a.dtype.kind == "f" and grad_inputs for a in arrays]
    tx = [torch.tensor(a, requires_grad=f) for a, f in zip(arrays, floating)]
    ex = [ember.tensor(a, requires_grad=f) for a, f in zip(arrays, floating)]
    t_out, e_out = torch_module(*tx), ember_module(*ex)
    t_outs = t_out if isinstance(t_out, tuple) else (t_out,)
    e_outs = e_out if isinstance(e_out, tuple) else (e_out,)
    t_loss, e_loss = 0, 0
    for i, (t, e) in enumerate(zip(t_outs, e_outs, strict=True)):
        if t is None:
            assert e is None
            continue
        if isinstance(t, tuple):  # LSTM's (h, c)
            t, e = torch.stack(t), ember.stack(list(e))
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol,
                                   atol=atol, err_msg=f"output {i}")
        w = rng.standard_normal(t.shape).astype(np.float64)
        if t.requires_grad:
            t_loss = t_loss + (t * torch.tensor(w, dtype=t.dtype)).sum()
            e_loss = e_loss + (e * ember.tensor(w, dtype=e.dtype)).sum()
    if isinstance(t_loss, torch.Tensor):
        t_loss.backward()
        e_loss.backward()
        for i, (t, e) in enumerate(zip(tx, ex)):
            if t.grad is not None:
                np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=rtol,
                                           atol=atol, err_msg=f"grad of input {i}")
        e_params = dict(ember_module.named_parameters())
        for name, p in torch_module.named_parameters():
            if p.grad is None:
                assert e_params[name].grad is None, name
                continue
            np.testing.assert_allclose(e_params[name].grad.numpy(), p.grad.numpy(), rtol=rtol,
                                       atol=atol, err_msg=f"grad of {name}")
    e_state = ember_module.state_dict()
    for k, v in torch_module.state_dict().items():  # buffers too (running statistics)
        np.testing.assert_allclose(np.asarray(e_state[k].numpy(), dtype=np.float64),
                                   v.detach().double().numpy(), rtol=rtol, atol=atol,
                                   err_msg=f"state {k}")
    return e_out


def pair(torch_cls, ember_cls, *args, dtype=torch.float64, **kwargs):
    """The same layer built in both libraries, float64, with torch's weights in Ember's."""
    t = torch_cls(*args, **kwargs).to(dtype)
    e = ember_cls(*args, **kwargs).to(ember.float64 if dtype == torch.float64 else ember.float32)
    assert list(e.state_dict()) == list(t.state_dict())
    copy_state(t, e)
    return t, e

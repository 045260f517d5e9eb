"""Rank code: differentiable collectives — forward values against NumPy, gradients of the
global function (float64 finite differences, vjp and jvp rules), second order, and the
Megatron pairs against the unsharded layer in PyTorch."""

import numpy as np
import torch
from tests.distributed.dist_check import check_global_gradients
from tests.distributed.harness import report

import ember
import ember.distributed as dist
import ember.distributed.functional as F

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
everyone = [np.random.default_rng(r).standard_normal((2, 4)) for r in range(n)]
x = ember.tensor(everyone[rank])

# forward values
np.testing.assert_allclose(F.all_reduce(x).numpy(), sum(everyone))
np.testing.assert_allclose(F.all_reduce(x, "mean").numpy(), sum(everyone) / n)
np.testing.assert_allclose(F.all_reduce(x, dist.ReduceOp.MAX).numpy(), np.max(everyone, 0))
np.testing.assert_allclose(F.all_gather(x, dim=1).numpy(), np.concatenate(everyone, 1))
np.testing.assert_allclose(
    F.reduce_scatter(x, dim=-1).numpy(), np.split(sum(everyone), n, axis=-1)[rank]
)
np.testing.assert_allclose(F.broadcast(x, src=n - 1).numpy(), everyone[-1])
np.testing.assert_allclose(
    F.scatter_to_group(x, dim=1).numpy(), np.split(everyone[rank], n, 1)[rank]
)

# gradients of the global function: finite differences vs vjp vs jvp (small: every element of
# every rank is perturbed in turn)
xs = x[:, :2].contiguous()
for op in ["sum", "mean", "max", "min", "product"]:
    check_global_gradients(lambda v, op=op: F.all_reduce(v, op) * v, xs)
check_global_gradients(lambda v: F.all_gather(v.sin(), dim=0), xs)
check_global_gradients(lambda v: F.all_gather(v, dim=-1) ** 2, xs)
check_global_gradients(lambda v: F.reduce_scatter(v * v, dim=1), xs)
check_global_gradients(lambda v: F.reduce_scatter(v, dim=0).exp(), xs)
check_global_gradients(lambda v: F.broadcast(v, src=1) * (rank + 1), xs)

# second order through all_reduce: F = sum_r sum(Y^2), Y = sum_r x_r
xr = x.detach().requires_grad_()
(g,) = ember.autograd.grad((F.all_reduce(xr) ** 2).sum(), xr, create_graph=True)
np.testing.assert_allclose(g.detach().numpy(), 2 * n * sum(everyone))
g.sum().backward()
np.testing.assert_allclose(xr.grad.numpy(), np.full((2, 4), 2.0 * n * n))

# Megatron pairs: a column-parallel then a row-parallel linear, with the replicated loss,
# give the unsharded model's gradients (PyTorch, one process)
gen = np.random.default_rng(42)
X, W1, W2 = gen.standard_normal((3, 4)), gen.standard_normal((6, 4)), gen.standard_normal((5, 6))
Xe = ember.tensor(X, requires_grad=True)
W1e = ember.tensor(np.split(W1, n, 0)[rank], requires_grad=True)  # output features split
W2e = ember.tensor(np.split(W2, n, 1)[rank], requires_grad=True)  # input features split


def tp_forward(Xe, W1e, W2e):
    h = (F.copy_to_group(Xe) @ W1e.T).tanh()  # this rank's h features
    full_h = F.gather_from_group(h, dim=-1)  # replicated (3, 6)
    mine = F.scatter_to_group(full_h, dim=-1)  # back to this rank's features
    return F.reduce_from_group(mine @ W2e.T)  # (3, 5), replicated


loss = (tp_forward(Xe, W1e, W2e) ** 2).sum()
loss.backward()
Xt, W1t, W2t = (torch.tensor(a, requires_grad=True) for a in (X, W1, W2))
lt = (((Xt @ W1t.T).tanh() @ W2t.T) ** 2).sum()
lt.backward()
np.testing.assert_allclose(loss.item(), lt.item(), rtol=1e-12)
np.testing.assert_allclose(Xe.grad.numpy(), Xt.grad.numpy(), rtol=1e-10)
np.testing.assert_allclose(W1e.grad.numpy(), np.split(W1t.grad.numpy(), n, 0)[rank], rtol=1e-10)
np.testing.assert_allclose(W2e.grad.numpy(), np.split(W2t.grad.numpy(), n, 1)[rank], rtol=1e-10)

# forward mode through the same pairs: a tangent on X (replicated) against torch.func.jvp
dX = gen.standard_normal((3, 4))
_, tangent = ember.func.jvp(
    lambda v: tp_forward(v, W1e.detach(), W2e.detach()), (ember.tensor(X),), (ember.tensor(dX),)
)
_, expected = torch.func.jvp(
    lambda v: (v @ torch.tensor(W1).T).tanh() @ torch.tensor(W2).T,
    (torch.tensor(X),),
    (torch.tensor(dX),),
)
np.testing.assert_allclose(tangent.numpy(), expected.numpy(), rtol=1e-10)
# vmap: the batched collective equals the collective of each batch element
xb = ember.tensor(np.stack([everyone[rank], 2 * everyone[rank], -everyone[rank]]))
for fn in (
    lambda v: F.all_gather(v, dim=1),
    lambda v: F.reduce_scatter(v, dim=-1),
    lambda v: F.all_reduce(v, "max"),
    lambda v: F.broadcast(v, src=1),
):
    looped = ember.stack([fn(xb[i]) for i in range(3)])
    np.testing.assert_allclose(ember.func.vmap(fn)(xb).numpy(), looped.numpy())
report("ok")

"""Checks run inside the ranks of the 2-rank collective job: DDP communication hooks against
references computed in one process from every rank's local gradients (all-gathered):
allreduce_hook equals DDP without a hook; the fp16/bf16 hooks equal PyTorch's rounding of the
averaged gradients; PowerSGD (per-gradient, batched,
QR and Gram-Schmidt, warm start and error feedback over several steps) equals the same math
on the concatenated ranks' gradients; post-local SGD, PeriodicModelAverager, futures of
collectives, and the hook's errors."""

import math

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.distributed.algorithms.ddp_comm_hooks import (
    DDPCommHookType,
    default_hooks,
    post_localSGD_hook,
    powerSGD_hook,
    register_ddp_comm_hook,
)
from ember.distributed.algorithms.model_averaging.averagers import PeriodicModelAverager

CAP_MB = 0.001  # two buckets: [W1] and [b2, W2, b1] (float64)


def net(dtype=ember.float64, widths=(16, 12, 8)):
    ember.manual_seed(0)
    layers = []
    for a, b in zip(widths, widths[1:]):
        layers += [ember.nn.Linear(a, b), ember.nn.Tanh()]
    return ember.nn.Sequential(*layers[:-1]).to(dtype)


def backward(model, step, dtype=ember.float64):
    x = np.random.default_rng(100 * step + dist.get_rank()).standard_normal((4, 16))
    (model(ember.tensor(x).to(dtype)) ** 2).sum().backward()


def grads(model):
    return [p.grad.numpy().copy() for p in model.parameters()]


def recording(hook, log):
    """``hook`` that first notes the bucket's local gradients, its parameters' shapes and
    (for this rank) which parameters they are."""
    def hook_and_note(state, bucket):
        params = bucket.parameters()
        log.append((bucket.index(), bucket.buffer().numpy().copy(),
                    [tuple(p.shape) for p in params], [id(p) for p in params]))
        return hook(state, bucket)
    return hook_and_note


def gathered(log):
    """Per bucket index: (every rank's local buffer, shapes)."""
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, log)
    return {idx: (np.stack([part[k][1] for part in everyone]), shapes)
            for k, (idx, _, shapes, _) in enumerate(everyone[0])}


def ddp_grads_by_bucket(model, log):
    """Per bucket index: the flat ``.grad`` of the bucket's parameters after backward."""
    by_id = {id(p): p for p in model.parameters()}
    return {idx: np.concatenate([by_id[i].grad.numpy().reshape(-1) for i in ids])
            for idx, _, _, ids in log}


# -- allreduce_hook: bit for bit DDP without a hook ------------------------------------------
def check_allreduce_hook():
    plain = dist.DistributedDataParallel(net(), bucket_cap_mb=CAP_MB)
    hooked = dist.DistributedDataParallel(net(), bucket_cap_mb=CAP_MB)
    register_ddp_comm_hook(DDPCommHookType.ALLREDUCE, hooked)
    with pytest.raises(RuntimeError, match="can only be called once"):
        hooked.register_comm_hook(None, default_hooks.allreduce_hook)
    for step in range(2):
        for model in (plain, hooked):
            model.zero_grad()
            backward(model, step)
        assert all(np.array_equal(a, b) for a, b in zip(grads(plain), grads(hooked)))


# -- fp16 / bf16: each rank's gradients rounded, divided and summed in half precision, each ---
def check_half_precision_hooks():
    """Operations rounded as PyTorch's (NumPy's float16 and ml_dtypes' bfloat16 round the
    same way)."""
    n = dist.get_world_size()
    for hook, half in ((default_hooks.fp16_compress_hook, np.float16),
                       (default_hooks.bf16_compress_hook, ml_dtypes.bfloat16)):
        log = []
        model = dist.DistributedDataParallel(net(ember.float32), bucket_cap_mb=CAP_MB)
        model.register_comm_hook(None, recording(hook, log))
        backward(model, 0, ember.float32)
        buckets = gathered(log)
        got = ddp_grads_by_bucket(model, log)
        for idx, (local, _) in buckets.items():
            parts = [local[r].astype(half) / half(n) for r in range(n)]
            expected = parts[0]
            for part in parts[1:]:
                expected = expected + part
            assert expected.dtype == half
            assert np.array_equal(got[idx], expected.astype(np.float32)), (hook.__name__, idx)


# -- PowerSGD against one process's version of the same math ---------------------------------
def orthogonalize(m):
    """Columns of the 2-d ``m`` orthonormalized (Gram-Schmidt for r <= 2, else QR)."""
    if m.shape[1] > 2:
        return np.linalg.qr(m)[0]
    m = m.copy()
    for i in range(m.shape[1]):
        m[:, i] /= np.linalg.norm(m[:, i])
        m[:, i + 1:] -= (m[:, i] @ m[:, i + 1:]) * m[:, i:i + 1]
    return m


def normals(seed, shapes):
    with ember.random.fork_rng():
        ember.manual_seed(seed)
        # one draw per shape, split into the matrices of a batch (b × m × r)
        return [m for s in shapes
                for m in ember.randn(*s, dtype=ember.float64).numpy().reshape(-1, *s[-2:])]


class Reference:
    """PowerSGD on all ranks' gradients at once (the ranks' matrices summed explicitly)."""

    def __init__(self, rank_r, start, warm_start, min_rate, batched, n, batch_same=False):
        self.rank, self.start, self.warm, self.min_rate = rank_r, start, warm_start, min_rate
        self.batched, self.iter, self.n, self.batch_same = batched, 0, n, batch_same
        self.rng = np.random.RandomState(0)
        self.errors, self.qs = {}, {}

    def fresh_qs(self, idx, shapes):
        if self.warm and idx in self.qs:
            return self.qs[idx]
        return normals(int(self.rng.randint(1_000_000_000)), shapes)

    def low_rank(self, mats, q):
        q = orthogonalize(q)
        p = orthogonalize(sum(m @ q for m in mats))
        q = sum(m.T @ p for m in mats) / self.n
        return p @ q.T, q

    def step(self, buckets):
        out = {}
        for idx in sorted(buckets):
            local, shapes = buckets[idx]
            if self.iter < self.start:
                out[idx] = local.sum(0) / self.n
                continue
            total = local.shape[1]
            if self.batched:
                side = math.ceil(math.sqrt(total))
                x = np.zeros((self.n, side * side))
                x[:, :total] = local
            else:
                x = local.copy()
            x += self.errors.get(idx, 0)
            final = self.batched_step(idx, x) if self.batched else self.split_step(idx, x, shapes)
            self.errors[idx] = x - final
            out[idx] = final[:total]
        if not self.warm:
            self.qs = {}
        self.iter += 1
        return out

    def batched_step(self, idx, x):
        side = math.isqrt(x.shape[1])
        (q,) = self.fresh_qs(idx, [(side, self.rank)])
        approx, q = self.low_rank([r.reshape(side, side) for r in x], q)
        self.qs[idx] = [q]
        return approx.reshape(-1)

    def split_step(self, idx, x, shapes):
        final = x.mean(0)  # the uncompressed gradients' mean; the others replaced below
        offsets = np.cumsum([0] + [math.prod(s) for s in shapes])
        groups = {}  # matrices grouped by shape in first-seen order, as the hook batches them
        for s, a, b in zip(shapes, offsets, offsets[1:]):
            rows = s[0]
            cols = (b - a) // rows
            r = min(rows, cols, self.rank)
            if (rows + cols) * r * self.min_rate < rows * cols:
                groups.setdefault((rows, cols), []).append((a, b, r))
        order = [(shape, a, b, r) for shape, items in groups.items() for a, b, r in items]
        draws = [(len(items) if self.batch_same else 1, shape[1], items[0][2])
                 for shape, items in groups.items()
                 for _ in range(1 if self.batch_same else len(items))]
        qs = self.fresh_qs(idx, draws)
        new_qs = []
        for (shape, a, b, _), q in zip(order, qs):
            approx, q = self.low_rank([x[k, a:b].reshape(shape) for k in range(self.n)], q)
            final[a:b] = approx.reshape(-1)
            new_qs.append(q)
        self.qs[idx] = new_qs
        return final


def check_powerSGD():
    # (hook, state arguments, reference's (rank, warm start, min rate, batched), layer widths)
    same_shapes = (16, 6, 6, 6)  # two 6 × 6 weights: stacked with batch_tensors_with_same_shape
    configs = [
        (powerSGD_hook.powerSGD_hook, dict(matrix_approximation_rank=1), (1, True, 2, False),
         (16, 12, 8)),
        (powerSGD_hook.powerSGD_hook,
         dict(matrix_approximation_rank=3, warm_start=False, min_compression_rate=1),
         (3, False, 1, False), (16, 12, 8)),
        (powerSGD_hook.powerSGD_hook,
         dict(matrix_approximation_rank=1, batch_tensors_with_same_shape=True),
         (1, True, 2, False), same_shapes),
        (powerSGD_hook.batched_powerSGD_hook, dict(matrix_approximation_rank=2),
         (2, True, 2, True), (16, 12, 8)),
    ]
    for hook, kwargs, (r, warm, rate, batched), widths in configs:
        state = powerSGD_hook.PowerSGDState(None, start_powerSGD_iter=2, **kwargs)
        model = dist.DistributedDataParallel(net(widths=widths), bucket_cap_mb=CAP_MB)
        opt = ember.optim.SGD(model.parameters(), lr=0.05)
        log = []
        model.register_comm_hook(state, recording(hook, log))
        ref = Reference(r, 2, warm, rate, batched, dist.get_world_size(),
                        kwargs.get("batch_tensors_with_same_shape", False))
        for step in range(5):
            log.clear()
            opt.zero_grad()
            backward(model, step)
            expected = ref.step(gathered(log))
            got = ddp_grads_by_bucket(model, log)
            for idx in expected:
                np.testing.assert_allclose(got[idx], expected[idx], rtol=1e-9, atol=1e-12,
                                           err_msg=f"{hook.__name__} {kwargs} step {step}")
            opt.step()
        assert state.iter == 5 and state.compression_stats()[0] > 1


# -- post-local SGD and model averaging ------------------------------------------------------
def check_local_sgd():
    rank, n = dist.get_rank(), dist.get_world_size()
    log = []
    state = post_localSGD_hook.PostLocalSGDState(None, subgroup=None, start_localSGD_iter=1,
                                                 post_local_gradient_allreduce=False)
    model = dist.DistributedDataParallel(net(), bucket_cap_mb=CAP_MB)
    model.register_comm_hook(state, recording(post_localSGD_hook.post_localSGD_hook, log))
    for step in range(2):
        log.clear()
        model.zero_grad()
        backward(model, step)
    mine = {idx: buf for idx, buf, *_ in log}
    got = ddp_grads_by_bucket(model, log)
    assert all(np.array_equal(got[idx], mine[idx]) for idx in mine)  # local after the warm-up
    for p in model.parameters():
        with ember.no_grad():
            p.add_(float(rank))
    averager = PeriodicModelAverager(period=2, warmup_steps=1)
    averager.average_parameters(model.parameters())  # step 0: warm-up, nothing
    w = model.module[0].weight.detach().numpy().copy()
    averager.average_parameters(model.parameters())  # step 1: averaged
    np.testing.assert_allclose(model.module[0].weight.detach().numpy(), w - rank + (n - 1) / 2)


def check_average_parameters_promotes():
    """As torch.cat in torch's average_parameters: a float64 parameter after a float32 one is
    averaged in float64 (not rounded to the first parameter's dtype)."""
    from ember.distributed.algorithms.model_averaging.utils import average_parameters

    rank = dist.get_rank()
    low, high = ember.ones(2, dtype=ember.float32), ember.ones(3, dtype=ember.float64)
    high.add_(1e-10 * rank)
    average_parameters(iter([low, high]), None)
    mean = 1 + 1e-10 * (dist.get_world_size() - 1) / 2
    assert high.tolist() == [mean] * 3 and low.dtype == ember.float32, high.tolist()


# -- futures of collectives; a hook that returns no future ------------------------------------
def check_futures_and_errors():
    rank, n = dist.get_rank(), dist.get_world_size()
    t = ember.tensor([float(rank + 1)])
    fut = dist.all_reduce(t, async_op=True).get_future()
    assert fut.then(lambda f: f.value()[0] * 10).wait().tolist() == [10.0 * n * (n + 1) / 2]
    assert fut.done() and fut.value()[0] is t
    outs = [ember.zeros(1) for _ in range(n)]  # (as torch: the futures hold the outputs)
    fut = dist.all_gather(outs, ember.tensor([float(rank)]), async_op=True).get_future()
    assert fut.wait() == outs and [o.item() for o in outs] == list(range(n))
    mine = ember.zeros(1)
    parts = [ember.tensor([float(r)]) for r in range(n)] if rank == 0 else None
    assert dist.scatter(mine, parts, src=0, async_op=True).get_future().wait() == [mine]
    gathered = [ember.zeros(1) for _ in range(n)] if rank == 0 else None
    fut = dist.gather(ember.tensor([float(rank)]), gathered, dst=0, async_op=True).get_future()
    assert fut.wait() == (gathered if rank == 0 else [])
    received = [ember.zeros(1) for _ in range(n)]
    fut = dist.all_to_all(received, [ember.tensor([float(rank)])] * n, async_op=True)
    assert fut.get_future().wait() == received
    plain = dist.DistributedDataParallel(net(), bucket_cap_mb=CAP_MB)
    backward(plain, 1)
    for fail_in_hook in (False, True):  # its future fails, or the hook itself raises
        calls = []

        def fails_once(state, bucket, fail_in_hook=fail_in_hook, calls=calls):
            calls.append(bucket.index())  # (the first step's second bucket fails)
            if len(calls) == 2 and fail_in_hook:
                raise ZeroDivisionError("in the hook")
            fut = default_hooks.allreduce_hook(None, bucket)
            return fut.then(lambda f: 1 / 0) if len(calls) == 2 else fut

        flaky = dist.DistributedDataParallel(net(), bucket_cap_mb=CAP_MB)
        flaky.register_comm_hook(None, fails_once)
        with pytest.raises((RuntimeError, ZeroDivisionError), match="ZeroDivisionError|in the"):
            backward(flaky, 0)
        assert all(p.grad is None for p in flaky.parameters())  # (none left uninitialised)
        backward(flaky, 1)  # the next step runs as usual
        for ours, expected in zip(grads(flaky), grads(plain)):
            np.testing.assert_array_equal(ours, expected)
    bad = dist.DistributedDataParallel(net(), bucket_cap_mb=CAP_MB)
    bad.register_comm_hook(None, lambda state, bucket: bucket.buffer())
    with pytest.raises(TypeError, match="returned Tensor, expected an ember.futures.Future"):
        backward(bad, 0)


def check_comm_hooks() -> None:
    """Every rank calls it, after init_process_group."""
    check_allreduce_hook()
    check_half_precision_hooks()
    check_powerSGD()
    check_local_sgd()
    check_average_parameters_promotes()
    check_futures_and_errors()

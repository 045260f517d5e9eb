"""ember.memory: bytes held by tensors, counted once per buffer, freed with the last reference."""

import gc

import numpy as np
import pytest

import ember
from ember import memory


@pytest.fixture
def tracking():
    gc.collect()
    with memory.tracking():
        yield


MiB = 2 ** 20


def test_counts_new_tensors_and_frees_them(tracking):
    before = memory.allocated()
    a = ember.zeros(256, 1024)  # 1 MiB float32
    assert memory.allocated() - before == MiB
    b = a * 2
    assert memory.allocated() - before == 2 * MiB
    del a
    assert memory.allocated() - before == MiB
    del b
    assert memory.allocated() == before


def test_views_and_detach_share_one_buffer(tracking):
    before = memory.allocated()
    a = ember.zeros(256, 1024)
    v, t, d, s = a.view(-1), a.t(), a.detach(), a[:10]
    assert memory.allocated() - before == MiB
    del a, t, d, s
    assert memory.allocated() - before == MiB  # the view keeps the buffer alive
    del v
    assert memory.allocated() == before


def test_peak_and_reset(tracking):
    memory.reset_peak()
    base = memory.allocated()
    x = ember.ones(512, 512)
    y = x + x
    del y
    assert memory.max_allocated() - base == 2 * MiB
    assert memory.allocated() - base == MiB
    memory.reset_peak()
    assert memory.max_allocated() == memory.allocated()
    assert memory.allocated("cpu") == memory.allocated()
    assert memory.max_allocated(ember.device("cpu")) == memory.max_allocated()
    del x


def test_existing_tensors_found_when_tracking_starts():
    w = ember.nn.Linear(256, 1024)  # 1 MiB + 4 KiB, made before tracking
    with memory.tracking():
        assert memory.allocated() >= MiB + 4096
    with memory.tracking(scan=False):
        assert memory.allocated() == 0
    del w


def test_saved_values_held_until_backward(tracking):
    x = ember.randn(256, 1024, requires_grad=True)
    base = memory.allocated()
    y = x.exp()  # exp keeps its output for backward
    loss = y.sum()
    del y
    assert memory.allocated() - base >= MiB
    loss.backward()
    del loss
    gc.collect()
    assert memory.allocated() - base == MiB  # what is left: x.grad
    assert x.grad is not None


def test_optimizer_state_and_backward_ops_counted(tracking):
    model = ember.nn.Linear(1024, 256, bias=False)
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    base = memory.allocated()
    model(ember.ones(4, 1024)).sum().backward()
    opt.step()
    # gradient + momentum buffer of the 1 MiB weight
    assert memory.allocated() - base >= 2 * MiB


def test_from_numpy_counts_the_array_once(tracking):
    arr = np.zeros((256, 1024), np.float32)
    base = memory.allocated()
    t = ember.from_numpy(arr)
    u = ember.from_numpy(arr)
    assert memory.allocated() - base == MiB
    del t, u
    assert memory.allocated() - base == MiB  # the caller's array still lives
    del arr
    assert memory.allocated() == base


def test_off_costs_nothing_and_reports_zero():
    import sys

    tensor_module = sys.modules["ember.tensor"]

    assert not memory.is_enabled()
    assert tensor_module._on_wrap is None
    assert memory.allocated() == 0 and memory.max_allocated() == 0
    with memory.tracking():
        with memory.tracking():
            assert memory.is_enabled()
        assert memory.is_enabled()  # nested: still on
    assert not memory.is_enabled() and tensor_module._on_wrap is None
    memory.disable()  # an extra disable is harmless
    stats = memory.memory_stats()
    assert stats["enabled"] is False and stats["live_buffers"] == 0


def test_counts_stay_exact_while_threads_make_and_drop_tensors(tracking):
    import sys
    import threading

    before = memory.allocated()
    barrier = threading.Barrier(4)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch often: unguarded counts drifted every time

    def churn():
        barrier.wait(10)
        for _ in range(3000):
            a = ember.ones(16)
            b = a + 1
            del a, b

    threads = [threading.Thread(target=churn) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(interval)
    assert not any(t.is_alive() for t in threads)
    gc.collect()
    assert memory.allocated() == before


def test_in_place_ops_allocate_nothing_as_torch():
    # x.add_(1) computes into a new buffer and drops it after the write, between events: the
    # op showed 4000 B allocated and its region -4000 B self (torch: 0 and 0)
    import torch

    seen = {}
    for lib in (torch, ember):
        x = lib.ones(1000)
        with lib.profiler.profile(profile_memory=True) as prof:
            with lib.profiler.record_function("write"):
                x.add_(1)
                x.mul_(2)
                x[:10] = 3
            with lib.profiler.record_function("keep"):
                y = x * 2
        seen[lib] = {r.key: (r.cpu_memory_usage, r.self_cpu_memory_usage)
                     for r in prof.key_averages() if r.key in ("write", "keep")}
        if lib is ember:
            assert all(e.cpu_memory_usage == 0 for e in prof.events() if e.cpu_parent is not None
                       and e.cpu_parent.name == "write")
        del y
    assert seen[ember] == seen[torch] == {"write": (0, 0), "keep": (4000, 0)}


def test_an_in_place_result_the_graph_keeps_stays_allocated():
    # relu_ on a tensor needing grad: the backward saves the result's buffer, which lives on
    x = ember.ones(1000, requires_grad=True)
    with ember.profiler.profile(profile_memory=True) as prof:
        with ember.profiler.record_function("r"):
            y = x * 1
            y.relu_()
    row = next(r for r in prof.key_averages() if r.key == "relu")
    assert row.cpu_memory_usage == 4000
    del y

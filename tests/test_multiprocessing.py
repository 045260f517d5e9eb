"""ember.multiprocessing against torch.multiprocessing: the stdlib names, spawn /
start_processes (results, a raising process, a process that exits), sharing strategies, and
tensors sent to a process (arguments of a spawned one, a Queue) sharing their memory."""
import importlib
import os
import pickle
import queue
import sys
import threading
import time
from multiprocessing.reduction import ForkingPickler

import pytest
import torch
import torch.multiprocessing as tmp

import ember
import ember.multiprocessing as mp


def _write_square(index, out_dir):
    with open(os.path.join(out_dir, str(index)), "w") as f:
        f.write(str(int((ember.tensor(float(index)) ** 2).item())))


def _fail_on_one(index):
    if index == 1:
        raise ValueError("boom in process one")


def _exit_with_three(index):
    sys.exit(3)


def _child_writes(t, part, tail, model, inbox, outbox, done):
    t.add_(1)  # a tensor that was not shared: moved into shared memory when sent
    part.mul_(10)  # slices of a shared tensor: the parent's elements
    tail.fill_(5)
    with ember.no_grad():  # Hogwild: the parameters are the parent's
        for p in model.parameters():
            p.sub_(1)
    inbox.get().fill_(7)  # sent through a queue after the start
    outbox.put(ember.arange(3.0))
    done.wait()  # (the receiver maps a duplicate of the sender's descriptor: wait for it)


def test_tensors_sent_to_a_process_share_their_memory_as_torch():
    # torch.multiprocessing's reductions (registered with ForkingPickler) do the same: the
    # storage moves into shared memory and travels as a file descriptor (once for the two
    # slices of one block: spawn refused a descriptor passed twice, ValueError in start())
    ctx = mp.get_context("spawn")
    t, whole, model = ember.zeros(3), ember.ones(5).share_memory_(), ember.nn.Linear(2, 2)
    weight = model.weight.detach().clone()
    inbox, outbox, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    child = ctx.Process(target=_child_writes,
                        args=(t, whole[1:3], whole[4:], model, inbox, outbox, done))
    child.start()
    sent = ember.zeros(2)
    inbox.put(sent)
    back = outbox.get(timeout=120)
    done.set()
    child.join(120)
    assert child.exitcode == 0
    assert t.is_shared() and t.tolist() == [1.0, 1.0, 1.0]
    assert whole.tolist() == [1.0, 10.0, 10.0, 1.0, 5.0]
    assert ember.equal(model.weight, weight - 1) and type(model.weight) is ember.nn.Parameter
    assert sent.tolist() == [7.0, 7.0] and back.is_shared() and back.tolist() == [0, 1, 2]


def test_what_a_process_receives_in_place():
    # in one process (ForkingPickler round trips): the same memory, strides, class and
    # requires_grad; a view of memory not shared yet moves its base along, as torch moves the
    # storage (it went as a copy, the receiver's writes lost); history is refused
    x = ember.arange(6.0).reshape(3, 2).t().contiguous().share_memory_()
    y = ForkingPickler.loads(ForkingPickler.dumps(x[:, 1:]))
    assert y.stride() == x[:, 1:].stride() and y.tolist() == x[:, 1:].tolist()
    y.fill_(-1)
    assert x[:, 1:].tolist() == [[-1.0, -1.0], [-1.0, -1.0]]
    p = ember.nn.Parameter(ember.ones(2))
    p.tag = "kept"
    q = ForkingPickler.loads(ForkingPickler.dumps(p))
    assert type(q) is ember.nn.Parameter and q.requires_grad and q.tag == "kept"
    assert p.is_shared() and q.data_ptr() == p.data_ptr()  # (mapped once per process)
    for lib in (torch, ember):
        base = lib.arange(6.0)
        view = base[1::2]
        got = ForkingPickler.loads(ForkingPickler.dumps(view))
        got.add_(1)
        assert base.is_shared() and base.tolist() == [0.0, 2.0, 2.0, 4.0, 4.0, 6.0]
        assert got.stride() == (2,) and got.storage_offset() == 1
    for lib in (torch, ember):  # (an as_strided view received writes through to its base)
        base = lib.arange(6.0)
        got = ForkingPickler.loads(ForkingPickler.dumps(base.as_strided((2,), (1,), 1)))
        got.add_(1)
        assert got.tolist() == [2.0, 3.0] and base.tolist() == [0.0, 2.0, 3.0, 3.0, 4.0, 5.0]
    with pytest.raises(RuntimeError, match="Cowardly refusing to send a tensor with history"):
        ForkingPickler.dumps(ember.ones(2, requires_grad=True) * 2)
    assert not pickle.loads(pickle.dumps(ember.ones(2))).is_shared()  # plain pickle copies


def test_stdlib_names_and_attribute_access_as_torch():
    assert ember.multiprocessing is mp
    for name in ("Process", "Queue", "Pool", "Manager", "set_start_method", "get_start_method",
                 "get_context", "cpu_count", "Event", "Lock"):
        assert hasattr(tmp, name) and hasattr(mp, name), name
    assert mp.get_all_sharing_strategies() == tmp.get_all_sharing_strategies()
    assert mp.get_sharing_strategy() == tmp.get_sharing_strategy()
    with pytest.raises(ValueError):
        mp.set_sharing_strategy("no-such")


def test_spawn_runs_every_index(tmp_path):
    mp.start_processes(_write_square, args=(str(tmp_path),), nprocs=3, start_method="fork")
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {"0": "0", "1": "1", "2": "4"}


def test_a_raising_process_raises_in_the_parent_as_torch():
    for lib in (tmp, mp):
        with pytest.raises(lib.ProcessRaisedException, match="boom in process one") as info:
            lib.start_processes(_fail_on_one, nprocs=2, start_method="fork")
        assert info.value.error_index == 1


def test_an_exiting_process_reports_its_code_as_torch():
    for lib in (tmp, mp):
        with pytest.raises(lib.ProcessExitedException, match="exit code 3") as info:
            lib.start_processes(_exit_with_three, nprocs=1, start_method="fork")
        assert info.value.exit_code == 3


def test_join_false_gives_a_context():
    ctx = mp.start_processes(_fail_on_one, nprocs=1, join=False, start_method="fork")
    assert len(ctx.pids()) == 1
    while not ctx.join():
        pass


def test_spawn_with_fork_warns_as_torch(tmp_path):
    # torch.multiprocessing.spawn warns the same way ("only supports start_method=spawn"); its
    # run is left out here as it takes seconds
    with pytest.warns(FutureWarning, match="start_method=spawn"):
        mp.spawn(_write_square, args=(str(tmp_path),), nprocs=1, start_method="fork")
    assert (tmp_path / "0").read_text() == "0"


def test_a_shared_block_holds_one_descriptor_as_a_torch_storage():
    # torch keeps one descriptor per shared storage; Ember's blocks kept two (the memfd and
    # CPython mmap's own duplicate of it). A descriptor received again for a block mapped
    # here already (spawn passes one number per block) must stay open
    import gc

    from ember.backend import shared_block

    def count():
        return len(os.listdir("/proc/self/fd"))

    gc.collect()  # (blocks earlier tests left in cycles)
    before = count()
    blocks = [ember.zeros(3).share_memory_() for _ in range(40)]
    assert count() - before == 40
    block = shared_block.block_of(blocks[0]._data)
    assert shared_block.attach(block.fd, len(block)) is block
    os.fstat(block.fd)  # (still open)
    del blocks, block
    gc.collect()
    assert count() - before <= 1


@pytest.mark.skipif(sys.version_info >= (3, 13) or not hasattr(os, "memfd_create"),
                    reason="the descriptor guess (before trackfd=False); memfd")
def test_a_block_received_twice_by_two_threads_keeps_a_valid_descriptor(monkeypatch):
    # _map guesses the number mmap's duplicate takes; a second thread attaching the same
    # file in between took that number, the first block kept the second's descriptor as its
    # own, and it was closed with the second block
    import gc
    import threading

    from ember.backend import shared_block

    fd = os.memfd_create("t", 0)
    os.ftruncate(fd, 8)
    inode = os.fstat(fd).st_ino
    other, got, real_close = os.dup(fd), [], os.close
    thread = threading.Thread(target=lambda: got.append(shared_block.attach(other, 8)))

    def close(n):  # (right after _map's guess: the other thread attaches then)
        real_close(n)
        if not thread.is_alive() and not got:
            thread.start()
            thread.join(0.2)
    monkeypatch.setattr(shared_block.os, "close", close)
    first = shared_block.attach(fd, 8)
    monkeypatch.undo()
    thread.join()
    assert got[0] is first
    del got[:]
    gc.collect()
    assert os.fstat(first.fd).st_ino == inode  # (still open, on the same file)


def test_a_loader_batch_sent_on_shares_its_memory_as_torch():
    # a batch a worker sent through /dev/shm is shared memory; sent on (a Queue to another
    # process) it travels as that memory, as torch's (it went as a copy: writes were lost)
    for lib in (torch, ember):
        data = lib.utils.data.TensorDataset(lib.arange(4.0))
        batch = next(iter(lib.utils.data.DataLoader(data, batch_size=2, num_workers=1)))[0]
        got = ForkingPickler.loads(ForkingPickler.dumps(batch))
        got[0] = 9
        assert batch.is_shared() and batch.tolist() == [9.0, 1.0]


class _Tagged(ember.Tensor):  # (at module level, so that pickle finds the classes)
    pass


class _TorchTagged(torch.Tensor):
    pass


def test_a_tensor_subclass_is_sent_by_its_memory_as_torch():
    # ForkingPickler looks reductions up by exact class: a subclass (nn.Buffer too) went as a
    # copy, where torch's shares its storage
    made = [torch.zeros(2).as_subclass(_TorchTagged), ember.zeros(2).as_subclass(_Tagged),
            ember.nn.Buffer(ember.zeros(2), persistent=False)]
    for t in made:
        got = ForkingPickler.loads(ForkingPickler.dumps(t))
        got.fill_(1)
        assert type(got) is type(t) and t.is_shared() and t.tolist() == [1.0, 1.0]
    assert not got.persistent


def _share_and_answer(out):
    out.put(ember.ones(3).share_memory_().is_shared())


@pytest.mark.parametrize("lock", ["ember.ops.storage._SHARING",
                                  "ember.backend.shared_block._lock"])
def test_a_fork_while_a_thread_shares_leaves_the_child_able_to_share(lock):
    """A process forked while another thread holds a sharing lock (a Queue's feeder thread
    pickling a tensor) inherited it held, with no thread to let go: the child's
    ``share_memory_`` waited forever. A fork now waits for the holder; torch's move is one C++
    call, so its children can always share."""
    module, name = lock.rsplit(".", 1)
    held, started = getattr(importlib.import_module(module), name), threading.Event()

    def hold():
        with held:
            started.set()
            time.sleep(0.5)
    holder = threading.Thread(target=hold)
    holder.start()
    started.wait()
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_share_and_answer, args=(out,), daemon=True)
    child.start()
    try:
        assert out.get(timeout=20) is True
    except queue.Empty:
        pytest.fail(f"the forked child hung in share_memory_ ({lock} inherited held)")
    finally:
        child.kill()
        child.join()
        holder.join()

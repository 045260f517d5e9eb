"""DataLoader: batches against torch's on the same sampler order, options, worker processes
(equal results, crashes, init functions, persistent workers, iterable datasets)."""

import gc
import glob
import multiprocessing
import os
import signal
import time
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ember
import ember.utils.data as D
from ember.errors import IndexOutOfRange

X = np.arange(60, dtype=np.float32).reshape(20, 3)
Y = np.arange(20) % 4


def tensor_ds():
    return D.TensorDataset(ember.tensor(X), ember.tensor(Y))


def as_numpy(batches):
    return [[t.numpy().copy() for t in b] for b in batches]


def assert_batches_equal(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert len(x) == len(y)
        for u, v in zip(x, y):
            assert u.dtype == v.dtype
            np.testing.assert_array_equal(u, v)


class Items(D.Dataset):
    """Samples as dicts of NumPy arrays, numbers and strings."""

    def __len__(self):
        return 13

    def __getitem__(self, i):
        return {"x": np.full((2, 2), i, np.float32), "y": i, "name": f"s{i}"}


@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (4, False), (4, True), (20, True)])
def test_same_batches_as_torch_for_a_given_order(batch_size, drop_last):
    order = [int(i) for i in np.random.default_rng(0).permutation(20)]
    ours = D.DataLoader(tensor_ds(), batch_size=batch_size, sampler=order, drop_last=drop_last)
    theirs = tud.DataLoader(tud.TensorDataset(torch.tensor(X), torch.tensor(Y)),
                            batch_size=batch_size, sampler=order, drop_last=drop_last)
    assert len(ours) == len(theirs)
    assert_batches_equal(as_numpy(ours), as_numpy(theirs))


def test_tensor_dataset_reads_odd_batch_indices_as_torch():
    # (the one-gather path read bools as the rows 1 and 0, and floats as ints)
    ds, tds = tensor_ds(), tud.TensorDataset(torch.tensor(X), torch.tensor(Y))
    for batch in ([True, False], [1.0, 2.0]):
        with pytest.raises((RuntimeError, IndexError, TypeError)):
            list(tud.DataLoader(tds, batch_sampler=[batch]))
        with pytest.raises((RuntimeError, IndexError, TypeError)):
            list(D.DataLoader(ds, batch_sampler=[batch]))
    for batch in (np.array([3, -1], np.int32), ember.tensor([4, 2]), range(2, 5)):
        assert_batches_equal(as_numpy(D.DataLoader(ds, batch_sampler=[batch])),
                             as_numpy(tud.DataLoader(tds, batch_sampler=[[int(i) for i in batch]])))
    # a uint64 index past int64's range is out of range, not a row from the end
    huge = np.array([1, 2**64 - 1], np.uint64)
    with pytest.raises(IndexOutOfRange):
        list(D.DataLoader(ds, batch_sampler=[huge]))
    with pytest.raises(IndexOutOfRange):
        list(D.DataLoader(D.Subset(ds, huge), batch_size=2))
    assert_batches_equal(as_numpy(D.DataLoader(ds, batch_sampler=[huge[:1]])),
                         as_numpy(tud.DataLoader(tds, batch_sampler=[[1]])))


@pytest.mark.parametrize("inner,outer", [([5, 2, 19, -1, 7], [3, 0, -1, 4]),
                                         (range(2, 12), [9, -2, 4, 0, 5]),
                                         (np.arange(20)[::-2], [1, 2, 0]),
                                         ("tensor", [2, 0, 1, 3])])
def test_subsets_of_a_tensor_dataset_give_torchs_batches(inner, outer):
    # (read by one gather per tensor through the subsets' indices)
    ds, tds = tensor_ds(), tud.TensorDataset(torch.tensor(X), torch.tensor(Y))
    ours, theirs = ((inner, inner) if not isinstance(inner, str) else
                    (ember.tensor([4, 8, 1, 0]), torch.tensor([4, 8, 1, 0])))
    a = D.Subset(D.Subset(ds, ours), outer)
    b = tud.Subset(tud.Subset(tds, theirs), outer)
    for shuffle_order in (None, [2, 0, 1]):
        assert_batches_equal(as_numpy(D.DataLoader(a, batch_size=2, sampler=shuffle_order)),
                             as_numpy(tud.DataLoader(b, batch_size=2, sampler=shuffle_order)))
    with pytest.raises(IndexError):
        list(D.DataLoader(D.Subset(ds, [0, 20]), batch_size=2))
    split = D.random_split(ds, [0.5, 0.5], generator=ember.Generator().manual_seed(0))[1]
    item_by_item = D.DataLoader(split, batch_size=4, collate_fn=lambda b: D.default_collate(b))
    assert_batches_equal(as_numpy(D.DataLoader(split, batch_size=4)), as_numpy(item_by_item))


def test_options_match_torch():
    ds, tds = tensor_ds(), tud.TensorDataset(torch.tensor(X), torch.tensor(Y))
    # no automatic batching: samples converted, not stacked
    a = list(D.DataLoader(ds, batch_size=None))
    b = list(tud.DataLoader(tds, batch_size=None))
    assert_batches_equal(as_numpy(a), as_numpy(b))
    # a batch sampler
    bs = [[0, 5], [7], [1, 2, 3]]
    assert_batches_equal(as_numpy(D.DataLoader(ds, batch_sampler=bs)),
                         as_numpy(tud.DataLoader(tds, batch_sampler=bs)))
    # a collate_fn
    got = list(D.DataLoader(Items(), batch_size=5, collate_fn=lambda b: [s["y"] for s in b]))
    assert got == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11, 12]]
    # dict samples
    batch = next(iter(D.DataLoader(Items(), batch_size=3)))
    assert batch["x"].shape == (3, 2, 2) and batch["y"].tolist() == [0, 1, 2]
    assert batch["name"] == ["s0", "s1", "s2"]
    D.DataLoader(ds, pin_memory=True)  # accepted (iterating warns: nothing to pin on the CPU)


@pytest.mark.parametrize("kwargs", [dict(pin_memory=True), dict(pin_memory=True, num_workers=1),
                                    dict(pin_memory=True, pin_memory_device="cpu"),
                                    dict(pin_memory_device="cpu")])
def test_pin_memory_warns_at_each_iteration_as_torch_without_accelerator(kwargs):
    """(Ember was silent; torch without an accelerator warns at each iter(), not at
    construction, and also of pin_memory_device given with pin_memory.)"""
    def messages(data):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loader = data.DataLoader(data.TensorDataset(lib.arange(4.0)), batch_size=2, **kwargs)
            made = len(caught)
            list(loader), list(loader)
        return made, [(w.category, str(w.message)) for w in caught]

    lib = ember
    ours = messages(D)
    lib = torch
    assert ours == messages(tud)
    pinned = kwargs.get("pin_memory", False)
    assert ours[0] == 0 and len(ours[1]) == 2 * pinned * (1 + ("pin_memory_device" in kwargs))


@pytest.mark.parametrize("kwargs", [dict(pin_memory=True), dict(pin_memory=True, num_workers=1),
                                    dict(pin_memory=True, pin_memory_device="cpu")])
def test_pin_memory_warns_once_per_process_under_the_default_filter_as_torch(kwargs):
    """(review56h item 2: Ember's warning named the user's loop line, so the default filter
    showed it once per loop; torch's names its own line, so it shows once in all.)"""
    def messages(data):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            loader = data.DataLoader(data.TensorDataset(lib.arange(4.0)), batch_size=2, **kwargs)
            for _ in loader:  # a train loop ...
                pass
            for _ in loader:  # ... and an eval loop, on another line
                pass
            list(loader)
        return [(w.category, str(w.message)) for w in caught]

    lib = ember
    ours = messages(D)
    lib = torch
    assert ours == messages(tud) and len(ours) == 1 + ("pin_memory_device" in kwargs)


@pytest.mark.parametrize("kwargs,match", [
    (dict(num_workers=-1), "non-negative"),
    (dict(prefetch_factor=2), "prefetch_factor"),
    (dict(persistent_workers=True), "persistent_workers"),
    (dict(sampler=[0, 1], shuffle=True), "mutually exclusive with shuffle"),
    (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option"),
    (dict(batch_size=None, drop_last=True), "batch_size=None"),
])
def test_argument_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        D.DataLoader(tensor_ds(), **kwargs)
    with pytest.raises(ValueError):  # torch agrees
        tud.DataLoader(list(range(20)), **kwargs)


def test_shuffle_is_reproducible_and_changes_each_epoch():
    def epoch_orders(loader, n=2):
        return [[int(i) for b in loader for i in b[1].tolist()] for _ in range(n)]
    ds = D.TensorDataset(ember.arange(20.0), ember.arange(20))
    a = epoch_orders(D.DataLoader(ds, 6, shuffle=True, generator=ember.Generator().manual_seed(1)))
    b = epoch_orders(D.DataLoader(ds, 6, shuffle=True, generator=ember.Generator().manual_seed(1)))
    assert a == b and a[0] != a[1] and sorted(a[0]) == list(range(20))
    ember.manual_seed(5)
    c = epoch_orders(D.DataLoader(ds, 6, shuffle=True))
    ember.manual_seed(5)
    assert epoch_orders(D.DataLoader(ds, 6, shuffle=True)) == c


class Stream(D.IterableDataset):
    """0..n-1, split between workers by get_worker_info()."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = D.get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        return self.n


def test_iterable_dataset():
    assert [b.tolist() for b in D.DataLoader(Stream(7), batch_size=3)] == \
        [[0, 1, 2], [3, 4, 5], [6]]
    assert len(D.DataLoader(Stream(7), batch_size=3, drop_last=True)) == 2
    assert [b.tolist() for b in D.DataLoader(Stream(7), batch_size=3, drop_last=True)] == \
        [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="shuffle"):
        D.DataLoader(Stream(3), shuffle=True)
    # with workers every item arrives once
    got = [i for b in D.DataLoader(Stream(11), batch_size=2, num_workers=2) for i in b.tolist()]
    assert sorted(got) == list(range(11))


def no_leftover_segments():
    return not glob.glob(f"/dev/shm/ember-dl-{os.getpid()}-*")


def stop_within_seconds(workers, seconds):
    deadline = time.monotonic() + seconds
    while any(w.is_alive() for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(w.is_alive() for w in workers)


@pytest.mark.parametrize("num_workers", [1, 3])
def test_workers_give_the_same_batches(num_workers):
    ds = tensor_ds()
    want = as_numpy(D.DataLoader(ds, batch_size=3, shuffle=True,
                                 generator=ember.Generator().manual_seed(0)))
    got = as_numpy(D.DataLoader(ds, batch_size=3, shuffle=True, num_workers=num_workers,
                                generator=ember.Generator().manual_seed(0)))
    assert_batches_equal(got, want)
    a = list(D.DataLoader(Items(), batch_size=4, num_workers=num_workers, prefetch_factor=1))
    b = list(D.DataLoader(Items(), batch_size=4))
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u["x"].numpy(), v["x"].numpy())
        assert u["y"].tolist() == v["y"].tolist() and u["name"] == v["name"]
    assert a[0]["x"].numpy().flags.writeable
    assert no_leftover_segments()


def test_spawned_workers_receive_a_dataset_of_tensors():
    # (spawn, the default start method on macOS and Windows, pickles the dataset)
    ds = D.TensorDataset(ember.tensor(X), ember.tensor(Y))
    loader = D.DataLoader(ds, batch_size=8, num_workers=1, multiprocessing_context="spawn")
    assert_batches_equal(as_numpy(loader), as_numpy(D.DataLoader(ds, batch_size=8)))


class Crashes(D.Dataset):
    def __init__(self, how):
        self.how = how

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            if self.how == "raise":
                raise KeyError(f"bad sample {i}")
            os._exit(3)
        return np.float32(i)


def test_worker_exception_carries_the_original_traceback():
    loader = D.DataLoader(Crashes("raise"), batch_size=2, num_workers=2)
    start = time.monotonic()
    with pytest.raises(KeyError) as info:
        list(loader)
    msg = str(info.value)
    assert "DataLoader worker process 0" in msg and "Original Traceback" in msg
    assert "bad sample 5" in msg and "__getitem__" in msg
    assert time.monotonic() - start < 10
    del info  # (its traceback holds the iterator, which goes on; dropped, it shuts down)
    assert no_leftover_segments()


def test_an_iterator_dropped_after_a_caught_worker_error_stops_its_workers_at_once():
    # (the re-raised exception's traceback held its own frame, which held the exception: the
    # cycle kept the iterator, its workers and shared-memory batches until the collector ran)
    it = iter(D.DataLoader(Crashes("raise"), batch_size=2, num_workers=2))
    workers = it._workers
    gc.disable()
    try:
        assert next(it).tolist() == [0.0, 1.0] and next(it).tolist() == [2.0, 3.0]
        with pytest.raises(KeyError, match="bad sample 5"):
            next(it)
        del it
        assert stop_within_seconds(workers, 5)
        assert no_leftover_segments()
    finally:
        gc.enable()


def each_batch_or_error(loader):
    out, it = [], iter(loader)
    while True:
        try:
            out.append(next(it).tolist())
        except StopIteration:
            return out
        except Exception as e:
            out.append(type(e).__name__)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_the_batches_after_a_worker_exception_still_come_as_in_torch(num_workers):
    # (a loop that skips a bad batch gets the rest of the epoch; they were lost)
    want = each_batch_or_error(tud.DataLoader(Crashes("raise"), batch_size=2,
                                              num_workers=num_workers))
    assert want == [[0.0, 1.0], [2.0, 3.0], "KeyError", [6.0, 7.0]]
    assert each_batch_or_error(D.DataLoader(Crashes("raise"), batch_size=2,
                                            num_workers=num_workers)) == want


def test_worker_death_is_reported_not_a_hang():
    loader = D.DataLoader(Crashes("exit"), batch_size=2, num_workers=2)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \d \(pid \d+\) exited "
                                           r"unexpectedly with exit code 3"):
        list(loader)
    assert time.monotonic() - start < 10
    assert no_leftover_segments()


class Interrupted(D.Dataset):
    """Sends SIGINT to the process reading sample 3, as Ctrl-C does to a whole group."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 3:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)
        return np.float32(i)


def test_ctrl_c_in_a_worker_is_left_to_the_main_process(capfd):
    # the worker neither dies nor prints a KeyboardInterrupt traceback (workers ignore SIGINT)
    got = [b.tolist() for b in D.DataLoader(Interrupted(), batch_size=2, num_workers=1)]
    assert got == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    assert "KeyboardInterrupt" not in capfd.readouterr().err


class RunsAProgram(D.Dataset):
    """Reads the SIGINT handling of a program a worker runs (a decoder, say)."""

    def __len__(self):
        return 1

    def __getitem__(self, i):
        import subprocess
        import sys

        return subprocess.run([sys.executable, "-c", "import signal; print(signal.getsignal("
                               "signal.SIGINT) is signal.default_int_handler)"],
                              capture_output=True, text=True, check=True).stdout.strip()


def test_a_program_a_worker_runs_stops_on_ctrl_c():
    # (the worker's own SIGINT handler does nothing; SIG_IGN would pass to the program)
    assert list(D.DataLoader(RunsAProgram(), batch_size=None, num_workers=1)) == ["True"]


class Slow(D.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(5)
        return i


def test_timeout():
    with pytest.raises(RuntimeError, match="timed out after 0.3 seconds"):
        next(iter(D.DataLoader(Slow(), num_workers=1, timeout=0.3)))


class Seeds(D.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = D.get_worker_info()
        return np.array([info.id, info.num_workers, info.seed % 1000, INIT.get("id", -1),
                         ember.randint(0, 10**6, ()).item(), os.getpid()])


INIT = {}


def remember_init(worker_id):
    INIT["id"] = worker_id


def test_worker_info_seeds_and_init_fn():
    assert D.get_worker_info() is None
    rows = np.concatenate([b.numpy() for b in D.DataLoader(
        Seeds(), batch_size=1, num_workers=2, worker_init_fn=remember_init,
        generator=ember.Generator().manual_seed(0))])
    assert rows[:, 0].tolist() == [0, 1, 0, 1] and set(rows[:, 1]) == {2}
    assert (rows[:, 3] == rows[:, 0]).all()  # worker_init_fn ran in each worker
    assert rows[0, 2] != rows[1, 2]  # per-worker seeds differ
    again = np.concatenate([b.numpy() for b in D.DataLoader(
        Seeds(), batch_size=1, num_workers=2, worker_init_fn=remember_init,
        generator=ember.Generator().manual_seed(0))])
    np.testing.assert_array_equal(rows[:, 4], again[:, 4])  # random draws in workers repeat


def test_worker_init_fn_error_is_reported():
    def bad_init(worker_id):
        raise ValueError("cannot open the database")
    with pytest.raises(ValueError, match="cannot open the database"):
        list(D.DataLoader(tensor_ds(), num_workers=1, worker_init_fn=bad_init))
    # every batch of the failed worker reports it (not an AttributeError, as in torch); a
    # stream ends at its first error
    loader = D.DataLoader(tensor_ds(), batch_size=8, num_workers=1, worker_init_fn=bad_init)
    assert each_batch_or_error(loader) == ["ValueError"] * 3
    loader = D.DataLoader(Stream(20), batch_size=8, num_workers=1, worker_init_fn=bad_init)
    assert each_batch_or_error(loader) == ["ValueError"]


def test_persistent_workers_are_reused_and_cleaned_up():
    loader = D.DataLoader(Seeds(), batch_size=2, num_workers=2, persistent_workers=True)
    pids1 = {int(p) for b in loader for p in b.numpy()[:, 5]}
    it = iter(loader)
    next(it)  # a partial epoch: its pending batches are dropped at the next epoch
    pids2 = {int(p) for b in loader for p in b.numpy()[:, 5]}
    assert pids1 == pids2 and len(pids1) == 2
    workers = loader._iterator._workers
    assert all(w.is_alive() for w in workers)
    loader._iterator._shutdown()
    assert not any(w.is_alive() for w in workers)
    assert no_leftover_segments()
    # a fresh set is started after a shutdown
    assert len([b for b in loader]) == 2


def test_abandoned_iterator_shuts_down():
    it = iter(D.DataLoader(tensor_ds(), batch_size=2, num_workers=2))
    next(it)
    workers = it._workers
    del it
    assert stop_within_seconds(workers, 5)
    assert no_leftover_segments()


def test_a_dropped_persistent_loader_stops_its_workers_at_once():
    # (its iterator held the loader: the cycle kept the workers until the collector ran)
    loader = D.DataLoader(tensor_ds(), batch_size=8, num_workers=2, persistent_workers=True)
    it = iter(loader)
    assert len(it) == len(loader) == 3
    list(it)
    workers = loader._iterator._workers
    gc.disable()
    try:
        del loader, it
        assert stop_within_seconds(workers, 5)
    finally:
        gc.enable()


def test_unpicklable_batch_or_exception_is_reported_not_a_hang():
    class Local:  # a class defined in a function cannot be pickled
        pass

    class LocalError(Exception):
        pass

    class Returns(D.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return Local()

    class Raises(Returns):
        def __getitem__(self, i):
            raise LocalError(f"bad sample {i}")

    start = time.monotonic()
    with pytest.raises(AttributeError, match="(?s)while sending a batch.*Can't pickle local"):
        list(D.DataLoader(Returns(), batch_size=2, num_workers=1, collate_fn=list, timeout=5))
    with pytest.raises(RuntimeError, match="(?s)Caught LocalError.*bad sample 0"):
        list(D.DataLoader(Raises(), batch_size=2, num_workers=1, timeout=5))
    assert time.monotonic() - start < 10
    assert no_leftover_segments()


def test_worker_key_error_message_is_readable():
    with pytest.raises(KeyError) as info:
        list(D.DataLoader(Crashes("raise"), batch_size=2, num_workers=1))
    assert str(info.value).startswith("Caught KeyError") and "\n" in str(info.value)
    del info  # (its traceback holds this frame, which held info: the iterator's segments stayed)
    assert no_leftover_segments()


class SlowFirst(D.Dataset):
    """Worker 0's first batch is slow, so later batches arrive early and wait their turn."""

    def __len__(self):
        return 16

    def __getitem__(self, i):
        if i == 0:
            time.sleep(0.2)
        return np.float32(i)


def test_persistent_workers_free_early_batches_of_a_partial_epoch():
    loader = D.DataLoader(SlowFirst(), batch_size=2, num_workers=2, persistent_workers=True,
                          prefetch_factor=2)
    next(iter(loader))
    time.sleep(0.2)  # worker 1's prefetched batches are now stored, waiting
    assert loader._iterator._task_info
    assert sum(b.numel() for b in loader) == 16  # the next epoch drops them
    assert no_leftover_segments()
    loader._iterator._shutdown()


def test_options_fixed_after_init_like_torch():
    for name, value in (("batch_size", 3), ("drop_last", True), ("sampler", [0]),
                        ("dataset", [1, 2])):
        loader, ref = D.DataLoader(list(range(5))), tud.DataLoader(list(range(5)))
        with pytest.raises(ValueError, match=f"{name} attribute should not be set"):
            setattr(loader, name, value)
        with pytest.raises(ValueError, match=f"{name} attribute should not be set"):
            setattr(ref, name, value)
    loader.num_workers = 0  # others may change, as in torch


class Leaves(D.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return ember.ones(2, requires_grad=True)


def test_requires_grad_crosses_from_a_worker_as_in_torch():
    # a leaf keeps requires_grad (it was dropped); a stacked one cannot cross, as in torch
    assert [b.requires_grad for b in D.DataLoader(Leaves(), batch_size=None, num_workers=1)] \
        == [True, True]
    with pytest.raises(RuntimeError, match="(?s)Caught GradError.*requires grad.*detach"):
        list(D.DataLoader(Leaves(), batch_size=2, num_workers=1))


def test_a_forked_child_leaves_the_parents_workers_alone():
    # (a process forked later, another loader's worker say, may collect its copy of an
    # iterator: its shutdown stopped the parent's workers and printed an AssertionError)
    loader = D.DataLoader(tensor_ds(), batch_size=8, num_workers=1, persistent_workers=True)
    first = as_numpy(loader)

    def collect_the_copy():
        loader._iterator._finalizer()
        time.sleep(0.3)  # (time for a message to the workers to leave)

    child = multiprocessing.get_context("fork").Process(target=collect_the_copy)
    child.start()
    child.join()
    assert child.exitcode == 0
    assert_batches_equal(as_numpy(loader), first)
    loader._iterator._shutdown()


@pytest.mark.parametrize("num_workers,warns", [(1, False), (2, True)])
def test_more_workers_than_cpus_warns_as_torch(monkeypatch, num_workers, warns):
    # one CPU: at construction and at each start of the workers, as torch's loader warns
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    counts = []
    for module in (D, tud):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loader = module.DataLoader(list(range(4)), batch_size=2, num_workers=num_workers)
            assert [b.tolist() for b in loader] == [[0, 1], [2, 3]]
        counts.append([str(w.message) for w in caught if "worker processes" in str(w.message)])
    assert len(counts[0]) == len(counts[1]) == (2 if warns else 0)
    assert all("than the 1 CPU this process may use" in m and m.endswith("num_workers at most 1")
               for m in counts[0])

"""``DataLoader(in_order=False)``: with workers, a batch comes as soon as a worker has it (a
slow batch no longer holds back those after it), as in torch 2.13; every batch still comes
exactly once, a worker's error re-raises, a dead worker is reported at once."""

import multiprocessing
import os
import time

import pytest
import torch.utils.data as tud

import ember
import ember.utils.data as D


def _held_back_dataset(base: type, flag: str) -> object:
    """Item 1 waits (at most 10 s) until the test has seen item 2, which only a loader that
    gives batches out of order can show it first."""

    class HeldBack(base):
        def __len__(self) -> int:
            return 4

        def __getitem__(self, i: int) -> int:
            deadline = time.monotonic() + 10
            while i == 1 and not os.path.exists(flag) and time.monotonic() < deadline:
                time.sleep(0.01)
            return i

    return HeldBack()


def _order(module: object, flag: str, in_order: bool) -> list[int]:
    loader = module.DataLoader(_held_back_dataset(module.Dataset, flag), batch_size=None,
                               num_workers=2, in_order=in_order,
                               multiprocessing_context="fork")
    seen = []
    for item in loader:
        seen.append(int(item))
        if seen[-1] == 2:
            open(flag, "w").close()
    return seen


def test_out_of_order_batches_come_as_they_are_ready_as_in_torch(tmp_path):
    # workers 0 and 1 get items 0, 2 and 1, 3: 2 comes while 1 waits for it (in order, 1
    # would wait out its 10 s, then come first)
    ours = _order(D, str(tmp_path / "ember"), in_order=False)
    theirs = _order(tud, str(tmp_path / "torch"), in_order=False)
    assert ours == theirs == [0, 2, 1, 3]


@pytest.mark.parametrize("persistent", [False, True])
def test_out_of_order_gives_every_sample_once(persistent):
    ds = D.TensorDataset(ember.arange(23))
    loader = D.DataLoader(ds, batch_size=3, shuffle=True, num_workers=2, in_order=False,
                          persistent_workers=persistent, prefetch_factor=3)
    for _ in range(2):
        got = sorted(x for (b,) in loader for x in b.tolist())
        assert got == list(range(23))


def test_out_of_order_iterable_dataset_shards_like_torch():
    def shards(module):
        class Shard(module.IterableDataset):
            def __iter__(self):
                info = module.get_worker_info()
                return iter(range(info.id, 11, info.num_workers))

        loader = module.DataLoader(Shard(), batch_size=2, num_workers=2, in_order=False)
        return sorted(x for b in loader for x in b.tolist())

    assert shards(D) == shards(tud) == list(range(11))


def test_out_of_order_reports_a_dead_worker_at_once():
    # worker 1 dies on its first item while worker 0 keeps the results coming (it starts once
    # 1 is dead): the death must show within a few batches, not at the end of the epoch
    dead = multiprocessing.get_context("fork").Event()

    class Dying(D.Dataset):
        def __len__(self) -> int:
            return 200

        def __getitem__(self, i: int) -> int:
            if D.get_worker_info().id == 1:
                dead.set()
                os._exit(3)
            dead.wait(10)
            time.sleep(0.01)
            return i

    got = []
    loader = D.DataLoader(Dying(), batch_size=None, num_workers=2, in_order=False,
                          multiprocessing_context="fork")
    with pytest.raises(RuntimeError, match="worker 1 .*exit code 3"):
        for item in loader:
            got.append(int(item))
    assert len(got) < 100


def test_out_of_order_worker_errors_reraise_and_the_rest_come_as_in_torch():
    def run(module):
        class Failing(module.Dataset):
            def __len__(self) -> int:
                return 10

            def __getitem__(self, i: int) -> int:
                if i in (3, 7):
                    raise ValueError(f"bad item {i}")
                return i

        it = iter(module.DataLoader(Failing(), batch_size=None, num_workers=2, in_order=False,
                                    multiprocessing_context="fork"))
        got, errors = [], []
        while True:
            try:
                got.append(int(next(it)))
            except ValueError as e:
                errors.append(str(e).splitlines()[-1])
            except StopIteration:
                return sorted(got), sorted(errors)

    ours, theirs = run(D), run(tud)
    assert ours == theirs
    assert ours[0] == [0, 1, 2, 4, 5, 6, 8, 9]
    assert ours[1] == ["ValueError: bad item 3", "ValueError: bad item 7"]

"""A DataLoader ``timeout`` raises and the iterator goes on, as torch's: a caller that catches
the error gets the late batch and the rest of the epoch (Ember stopped its workers at the
timeout, so the next ``next`` ended the epoch silently, the rest of it lost)."""

import time

import pytest
import torch.utils.data as tud

import ember.utils.data as D


def _late_second_item(base: type) -> object:
    class Late(base):
        def __len__(self) -> int:
            return 3

        def __getitem__(self, i: int) -> int:
            if i == 1:
                time.sleep(1.0)
            return i

    return Late()


def _caught(data: object, persistent: bool) -> list:
    loader = data.DataLoader(_late_second_item(data.Dataset), batch_size=None, num_workers=1,
                             timeout=0.4, persistent_workers=persistent,
                             multiprocessing_context="fork")
    seen = []
    for _ in range(2 if persistent else 1):
        it = iter(loader)
        while True:
            try:
                seen.append(int(next(it)))
            except StopIteration:
                break
            except RuntimeError as e:
                assert "timed out after 0.4 seconds" in str(e)
                if seen[-1:] != ["timeout"]:  # (how many times it waits depends on the host)
                    seen.append("timeout")
    return seen


@pytest.mark.parametrize("persistent", [False, True])
def test_the_epoch_goes_on_after_a_caught_timeout_as_torch(persistent):
    want = _caught(tud, persistent)
    assert want[:4] == [0, "timeout", 1, 2]
    assert _caught(D, persistent) == want


def test_a_timeout_while_a_persistent_loader_starts_an_epoch(tmp_path):
    # the epoch's start waits for the workers to finish the last one's tasks; a timeout there
    # stops them (their owed replies would read as batches: a KeyError), and the next epoch
    # starts new workers
    flag = tmp_path / "slow"
    flag.touch()

    class SlowWhileFlagged(D.Dataset):
        def __len__(self) -> int:
            return 4

        def __getitem__(self, i: int) -> int:
            if i == 1 and flag.exists():
                time.sleep(1.5)
            return i

    loader = D.DataLoader(SlowWhileFlagged(), batch_size=None, num_workers=1, timeout=0.5,
                          persistent_workers=True, prefetch_factor=4,
                          multiprocessing_context="fork")
    it = iter(loader)
    assert int(next(it)) == 0
    with pytest.raises(RuntimeError, match="timed out"):
        next(it)
    with pytest.raises(RuntimeError, match="timed out"):
        iter(loader)
    flag.unlink()
    assert [int(x) for x in loader] == [0, 1, 2, 3] == [int(x) for x in loader]

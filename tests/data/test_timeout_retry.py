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

"""A map-style dataset's ``__getitem__`` that raises StopIteration ends the epoch there, with
workers as without them, as torch's: a worker took it for the end of its share, so the item
was dropped and the batches after it still came ([0, 1, 3, 4, 5] with two workers)."""

import pytest
import torch.utils.data as tud

import ember.utils.data as D


def _stops_at_two(base: type) -> object:
    class StopsAtTwo(base):
        def __len__(self) -> int:
            return 6

        def __getitem__(self, i: int) -> int:
            if i == 2:
                raise StopIteration
            return i

    return StopsAtTwo()


@pytest.mark.parametrize("num_workers", [0, 1, 2])
def test_stop_iteration_in_an_item_ends_the_epoch_as_torch(num_workers):
    def seen(data):
        loader = data.DataLoader(_stops_at_two(data.Dataset), batch_size=None,
                                 num_workers=num_workers,
                                 multiprocessing_context="fork" if num_workers else None)
        return [int(x) for x in loader]

    assert seen(D) == seen(tud) == [0, 1]

"""Review of the worker transport (``ember.data.shared``): a leaf made on the fly keeps its own
slot, an expanded tensor arrives read-only and a 0-d one 0-d, as torch's; and a
DistributedSampler refuses a dataset shrunk past what it can pad, as torch's."""

import pickle
from collections.abc import Mapping

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ember
import ember.utils.data as D
from ember.data import shared
from ember.data.distributed_sampler import DistributedSampler


class Lazy(Mapping):
    """Makes each value when asked: the tensor is freed once packed, and its id reused."""

    def __getitem__(self, k: int) -> ember.Tensor:
        return ember.full((2,), float(k))

    def __iter__(self):
        return iter(range(6))

    def __len__(self) -> int:
        return 6


def _through(batch, use_shm: bool, tmp_name: str = "ember-test-mend63"):
    return shared.unpack(shared.pack(batch, tmp_name, use_shm))


@pytest.mark.parametrize("use_shm", [True, False])
def test_a_leaf_made_on_the_fly_keeps_its_own_slot(use_shm):
    if use_shm and not shared.shared_memory_available():
        pytest.skip("no /dev/shm")
    got = _through(Lazy(), use_shm)
    assert {k: v.tolist() for k, v in got.items()} == {k: [float(k)] * 2 for k in range(6)}


@pytest.mark.parametrize("num_workers", [0, 1])
def test_a_lazy_mapping_from_a_worker_keeps_its_values(num_workers):
    loader = D.DataLoader([Lazy()], batch_size=None, num_workers=num_workers,
                          collate_fn=lambda x: x,
                          multiprocessing_context="fork" if num_workers else None)
    got = next(iter(loader))
    assert [got[k].tolist() for k in range(6)] == [[float(k)] * 2 for k in range(6)]


def _write_expanded(data, lib, num_workers: int, shape: tuple) -> str:
    loader = data.DataLoader([lib.ones(shape[0], 1).expand(*shape)], batch_size=None,
                             num_workers=num_workers,
                             multiprocessing_context="fork" if num_workers else None)
    t = next(iter(loader))
    try:
        t.add_(1)
    except RuntimeError:
        return "refused"
    return "written"


@pytest.mark.parametrize("num_workers", [0, 1])
@pytest.mark.parametrize("shape", [(3, 4), (1, 1)])
def test_an_expanded_tensor_from_a_worker_is_read_only_as_torch(num_workers, shape):
    want = _write_expanded(tud, torch, num_workers, shape)
    assert _write_expanded(D, ember, num_workers, shape) == want
    assert want == ("refused" if shape == (3, 4) else "written")


def test_an_expanded_tensor_pickled_is_read_only_as_torch():
    with pytest.raises(RuntimeError):
        pickle.loads(pickle.dumps(torch.ones(3, 1).expand(3, 4))).add_(1)
    with pytest.raises(RuntimeError, match="add_"):
        pickle.loads(pickle.dumps(ember.ones(3, 1).expand(3, 4))).add_(1)


def test_inline_transport_keeps_0d_shapes(monkeypatch):
    got = _through({"s": ember.tensor(3.0), "a": np.float32(2.0) * np.ones(()),
                    "c": np.arange(6.0).reshape(2, 3).T}, use_shm=False)
    assert tuple(got["s"].shape) == () and got["s"].item() == 3.0
    assert got["a"].shape == () and got["c"].tolist() == [[0, 3], [1, 4], [2, 5]]
    monkeypatch.setattr(shared, "shared_memory_available", lambda: False)
    loader = D.DataLoader([ember.tensor(3.0)], batch_size=None, num_workers=1,
                          multiprocessing_context="fork")
    assert tuple(next(iter(loader)).shape) == ()


@pytest.mark.parametrize(("shrunk", "drop_last"),
                         [(6, True), (5, True), (0, True), (5, False), (1, False), (0, False)])
def test_a_dataset_shrunk_is_refused_where_torch_refuses(shrunk, drop_last):
    # made for 7 items on 2 ranks: 6 kept with drop_last, 8 padded without; torch pads a
    # smaller dataset without drop_last and fails (an assertion, a division by 0) otherwise
    ours_data, theirs_data = list(range(7)), list(range(7))
    ours = DistributedSampler(ours_data, 2, 1, shuffle=False, drop_last=drop_last)
    theirs = tud.DistributedSampler(theirs_data, 2, 1, shuffle=False, drop_last=drop_last)
    del ours_data[shrunk:], theirs_data[shrunk:]
    try:
        want = list(theirs)
    except (AssertionError, ZeroDivisionError):
        with pytest.raises(ValueError, match=f"shrunk to {shrunk} items .*new Distrib"):
            list(ours)
    else:
        assert list(ours) == want

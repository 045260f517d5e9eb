"""vmap of a training-mode BatchNorm whose running statistics are unbatched: refused as
torch.func refuses it, and the error now says it is batch_norm's running-statistics update
and how to avoid it (it only said "an in-place op writes a batched value ...")."""

import pytest
import torch
import torch.func

import ember
import ember.func


def test_the_refusal_names_batch_norm_and_the_hint():
    with pytest.raises(RuntimeError, match="running_mean or running_var"):
        torch.func.vmap(torch.nn.BatchNorm1d(3))(torch.randn(4, 5, 3))
    with pytest.raises(ember.errors.OpError, match="unbatched tensor of shape \\(3,\\)") as info:
        ember.func.vmap(ember.nn.BatchNorm1d(3))(ember.randn(4, 5, 3))
    (note,) = info.value.__notes__
    assert note.startswith("batch_norm: while updating running_mean / running_var")
    assert "replace_all_batch_norm_modules_" in note


def test_the_hint_works_as_torch_func():
    x = [[[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]]] * 2
    outs = []
    for lib, func in ((ember, ember.func), (torch, torch.func)):
        bn = lib.nn.BatchNorm1d(3, dtype=lib.float64)
        func.replace_all_batch_norm_modules_(bn)
        outs.append(func.vmap(bn)(lib.tensor(x, dtype=lib.float64)).flatten().tolist())
    assert outs[0] == pytest.approx(outs[1])


def test_instance_norm_running_statistics_get_the_note_too():
    # (InstanceNorm's update raised the bare "an in-place op writes a batched value")
    with pytest.raises(RuntimeError, match="track_running_stats"):
        torch.func.vmap(torch.nn.InstanceNorm1d(3, track_running_stats=True))(
            torch.randn(2, 4, 3, 6))
    with pytest.raises(ember.errors.BatchedWriteError, match="unbatched tensor") as info:
        ember.func.vmap(ember.nn.InstanceNorm1d(3, track_running_stats=True))(
            ember.randn(2, 4, 3, 6))
    (note,) = info.value.__notes__
    assert note.startswith("instance_norm: while updating running_mean / running_var")
    assert "track_running_stats=False" in note


def test_only_the_batched_write_gets_the_note(monkeypatch):
    # (the note was added to any OpError of the update, e.g. an AllocationError)
    import ember.ops.normalization as normalization

    def no_memory(*args):
        raise ember.errors.AllocationError("add_: cannot allocate")
    monkeypatch.setattr(normalization, "inplace", no_memory)
    with pytest.raises(ember.errors.AllocationError) as info:
        ember.func.vmap(ember.nn.BatchNorm1d(3))(ember.randn(4, 5, 3))
    assert not getattr(info.value, "__notes__", None)

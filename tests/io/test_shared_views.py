"""ember.save keeps views of a saved tensor as views (torch.save/torch.load keep views of one
storage): compared with torch on real files."""

import json

import numpy as np
import pytest
import torch

import ember
from ember.errors import CheckpointError
from ember.io import safetensors_file as st

BASE = np.arange(24.0, dtype=np.float32).reshape(4, 6)


def _views(b):
    return {"row": b[1], "a": b, "t": b.t(), "sl": b[1:3, ::2], "col": b[:, 2],
            "flat": b.reshape(-1)[5:17].reshape(3, 4)}


def _np(x):
    return (x.detach().float() if isinstance(x, torch.Tensor) else
            x.detach().to(ember.float32)).numpy()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64"])
def test_views_load_sharing_memory_as_torch(tmp_path, dtype):
    saved_e = _views(ember.tensor(BASE).to(getattr(ember, dtype)))
    saved_t = _views(torch.tensor(BASE).to(getattr(torch, dtype)))
    ember.save(saved_e, tmp_path / "e.safetensors")
    torch.save(saved_t, tmp_path / "t.pt")
    got, want = ember.load(tmp_path / "e.safetensors"), torch.load(tmp_path / "t.pt")
    for k in want:
        assert tuple(got[k].shape) == tuple(want[k].shape)
        np.testing.assert_array_equal(_np(got[k]), _np(want[k]))
    got["a"].add_(100)
    want["a"].add_(100)
    for k in want:  # each view sees the write through its base, in both
        np.testing.assert_array_equal(_np(got[k]), _np(want[k]))
    assert sorted(ember.io.load_file(tmp_path / "e.safetensors")) == ["a"]


def test_view_of_a_parameter_as_torch(tmp_path):
    p = ember.nn.Parameter(ember.tensor(BASE))
    tp = torch.nn.Parameter(torch.tensor(BASE))
    ember.save({"p": p, "r": p[1]}, tmp_path / "e.safetensors")
    torch.save({"p": tp, "r": tp[1]}, tmp_path / "t.pt")
    got, want = ember.load(tmp_path / "e.safetensors"), torch.load(tmp_path / "t.pt")
    assert isinstance(got["p"], ember.nn.Parameter) and isinstance(want["p"], torch.nn.Parameter)
    assert got["r"].requires_grad == want["r"].requires_grad and got["r"].is_leaf == \
        want["r"].is_leaf
    with ember.no_grad():
        got["p"].mul_(2)
    np.testing.assert_array_equal(got["r"].detach().numpy(), BASE[1] * 2)


def test_files_without_views_stay_version_1(tmp_path):
    w = ember.ones(3)
    ember.save({"a": w, "b": w, "c": ember.zeros(2)}, tmp_path / "a.safetensors")
    ember.save({"a": w, "b": w[1:]}, tmp_path / "b.safetensors")
    versions = [json.loads(st.load_metadata(tmp_path / f"{n}.safetensors")["ember"])["version"]
                for n in "ab"]
    assert versions == [1, 2]  # (an older Ember refuses the second: "upgrade Ember")


def test_what_stays_a_copy(tmp_path):
    b = ember.tensor(BASE)
    c = ember.randn(3, dtype=ember.complex128)
    halves = ember.arange(8.0)
    obj = {"t": b.t(), "row": b.t()[1],  # a view of a non-contiguous tensor
           "i32": b.view(ember.int32)[0], "a": b,  # another dtype
           "c": c, "real": ember.view_as_real(c)[:, 0],  # another dtype (float64 of complex)
           "lo": halves[:5], "hi": halves[3:]}  # partial overlaps: views of their storage
    ember.save(obj, tmp_path / "c.safetensors")
    out = ember.load(tmp_path / "c.safetensors")
    for k, v in obj.items():
        np.testing.assert_array_equal(out[k].numpy(), v.numpy())
    stored = set(ember.io.load_file(tmp_path / "c.safetensors"))
    assert {"i32", "c", "real", "lo.storage"} <= stored and not {"lo", "hi"} & stored


@pytest.mark.parametrize("dtype", ["float32", "complex128", "bfloat16"])
def test_partly_overlapping_and_complex128_views_share_memory_as_torch(tmp_path, dtype):
    x = ember.arange(10.0).to(getattr(ember, dtype))
    tx = torch.arange(10.0).to(getattr(torch, dtype))
    obj = {"lo": x[0:6], "hi": x[4:10], "step": x[1::3], "whole_t": x[1:7].view(2, 3).t()}
    torch.save({k: tx[s] for k, s in [("lo", slice(0, 6)), ("hi", slice(4, 10)),
                                      ("step", slice(1, None, 3))]}
               | {"whole_t": tx[1:7].view(2, 3).t()}, tmp_path / "t.pt")
    ember.save(obj, tmp_path / "e.st")
    for out in (ember.load(tmp_path / "e.st"), torch.load(tmp_path / "t.pt")):
        assert [out[k].stride() for k in obj] == [(1,), (1,), (3,), (1, 3)]
        out["lo"][5] = 100  # (x[5]: seen by hi and whole_t, not by step)
        assert [float(out["hi"][1].real), float(out["whole_t"][1, 1].real),
                float(out["step"][1].real)] == [100.0, 100.0, 4.0]
    c = ember.arange(8.0).to(ember.complex128)  # a complex128 tensor and a view of it
    ember.save({"c": c, "v": c[2:5]}, tmp_path / "c.st")
    out = ember.load(tmp_path / "c.st")
    out["c"][3] = 9.0
    assert complex(out["v"][1]) == 9.0 and out["v"].dtype == ember.complex128


@pytest.mark.parametrize("entry, match", [
    ({"offset": -1, "size": [2], "stride": [1]}, "malformed view"),
    ({"offset": [0], "size": [2], "stride": [1]}, "malformed view"),  # (was a TypeError)
    ({"offset": 0, "size": [2, 2], "stride": [1]}, "malformed view"),
    ({"offset": 2, "size": [3], "stride": [1]}, "reads past its 4 elements"),
    ({"offset": 0, "size": [2], "stride": [1], "$view": "nope"}, "does not contain"),
])
def test_corrupt_view_entries(tmp_path, entry, match):
    doc = {"format": "ember.checkpoint", "version": 2,
           "tree": {"a": {"$tensor": "a"}, "v": {"$view": "a", **entry}}}
    st.write_arrays(tmp_path / "v.safetensors", {"a": np.ones(4, np.float32)},
                    {"ember": json.dumps(doc)})
    with pytest.raises(CheckpointError, match=match):
        ember.load(tmp_path / "v.safetensors")


def test_views_read_from_a_torch_file_stay_views_when_saved_again(tmp_path):
    # (a torch file's tensors are as_strided views of its storages: NumPy records no base)
    b = torch.arange(12.0).reshape(3, 4)
    torch.save({"a": b, "r": b[1], "t": b.t()}, tmp_path / "t.pt")
    ember.save(ember.load(tmp_path / "t.pt"), tmp_path / "e.safetensors")
    got, want = ember.load(tmp_path / "e.safetensors"), torch.load(tmp_path / "t.pt")
    got["a"].add_(100)
    want["a"].add_(100)
    for k in want:
        np.testing.assert_array_equal(_np(got[k]), _np(want[k]))
    assert sorted(ember.io.load_file(tmp_path / "e.safetensors")) == ["a"]


def test_writes_through_a_loaded_view_reach_its_base_as_torch(tmp_path):
    saved_e, saved_t = _views(ember.tensor(BASE)), _views(torch.tensor(BASE))
    ember.save(saved_e, tmp_path / "e.safetensors")
    torch.save(saved_t, tmp_path / "t.pt")
    for k in ("row", "sl", "col", "flat", "t"):
        got, want = ember.load(tmp_path / "e.safetensors"), torch.load(tmp_path / "t.pt")
        got[k].mul_(-1)  # (a view made by as_strided would be read-only)
        want[k].mul_(-1)
        for j in want:
            np.testing.assert_array_equal(_np(got[j]), _np(want[j]), err_msg=f"{k} -> {j}")


@pytest.mark.parametrize("map_location", ["meta", {"cpu": "meta"}])
def test_views_load_on_meta_as_torch(tmp_path, map_location):
    # (the view was made through the base's NumPy memory: NoDataError on meta)
    b, tb = ember.arange(12.0), torch.arange(12.0)
    ember.save({"b": b, "v": b[2:8].reshape(2, 3).t()}, tmp_path / "e.pt")
    torch.save({"b": tb, "v": tb[2:8].reshape(2, 3).t()}, tmp_path / "t.pt")
    got = ember.load(tmp_path / "e.pt", map_location=map_location)
    want = torch.load(tmp_path / "t.pt", map_location=map_location)
    for k in "bv":
        assert (got[k].device.type, tuple(got[k].shape), got[k].stride()) == \
            (want[k].device.type, tuple(want[k].shape), want[k].stride())


@pytest.mark.parametrize("other", ["float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"])
@pytest.mark.parametrize("part", [slice(None), slice(2, 5)])
def test_float8_types_sharing_memory_keep_their_dtypes(tmp_path, other, part):
    # (grouped by NumPy's dtype string, '<V1' for all of them: the second loaded as the first)
    buf = ember.arange(8, dtype=ember.uint8)
    saved = {"a": buf.view(ember.float8_e4m3fn), "b": buf[part].view(getattr(ember, other))}
    ember.save(saved, tmp_path / "f.pt")
    loaded = ember.load(tmp_path / "f.pt")
    for k, t in saved.items():
        assert loaded[k].dtype == t.dtype
        assert np.array_equal(loaded[k].view(ember.uint8).numpy(), t.view(ember.uint8).numpy())


def test_tensors_sharing_no_element_are_not_stored_as_their_memory(tmp_path):
    # two columns of a big matrix span almost all of it but share nothing: each is stored as
    # its own copy, not as the 16 MB block (which a storage would write whole)
    big = ember.arange(4_000_000.0).reshape(2000, 2000)
    for obj in ({"c0": big[:, 0], "c1": big[:, 1]}, {"even": big[::2, :3], "odd": big[1::2, :3]}):
        ember.save(obj, tmp_path / "c.st")
        assert (tmp_path / "c.st").stat().st_size < 100_000
        out = ember.load(tmp_path / "c.st")
        for k, v in obj.items():
            np.testing.assert_array_equal(out[k].numpy(), v.numpy())
    # interleaved tensors that do share an element keep their sharing, as torch.save
    ember.save({"col": big[:4, 0], "row": big[0, :4], "diag": big.diagonal()[:4]},
               tmp_path / "s.st")
    out = ember.load(tmp_path / "s.st")
    out["row"][0] = -1.0
    assert float(out["col"][0]) == float(out["diag"][0]) == -1.0


def _exact_groups(arrays):
    """sharing_groups' answer by brute force: np.shares_memory on every pair, unbounded."""
    names = list(arrays)
    group = {n: {n} for n in names}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if group[a] is not group[b] and np.shares_memory(arrays[a], arrays[b]):
                merged = group[a] | group[b]
                for n in merged:
                    group[n] = merged
    return sorted(sorted(g) for g in {id(g): g for g in group.values()}.values())


def test_sharing_groups_are_exact_on_mixed_views():
    """Views of one buffer (columns, rows, element slices, 0-d items, 2-d blocks, strided
    slices at odd offsets) group as np.shares_memory says, pair by pair."""
    from ember.io.shared_views import sharing_groups
    rng = np.random.default_rng(0)
    for _ in range(40):
        buf = np.zeros(600, np.float32)
        arrays = {}
        for k in range(int(rng.integers(2, 14))):
            kind = rng.integers(0, 4)
            start = int(rng.integers(0, 60))
            if kind == 0:  # a column-like 1-d strided view
                step = int(rng.choice([1, 2, 3, 6, 12]))
                arrays[f"v{k}"] = buf[start:start + step * int(rng.integers(1, 8)):step]
            elif kind == 1:  # a 0-d item
                arrays[f"v{k}"] = buf[start:start + 1].reshape(())
            elif kind == 2:  # a 2-d block
                arrays[f"v{k}"] = buf[start:start + 36].reshape(6, 6)[::2, 1::2]
            else:  # a byte view at an odd address (not a whole number of items in)
                arrays[f"v{k}"] = buf.view(np.uint8)[4 * start + 2:4 * start + 42:4]
        got = sorted(sorted(g) for g in sharing_groups(arrays))
        assert got == _exact_groups(arrays)


def test_many_disjoint_columns_need_no_pairwise_checks(tmp_path, monkeypatch):
    """2000 columns of a matrix interleave without sharing an element: they are told apart by
    their addresses, not by np.shares_memory on each of the ~2e6 pairs (which took seconds),
    and save_file takes them as separate tensors."""
    from ember.io import shared_views
    from ember.io.flat_files import shared_groups
    x = ember.randn(4, 2000)
    cols = {f"c{i}": x[:, i] for i in range(2000)}
    monkeypatch.setattr(shared_views, "checks_made", 0)
    assert shared_groups(cols) == []
    ember.io.save_file(cols, tmp_path / "c.safetensors")
    ember.save(cols, tmp_path / "c.pt")
    assert shared_views.checks_made == 0
    back = ember.load(tmp_path / "c.pt")
    assert np.array_equal(back["c7"].numpy(), x[:, 7].numpy())
    # a slice of x[:, 3] (another length) shares with it: checked against the open columns
    cols["again"] = x[1:, 3]
    assert shared_groups(cols) == [{"c3", "again"}]
    assert shared_views.checks_made <= 2000


def test_disjoint_blocks_of_one_layout_need_no_pairwise_checks(tmp_path, monkeypatch):
    """x[:, :, i] of a 3-d tensor: one layout, addresses apart by less than the strides' gcd,
    so no two share; save_file takes them without a np.shares_memory call."""
    from ember.io import shared_views
    x = ember.randn(3, 4, 300)
    blocks = {f"b{i}": x[:, :, i] for i in range(300)}
    monkeypatch.setattr(shared_views, "checks_made", 0)
    ember.io.save_file(blocks, tmp_path / "b.safetensors")
    assert shared_views.checks_made == 0
    back = ember.io.load_file(tmp_path / "b.safetensors")
    assert np.array_equal(back["b9"].numpy(), x[:, :, 9].numpy())


def test_pairwise_checks_are_bounded(monkeypatch):
    """Views of two layouts (x[:, :, i] and x[:, 1:, i]) need np.shares_memory across layouts:
    at most CHECKS_PER_ARRAY calls per array, past which overlapping ones count as sharing (a
    bigger file, never a lost tie); with budget enough, the groups are exact."""
    from ember.io import shared_views
    x = np.zeros((3, 4, 300), np.float32)
    arrays = {f"b{i}": x[:, i % 2:, i] for i in range(300)}
    arrays |= {"r0": x[0], "s": x[2, 3, 7:9]}  # (r0 shares with every block, s with b7, b8)
    monkeypatch.setattr(shared_views, "checks_made", 0)
    groups = [set(g) for g in shared_views.sharing_groups(arrays)]
    assert shared_views.checks_made <= shared_views.CHECKS_PER_ARRAY * len(arrays)
    for want in _exact_groups(arrays):  # (coarser than exact, never finer)
        assert any(set(want) <= g for g in groups)
    monkeypatch.setattr(shared_views, "CHECKS_PER_ARRAY", 10**6)
    assert sorted(map(sorted, shared_views.sharing_groups(arrays))) == _exact_groups(arrays)
    del arrays["r0"]
    monkeypatch.setattr(shared_views, "CHECKS_PER_ARRAY", 4)
    monkeypatch.setattr(shared_views, "checks_made", 0)
    groups = shared_views.sharing_groups(arrays)
    assert 0 < shared_views.checks_made <= 4 * len(arrays)
    assert len(groups) < len(_exact_groups(arrays))  # (the budget was spent: coarser)


@pytest.mark.parametrize("name", ["e.safetensors", "t.pt"])
def test_loaded_views_keep_their_storage_offsets_as_torch(tmp_path, name):
    want = _views(torch.from_numpy(BASE.copy()))
    torch.save(want, tmp_path / "t.pt")
    ember.save(_views(ember.from_numpy(BASE.copy())), tmp_path / "e.safetensors")
    got = ember.load(tmp_path / name)
    for k, w in want.items():
        assert got[k].storage_offset() == w.storage_offset(), k
        assert got[k].untyped_storage().nbytes() == w.untyped_storage().nbytes(), k

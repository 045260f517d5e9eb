"""ember.io.safe_open (lazy reads, get_slice) and save_model/load_model (tied weights) against
the safetensors package, on real files."""

import doctest

import numpy as np
import pytest
import torch
from safetensors import safe_open as ref_open
from safetensors import torch as stt

import ember
import ember.io
import ember.nn as nn
from ember.errors import ArgumentError, CheckpointError, IndexOutOfRange
from ember.io import lazy_reads, model_files


def _np(x):
    if isinstance(x, torch.Tensor):
        return (x.float() if x.dtype == torch.bfloat16 else x).numpy()
    return (x.to(ember.float32) if x.dtype == ember.bfloat16 else x).numpy()


INDICES = [0, -1, (slice(None), 1), (..., 1), slice(-1, None), (0, 0, 0), slice(5, 10),
           (slice(None), None), (slice(0, 2), slice(1, 3), slice(None, None, 2))]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.bool, torch.int64,
                                   torch.float16, torch.float8_e4m3fn])
def test_safe_open_matches_safetensors(tmp_path, dtype):
    b = torch.randn(2, 3, 4).to(dtype) if dtype != torch.int64 else torch.arange(24).view(2, 3, 4)
    path = tmp_path / "f.safetensors"
    stt.save_file({"b": b, "e": torch.ones(0, 2), "z": torch.tensor(3.0)}, path,
                  metadata={"m": "1"})
    with ref_open(path, "pt") as ref, ember.io.safe_open(path, "pt") as mine:
        assert mine.keys() == ref.keys() and mine.offset_keys() == ref.offset_keys()
        assert mine.metadata() == ref.metadata() == {"m": "1"}
        for k in ref.keys():
            want, got = ref.get_tensor(k), mine.get_tensor(k)
            assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
            np.testing.assert_array_equal(_np(got.to(ember.float32) if "8" in str(dtype) else got),
                                          _np(want.float() if "8" in str(dtype) else want))
            rs, ms = ref.get_slice(k), mine.get_slice(k)
            assert ms.get_shape() == rs.get_shape() and ms.get_dtype() == rs.get_dtype()
        rs, ms = ref.get_slice("b"), mine.get_slice("b")
        for index in INDICES:
            want, got = rs[index], ms[index]
            if "8" in str(dtype):
                want, got = want.float(), got.to(ember.float32)
            assert tuple(got.shape) == tuple(want.shape), index
            np.testing.assert_array_equal(_np(got), _np(want))


def test_safe_open_slice_errors_and_close(tmp_path):
    path = tmp_path / "f.safetensors"
    stt.save_file({"a": torch.arange(6.0).view(2, 3)}, path)
    with ember.io.safe_open(path, framework="pt") as f:
        assert f.metadata() is None  # as safetensors: no __metadata__ is None
        s = f.get_slice("a")
        with pytest.raises(IndexOutOfRange, match="get_slice"):
            s[5]
        with pytest.raises(IndexError):  # (IndexOutOfRange is one, as safetensors raises)
            s[0, 0, 0]
        with pytest.raises(CheckpointError, match="does not contain tensor 'zz'"):
            f.get_tensor("zz")
    assert s[1].tolist() == [3.0, 4.0, 5.0]  # a slice stays readable, as safetensors'
    with pytest.raises(CheckpointError, match="closed"):
        f.keys()
    with pytest.raises(ArgumentError, match="framework"):
        ember.io.safe_open(path, framework="jax2")


def test_safe_open_numpy(tmp_path):
    path = tmp_path / "n.safetensors"
    stt.save_file({"a": torch.arange(6.0, dtype=torch.float64).view(2, 3)}, path)
    with ember.io.safe_open(path, "numpy") as mine, ref_open(path, "numpy") as ref:
        got, want = mine.get_slice("a")[:, 1], ref.get_slice("a")[:, 1]
        assert type(got) is np.ndarray and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(mine.get_tensor("a"), ref.get_tensor("a"))


def test_safe_open_reads_a_corrupt_file_as_a_checkpoint_error(tmp_path):
    path = tmp_path / "t.safetensors"
    stt.save_file({"a": torch.ones(100)}, path)
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(CheckpointError, match="truncated"):
        ember.io.safe_open(path)


class TiedTorch(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(5, 3)
        self.head = torch.nn.Linear(3, 5)
        self.head.weight = self.emb.weight


class TiedEmber(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(5, 3)
        self.head = nn.Linear(3, 5)
        self.head.weight = self.emb.weight


def test_save_model_writes_tied_weights_once_as_safetensors(tmp_path):
    stt.save_model(TiedTorch(), tmp_path / "t.safetensors", metadata={"by": "me"})
    ember.io.save_model(TiedEmber(), tmp_path / "e.safetensors", metadata={"by": "me"})
    with ref_open(tmp_path / "t.safetensors", "pt") as t, \
            ref_open(tmp_path / "e.safetensors", "pt") as e:
        assert e.keys() == t.keys() == ["emb.weight", "head.bias"]
        assert e.metadata() == t.metadata() == {"by": "me", "head.weight": "emb.weight"}


def test_load_model_tied_both_ways(tmp_path):
    tm = TiedTorch()
    stt.save_model(tm, tmp_path / "t.safetensors")
    em = TiedEmber()
    assert ember.io.load_model(em, tmp_path / "t.safetensors") == ([], [])
    assert em.head.weight is em.emb.weight
    np.testing.assert_array_equal(em.head.weight.detach().numpy(), tm.emb.weight.detach().numpy())
    ember.io.save_model(em, tmp_path / "e.safetensors")
    tm2 = TiedTorch()
    missing, unexpected = stt.load_model(tm2, tmp_path / "e.safetensors")
    assert not missing and not unexpected
    np.testing.assert_array_equal(tm2.head.weight.detach().numpy(), tm.emb.weight.detach().numpy())


def test_load_model_missing_and_unexpected_as_safetensors(tmp_path):
    path = tmp_path / "lin.safetensors"
    stt.save_model(torch.nn.Linear(3, 5), path)
    with pytest.raises(RuntimeError) as want:
        stt.load_model(TiedTorch(), path)
    with pytest.raises(RuntimeError) as got:
        ember.io.load_model(TiedEmber(), path)
    assert str(got.value).replace("TiedEmber", "X") == str(want.value).replace("TiedTorch", "X")
    m_want, u_want = stt.load_model(TiedTorch(), path, strict=False)
    m_got, u_got = ember.io.load_model(TiedEmber(), path, strict=False)
    assert sorted(m_got) == sorted(m_want) and sorted(u_got) == sorted(u_want)


def test_load_model_prefers_the_name_in_the_file(tmp_path):
    # a file that kept head.weight (not the sorted-first name) loads with neither name missing
    tm = TiedTorch()
    stt.save_file({"head.weight": tm.emb.weight.detach().clone(),
                   "head.bias": tm.head.bias.detach().clone()}, tmp_path / "h.safetensors")
    em = TiedEmber()
    assert ember.io.load_model(em, tmp_path / "h.safetensors") == ([], [])
    np.testing.assert_array_equal(em.emb.weight.detach().numpy(), tm.emb.weight.detach().numpy())


def test_save_model_refuses_shared_memory_that_no_name_covers(tmp_path):
    class Halves(nn.Module):
        def __init__(self):
            super().__init__()
            base = ember.zeros(4)
            self.register_buffer("a", base[:2])
            self.register_buffer("b", base[1:])

    with pytest.raises(ArgumentError, match="none of them covers it all"):  # (a RuntimeError,
        # as safetensors raises)
        ember.io.save_model(Halves(), tmp_path / "x.safetensors")
    assert not (tmp_path / "x.safetensors").exists()


def test_docstring_examples(tmp_path):
    for mod in (lazy_reads, model_files):
        result = doctest.testmod(mod, extraglobs={"ember": ember, "tmp_path": tmp_path},
                                 optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0 and result.attempted > 0


def test_empty_metadata_is_written_and_read_as_safetensors(tmp_path):
    ember.io.save_file({"a": ember.ones(2)}, tmp_path / "e.safetensors", metadata={})
    stt.save_file({"a": torch.ones(2)}, tmp_path / "t.safetensors", metadata={})
    assert (tmp_path / "e.safetensors").read_bytes() == (tmp_path / "t.safetensors").read_bytes()
    stt.save_file({"a": torch.ones(2)}, tmp_path / "n.safetensors")
    for name in "etn":
        with ember.io.safe_open(tmp_path / f"{name}.safetensors") as mine, \
                ref_open(tmp_path / f"{name}.safetensors", "pt") as ref:
            assert mine.metadata() == ref.metadata()  # {} for an empty map, None for none
    ember.io.save_model(nn.Linear(2, 2), tmp_path / "em.safetensors", metadata={})
    stt.save_model(torch.nn.Linear(2, 2), tmp_path / "tm.safetensors", metadata={})
    with ref_open(tmp_path / "em.safetensors", "pt") as e, \
            ref_open(tmp_path / "tm.safetensors", "pt") as t:
        assert e.metadata() == t.metadata() == {}

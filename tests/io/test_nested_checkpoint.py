"""ember.save / ember.load of nested (jagged) tensors: data, not a pickle, as torch.load reads
an NJT with weights_only=True."""

import io
import json

import numpy as np
import pytest
import torch

import ember
from ember.errors import CheckpointError
from ember.io import safetensors_file as st


def roundtrip(obj, **kwargs):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return ember.load(buf, **kwargs)


def test_nested_tensors_load_with_weights_only_as_torch():
    seqs = [np.arange(6.0).reshape(2, 3), np.ones((1, 3)), np.zeros((0, 3))]
    nt = ember.nested.nested_tensor([ember.tensor(s) for s in seqs], requires_grad=True)
    tnt = torch.nested.nested_tensor([torch.tensor(s) for s in seqs], layout=torch.jagged,
                                     requires_grad=True)
    tbuf = io.BytesIO()
    torch.save({"nt": tnt, "t": tnt.transpose(1, 2)}, tbuf)
    tbuf.seek(0)
    expected = torch.load(tbuf)  # (weights_only=True, the default)
    got = roundtrip({"nt": nt, "t": nt.transpose(1, 2)})  # (the default too)
    for key in ("nt", "t"):
        assert isinstance(got[key], ember.nested.NestedTensor)
        assert got[key].dim() == expected[key].dim()
        assert got[key].requires_grad and got[key].values().is_leaf
        assert got[key].offsets().tolist() == expected[key].offsets().tolist()
        for a, b in zip(got[key].unbind(), expected[key].unbind()):
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert got["t"].values().data_ptr() == got["nt"].values().data_ptr()  # (one storage)


def test_nested_tensors_on_one_offsets_keep_one_ragged_size_and_their_seqlens():
    offsets = ember.tensor([0, 2, 5], dtype=ember.int32)
    a = ember.nested.nested_tensor_from_jagged(ember.arange(10.0).reshape(5, 2), offsets)
    b = ember.nested.nested_tensor_from_jagged(ember.ones(5, 2), offsets)
    c = ember.nested.nested_tensor_from_jagged(ember.ones(5), offsets, max_seqlen=7)
    got = roundtrip([a, b, c])
    assert got[0].shape[1] == got[1].shape[1]  # (one j: they combine)
    assert (got[0] + got[1]).unbind()[1].tolist() == [[5.0, 6.0], [7.0, 8.0], [9.0, 10.0]]
    assert got[0].offsets().dtype == ember.int32
    assert got[2].to_padded_tensor(0.0).shape == (2, 7)  # (max_seqlen kept, as torch's)


@pytest.mark.parametrize("change, match", [
    (lambda n: n.update(ragged_idx=0), "jagged_dim 0"),
    (lambda n: n.update(max_seqlen="x"), "malformed nested tensor"),
    (lambda n: n.update(offsets=3), "not tensors"),
    (lambda n: n.update(offsets=n["values"]), "offsets must be a 1-d integer"),
])
def test_damaged_nested_entries_are_checkpoint_errors(change, match):
    nt = ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(1, 3)])
    buf = io.BytesIO()
    ember.save({"nt": nt}, buf)
    buf.seek(0)
    header = st.read_header(buf, "f", torch_hint=False)
    arrays = {name: st.read_array(buf, header, name, "f") for name in header.entries}
    doc = json.loads(header.metadata["ember"])
    change(doc["tree"]["nt"])
    out = io.BytesIO()
    st.write_arrays(out, arrays, {"ember": json.dumps(doc)})
    out.seek(0)
    with pytest.raises(CheckpointError, match=match):
        ember.load(out)


@pytest.mark.parametrize("zip_format", [True, False])
def test_torch_saved_nested_tensors_load_as_torch_load_reads_them(zip_format):
    seqs = [torch.arange(6.0).reshape(2, 3), torch.ones(1, 3)]
    tnt = torch.nested.nested_tensor(seqs, layout=torch.jagged, requires_grad=True)
    off = torch.tensor([0, 2, 5], dtype=torch.int32)
    a = torch.nested.nested_tensor_from_jagged(torch.arange(10.0).reshape(5, 2), off)
    holes = torch.nested.narrow(torch.arange(12.0).reshape(3, 4), 1, torch.tensor([0, 1, 2]),
                                torch.tensor([2, 2, 1]), layout=torch.jagged)
    saved = {"nt": tnt, "t": tnt.transpose(1, 2), "a": a, "a2": a * 2, "holes": holes,
             "long": torch.nested.nested_tensor_from_jagged(torch.ones(5), off, max_seqlen=7)}
    buf = io.BytesIO()
    torch.save(saved, buf, _use_new_zipfile_serialization=zip_format)
    buf.seek(0)
    expected = torch.load(buf)
    buf.seek(0)
    got = ember.load(buf)
    for key, want in expected.items():
        assert isinstance(got[key], ember.nested.NestedTensor), key
        assert got[key].requires_grad == want.requires_grad
        for x, y in zip(got[key].unbind(), want.unbind(), strict=True):
            np.testing.assert_array_equal(x.detach().numpy(), y.detach().numpy())
    assert got["a"].offsets().dtype == ember.int32
    assert (got["a"] + got["a2"]).shape[1] == got["a"].shape[1]  # (one offsets: one j)
    assert got["long"].to_padded_tensor(0.0).shape == (2, 7)

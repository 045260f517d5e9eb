"""mend62a: default_convert's rule for NumPy array subclasses, and plain containers rebuilt
without a copy, as torch 2.13."""

import os

import numpy as np
import pytest
import torch
from torch.utils import data as torch_data

import ember
from ember.data import collate as collate_module
from ember.utils import data as ember_data


class MyArr(np.ndarray):
    pass


class MyMasked(np.ma.MaskedArray):
    pass


def _arrays(tmp_path):
    memmap = np.memmap(os.path.join(tmp_path, "m.dat"), dtype=np.float32, mode="w+", shape=(3,))
    return {"plain": np.zeros(3), "subclass": np.arange(3.0).view(MyArr),
            "matrix": np.matrix([[1.0, 2.0]]), "memmap": memmap,
            "masked": np.ma.masked_array([1.0, 2.0], mask=[0, 1]),
            "masked subclass": np.zeros(2).view(MyMasked),
            "record": np.rec.array([(1, 2.0)], dtype=[("a", "i4"), ("b", "f8")]),
            "float record": np.zeros(3).view(np.recarray), "str": np.array(["a"]),
            "scalar": np.float32(1), "np.str_": np.str_("a")}


@pytest.mark.parametrize("name", ["plain", "subclass", "matrix", "memmap", "masked",
                                  "masked subclass", "record", "float record", "str", "scalar",
                                  "np.str_"])
def test_default_convert_keeps_arrays_of_types_outside_numpys_module_as_torch(name, tmp_path):
    # A user's ndarray subclass became a tensor (torch keeps it: only types whose __module__
    # is "numpy", np.matrix and np.memmap too, are converted).
    data = _arrays(tmp_path)[name]
    got, want = ember_data.default_convert(data), torch_data.default_convert(data)
    if isinstance(want, torch.Tensor):
        assert isinstance(got, ember.Tensor) and str(got.dtype)[6:] == str(want.dtype)[6:]
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    else:
        assert got is data and want is data


def test_plain_dict_and_list_batches_are_not_copied(monkeypatch):
    # A plain dict or list was copy.copy'd and filled item by item (slower); its items are the
    # result as they are.
    def refuse(x):
        raise AssertionError("copied")
    monkeypatch.setattr(collate_module.copy, "copy", refuse)
    batch = [{"x": np.float32(i), "y": [i, 2.0]} for i in range(4)]
    out = ember_data.default_collate(batch)
    assert type(out) is dict and type(out["y"]) is list
    np.testing.assert_array_equal(out["x"].numpy(), [0, 1, 2, 3])
    converted = ember_data.default_convert({"a": [np.zeros(1)]})
    assert type(converted) is dict and type(converted["a"]) is list

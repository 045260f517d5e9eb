"""Decoding an Ember checkpoint's JSON tree (:mod:`ember.io.checkpoint` describes it) into
the saved object: tensors are made by the loader's ``tensor`` callback, pickled objects by its
``unpickle`` callback, raw bytes read by its ``raw`` callback, so the tree alone never runs
code or reads past what the file holds.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.backend import device as to_device
from ember.dtypes import to_dtype
from ember.errors import CheckpointError, EmberError
from ember.io import safe_globals
from ember.io.placement import refuse_meta
from ember.layouts import sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr
from ember.nested.creation import nested_tensor_from_jagged
from ember.nested.nested_tensor import NestedTensor
from ember.nn.parameter import Parameter
from ember.ops.constructors import empty_strided
from ember.size import Size
from ember.sparse.construct import sparse_compressed_tensor, sparse_coo_tensor
from ember.sparse.tensor import SparseTensor
from ember.tensor import Tensor

SPARSE_LAYOUTS = {lay.name: lay for lay in (sparse_coo, sparse_csr, sparse_csc, sparse_bsr,
                                             sparse_bsc)}


class Decoder:
    def __init__(self, where: str, tensor: Callable[[str, dict], Tensor],
                 unpickle: Callable[[str, str, Any, Any], Any],
                 raw: Callable[[str, str], np.ndarray]) -> None:
        self.where, self.tensor, self.unpickle, self.raw = where, tensor, unpickle, raw
        self.made: dict[str, Any] = {}  # (sparse, nested and meta objects, by entry: once)

    def fail(self, problem: str) -> CheckpointError:
        return CheckpointError(f"{self.where}: {problem}")

    def value(self, x: Any) -> Any:
        if isinstance(x, list):
            return [self.value(v) for v in x]
        if not isinstance(x, dict):
            if x is None or isinstance(x, (bool, int, float, str)):
                return x
            raise self.fail(f"unexpected JSON value {x!r} in the checkpoint tree")
        tag = next((k for k in x if k.startswith("$")), None)
        if tag is None:
            return {k: self.value(v) for k, v in x.items()}
        arg = x[tag]
        if tag in ("$tensor", "$view") and isinstance(arg, str):
            return self.tensor(arg, x)
        if tag == "$tuple" and isinstance(arg, list):
            return tuple(self.value(v) for v in arg)
        if tag == "$dict" and isinstance(arg, list):
            return self.mapping(arg, x.get("metadata"), x.get("ordered") is True)
        if tag == "$float" and arg in ("nan", "inf", "-inf"):
            return float(arg)
        if tag == "$size" and isinstance(arg, list) and all(type(v) is int for v in arg):
            return Size(arg)
        if tag == "$sparse" and isinstance(arg, str) and arg in SPARSE_LAYOUTS:
            return self.once(x, self.sparse)
        if tag == "$nested" and arg == "jagged":
            return self.once(x, self.nested)
        if tag == "$meta" and isinstance(arg, str):
            return self.once(x, self.meta)
        if tag == "$pickle" and isinstance(arg, str) and isinstance(x.get("type"), str):
            return self.unpickle(arg, x["type"], x.get("tensors"), x.get("item"))
        if tag == "$bytes" and isinstance(arg, str):
            data = self.raw(arg, "bytes").tobytes()
            return bytearray(data) if x.get("mutable") is True else data
        if tag == "$complex" and isinstance(arg, list) and len(arg) == 2:
            real, imag = (self.value(v) for v in arg)
            if isinstance(real, float) and isinstance(imag, float):
                return complex(real, imag)
        if tag == "$set" and isinstance(arg, list):
            try:
                return (frozenset if x.get("frozen") is True else set)(self.value(v) for v in arg)
            except TypeError:
                raise self.fail(f"a $set entry {short(x)} holds unhashable items") from None
        try:  # (a corrupted file's list or dict is no dtype or device: malformed, below)
            if tag == "$dtype" and isinstance(arg, str):
                return to_dtype(arg)
            if tag == "$device" and isinstance(arg, str):
                return to_device(arg)
        except EmberError as e:
            raise self.fail(f"checkpoint tree: {e}") from None
        raise self.fail(f"malformed or unknown entry {short(x)} in the checkpoint tree")

    def once(self, x: dict, build: Callable[[dict], Any]) -> Any:
        """``build(x)``; equal entries with an ``"object"`` ordinal (one sparse, nested or
        meta tensor saved twice) give one object, as ``torch.load`` keeps identity."""
        if "object" not in x:
            return build(x)
        key = json.dumps(x, sort_keys=True)
        if key not in self.made:
            self.made[key] = build(x)
        return self.made[key]

    def sparse(self, x: dict) -> SparseTensor:
        """A sparse tensor on its parts."""
        parts, size = x.get("parts"), x.get("size")
        layout = SPARSE_LAYOUTS[x["$sparse"]]
        if not (isinstance(parts, list) and len(parts) == (2 if layout is sparse_coo else 3)
                and isinstance(size, list) and all(type(v) is int for v in size)):
            raise self.fail(f"malformed sparse tensor entry {short(x)} in the checkpoint tree")
        parts = [self.value(p) for p in parts]
        if not all(isinstance(p, Tensor) for p in parts):
            raise self.fail(f"a sparse tensor entry {short(x)} has parts that are not tensors")
        refuse_meta(parts, f"{layout.name} tensor", self.where)
        grad = x.get("requires_grad") is True
        try:
            if layout is sparse_coo:
                return sparse_coo_tensor(*parts, size, requires_grad=grad,
                                         is_coalesced=x.get("coalesced") is True)
            return sparse_compressed_tensor(*parts, size, layout=layout, requires_grad=grad)
        except EmberError as e:
            raise self.fail(f"checkpoint tree: a sparse tensor entry: {e}") from None

    def nested(self, x: dict) -> NestedTensor:
        """A jagged nested tensor on its values and offsets, checked as
        ``nested_tensor_from_jagged`` checks them; its seqlens as saved."""
        idx, seqlens = x.get("ragged_idx"), (x.get("min_seqlen"), x.get("max_seqlen"))
        if not (type(idx) is int and all(type(n) is int and n >= 0 for n in seqlens)):
            raise self.fail(f"malformed nested tensor entry {short(x)} in the checkpoint tree")
        values, offsets = self.value(x.get("values")), self.value(x.get("offsets"))
        if not (isinstance(values, Tensor) and isinstance(offsets, Tensor)):
            raise self.fail(f"a nested tensor entry {short(x)} has values or offsets that are "
                            "not tensors")
        refuse_meta((values, offsets), "nested tensor", self.where)
        try:  # (the same offsets tensor: the same ragged size, unless its seqlens differ)
            return nested_tensor_from_jagged(values, offsets, jagged_dim=idx,
                                             min_seqlen=seqlens[0], max_seqlen=seqlens[1])
        except EmberError as e:
            raise self.fail(f"checkpoint tree: a nested tensor entry: {e}") from None

    def meta(self, x: dict) -> Tensor:
        """A meta tensor (a ``Parameter`` if saved as one), as saved (PyTorch's too stay on
        meta whatever the map_location)."""
        size, stride = x.get("size"), x.get("stride")
        if not (isinstance(size, list) and isinstance(stride, list) and len(size) == len(stride)
                and all(type(v) is int and v >= 0 for v in size + stride)):
            raise self.fail(f"malformed meta tensor entry {short(x)} in the checkpoint tree")
        grad = x.get("requires_grad") is True
        try:
            t = empty_strided(size, stride, dtype=to_dtype(x["$meta"]), device="meta",
                              requires_grad=grad)
            t = Parameter(t, grad) if x.get("parameter") is True else t
        except EmberError as e:
            raise self.fail(f"checkpoint tree: a meta tensor entry: {e}") from None
        self.set_attributes(t, x, "a meta tensor")
        return t

    def set_attributes(self, t: Tensor, node: dict, what: str) -> None:
        """Sets the saved attributes of tensor ``t`` (``node``'s ``"attributes"``, if any),
        its own names only: not Tensor's (``sum``, which it would hide, its data)."""
        if node.get("attributes") is None:
            return
        attributes = self.value(node["attributes"])
        if not isinstance(attributes, dict) or not all(
                safe_globals.own_attribute(k) for k in attributes):
            raise self.fail(f"{what} has attributes {short(node['attributes'])}, not a dict of "
                            "names Tensor does not define (such as 'sum', which it would hide)")
        t.__dict__.update(attributes)

    def mapping(self, pairs: list, metadata: Any = None, ordered: bool = False) -> dict:
        out: dict = OrderedDict() if ordered or metadata is not None else {}
        if metadata is not None:  # (a state dict's module versions, as torch.load keeps them)
            out._metadata = self.value(metadata)  # type: ignore[attr-defined]
            if not isinstance(out._metadata, dict):  # type: ignore[attr-defined]
                raise self.fail(f"a $dict's metadata {short(metadata)} is not a dict")
        for pair in pairs:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise self.fail(f"a $dict entry {short(pair)} is not a [key, value] pair")
            key = self.value(pair[0])
            try:
                out[key] = self.value(pair[1])
            except TypeError:
                raise self.fail(f"a $dict key {short(pair[0])} is not hashable") from None
        return out


def short(x: Any) -> str:
    text = json.dumps(x)
    return text if len(text) <= 80 else text[:77] + "..."

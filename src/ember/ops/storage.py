"""A tensor's place in its memory, as PyTorch exposes it: ``data_ptr``, ``storage_offset``,
``dim_order``, ``as_strided`` (a read-only view of the memory with any sizes and strides) and
``as_strided_scatter``, ``resize_`` / ``resize_as_``, and the memory's kind: ``share_memory_``
/ ``is_shared`` (memory a forked process shares) and ``is_pinned`` / ``pin_memory``.

The *storage* of a tensor is the whole memory block its array lives in (the array at the end
of NumPy's ``base`` chain), so that ``x[2:].storage_offset()`` is 2 and ``x[2:].as_strided((2,),
(1,), 0)`` reads ``x[:2]``, as in PyTorch. ``as_strided`` views are read-only: a write through
one could overlap itself, which the in-place machinery cannot make correct; clone them first.
"""

from __future__ import annotations

import gc
import mmap
import os
import sys
import threading
from typing import Any

import numpy as np

from ember.backend import shared_block
from ember.backend.memory_block import address, dense_root
from ember.errors import ArgumentTypeError, DeviceError, GradError, OpError, ShapeError
from ember.layouts import check_format, contiguous_format, order_of, preserve_format
from ember.ops.creation import tensor, zeros
from ember.ops.indexing import index_put
from ember.ops.inplace import refuse_inference_write, transforms_follow
from ember.ops.int_args import as_int, as_ints
from ember.ops.primitive import DISPATCH, Primitive, TensorSpec, apply, per_sample, primitive
from ember.ops.select import where
from ember.ops.shape import read_sizes
from ember.tensor import STRUCTURE, Tensor, method

__all__ = ["as_strided", "as_strided_scatter"]


def _storage(a: Any) -> tuple[Any, int]:
    """The memory block array ``a`` lives in (a flat byte array) and ``a``'s byte offset in
    it; an array whose block is not one contiguous array is its own storage."""
    if not isinstance(a, np.ndarray):
        raise DeviceError("storage: strided memory access is implemented on the CPU only. "
                          "Hint: move the tensor with .cpu() first")
    root = dense_root(a)
    if root is None:
        root = a if a.flags.c_contiguous else np.ascontiguousarray(a)
    flat = root.reshape(-1, order="A").view(np.uint8)
    return flat, address(a) - address(flat)


@method("data_ptr", "const_data_ptr")
def data_ptr(self: Tensor) -> int:
    """The address of the tensor's first element (``const_data_ptr`` too: Ember makes no
    distinction between read and write access).

    Example:
        >>> x = ember.arange(4.0)
        >>> x[1:].data_ptr() - x.data_ptr() == x.element_size()
        True
    """
    a = self._data
    return a.__array_interface__["data"][0] if isinstance(a, np.ndarray) else a.data.ptr


@method()
def storage_offset(self: Tensor) -> int:
    """The offset of the tensor's first element in its storage, in elements. An empty view
    reports 0: NumPy keeps no address for an array without elements (PyTorch reports where
    the slice would start).

    Example:
        >>> ember.arange(6).reshape(2, 3)[1, 1:].storage_offset()
        4
    """
    return _storage(self._data)[1] // self._data.itemsize


def _strided(a: Any, size: tuple, stride: tuple, offset: int) -> Any:
    flat, _ = _storage(a)
    item = a.itemsize
    out = np.ndarray(size, a.dtype, buffer=flat, offset=offset * item,
                     strides=tuple(s * item for s in stride))
    out.flags.writeable = False
    return out


@primitive
class AsStrided(Primitive):
    """The view of input 0's storage with ``size``, ``stride`` and ``storage_offset``;
    ``source`` is input 0's own ``(stride, storage_offset)`` when it was applied, which the
    rules use to map each output element to the input element at the same address."""

    name = "as_strided"
    complex_grad = True  # moves, copies or sums elements: real coefficients
    view = True
    read_only_view = True
    save_inputs = False

    def forward(self, xp, a, *, size, stride, storage_offset, source):
        return _strided(a, size, stride, storage_offset)

    def infer(self, a, *, size, stride, storage_offset, source):
        return TensorSpec(size, a.dtype)

    def vjp(self, ctx, g):
        x = ctx.inputs[0]
        where_in, found = _input_positions(tuple(x.shape), ctx.params)
        inside = where(tensor(found, device=g.device), g.reshape(-1), 0.0)
        flat = zeros(x.numel(), dtype=g.dtype, device=g.device)
        return flat.index_add(0, tensor(where_in, device=g.device), inside).reshape(x.shape)

    def jvp(self, ctx, dx):
        return _strided_copy(dx, ctx.params)


def _addresses(size: tuple, stride: tuple, offset: int) -> np.ndarray:
    """The storage position of every element of a ``size``/``stride`` view, flattened."""
    steps = np.asarray(stride, dtype=np.int64)
    return (offset + np.tensordot(steps, np.indices(size, dtype=np.int64), 1)).reshape(-1)


def _input_positions(shape: tuple, params: dict) -> tuple[np.ndarray, np.ndarray]:
    """For each output element: the flat index of the input element (of ``shape``) at its
    address, and whether there is one (an as_strided view of a view may read memory outside
    its input). Computed from the parameters alone, so on the host."""
    x_stride, x_offset = params["source"]
    mine = _addresses(shape, x_stride, x_offset)
    order = np.argsort(mine, kind="stable")
    mine = mine[order]
    wanted = _addresses(params["size"], params["stride"], params["storage_offset"])
    if mine.size:
        at = np.searchsorted(mine, wanted).clip(max=mine.size - 1)
        index, found = order[at], mine[at] == wanted
    else:
        index, found = np.zeros_like(wanted), np.zeros(wanted.shape, dtype=bool)
    return index, found


def _strided_copy(x: Tensor, params: dict) -> Tensor:
    """``as_strided`` with ``params`` of ``x`` (the forward-mode rule), as a copy; ``x`` has
    no storage beyond its own elements here, so a view reading outside them is refused."""
    where_in, found = _input_positions(tuple(x.shape), params)
    if not found.all():
        raise OpError(f"as_strided: under forward mode, the view (sizes {list(params['size'])}, "
                      f"strides {list(params['stride'])}, storage offset "
                      f"{params['storage_offset']}) must read only the elements of its input "
                      f"of shape {tuple(x.shape)}, but it reads memory outside them (of the "
                      "tensor it is a view of). Hint: call as_strided on that tensor instead")
    return x.reshape(-1)[tensor(where_in, device=x.device)].reshape(params["size"])


def strided_args(op: str, size: Any, stride: Any, storage_offset: Any
                 ) -> tuple[tuple[int, ...], tuple[int, ...], int | None]:
    """``as_strided``'s sizes, strides and offset read as ints, as PyTorch's: a float or a
    bool is refused by name (``int()`` made 2.7 a size of 2, and True one of 1).

    Example:
        >>> strided_args("as_strided", (2, 3), [3, 1], None)
        ((2, 3), (3, 1), None)
    """
    for what, values in (("size", size), ("stride", stride)):
        if not isinstance(values, (tuple, list)):  # (ember.Size is a tuple)
            raise ArgumentTypeError(f"{op}: {what} must be a tuple or list of ints, as "
                                    f"PyTorch's, got {type(values).__name__}. Hint: pass "
                                    "a tuple, e.g. (2, 3)")
    offset = None if storage_offset is None else \
        as_int(storage_offset, op, "storage_offset")
    return as_ints(size, op, "each size"), as_ints(stride, op, "each stride"), offset


@method()
def as_strided(input: Tensor, size: Any, stride: Any, storage_offset: int | None = None
               ) -> Tensor:
    """A read-only view of ``input``'s storage with the given sizes and strides (in
    elements), starting ``storage_offset`` elements into the storage (``input``'s own offset
    unless given). Overlapping views are allowed; gradients add up over repeats.

    Example:
        >>> ember.arange(6.0).as_strided((2, 2), (1, 2))
        tensor([[0., 2.],
                [1., 3.]])
    """
    size, stride, offset = strided_args("as_strided", size, stride, storage_offset)
    if len(size) != len(stride):
        raise ShapeError(f"as_strided: mismatch in length of strides and shape: size {size} "
                         f"has {len(size)} dimensions, stride {stride} {len(stride)}")
    if any(s < 0 for s in size + stride):
        raise ShapeError(f"as_strided: sizes {size} and strides {stride} must be "
                         "non-negative")
    own = input.storage_offset()
    offset = own if offset is None else offset
    if offset < 0:
        raise ShapeError(f"as_strided: the storage offset must be non-negative, got {offset}")
    flat, _ = _storage(input._data)
    need = 0 if 0 in size else offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if need * input.element_size() > flat.size:
        raise ShapeError(f"as_strided: sizes {list(size)}, strides {list(stride)} and storage "
                         f"offset {offset} need a storage of {need} elements, but the "
                         f"storage holds {flat.size // input.element_size()}")
    return apply(AsStrided, input, size=size, stride=stride, storage_offset=offset,
                 source=(input.stride(), own))


def _clone_strides(shape: tuple, strides: tuple) -> tuple:
    """The strides PyTorch's ``clone`` gives a tensor: dense, with the dimensions in the order
    of ``strides`` (row-major among equal ones)."""
    out, step = [0] * len(shape), 1
    for d in sorted(range(len(shape)), key=lambda d: (strides[d], -d)):
        out[d] = step
        step *= shape[d]
    return tuple(out)


@method()
def as_strided_scatter(input: Tensor, src: Tensor, size: Any, stride: Any,
                       storage_offset: int | None = None) -> Tensor:
    """A copy of ``input`` with ``src`` written where ``input.as_strided(size, stride,
    storage_offset)`` would read, addressing the copy's memory (offset 0 unless given), laid
    out as PyTorch's ``clone`` lays it out: dense, its dimensions in the order of ``input``'s
    strides (a transposed input's copy is column-major). Differentiable in both; where views
    overlap one of the writes wins.

    Example:
        >>> ember.as_strided_scatter(ember.zeros(4), ember.ones(2), (2,), (2,))
        tensor([1., 0., 1., 0.])
    """
    size, stride, offset = strided_args("as_strided_scatter", size, stride, storage_offset)
    offset = 0 if offset is None else offset
    if len(size) != len(stride) or offset < 0 or any(n < 0 for n in size + stride):
        raise ShapeError(f"as_strided_scatter: sizes {list(size)} and strides {list(stride)} "
                         "must be non-negative and equally many, and the storage offset "
                         f"non-negative, got {offset}")
    if tuple(src.shape) != size:
        raise ShapeError(f"as_strided_scatter: expected src to have a size equal to the slice "
                         f"of self. src size = {list(src.shape)}, slice size = {list(size)}")
    where_to = _addresses(size, stride, offset)
    if where_to.size and int(where_to.max()) >= input.numel():
        raise ShapeError(f"as_strided_scatter: sizes {list(size)}, strides {list(stride)} and "
                         f"storage offset {offset} reach element {int(where_to.max())}, out of "
                         f"bounds for an input of {input.numel()} elements")
    shape = tuple(input.shape)
    layout = _clone_strides(shape, input.stride())
    if layout != _clone_strides(shape, (0,) * len(shape)):  # not row-major: address the copy
        element_at = np.empty(input.numel(), np.int64)
        element_at[_addresses(shape, layout, 0)] = np.arange(input.numel())
        where_to = element_at[where_to]
    flat = index_put(input.reshape(-1), (tensor(where_to, device=input.device),),
                     src.reshape(-1).to(input.dtype))
    return flat.reshape(input.shape)


@method()
def dim_order(self: Tensor, *, ambiguity_check: bool = False) -> tuple[int, ...]:
    """The dimensions from outermost to innermost in memory: ``(0, 1, 2, 3)`` for a
    contiguous tensor, ``(0, 2, 3, 1)`` for channels-last. Size-1 dimensions and equal strides
    make it ambiguous; ``ambiguity_check=True`` refuses then (PyTorch's list-of-memory-formats
    form is not supported).

    Example:
        >>> ember.zeros(2, 3, 4).permute(2, 0, 1).dim_order()
        (1, 2, 0)
    """
    if not isinstance(ambiguity_check, bool):
        raise TypeError("dim_order: the ambiguity_check argument must be a bool (Ember does not "
                        f"take a list of memory formats), got {type(ambiguity_check).__name__}")
    shape, strides = tuple(self.shape), self.stride()
    if ambiguity_check and (1 in shape or len(set(strides)) < len(strides)):
        raise ShapeError(f"dim_order: the tensor of shape {shape} and strides {strides} does "
                         "not have a unique dim order")
    if self.ndim <= 1 or self.is_contiguous():
        return tuple(range(self.ndim))

    def inner_first(a: int, b: int) -> int:  # > 0: dim a lies inside dim b in memory
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            return 0
        if sa == sb:
            return 0 if shape[b] >= shape[a] else 1
        return 1 if sa > sb else -1

    order = list(reversed(range(self.ndim)))  # innermost first, sorted stably by stride
    for i in range(1, len(order)):
        j = i
        for k in reversed(range(i)):
            c = inner_first(order[k], order[j])
            if c > 0:
                order[k], order[j] = order[j], order[k]
                j = k
            elif c < 0:
                break
    return tuple(reversed(order))


# -- the memory's kind -------------------------------------------------------------------------
def _root(a: Any) -> Any:
    """The object owning ``a``'s memory (through views and buffer exports)."""
    while True:
        if isinstance(a, memoryview):
            a = a.obj
        elif getattr(a, "base", None) is not None:
            a = a.base
        else:
            return a


@method()
def is_shared(self: Tensor) -> bool:
    """Whether the tensor's memory is a shared mapping that forked processes see (after
    :meth:`share_memory_`, or a batch a DataLoader worker sent through shared memory).

    Example:
        >>> ember.zeros(2).is_shared()
        False
    """
    return isinstance(_root(self._data), mmap.mmap)


@method()
def share_memory_(self: Tensor) -> Tensor:
    """Moves the tensor's storage (the whole memory block it lies in) into shared memory in
    place, so that processes forked afterwards (``multiprocessing`` with ``fork``), and those it
    is sent to (a ``Queue``, ``spawn``'s arguments), read and write the same elements. As in
    PyTorch, the tensors on that memory (its views, its base, ``detach()`` aliases, a tensor
    sharing its array by ``p.data = a``) move with it; NumPy arrays taken earlier with
    ``numpy()`` keep the old memory.

    Example:
        >>> x = ember.arange(6.0)
        >>> row = x.view(2, 3)[1]
        >>> row.share_memory_().is_shared(), x.is_shared()
        (True, True)
    """
    share_tensors_((self,))
    return self


_SHARING = threading.Lock()  # (one move at a time: two threads moving views of one base, as
# a DataLoader's queue feeders pickling index tensors do, each moved the other's moved views)
# (a fork waits for a move to end: a child must not inherit it held by a thread it lacks)
os.register_at_fork(before=_SHARING.acquire, after_in_parent=_SHARING.release,
                    after_in_child=_SHARING.release)


def share_tensors_(tensors: Any) -> None:
    """:meth:`Tensor.share_memory_` of each of ``tensors`` (``Module.share_memory``'s), with one
    search of the heap for the tensors on their memory, not one each."""
    with _SHARING:
        _share_tensors(tensors)


def _share_tensors(tensors: Any) -> None:
    todo = list({id(t): t for t in tensors  # (CUDA tensors: a no-op, as PyTorch's)
                 if t._device.type != "cuda" and not t.is_shared()}.values())
    if not todo:
        return
    if DISPATCH.handler is not None:
        raise OpError("share_memory_: not supported inside transforms (vmap, jit, forward mode)")
    for t in todo:
        if t._device.type != "cpu":  # (torch: "_share_fd_: only available on CPU")
            raise DeviceError(f"share_memory_: only available on CPU tensors, got a tensor on "
                              f"{t._device}. Hint: move it with .cpu() first")
    on = _tensors_sharing(todo)
    for t in todo:
        if t.is_shared():  # (moved with an earlier one)
            continue
        a = t._data
        flat, _ = _storage(a)
        if not np.may_share_memory(flat, a):  # (an odd block _storage copied: the elements)
            if t._view is not None:
                raise OpError("share_memory_: the tensor is a view of memory Ember cannot "
                              "move. Hint: share a clone()")
            dense = np.ascontiguousarray(a)
            _move(dense.reshape(-1).view(np.uint8), [(t, dense)])
        else:
            low = flat.__array_interface__["data"][0]
            _move(flat, [(o, o._data) for o in on[id(t)] if o is t or (
                isinstance(o._data, np.ndarray) and o._data.size and
                _within(o._data, low, low + flat.nbytes))])


def _move(flat: np.ndarray, holders: list) -> None:
    """Copies the memory block ``flat`` into a new shared block and points each holder
    ``(tensor, its array on flat)`` at the same place in it."""
    block = shared_block.new_block(flat.nbytes)  # (forks share it; others map its descriptor)
    whole = np.frombuffer(block, np.uint8, count=flat.nbytes)  # (the storage of them all)
    whole[...] = flat
    start = flat.__array_interface__["data"][0]
    for t, old in holders:
        offset = old.__array_interface__["data"][0] - start if old.size else 0
        moved = np.ndarray(old.shape, old.dtype, buffer=whole, offset=offset,
                           strides=old.strides)
        moved.flags.writeable = old.flags.writeable
        t._data = moved


def _tensors_sharing(tensors: list) -> dict[int, list[Tensor]]:
    """Per tensor (by id), itself and the tensors that may lie on its memory, which a move
    takes along as PyTorch's storage does: those sharing its version counter (views, base,
    ``detach()`` aliases) or its very array (``p.data = a``), and theirs in turn. Looked for
    only where the counter or array has another holder, with one pass over the heap for
    all (``gc.get_referrers`` walks every object: ~10 ms per 150k)."""
    holders: dict[int, dict[int, Tensor]] = {}  # id of a counter or array -> its tensors
    searched: set[int] = set()
    new = {id(k): k for t in tensors for k in _held_elsewhere(t)}
    while new:  # (a second pass only for another counter found through an array)
        searched.update(new)
        found = _holding(new)
        new = {}
        for o in found:
            holders.setdefault(id(o._vc), {})[id(o)] = o
            holders.setdefault(id(o._data), {})[id(o)] = o
            new.update((id(k), k) for k in _held_elsewhere(o) if id(k) not in searched)
    result = {}
    for t in tensors:
        group, todo = {id(t): t}, [t]
        while todo:
            o = todo.pop()
            for h in (*holders.get(id(o._vc), {}).values(),
                      *holders.get(id(o._data), {}).values()):
                if id(h) not in group:
                    group[id(h)] = h
                    todo.append(h)
        result[id(t)] = list(group.values())
    return result


def _holding(keys: dict) -> list[Tensor]:
    """The tensors whose version counter or array is one of ``keys`` (id -> object): one
    ``gc.get_referrers`` for a few, whose cost grows with their number (it compares each
    reference with each key: on a 1.07M-object heap 15 ms for 1, 39 ms for 32, 300 ms for
    400), else one scan of every object (59 ms there)."""
    # (``type``, not ``isinstance``: the heap holds weak proxies, and isinstance of a dead
    # one raises ReferenceError)
    if len(keys) <= 32:
        return [o for o in gc.get_referrers(*keys.values()) if issubclass(type(o), Tensor)]
    return [o for o in gc.get_objects() if issubclass(type(o), Tensor) and
            (id(o._vc) in keys or id(o._data) in keys)]


def _held_elsewhere(t: Tensor) -> list:
    """``t``'s version counter and array, those that something besides ``t`` holds."""
    found = []
    if sys.getrefcount(t._vc) > 2:  # (t's reference and the call's)
        found.append(t._vc)
    if sys.getrefcount(t._data) > 2:
        found.append(t._data)
    return found


def _within(a: np.ndarray, low: int, high: int) -> bool:
    """Whether every element of ``a`` lies in the addresses ``[low, high)``."""
    first = a.__array_interface__["data"][0]
    lo = first + sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s < 0)
    hi = first + sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s > 0) + a.itemsize
    return low <= lo and hi <= high


@method()
def is_pinned(self: Tensor) -> bool:
    """Whether the tensor is in page-locked host memory: never, since Ember does not pin host
    memory.

    Example:
        >>> ember.zeros(2).is_pinned()
        False
    """
    return False


@method()
def pin_memory(self: Tensor) -> Tensor:
    """A copy in page-locked host memory, for fast transfers to an accelerator. Ember does not
    pin host memory, so this raises, as PyTorch does on a machine with no accelerator.

    Example:
        >>> ember.zeros(2).pin_memory()
        Traceback (most recent call last):
        ...
        ember.errors.DeviceError: pin_memory: Ember does not pin host memory...
    """
    raise DeviceError("pin_memory: Ember does not pin host memory (PyTorch, too, refuses when "
                      "no accelerator is available). Hint: move the tensor with .to('cuda') "
                      "directly, or drop pin_memory()")


# -- resizing ------------------------------------------------------------------------------------
@method()
def resize_(self: Tensor, *size: Any, memory_format: Any = None) -> Tensor:
    """Gives ``self`` the contiguous shape ``size`` in place (laid out in ``memory_format``,
    e.g. ``ember.channels_last``, when given), reading its storage in memory order from its
    first element: a smaller size keeps the first elements (a view of the same memory), a
    larger one moves the tensor to new memory holding the old elements first and zeros after
    (PyTorch leaves those uninitialised). Tensors that require grad are refused, and so is
    growing past the memory of a tensor that other tensors view (or that views another):
    NumPy's views cannot follow it to new memory as PyTorch's do; or of one in shared memory.

    Example:
        >>> x = ember.arange(6.0)
        >>> x.resize_(2, 2)
        tensor([[0., 1.],
                [2., 3.]])
    """
    refuse_inference_write(self, "resize_")
    shape = read_sizes(size)
    fmt = contiguous_format if memory_format is None else check_format("resize_",
                                                                        memory_format)
    if fmt is preserve_format:
        raise OpError("resize_: preserve_format is no layout to resize into; pass "
                      "contiguous_format or channels_last")
    dims, inverse = order_of("resize_", fmt, shape) if fmt.dims else (None, None)
    if any(n < 0 for n in shape):
        raise ShapeError(f"resize_: sizes must be non-negative, got {shape}")
    if self.requires_grad:
        raise GradError("resize_: cannot resize variables that require grad. Hint: resize a "
                        "detached tensor, x.detach().resize_(...)")
    if DISPATCH.transforming() and not transforms_follow(self, "resize_", traceable=False):
        raise GradError("resize_: not supported inside vmap and forward mode")
    a = self._data
    if shape == a.shape and dims is None:
        return self
    flat, start = _storage(a)
    n = int(np.prod(shape))
    available = (flat.size - start) // a.itemsize
    in_memory = shape if dims is None else tuple(shape[d] for d in dims)
    if n <= available:
        new = np.ndarray(in_memory, a.dtype, buffer=flat, offset=start)
    else:
        _refuse_moving_shared(self, shape)
        if self.is_shared():
            raise OpError(f"resize_: growing a tensor in shared memory (shape "
                          f"{tuple(a.shape)} to {shape}) would move it to memory the other "
                          "processes do not see; the storage is not resizable, as PyTorch's. "
                          "Hint: resize a clone() and share_memory_() that")
        new = np.zeros(in_memory, a.dtype)
        new.reshape(-1)[:available] = np.ndarray((available,), a.dtype, buffer=flat,
                                                 offset=start)
    new = new if inverse is None else new.transpose(inverse)
    if new.shape != a.shape:
        STRUCTURE.value += 1  # (compiled functions see a tensor of another shape)
    self._data = new
    self._view = None
    self._vc.value += 1
    return self


def _refuse_moving_shared(t: Tensor, shape: tuple) -> None:
    """Refuses to move ``t`` to new memory while other tensors view its memory (they share
    its version counter): PyTorch's views follow a moved storage, NumPy's cannot."""
    others = sys.getrefcount(t._vc) - 2  # (less t's own reference and the call's)
    info = t._view
    if info is not None and info.base._vc is t._vc and sys.getrefcount(info.base) <= 2:
        others -= 1  # (t's old self, which only t's view record holds: left by t_, unsqueeze_)
    if others > 0:
        raise OpError(f"resize_: growing a tensor of shape {tuple(t.shape)} to {shape} needs new "
                      f"memory, and {others} other tensor{'s' if others > 1 else ''} (views, "
                      "or the tensor it views) share its memory, which would no longer be "
                      "shared: PyTorch moves them all, Ember's NumPy arrays cannot. Hint: "
                      "resize a clone(), or before taking views")


@method()
def resize_as_(self: Tensor, the_template: Tensor) -> Tensor:
    """:meth:`resize_` to ``the_template``'s shape.

    Example:
        >>> ember.zeros(4).resize_as_(ember.ones(2, 2)).shape
        ember.Size([2, 2])
    """
    if DISPATCH.transforming() and per_sample(the_template) and not per_sample(self):
        raise OpError(f"vmap: resize_as_ of an unbatched tensor (shape {tuple(self.shape)}) "
                      f"to a batched template (per-sample shape {tuple(the_template.shape)}): "
                      "it has room for one sample only, as torch.func refuses it. Hint: make "
                      "a new tensor, ember.zeros_like(the_template)")
    return resize_(self, tuple(the_template.shape))

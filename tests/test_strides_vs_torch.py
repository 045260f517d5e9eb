"""Strides, contiguity and storage offsets of views and layout-producing ops, against PyTorch's
on the same shapes (the layout a result has is part of its meaning: ``stride()``,
``is_contiguous()`` and what ``as_strided`` or a ``view`` of it may do)."""

import copy

import pytest
import torch

import ember


def _x(m, *shape):
    return m.arange(int(torch.tensor(shape).prod()), dtype=m.float32).reshape(*shape)


def _nchw(m):
    return _x(m, 2, 3, 4, 5).contiguous(memory_format=m.channels_last)


CASES = {
    # -- indexing with None, ints, slices, ..., masks and index lists
    "none_lead_select": lambda m: _x(m, 4, 5)[None, :, 0],
    "none_mid": lambda m: _x(m, 4, 5)[:, None],
    "none_end": lambda m: _x(m, 4, 5)[..., None],
    "none_none": lambda m: _x(m, 4, 5)[None, None],
    "none_end_twice": lambda m: _x(m, 4, 5)[..., None, None],
    "none_0d": lambda m: m.tensor(1.0)[None],
    "none_step_after": lambda m: _x(m, 4, 5)[None, ::2],
    "none_between_slices": lambda m: _x(m, 4, 5)[0:2, None, ::2],
    "none_after_int": lambda m: _x(m, 4, 5)[0, None],
    "none_before_int": lambda m: _x(m, 4, 5)[None, 0],
    "none_on_transposed": lambda m: _x(m, 4, 5).t()[..., None],
    "none_on_expanded": lambda m: _x(m, 4, 5).expand(3, 4, 5)[:, None],
    "none_on_size1_slice": lambda m: _x(m, 4, 5)[:, 0:1][None],
    "none_on_empty": lambda m: m.zeros(0, 5)[None],
    "none_bool": lambda m: _x(m, 4, 5)[None, True],
    "none_with_list": lambda m: _x(m, 4, 5)[:, None, [0, 1]],
    "list_then_none": lambda m: _x(m, 4, 5)[[0, 1], None],
    "int": lambda m: _x(m, 4, 5)[1],
    "slice_steps": lambda m: _x(m, 6, 8)[1:5:2, ::3],
    "slice_empty": lambda m: _x(m, 4, 5)[2:2],
    "mask": lambda m: _x(m, 4, 5)[_x(m, 4, 5) > 7],
    "list_index_transposed": lambda m: _x(m, 4, 5).t()[[0, 2]],
    "empty": lambda m: m.zeros(0, 5),
    "empty_mid": lambda m: m.zeros(3, 0, 5),
    # -- views
    "unsqueeze0": lambda m: _x(m, 4, 5).unsqueeze(0),
    "unsqueeze_end": lambda m: _x(m, 4, 5).t().unsqueeze(-1),
    "unsqueeze_mid_t": lambda m: _x(m, 4, 5).t().unsqueeze(1),
    "expand": lambda m: _x(m, 4, 1).expand(4, 6),
    "expand_new_dims": lambda m: _x(m, 5).expand(2, 3, 5),
    "transpose": lambda m: _x(m, 2, 3, 4).transpose(0, 2),
    "permute": lambda m: _x(m, 2, 3, 4).permute(1, 2, 0),
    "narrow": lambda m: _x(m, 4, 5).narrow(1, 1, 3),
    "select": lambda m: _x(m, 2, 3, 4).select(1, 2),
    "diagonal": lambda m: _x(m, 4, 5).diagonal(1),
    "diagonal_3d": lambda m: _x(m, 2, 3, 4).diagonal(0, 0, 2),
    "unfold": lambda m: _x(m, 10).unfold(0, 3, 2),
    "unfold_2d": lambda m: _x(m, 4, 6).unfold(1, 2, 2),
    "movedim": lambda m: _x(m, 2, 3, 4).movedim(0, -1),
    "view_transposed": lambda m: _x(m, 2, 3, 4).transpose(0, 1).reshape(3, 2, 2, 2),
    "reshape_copy": lambda m: _x(m, 4, 5).t().reshape(20),
    "view_split_dim": lambda m: _x(m, 6, 4)[::2].view(3, 2, 2),
    "as_strided": lambda m: _x(m, 20).as_strided((3, 3), (1, 4), 2),
    "t": lambda m: _x(m, 4, 5).t(),
    "mT": lambda m: _x(m, 2, 3, 4).mT,
    "squeeze": lambda m: _x(m, 4, 1, 5)[:, :, ::2].squeeze(1),
    "squeeze_all": lambda m: _x(m, 1, 4, 1).squeeze(),
    "flatten_t": lambda m: _x(m, 2, 3, 4).transpose(1, 2).flatten(1),
    "flatten_contig": lambda m: _x(m, 2, 3, 4).flatten(0, 1),
    "unflatten": lambda m: _x(m, 4, 6).unflatten(1, (2, 3)),
    "split_piece": lambda m: _x(m, 6, 4).split(2, dim=1)[1],
    "chunk_piece": lambda m: _x(m, 6, 4).chunk(3)[2],
    # -- copies and new tensors
    "contiguous_size1": lambda m: _x(m, 4, 5)[:, 0:1].contiguous(),
    "contiguous_t": lambda m: _x(m, 4, 5).t().contiguous(),
    "clone_permuted": lambda m: _x(m, 2, 3, 4).permute(2, 0, 1).clone(),
    "clone_channels_last": lambda m: _nchw(m).clone(),
    "clone_sliced": lambda m: _x(m, 4, 6)[:, ::2].clone(),
    "empty_like_permuted": lambda m: m.empty_like(_x(m, 2, 3, 4).permute(2, 0, 1)),
    "zeros_like_t": lambda m: m.zeros_like(_x(m, 4, 5).t()),
    "zeros_like_channels_last": lambda m: m.zeros_like(_nchw(m)),
    "channels_last": lambda m: _nchw(m),
    "channels_last_size1": lambda m: _x(m, 2, 3, 1, 1).contiguous(
        memory_format=m.channels_last),
    # -- elementwise results on transposed, channels-last and broadcast inputs
    "exp_t": lambda m: _x(m, 4, 5).t().exp(),
    "add_t_t": lambda m: _x(m, 4, 5).t() + _x(m, 4, 5).t(),
    "add_t_contig": lambda m: _x(m, 4, 5).t() + _x(m, 5, 4),
    "add_contig_t": lambda m: _x(m, 5, 4) + _x(m, 4, 5).t(),
    "mul_channels_last": lambda m: _nchw(m) * 2,
    "add_channels_last_bias": lambda m: _nchw(m) + _x(m, 3, 1, 1),
    "relu_channels_last": lambda m: _nchw(m).relu(),
    "cast_t": lambda m: _x(m, 4, 5).t().to(m.float64),
    "add_broadcast_row": lambda m: _x(m, 4, 5).t() + _x(m, 4),
    "where_t": lambda m: m.where(_x(m, 4, 5).t() > 3, _x(m, 4, 5).t(), 0.0),
}


# Deliberate differences, each NumPy's (Ember's CPU arrays are NumPy arrays):
NUMPY_LAYOUT = {
    # A new array without elements has all strides 0 in NumPy (PyTorch: C order); no address
    # depends on them. Views of it keep them (PyTorch's size x stride rule then gives 0 too).
    "empty", "empty_mid", "none_on_empty",
    # Elementwise ops on operands in conflicting layouts follow NumPy's iterator (C order
    # here), PyTorch's the first operand's; the meta device predicts PyTorch's (see below).
    "add_t_contig",
}
NUMPY_OFFSET = {"slice_empty"}  # NumPy keeps no address for an empty view: offset 0
META_VS_CPU = {"add_t_contig"}  # meta predicts PyTorch's layout where the CPU gives NumPy's
CPU_ONLY = {"mask", "as_strided"}  # a mask's count is data; as_strided reads storage


def _layout(m, t):
    return (tuple(t.shape), tuple(t.stride()), t.is_contiguous(),
            t.is_contiguous(memory_format=m.channels_last))


@pytest.mark.parametrize("name", sorted(CASES))
def test_layout_matches_torch(name):
    got, want = CASES[name](ember), CASES[name](torch)
    if name in NUMPY_LAYOUT:
        assert _layout(ember, got)[0] == _layout(torch, want)[0]
    else:
        assert _layout(ember, got) == _layout(torch, want)
    if name not in NUMPY_OFFSET:
        assert got.storage_offset() == want.storage_offset()


@pytest.mark.parametrize("name", sorted(set(CASES) - CPU_ONLY - META_VS_CPU))
def test_meta_layout_matches_cpu(name):
    """A meta tensor predicts its CPU twin's layout (meta tensors have no storage to take
    an offset in)."""
    with ember.device("meta"):
        got = CASES[name](ember)
    assert got.is_meta
    assert _layout(ember, got) == _layout(ember, CASES[name](ember))


@pytest.mark.parametrize("make", [lambda b: b.t()[..., None], lambda b: b[::2][..., None],
                                  lambda b: b[None].transpose(1, 2).unsqueeze(1)])
def test_new_dim_views_are_plain_views_of_the_memory(make):
    """A view whose new dims NumPy strides otherwise (restrided to PyTorch's) still lies in
    its base's memory block as any view does: deepcopy keeps it aliased to its base, and
    memory accounting sees no new block."""
    import copy

    import ember.memory

    b = ember.arange(20.0).reshape(4, 5)
    base_copy, view_copy = copy.deepcopy([b, make(b)])
    view_copy.fill_(-1.0)
    assert bool((base_copy == -1.0).any())
    ember.memory.enable()
    try:
        before = ember.memory.allocated()
        views = [make(b) for _ in range(3)]
        assert ember.memory.allocated() == before, views
    finally:
        ember.memory.disable()


def test_new_dim_views_keep_write_access():
    b = ember.arange(8.0).reshape(2, 4)
    b.t()[..., None].fill_(3.0)  # (restrided: NumPy's reshape strides the new dim otherwise)
    assert bool((b == 3.0).all())
    for lib in (torch, ember):  # (a fill of one number writes into shared elements too)
        a = lib.arange(4.0)
        a.expand(2, 4).t()[..., None].fill_(1.0)
        assert a.tolist() == [1.0] * 4
    with pytest.raises(ember.errors.EmberError, match="read-only"):
        ember.arange(4.0).expand(2, 4).t()[..., None].add_(1.0)


@pytest.mark.parametrize("shape", [(0, 3), (2, 0, 3), (0,), (3, 0), (0, 1, 2)])
def test_a_new_tensor_without_elements_reports_c_order_strides_as_torch(shape):
    # NumPy gives a new empty array zero strides; PyTorch reports C order's
    for make in ("zeros", "ones", "empty"):
        assert getattr(ember, make)(*shape).stride() == getattr(torch, make)(*shape).stride()
    assert ember.zeros(*shape, device="meta").stride() == torch.zeros(*shape).stride()


def test_a_deep_copied_expanded_tensor_refuses_writes_as_torch():
    # the copy kept stride 0 but was writable: add_ summed into one cell through many
    with pytest.raises(RuntimeError):
        copy.deepcopy(torch.zeros(2, 1).expand(2, 3)).add_(torch.arange(3.0))
    with pytest.raises(RuntimeError):
        copy.deepcopy(ember.zeros(2, 1).expand(2, 3)).add_(ember.arange(3.0))
    plain = copy.deepcopy(ember.zeros(2, 3))
    plain.add_(1)
    assert plain.sum().item() == 6

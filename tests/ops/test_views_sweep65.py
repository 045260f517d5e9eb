"""View and shape ops against PyTorch 2.13: the differences a differential sweep found
(sweep65e): reshape's copies, unflatten of a 0-d tensor, PyTorch's keyword names, writes into
an expanded view without elements, flatten with nothing to merge."""

import pytest
import torch

import ember


def _layout(t):
    return tuple(t.shape), tuple(t.stride()), t.is_contiguous()


RESHAPE_COPIES = {
    "sliced_permute": lambda m: m.arange(24.0).reshape(3, 4, 2).permute(2, 0, 1)[:, :, :-1]
    .reshape(2, 9),
    "transposed": lambda m: m.arange(20.0).reshape(4, 5).t().reshape(20),
    "channels_last": lambda m: m.arange(120.0).reshape(2, 3, 4, 5)
    .contiguous(memory_format=m.channels_last).reshape(2, 60),
    "flatten_sliced": lambda m: m.arange(24.0).reshape(3, 4, 2).permute(2, 0, 1)[:, :, 1:]
    .flatten(1),
}


@pytest.mark.parametrize("name", sorted(RESHAPE_COPIES))
def test_a_reshape_that_copies_gives_a_contiguous_tensor_as_torch(name):
    # the copy kept the input's layout, so the sliced permute's came back non-contiguous,
    # strides (1, 2), and a view() of it failed where torch's works
    got, want = RESHAPE_COPIES[name](ember), RESHAPE_COPIES[name](torch)
    assert _layout(got) == _layout(want)
    assert got.tolist() == want.tolist()
    assert got.view(-1).tolist() == want.view(-1).tolist()


def test_a_reshape_copy_still_carries_gradients():
    x = ember.arange(24.0, dtype=ember.float64).reshape(3, 4, 2).requires_grad_()
    y = x.permute(2, 0, 1)[:, :, :-1].reshape(2, 9)
    (y * ember.arange(18.0, dtype=ember.float64).reshape(2, 9)).sum().backward()
    tx = torch.arange(24.0, dtype=torch.float64).reshape(3, 4, 2).requires_grad_()
    ty = tx.permute(2, 0, 1)[:, :, :-1].reshape(2, 9)
    (ty * torch.arange(18.0, dtype=torch.float64).reshape(2, 9)).sum().backward()
    assert x.grad.tolist() == tx.grad.tolist()


@pytest.mark.parametrize("dim", [0, -1])
def test_unflatten_of_a_0d_tensor_is_refused_as_torch(dim):
    with pytest.raises(RuntimeError):
        torch.tensor(1.0).unflatten(dim, (1,))
    with pytest.raises(ember.errors.IndexOutOfRange, match="unflatten: .*0-d"):
        ember.tensor(1.0).unflatten(dim, (1,))  # (gave a (1,) tensor)


@pytest.mark.parametrize("shape", [(), (3,)])
def test_unflatten_into_no_sizes_is_refused_as_torch(shape):
    with pytest.raises(RuntimeError, match="sizes must be non-empty"):
        torch.ones(shape).unflatten(0, ())
    with pytest.raises((ember.ShapeError, ember.errors.IndexOutOfRange)):
        ember.ones(shape).unflatten(0, ())


KEYWORDS = {
    "permute_dims": lambda m, x: x.permute(dims=(2, 0, 1)),
    "torch_permute_dims": lambda m, x: m.permute(x, dims=[2, 0, 1]),
    "split_size": lambda m, x: x.split(split_size=3, dim=2)[1],
    "expand_size": lambda m, x: x[:1].expand(size=(3, 3, 4)),
    "expand_implicit": lambda m, x: x[:1].expand(3, 3, 4, implicit=True),
    "swapaxes": lambda m, x: x.swapaxes(axis0=0, axis1=2),
    "torch_swapaxes": lambda m, x: m.swapaxes(x, axis0=2, axis1=1),
    "tensor_split": lambda m, x: x.tensor_split(tensor_indices_or_sections=m.tensor([1]),
                                                dim=2)[1],
    "torch_tensor_split": lambda m, x: m.tensor_split(x, tensor_indices_or_sections=m.tensor(
        3), dim=2)[0],
    "hsplit_sections": lambda m, x: x.hsplit(sections=3)[2],
    "vsplit_indices": lambda m, x: m.vsplit(x, indices=[1])[1],
    "dsplit_indices": lambda m, x: x.dsplit(indices=(1, 3))[1],
    "unsafe_split": lambda m, x: m.unsafe_split(x, split_size=3, dim=2)[1],
}


@pytest.mark.parametrize("name", sorted(KEYWORDS))
def test_torchs_keyword_names_are_taken(name):
    got = KEYWORDS[name](ember, ember.arange(24.0).reshape(2, 3, 4))
    want = KEYWORDS[name](torch, torch.arange(24.0).reshape(2, 3, 4))
    assert _layout(got) == _layout(want)
    assert got.tolist() == want.tolist()


def test_a_keyword_and_positional_sizes_together_are_refused():
    x = ember.ones(1, 3)
    with pytest.raises(TypeError, match="given twice"):
        x.expand(2, 3, size=(2, 3))
    with pytest.raises(TypeError, match="given twice"):
        x.permute(1, 0, dims=(1, 0))
    with pytest.raises(TypeError, match="exactly one of"):
        x.hsplit(3, sections=3)


WRITES = {
    "mul_": lambda m, x: x.mul_(2),
    "fill_": lambda m, x: x.fill_(1),
    "copy_": lambda m, x: x.copy_(m.ones(3, 2, 0)),
    "setitem": lambda m, x: x.__setitem__(Ellipsis, 3.0),
    "zero_": lambda m, x: x.zero_(),
    "out": lambda m, x: m.add(m.ones(3, 2, 0), 1, out=x),
}


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("name", sorted(WRITES))
def test_a_write_into_an_expanded_view_without_elements_is_a_no_op_as_torch(name, grad):
    # a stride-0 dimension of an empty view aliases nothing; Ember refused it as read-only
    if grad and name == "out":
        pytest.skip("out= refuses inputs that require grad, in both")
    for m in (torch, ember):
        base = m.zeros(2, 0, requires_grad=True) * 1 if grad else m.zeros(2, 0)
        x = base[None].expand(3, 2, 0)
        before = base._version
        WRITES[name](m, x)
        assert tuple(x.shape) == (3, 2, 0)
        assert base._version == before + 1


def test_a_write_into_an_expanded_view_with_elements_is_still_refused():
    with pytest.raises(ember.errors.EmberError, match="read-only|single memory location"):
        ember.zeros(2)[None].expand(3, 2).mul_(2)


@pytest.mark.parametrize("shape, start, end", [((4,), 0, -1), ((2, 3), 1, 1), ((2, 3, 4), -1, 2)])
def test_flatten_with_nothing_to_merge_returns_the_tensor_itself_as_torch(shape, start, end):
    t, e = torch.ones(shape), ember.ones(shape)
    assert t.flatten(start, end) is t
    assert e.flatten(start, end) is e
    assert tuple(ember.ones(2, 3).flatten(0, 1).shape) == (6,)


AS_STRIDED_ARGS = {
    "float_size": lambda m, x: x.as_strided((2.0,), (1,)),
    "bool_size": lambda m, x: x.as_strided((True,), (1,)),
    "float_stride": lambda m, x: x.as_strided((2,), (2.5,)),
    "float_offset": lambda m, x: x.as_strided((2,), (1,), 1.0),
    "bool_offset": lambda m, x: x.as_strided((2,), (1,), True),
    "scatter_float_size": lambda m, x: m.as_strided_scatter(x, m.ones(2), (2.0,), (1,)),
    "scatter_bool_offset": lambda m, x: m.as_strided_scatter(x, m.ones(2), (2,), (1,), True),
}


@pytest.mark.parametrize("name", sorted(AS_STRIDED_ARGS))
def test_as_strided_refuses_float_and_bool_sizes_as_torch(name):
    # int() read them: a size of 2.7 became 2 and True a size of 1, silently
    with pytest.raises(TypeError):
        AS_STRIDED_ARGS[name](torch, torch.arange(6.0))
    with pytest.raises(ember.errors.ArgumentTypeError, match="as_strided.*must be an int"):
        AS_STRIDED_ARGS[name](ember, ember.arange(6.0))


def test_as_strided_still_takes_numpy_and_tensor_ints():
    import numpy as np

    got = ember.arange(6.0).as_strided((np.int64(2),), [np.int32(2)], ember.tensor(1))
    want = torch.arange(6.0).as_strided((2,), (2,), torch.tensor(1))
    assert got.tolist() == want.tolist() == [1.0, 3.0]


@pytest.mark.parametrize("op", ["as_strided", "as_strided_scatter"])
def test_as_strided_refuses_a_bare_int_size_or_stride_as_torch(op):
    # (review65a: ac02b9cd's reading wrapped a bare int into a 1-tuple)
    for m in (torch, ember):
        x = m.arange(6.0)
        for size in (2, range(2), m.tensor([2]), m.tensor(2)):
            with pytest.raises(TypeError, match="tuple"):
                x.as_strided(size, (1,)) if op == "as_strided" else \
                    m.as_strided_scatter(x, m.ones(2), size, (1,))
        assert tuple(x.as_strided([2], [1]).shape) == (2,)


@pytest.mark.parametrize("make", [lambda m: m.zeros(0, 4)[:, ::2], lambda m: m.zeros(2, 0).t(),
                                  lambda m: m.zeros(0, 2, 2).transpose(1, 2)])
def test_view_as_complex_checks_the_strides_of_empty_tensors_as_torch(make):
    with pytest.raises(RuntimeError, match="stride"):
        torch.view_as_complex(make(torch))
    with pytest.raises(ember.errors.ShapeError, match="view_as_complex.*stride"):
        ember.view_as_complex(make(ember))
    assert tuple(ember.view_as_complex(ember.zeros(3, 0, 2)).shape) == (3, 0)


EXPANDS = {
    "kept_size1": lambda m: m.ones(4, 1).expand(2, 4, 1),
    "kept_size1_middle": lambda m: m.ones(1, 3).expand(3, 1, 3),
    "new_size1_lead": lambda m: m.ones(2, 1).expand(1, 2, 5),
    "new_size1_leads": lambda m: m.ones(3, 1).expand(1, 1, 3, 4),
    "non_contiguous": lambda m: m.ones(3, 4, 2)[:, :1, ::2].expand(2, 3, 1, 5),
    "non_contiguous_permuted": lambda m: m.ones(3, 4, 2)[:, :1, ::2].permute(1, 0, 2)
    .expand(1, 3, 6),
    "0d": lambda m: m.tensor(1.0).expand(3, 1),
    "no_size1": lambda m: m.ones(4, 6)[:, ::2].expand(3, 4, 3),
}


@pytest.mark.parametrize("name", sorted(EXPANDS))
def test_expand_strides_its_size1_dims_as_torch(name):
    # NumPy's broadcast gave every size-1 dimension stride 0; PyTorch keeps a kept one's and
    # gives a new one the next size times stride
    got, want = EXPANDS[name](ember), EXPANDS[name](torch)
    assert _layout(got) == _layout(want)
    assert got.tolist() == want.tolist()
    with ember.device("meta"):
        assert _layout(EXPANDS[name](ember)) == _layout(want)


def test_expand_of_a_file_mapped_tensor_strides_as_torch(tmp_path):
    # (review65b: a np.memmap array took NumPy's zero strides of size-1 dims)
    path = tmp_path / "six.bin"
    ember.arange(6.0).numpy().tofile(path)
    got = ember.from_file(str(path), size=6).reshape(2, 3)[:1].expand(4, 1, 3)
    want = torch.arange(6.0).reshape(2, 3)[:1].expand(4, 1, 3)
    assert _layout(got) == _layout(want) and got.tolist() == want.tolist()

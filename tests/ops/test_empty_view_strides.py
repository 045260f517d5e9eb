"""Views of tensors without elements: their strides are PyTorch's (NumPy gives new empty
arrays zero strides, and Ember used to report C order's of each view's own shape: ``x.t()``
of a (2, 3, 0) tensor had (2, 1, 1) for torch's (1, 3, 1)); ``split`` of an empty dimension
gives one empty piece. Swept against torch."""

import pytest
import torch

import ember

SHAPES = [(0,), (0, 3), (3, 0), (2, 0, 4), (0, 0), (1, 0), (0, 1), (2, 3, 0), (0, 2, 3)]

VIEWS = {
    "t": lambda x: x.transpose(0, 1),
    "transpose(-1, -2)": lambda x: x.transpose(-1, -2),
    "permute": lambda x: x.permute(*reversed(range(x.ndim))),
    "mT": lambda x: x.mT,
    "movedim": lambda x: x.movedim(0, -1),
    "[:, :0]": lambda x: x[:, :0],
    "[:, 1:]": lambda x: x[:, 1:],
    "diagonal": lambda x: x.diagonal(),
    "t().contiguous()": lambda x: x.transpose(0, 1).contiguous(),
    "[:0]": lambda x: x[:0],
    "view(-1)": lambda x: x.view(-1),
    "reshape(5, 0, 2)": lambda x: x.reshape(5, 0, 2),
    "expand": lambda x: x.unsqueeze(0).expand(4, *x.shape),
    "broadcast_to": lambda x: x.broadcast_to((3, *x.shape)),
    "unsqueeze(1)": lambda x: x.unsqueeze(1),
    "unsqueeze(-1)": lambda x: x.unsqueeze(-1),
    "narrow(-1)": lambda x: x.narrow(-1, 0, 0),
    "squeeze": lambda x: x.squeeze(),
    "select(-1)": lambda x: x.select(-1, 0),
    "chunk": lambda x: x.chunk(2, -1)[0],
    "t().view(-1)": lambda x: x.transpose(0, 1).reshape(-1),
}


def _cases():
    for shape in SHAPES:
        for name, view in VIEWS.items():
            if name in ("expand", "broadcast_to") and 1 in shape:
                continue  # (a size-1 dimension expand keeps: stride 0 here, as NumPy's, with
                #            elements or without; PyTorch keeps its stride)
            try:
                view(torch.empty(shape))
            except (RuntimeError, IndexError):
                continue  # (a view that shape does not take)
            yield pytest.param(shape, view, id=f"{shape}-{name}")


@pytest.mark.parametrize(("shape", "view"), list(_cases()))
def test_strides_of_views_without_elements_are_torch_s(shape, view):
    want = view(torch.empty(shape))
    got = view(ember.empty(shape))
    assert (tuple(got.shape), got.stride()) == (tuple(want.shape), want.stride())


def test_split_of_an_empty_dimension_gives_one_piece():
    for split in (lambda x: x.split(1), lambda x: x.split(3), lambda x: x.unsafe_split(2),
                  lambda x: x.split(0)):
        want = [tuple(t.shape) for t in split(torch.empty(0, 2))]
        assert [tuple(t.shape) for t in split(ember.empty(0, 2))] == want == [(0, 2)]


@pytest.mark.parametrize("name", ["t", "[:, 1:]", "unsqueeze(-1)", "permute", "diagonal"])
def test_meta_views_without_elements_have_the_cpu_strides(name):
    view = VIEWS[name]
    cpu, meta = view(ember.empty(2, 3, 0)), view(ember.empty(2, 3, 0, device="meta"))
    assert meta.stride() == cpu.stride() == view(torch.empty(2, 3, 0)).stride()

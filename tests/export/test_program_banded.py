"""ember.export constants of two values on a band of diagonals whose sizes follow dynamic
dims (scaled_dot_product_attention's is_causal mask, tril / triu / eye of a dynamic size):
made at run time by ember.export.prims.band (they were a ConstraintViolationError). Compared
with torch.export at many sizes, saved and loaded, validated."""

import io

import numpy as np
import pytest
import torch
import torch.export

import ember
import ember.fx


def _causal(lib):
    class Attention(lib.nn.Module):
        def forward(self, x):
            return lib.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True)

    return Attention()


def _triangles(lib):
    class Triangles(lib.nn.Module):
        def forward(self, x):
            t = x.shape[-1]
            upper = lib.ones(t, t).triu(1) * float("-inf")
            return (x + upper).softmax(-1) + x.tril(-1) + lib.eye(t) * 3

    return Triangles()


def _programs(make, example, axes):
    def shapes(lib):
        t = lib.export.Dim("t", min=2, max=40)
        return ({axis: t for axis in axes},)

    theirs = torch.export.export(make(torch), (torch.tensor(example),),
                                 dynamic_shapes=shapes(torch))
    ours = ember.export.export(make(ember), (ember.tensor(example),), dynamic_shapes=shapes(ember))
    return theirs, ours


@pytest.mark.parametrize("make, shape, axes", [(_causal, (2, 3, "t", 4), (2,)),
                                               (_triangles, (3, "t", "t"), (1, 2))])
def test_banded_constants_follow_the_dynamic_size_as_torch(make, shape, axes):
    rs = np.random.RandomState(0)

    def draw(t):
        return rs.randn(*(t if s == "t" else s for s in shape)).astype(np.float32)

    theirs, ours = _programs(make, draw(5), axes)
    ours.validate()
    assert "band" in ours.graph_module.code
    f = io.BytesIO()
    ember.export.save(ours, f)
    f.seek(0)
    loaded = ember.export.load(f)
    for t in (2, 3, 8, 40):
        x = draw(t)
        tx, ex = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
        want = theirs.module()(tx)
        for program in (ours, loaded):
            got = program.module()(ex)
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(),
                                       rtol=1e-5, atol=1e-6)
        want.sum().backward()
        got.sum().backward()
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_band_is_one_node_of_a_traced_exported_module():
    _, ours = _programs(_causal, np.ones((2, 3, 5, 4), np.float32), (2,))
    traced = ember.fx.symbolic_trace(ours.module())
    assert [n.target for n in traced.graph.nodes].count(ember.export.prims.band) == 1


def test_a_band_that_moves_with_the_size_is_still_refused():
    class Shifted(ember.nn.Module):  # (a constant whose diagonal is t - 3: no fixed band)
        def forward(self, x):
            t = x.shape[0]
            return x + ember.from_numpy(np.tril(np.ones((t, t), np.float32), t - 3))

    with pytest.raises(ember.export.ConstraintViolationError):
        ember.export.export(Shifted(), (ember.randn(5, 5),),
                            dynamic_shapes=({0: ember.export.Dim("t"), 1: ember.export.Dim("t")},))

"""``ember.autograd.grad`` and ``ember.autograd.backward`` with sparse inputs, as torch's."""

import pytest
import torch

import ember


def _loss(lib, coalesced):
    s = lib.sparse_coo_tensor([[2, 0, 2]], [1.0, 2.0, 3.0], (3,))
    s = (s.coalesce() if coalesced else s).requires_grad_()
    w = lib.ones(3, requires_grad=True)
    return s, w, lib.sparse.sum(s * 3) + (w * 2).sum()


@pytest.mark.parametrize("coalesced", [True, False])
def test_grad_and_backward_with_sparse_inputs_as_torch(coalesced):
    results = []
    for lib in (torch, ember):
        s, w, loss = _loss(lib, coalesced)
        gs, gw = lib.autograd.grad([loss], [s, w], retain_graph=True)
        lib.autograd.backward(loss, inputs=[s])  # (it raised a bare StopIteration)
        assert w.grad is None and gs.layout == s.grad.layout
        results.append((gs.to_dense().tolist(), gw.tolist(), s.grad.to_dense().tolist()))
    assert results[0] == results[1]


def test_a_sparse_output_is_refused_by_name():
    s, _, _ = _loss(ember, True)
    for call in (lambda: ember.autograd.backward(s * 2, inputs=[s]),
                 lambda: ember.autograd.grad([s * 2], [s])):
        with pytest.raises(NotImplementedError, match="a sparse .* not supported.*sparse.sum"):
            call()

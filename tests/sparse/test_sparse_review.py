"""Sparse gradients where they meet the rest of Ember (non-leaf weights, anomaly mode,
GradScaler, LBFGS, jit), sparse sums over dense dimensions, compressed-index invariants and
the momentum buffer's size, against PyTorch."""

import warnings

import numpy as np
import pytest
import torch

import ember
from ember.jit.tracer import TraceError
from tests.distributed.harness import needs_mpi, reports, run_ranks

warnings.filterwarnings("ignore", message="Sparse")


def test_sparse_grad_through_a_non_leaf_weight_is_dense_and_right():
    grads = []
    for lib in (ember, torch):
        p = lib.ones(5, 2, requires_grad=True)
        lib.nn.functional.embedding(lib.tensor([1, 1, 3]), p * 2, sparse=True).sum().backward()
        grads.append(p.grad.to_dense().numpy())
    np.testing.assert_allclose(*grads)
    p = ember.ones(10, requires_grad=True)  # (torch refuses this reshape of a sparse grad)
    ember.nn.functional.embedding(ember.tensor([4]), p.view(5, 2), sparse=True).sum().backward()
    assert p.grad.tolist() == [0.0] * 8 + [1.0, 1.0]


def test_sparse_grad_under_anomaly_mode():
    emb = ember.nn.Embedding(5, 2, sparse=True)
    with ember.autograd.detect_anomaly():
        emb(ember.tensor([1, 2])).sum().backward()
    assert emb.weight.grad._nnz() == 2
    with ember.autograd.detect_anomaly(), pytest.raises(ember.errors.GradError, match="NaN"):
        (emb(ember.tensor([1])) * float("nan")).sum().backward()


def test_grad_scaler_unscales_sparse_grads_and_finds_inf():
    out = []
    for scale in (4.0, None):  # a scaled step moves as an unscaled one
        emb = ember.nn.Embedding(5, 2, sparse=True)
        with ember.no_grad():
            emb.weight.copy_(ember.arange(10.0).reshape(5, 2))
        opt = ember.optim.SGD(emb.parameters(), lr=0.1)
        s = ember.amp.GradScaler(init_scale=scale or 1.0, enabled=scale is not None)
        s.scale(emb(ember.tensor([1, 2, 1])).pow(2).sum()).backward()
        s.step(opt)
        out.append(emb.weight.detach().numpy())
    np.testing.assert_allclose(*out)
    emb = ember.nn.Embedding(5, 2, sparse=True)
    opt = ember.optim.SGD(emb.parameters(), lr=0.1)
    s = ember.amp.GradScaler(init_scale=4.0)
    s.scale((emb(ember.tensor([1])) * float("inf")).sum()).backward()
    before = emb.weight.detach().clone()
    s.step(opt)
    s.update()
    assert ember.equal(emb.weight.detach(), before) and s.get_scale() == 2.0


def test_lbfgs_takes_sparse_grads_as_dense():
    out = []
    for lib in (ember, torch):
        emb = lib.nn.Embedding(4, 2, sparse=True)
        with lib.no_grad():
            emb.weight.copy_(lib.arange(8.0).reshape(4, 2))
        opt = lib.optim.LBFGS(emb.parameters(), max_iter=3)

        def closure(lib=lib, emb=emb, opt=opt):
            opt.zero_grad()
            loss = emb(lib.tensor([1, 3, 1])).pow(2).sum()
            loss.backward()
            return loss
        opt.step(closure)
        out.append(emb.weight.detach().numpy())
    np.testing.assert_allclose(*out, rtol=1e-5, atol=1e-6)


def test_jit_refuses_sparse_grads_clearly():
    emb = ember.nn.Embedding(5, 2, sparse=True)
    opt = ember.optim.SGD(emb.parameters(), lr=0.1)

    @ember.jit.compile
    def step(x):
        opt.zero_grad()
        emb(x).sum().backward()
        opt.step()

    with pytest.raises(TraceError, match="sparse=False"):
        step(ember.tensor([1, 2]))


def test_sum_over_dense_dims_of_a_hybrid_tensor():
    for dims in (1, (1,), (0, 1), 0):
        got, want = (lib.sparse.sum(lib.sparse_coo_tensor(
            [[0, 2, 0]], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], (3, 2)), dims)
            for lib in (ember, torch))
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.to_dense().numpy(), want.to_dense().numpy())
        if want.layout is torch.sparse_coo:
            assert got.is_coalesced() and got._nnz() == want._nnz()


def test_compressed_invariants():
    for plain in ([1, 0], [1, 1]):  # unsorted, repeated
        with pytest.raises(RuntimeError, match="sorted and distinct"):
            ember.sparse_csr_tensor([0, 2], plain, [1.0, 2.0], (1, 2), check_invariants=True)
        s = ember.sparse_csr_tensor([0, 2], plain, [1.0, 2.0], (1, 2))
        coo = s.to_sparse_coo()  # (torch's claims to be coalesced, unsorted: not copied)
        t = torch.sparse_csr_tensor([0, 2], plain, [1.0, 2.0], (1, 2)).to_dense()
        assert coo.indices().tolist() == [[0] * len(set(plain)), sorted(set(plain))]
        np.testing.assert_allclose(coo.to_dense().numpy(), t.numpy())
    ember.sparse_csc_tensor([0, 0, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0], check_invariants=True)


def test_sparse_momentum_buffer_stays_bounded():
    emb = ember.nn.Embedding(6, 2, sparse=True)
    opt = ember.optim.SGD(emb.parameters(), lr=0.01, momentum=0.9)
    for _ in range(20):
        opt.zero_grad()
        emb(ember.tensor([1, 1, 2, 4])).sum().backward()
        opt.step()
    assert opt.state[emb.weight]["momentum_buffer"]._nnz() <= 3


@needs_mpi
def test_ddp_refuses_sparse_grads_clearly():
    code = """
import ember, ember.distributed as dist
from tests.distributed.harness import report
dist.init_process_group()
model = ember.nn.parallel.DistributedDataParallel(ember.nn.Embedding(5, 2, sparse=True))
try:
    model(ember.tensor([1, 2])).sum().backward()
    report("no error")
except NotImplementedError as e:
    report(str(e))
"""
    [message] = reports(run_ranks(code, 1, timeout=120))[0]
    assert "sparse gradient" in message and "sparse=False" in message


def test_dense_times_sparse_is_dense_with_gradients():
    d = np.arange(6.0).reshape(3, 2)
    s = np.array([[0.0, 2.0, 0.0], [3.0, 0.0, 1.0]])
    results = []
    for lib in (ember, torch):
        dense = lib.tensor(d, requires_grad=True)
        sparse = lib.tensor(s).to_sparse().requires_grad_()
        out = [dense @ sparse, lib.mm(dense, sparse), lib.ones(2, dtype=lib.float64) @ sparse,
               dense @ lib.tensor(s).to_sparse_csr()]
        sum(o.sum() for o in out).backward()
        results.append([o.detach().numpy() for o in out]
                       + [dense.grad.numpy(), sparse.grad.to_dense().numpy()])
    results[1][-1] *= s != 0  # (torch's is dense here: Ember's, as torch.sparse.mm's, masked)
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want)
    with pytest.raises(TypeError, match="sparse matrix and a dense one"):
        ember.ones(2, 2, 2) @ ember.eye(2).to_sparse()


def test_dims_out_of_range_or_repeated_raise():
    s = ember.sparse_coo_tensor([[0, 1, 1], [1, 0, 2]], [1.0, 2.0, 3.0], (2, 3))
    for call in (lambda: ember.sparse.sum(s, 5), lambda: ember.sparse.sum(s, -3),
                 lambda: ember.sparse.softmax(s, 2), lambda: ember.sparse.log_softmax(s, -3),
                 lambda: s.transpose(0, 5)):
        with pytest.raises(IndexError, match="out of range"):
            call()
    with pytest.raises(ember.errors.ShapeError, match="more than once"):
        ember.sparse.sum(s, (0, 0))
    with pytest.raises(RuntimeError, match="t\\(\\) expects"):
        ember.zeros(2, 2, 2).to_sparse().t()
    with pytest.raises(NotImplementedError, match="softmax.*int64"):
        ember.sparse.softmax(ember.sparse_coo_tensor([[0]], [1], (2,)), 0)


def test_casts_copies_and_0d():
    s = ember.sparse_coo_tensor([[0, 1, 1], [1, 0, 2]], [1.0, 2.0, 3.0], (2, 3))
    for cast, dtype in ((s.double, ember.float64), (s.half, ember.float16),
                        (lambda: s.to(ember.float64), ember.float64), (s.float, ember.float32)):
        out = cast()
        assert out.dtype is dtype and out._indices().dtype is ember.int64
        np.testing.assert_allclose(out.to_dense().float().numpy(), s.to_dense().numpy())
    copy = s.clone()
    copy._values().add_(1.0)
    assert s._values().tolist() == [1.0, 2.0, 3.0]
    emb = ember.nn.Embedding(4, 2, sparse=True)
    emb(ember.tensor([1])).sum().backward()
    assert emb.double().weight.grad.dtype is ember.float64
    for x in (3.0, 0.0):
        want = torch.tensor(x).to_sparse()
        got = ember.tensor(x).to_sparse()
        assert got._nnz() == want._nnz() and got.shape == ()
        assert got.to_dense().item() == x


def test_sparse_adam_state_dict_round_trip_keeps_an_int_step():
    out = []
    for lib in (ember, torch):
        emb = lib.nn.Embedding(5, 2, sparse=True)
        with lib.no_grad():
            emb.weight.copy_(lib.arange(10.0).reshape(5, 2))
        opt = lib.optim.SparseAdam(emb.parameters(), lr=0.5)
        for idx in ([1, 1, 2], [2, 4]):
            opt.zero_grad()
            emb(lib.tensor(idx)).pow(2).sum().backward()
            opt.step()
        again = lib.optim.SparseAdam(emb.parameters(), lr=0.5)
        again.load_state_dict(opt.state_dict())
        again.zero_grad()
        emb(lib.tensor([1])).pow(2).sum().backward()
        again.step()
        out.append((emb.weight.detach().numpy(), again.state[emb.weight]["step"]))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-5)
    assert out[0][1] == out[1][1] == 3 and isinstance(out[0][1], int)

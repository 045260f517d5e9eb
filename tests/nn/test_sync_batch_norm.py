"""nn.SyncBatchNorm in one process (BatchNorm, against torch), its synchronised path through a
stand-in reducer (two identical ranks), and convert_sync_batchnorm. The 2-rank MPI run is in
tests/distributed/test_sync_batch_norm.py."""

import numpy as np
import pytest
import torch

import ember
import ember.distributed  # noqa: F401 - registers the reducer: not initialized, one process
import ember.nn as nn
from ember.nn import sync_batch_norm
from tests.nn.helpers import compare, copy_state


@pytest.fixture
def two_identical_ranks():
    """A reducer as if a second rank held the same batch: every sum doubles."""
    saved = list(sync_batch_norm._REDUCER)
    sync_batch_norm.register_stat_reducer(lambda group: lambda t: t * 2)
    yield
    sync_batch_norm._REDUCER[:] = saved


@pytest.mark.parametrize("shape,torch_class", [((4, 3), torch.nn.BatchNorm1d),
                                               ((4, 3, 5), torch.nn.BatchNorm1d),
                                               ((2, 3, 2, 3, 2), torch.nn.BatchNorm3d)])
def test_one_process_is_batch_norm(shape, torch_class):
    t = torch_class(3, momentum=None).double()
    e = nn.SyncBatchNorm(3, momentum=None).to(ember.float64)
    assert repr(e) == repr(torch.nn.SyncBatchNorm(3, momentum=None))
    assert list(e.state_dict()) == list(t.state_dict()) and e.process_group is None
    copy_state(t, e)
    compare(t, e, shape, train=True)
    compare(t, e, shape, train=False)


def test_synchronised_statistics_and_gradients(two_identical_ranks):
    x = np.random.default_rng(0).standard_normal((3, 2, 4)) * 2 + 3
    g = np.random.default_rng(1).standard_normal(x.shape)
    t = torch.nn.BatchNorm1d(2).double()
    e = nn.SyncBatchNorm(2).to(ember.float64)
    with torch.no_grad():
        t.weight.copy_(torch.tensor([0.5, -2.0]))
    copy_state(t, e)
    tx = torch.tensor(np.concatenate([x, x]), requires_grad=True)
    ex = ember.tensor(x, requires_grad=True)
    t_out, e_out = t(tx), e(ex)
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy()[:3], rtol=1e-12)
    (t_out * torch.tensor(np.concatenate([g, g]))).sum().backward()
    (e_out * ember.tensor(g)).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy()[:3], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(e.weight.grad.numpy() * 2, t.weight.grad.numpy(), rtol=1e-10)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(getattr(e, name).numpy(), getattr(t, name).numpy(),
                                   rtol=1e-12, err_msg=name)
    e.eval()  # evaluation never synchronises: the running statistics
    np.testing.assert_allclose(e(ember.tensor(x)).detach().numpy(),
                               t.eval()(torch.tensor(x)).detach().numpy(), rtol=1e-12)


def test_no_running_stats_and_no_affine(two_identical_ranks):
    x = np.random.default_rng(2).standard_normal((5, 3))
    t = torch.nn.BatchNorm1d(3, affine=False, track_running_stats=False).double()
    e = nn.SyncBatchNorm(3, affine=False, track_running_stats=False)
    np.testing.assert_allclose(e(ember.tensor(x)).numpy(),
                               t(torch.tensor(np.concatenate([x, x]))).numpy()[:5], rtol=1e-12)
    sync_batch_norm.register_stat_reducer(lambda group: lambda t: t)  # one sample in all
    with pytest.raises(ValueError, match="expected more than 1 value per channel"):
        nn.SyncBatchNorm(3)(ember.randn(1, 3))


def test_convert_sync_batchnorm_matches_torch():
    def net(lib):
        return lib.nn.Sequential(lib.nn.Conv2d(3, 4, 1), lib.nn.BatchNorm2d(4),
                                 lib.nn.Sequential(lib.nn.BatchNorm1d(4, affine=False)),
                                 lib.nn.BatchNorm3d(4, bias=False).eval())
    e, t = net(ember), net(torch)
    bn = e[1]
    bn.running_mean.fill_(0.5)
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(e, process_group="group")
    t_converted = torch.nn.SyncBatchNorm.convert_sync_batchnorm(t)
    assert repr(converted) == repr(t_converted)
    assert list(converted.state_dict()) == list(t_converted.state_dict())
    sync = converted[1]
    assert converted is e and type(sync) is nn.SyncBatchNorm and sync.process_group == "group"
    assert sync.weight is bn.weight and sync.running_mean is bn.running_mean
    assert sync.running_mean.tolist() == [0.5] * 4 and not converted[3].training
    assert converted[3].bias is None and converted[2][0].weight is None
    alone = nn.BatchNorm1d(2)
    assert type(nn.SyncBatchNorm.convert_sync_batchnorm(alone)) is nn.SyncBatchNorm


def test_errors():
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input"):
        nn.SyncBatchNorm(3)(ember.randn(3))

"""DDP communication hooks (on 2 ranks, ranks/comm_hooks.py, inside the collective job of
test_collectives.py: allreduce, fp16/bf16, PowerSGD, post-local SGD against references), and
in one process: ember.futures against torch.futures, GradBucket, the hooks' states and their
argument checks."""

import doctest
import threading

import pytest
import torch
import torch.distributed.algorithms.ddp_comm_hooks as torch_hooks

import ember
import ember.distributed as dist
from ember.distributed.algorithms.ddp_comm_hooks import DDPCommHookType, powerSGD_hook
from ember.distributed.algorithms.model_averaging.averagers import PeriodicModelAverager
from ember.futures import Future, collect_all, wait_all


def _future_story(make):
    """What a sequence of future calls gives (make: the Future class)."""
    out = []
    fut = make()
    chained = fut.then(lambda f: f.value() + 1).then(lambda f: f.value() * 10)
    seen = []
    fut.add_done_callback(lambda f: seen.append(f.value()))
    out.append(fut.done())
    fut.set_result(1)
    out += [fut.done(), fut.wait(), chained.wait(), seen]
    with pytest.raises(RuntimeError, match="(?i)completed Future as complete again"):
        fut.set_result(2)
    failing = make()
    after = failing.then(lambda f: f.value())
    failing.set_exception(ValueError("boom"))
    with pytest.raises(ValueError, match="boom"):
        failing.wait()
    with pytest.raises(RuntimeError, match="running the callback: ValueError: boom"):
        after.wait()
    raising = make()
    broken = raising.then(lambda f: 1 / 0)
    raising.set_result(0)
    with pytest.raises(RuntimeError, match="ZeroDivisionError: division by zero"):
        broken.wait()
    done_now = make()
    done_now.set_result(5)
    out.append(done_now.then(lambda f: f.value() - 1).wait())  # a completed one runs inline
    return out


def test_futures_behave_as_torch_futures():
    assert _future_story(Future) == _future_story(torch.futures.Future)
    a, b = Future(), Future()
    both = collect_all([a, b])
    a.set_result(1)
    assert not both.done()
    threading.Timer(0.05, b.set_result, (2,)).start()  # completed from another thread
    assert [f.value() for f in both.wait()] == [1, 2] and wait_all([a, b]) == [1, 2]
    assert collect_all([]).wait() == []
    with pytest.raises(RuntimeError, match="not completed yet"):
        Future().value()
    with pytest.raises(TypeError, match="expected an exception"):
        Future().set_exception("no")
    result = doctest.testmod(ember.futures, extraglobs={"ember": ember})
    assert result.failed == 0 and result.attempted > 0


def test_grad_bucket_views_its_buffer():
    params = [ember.zeros(2, 3), ember.zeros(4)]
    buffer = ember.arange(10.0)
    bucket = dist.GradBucket(1, buffer, params, [0, 6, 10], is_last=True)
    first, second = bucket.gradients()
    assert first.shape == (2, 3) and second.tolist() == [6.0, 7.0, 8.0, 9.0]
    first.mul_(0)  # views: the buffer changes with them
    assert buffer.tolist()[:7] == [0.0] * 6 + [6.0]
    assert bucket.index() == 1 and bucket.is_last() and bucket.parameters()[1] is params[1]
    bucket.set_buffer(buffer.to(ember.float16))
    assert bucket.buffer().dtype == ember.float16 and bucket.gradients()[1].dtype == ember.float16
    with pytest.raises(ValueError, match="expected a tensor of 10 elements"):
        bucket.set_buffer(ember.zeros(3))


def test_states_check_their_arguments_as_torch():
    with pytest.raises(ValueError, match="start_powerSGD_iter > 1"):
        powerSGD_hook.PowerSGDState(None, start_powerSGD_iter=1)
    state = powerSGD_hook.PowerSGDState(None, start_powerSGD_iter=1, use_error_feedback=False,
                                        warm_start=False, compression_stats_logging_frequency=0)
    assert state.compression_stats() == (0, 0, 0)
    assert state.compression_stats_logging_frequency == 1
    with pytest.raises(ValueError, match="period must be positive"):
        PeriodicModelAverager(0, process_group=object())
    with pytest.raises(ValueError, match="warmup_steps must be a non-negative"):
        PeriodicModelAverager(2, warmup_steps=-1, process_group=object())
    ours = {m.name for m in DDPCommHookType}
    theirs = {m.name for m in torch_hooks.DDPCommHookType}
    assert theirs - ours == {"QUANTIZE_PER_TENSOR", "QUANTIZE_PER_CHANNEL"}


def test_register_comm_hook_checks_the_hook():
    from ember.distributed.ddp import _check_comm_hook

    def annotated(state, bucket: dist.GradBucket) -> Future[ember.Tensor]:
        return Future()

    def wrong_bucket(state, bucket: int): ...

    def wrong_return(state, bucket) -> int: ...

    _check_comm_hook(annotated)
    _check_comm_hook(lambda state, bucket: None)  # no annotations: fine
    with pytest.raises(TypeError, match="must be callable"):
        _check_comm_hook(3)
    with pytest.raises(ValueError, match="bucket annotation should be dist.GradBucket"):
        _check_comm_hook(wrong_bucket)
    with pytest.raises(ValueError, match="return annotation should be"):
        _check_comm_hook(wrong_return)


def test_docstring_examples_run():
    from ember.distributed.algorithms.ddp_comm_hooks import post_localSGD_hook

    glob = {"ember": ember, "dist": dist, "DDPCommHookType": DDPCommHookType,
            **vars(powerSGD_hook), **vars(post_localSGD_hook)}
    runner = doctest.DocTestRunner()
    for obj in (powerSGD_hook.PowerSGDState, post_localSGD_hook.PostLocalSGDState,
                DDPCommHookType):
        for test in doctest.DocTestFinder(recurse=False).find(obj, globs=glob):
            runner.run(test)
    assert runner.failures == 0 and runner.tries >= 3


def _callback_error_story(futures):
    """What torch.futures does with failing done-callbacks, failing sub-futures and bad
    callbacks (torch logs a done-callback's error and runs the other callbacks)."""
    out = []
    fut = futures.Future()
    seen = []
    fut.add_done_callback(lambda f: 1 / 0)
    fut.add_done_callback(lambda f: seen.append(f.value()))
    fut.set_result(1)  # (no error: the failing callback is logged)
    fut.add_done_callback(lambda f: 1 / 0)  # (on a completed future: run inline, logged)
    out += [seen, fut.wait()]
    a, b = futures.Future(), futures.Future()
    both = futures.collect_all([a, b])
    a.set_exception(ValueError("first failed"))
    out.append(both.done())  # (it waits for every future)
    b.set_result(2)
    for waiting in (both.wait, lambda: futures.wait_all([a, b])):
        with pytest.raises(ValueError, match="first failed"):
            waiting()
    with pytest.raises(TypeError):
        futures.Future().then(5)
    return out


def test_futures_callback_errors_as_torch():
    assert _callback_error_story(ember.futures) == _callback_error_story(torch.futures)


def test_work_wait_runs_the_callbacks_of_its_future():
    class Finished:  # an MPI request that is done
        def Wait(self):  # noqa: N802 - mpi4py's name
            pass

        def Test(self):  # noqa: N802
            return True

    t = ember.tensor([1.0])
    work = dist.Work(Finished(), outputs=[t])
    seen = []
    chained = work.get_future().then(lambda f: seen.append(f.value()[0] is t))
    work.wait()  # as torch: the work's end completes its future and runs what is chained
    assert seen == [True] and chained.done() and work.get_future().wait() == [t]

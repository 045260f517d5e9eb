"""Smoke tests of the benchmark suite: every workload runs one tiny step in both frameworks."""

import pytest

import ember
import ember.models
from benchmarks import report, suite, workloads


@pytest.mark.parametrize("name", list(workloads.TRAINING))
def test_workload_runs_one_step_in_both(name):
    scale = 1 / workloads.TRAINING[name].batch  # batch 1
    e_step, e_model = workloads.build(name, "ember", scale)
    weights = {k: v.numpy() for k, v in e_model.state_dict().items()}
    t_step, _ = workloads.build(name, "torch", scale, weights)
    e_out, t_out = e_step(), t_step()
    if not workloads.TRAINING[name].train:  # same weights, same input: same output
        assert abs(float(e_out.sum().item()) - float(t_out.sum().item())) < 1e-3
    else:
        assert abs(e_out.item() - t_out.item()) < 1e-3  # the same first loss


def test_flops_are_two_macs_per_layer():
    assert workloads.forward_flops("mlp") == 2 * 256 * (784 * 1024 + 1024 * 1024 + 1024 * 10)
    assert workloads.step_flops("infer_mlp_b1") == 2 * (784 * 1024 + 1024 * 1024 + 1024 * 10)


def test_ceilings_ops_and_report():
    rows = [suite._row("gemm 64³", suite.compare(
        {fw: workloads.gemm(fw, 64) for fw in ("ember", "torch")}, 1, 1, 0), 2 * 64 ** 3)]
    fns = {fw: workloads.membw(fw, 2 ** 16) for fw in ("ember", "torch")}
    rows.append(suite._row("membw", suite.compare(fns, 1, 1, 0)))
    from benchmarks.core_ops import _tiny_cases

    for e, t in _tiny_cases().values():
        e(), t()
    result = {"rows": rows, "machine": suite.machine(2), "quick": True, "gemm_peak": 1.0}
    text = report.markdown(result)
    assert text.count("\n| ") == 3 and "gemm 64³" in text and "Ember/PyTorch" in text


def test_peak_memory_of_eager_and_compiled_steps():
    eager = suite.peak_memory("mlp", "ember", 1 / 256, 1)
    compiled = suite.peak_memory("mlp", "ember-jit", 1 / 256, 1)
    assert eager["rss_peak"] >= 0 and eager["tensor_peak"] > 4 * 784 * 1024
    assert compiled["rss_peak"] >= 0 and "tensor_peak" not in compiled
    grads = 4 * sum(p.numel() for p in ember.models.mlp().parameters())
    # eager holds every gradient when it steps; the compiled step frees each once it is used
    assert eager["step_peak"] > grads > compiled["step_peak"] > grads / 2


def test_ember_bench_rejects_unknown_workloads(capsys):
    from ember.cli import main

    with pytest.raises(SystemExit):
        main(["bench", "nope"])
    assert "unknown workload" in capsys.readouterr().err

"""The compiled-vs-eager benchmark: one quick row and its table."""

from benchmarks.suite import machine

from benchmarks import jit as jit_bench


def test_one_quick_row_and_its_table():
    row = jit_bench.run_workload("infer_mlp_b1", quick=True, threads=2, memory=False)
    assert set(row["seconds"]) == {"eager", "compiled", "torch"}
    assert row["equations"] > 0 and row["compile_s"] > 0
    table = jit_bench.markdown([row], machine(2))
    assert "| infer_mlp_b1 |" in table and "compiled/PyTorch" in table

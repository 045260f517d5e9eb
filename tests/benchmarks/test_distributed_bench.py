"""The distributed benchmark's arithmetic: the all-reduce fit, the step-time model, the report."""

import pytest
from benchmarks.distributed import fit_allreduce, model_step, report


def test_fit_recovers_latency_and_bandwidth():
    records = [{"bytes": b, "raw_min_s": 5e-6 + b / 4e9} for b in (1 << 10, 1 << 20, 1 << 25)]
    latency, bw = fit_allreduce(records)
    assert latency == pytest.approx(5e-6, rel=1e-6) and bw == pytest.approx(4e9, rel=1e-6)


def test_ring_model():
    assert model_step(0.1, 8e6, 1, 1e-5, 1e9) == 0.1
    # 2(N-1)/N of the bytes through the bandwidth, (N-1) latencies
    assert model_step(0.1, 8e6, 4, 1e-5, 1e9) == pytest.approx(0.1 + 1.5 * 8e-3 + 3e-5)


def test_report_tables():
    ar = [
        {
            "ranks": 2,
            "bytes": b,
            **{
                f"{w}{m}": t + b / 1e9
                for w, t in (("raw_", 1e-5), ("ember_", 1.1e-5))
                for m in ("s", "min_s")
            },
        }
        for b in (4096, 1 << 20)
    ]
    ddp = [
        {
            "model": "mlp",
            "ranks": n,
            "batch_per_rank": 64,
            "step_s": 0.1 * (1 + n / 10),
            "compute_s": 0.1,
            "param_bytes": 7_000_000,
        }
        for n in (1, 2)
    ]
    text = report(ar, ddp)
    assert (
        "| 2 | 4,096 |" in text and "| mlp | 2 | None | 64 |" in text and "efficiency at 64" in text
    )

"""The distributed benchmark's arithmetic: the all-reduce fit, the step-time model, the report."""

import pytest
from benchmarks.distributed import allreduce_cost, model_step, report


def test_latency_and_interpolated_bandwidth():
    records = [
        {"bytes": b, "raw_min_s": t} for b, t in ((1 << 10, 2e-6), (1 << 20, 2e-4), (1 << 22, 1e-3))
    ]
    latency, bandwidth = allreduce_cost(records)
    assert latency == 2e-6
    assert bandwidth(1 << 20) == pytest.approx((1 << 20) / 2e-4)
    assert bandwidth(3 << 20) == pytest.approx((3 << 20) / (2e-4 + 2 / 3 * 8e-4))
    assert bandwidth(1 << 23) == pytest.approx((1 << 22) / 1e-3)  # beyond: the last one


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

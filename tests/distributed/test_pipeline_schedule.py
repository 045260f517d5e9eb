"""Pipeline schedules and stage cutting as data, in one process (no MPI)."""

import itertools

import pytest

from ember.distributed.pipeline_schedule import (
    Action,
    balance_by_size,
    bubble_fraction,
    gpipe_schedule,
    one_f_one_b_schedule,
    schedule,
    simulate,
    stage_bounds,
)

F, B = "forward", "backward"


def test_gpipe_runs_all_forwards_first():
    assert gpipe_schedule(1, 3, 2) == [Action(F, 0), Action(F, 1), Action(B, 0), Action(B, 1)]


def test_one_f_one_b_orders():
    assert repr(one_f_one_b_schedule(0, 4, 6)) == "[F0, F1, F2, F3, B0, F4, B1, F5, B2, B3, B4, B5]"
    assert repr(one_f_one_b_schedule(3, 4, 6)) == "[F0, B0, F1, B1, F2, B2, F3, B3, F4, B4, F5, B5]"
    # fewer micro-batches than the warm-up wants: all forwards, then all backwards
    assert repr(one_f_one_b_schedule(0, 4, 2)) == "[F0, F1, B0, B1]"


@pytest.mark.parametrize("name", ["gpipe", "1f1b"])
@pytest.mark.parametrize("p,m", [(1, 1), (2, 1), (2, 4), (3, 5), (4, 8), (4, 2)])
@pytest.mark.parametrize("costs", [(1.0, 2.0), (1.0, 1.0), (3.0, 1.0)])
def test_simulated_bubble_matches_formula(name, p, m, costs):
    report = simulate([schedule(name, s, p, m) for s in range(p)], *costs)
    assert report.makespan == pytest.approx((m + p - 1) * sum(costs))
    for bubble in report.bubble:
        assert bubble == pytest.approx(bubble_fraction(p, m))


def test_one_f_one_b_bounds_activation_memory():
    p, m = 4, 8
    gpipe = simulate([gpipe_schedule(s, p, m) for s in range(p)])
    ofob = simulate([one_f_one_b_schedule(s, p, m) for s in range(p)])
    assert gpipe.peak_in_flight == [m] * p
    assert ofob.peak_in_flight == [p - s for s in range(p)]


def test_simulate_finds_deadlock_and_bad_schedules():
    # stage 0 waits for stage 1's backward 0 before it sends forward 1, which stage 1 wants
    # first: a cycle, which blocking receives in this order would hang on
    bad = [
        [Action(F, 0), Action(B, 0), Action(F, 1), Action(B, 1)],
        [Action(F, 1), Action(F, 0), Action(B, 0), Action(B, 1)],
    ]
    with pytest.raises(RuntimeError, match="deadlock; stages 0 waiting at B0, 1 waiting at F1"):
        simulate(bad)
    with pytest.raises(RuntimeError, match="once each"):
        simulate([[Action(F, 0), Action(F, 0)]])


def test_schedule_errors():
    with pytest.raises(ValueError, match="unknown schedule 'zb'"):
        schedule("zb", 0, 2, 2)
    with pytest.raises(ValueError, match="stage 2 is outside 0..1"):
        gpipe_schedule(2, 2, 4)
    with pytest.raises(ValueError, match="num_micro_batches ≥ 1"):
        bubble_fraction(2, 0)


def test_stage_cutting():
    assert stage_bounds([1, 2]) == [(0, 1), (1, 3)]
    with pytest.raises(ValueError, match="at least one layer per stage"):
        stage_bounds([2, 0])
    assert balance_by_size([5, 5, 5, 5], 2) == [2, 2]
    assert balance_by_size([8, 1, 1, 1, 1, 4], 3) == [1, 4, 1]
    assert balance_by_size([0, 0, 0], 3) == [1, 1, 1]
    # the largest stage is as small as any cut allows (checked against every cut)
    sizes = [3, 9, 2, 2, 7, 1, 4]

    def largest(cuts):
        return max(sum(sizes[a:b]) for a, b in stage_bounds(cuts))

    every = [[i, j - i, len(sizes) - j] for i, j in itertools.combinations(range(1, 7), 2)]
    assert largest(balance_by_size(sizes, 3)) == min(map(largest, every)) == 12
    with pytest.raises(ValueError, match="cannot cut 2 layers into 3"):
        balance_by_size([1, 1], 3)

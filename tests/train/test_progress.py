"""The progress bar: a bar on a terminal only, so logs get the epoch lines and no redraws."""

from ember.train.progress import Progress


def test_no_bar_when_stderr_is_not_a_terminal(capsys):
    with Progress(total=20, desc="epoch 1") as bar:
        for _ in range(20):
            bar.update(64, 0.5)
    assert capsys.readouterr().err == ""
    assert bar.steps == 20 and bar.samples == 1280 and bar.throughput > 0


def test_a_log_gets_a_plain_line_now_and_then_without_control_characters(capsys):
    with Progress(total=3, desc="epoch 2/5", line_every=0.0) as bar:
        for loss in (1.0, 1.0, 1.0):
            bar.update(64, loss)
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 3 and lines[-1].startswith("epoch 2/5: step 3/3, loss 1.0000, ")
    assert lines[-1].endswith(" images/s") and "\r" not in err and "\x1b" not in err
    with Progress(total=3, desc="quiet", enabled=False, line_every=0.0) as bar:
        bar.update(64, 1.0)
    assert capsys.readouterr().err == ""


def test_the_running_loss_does_not_dwell_on_the_first_step():
    # it started at the first loss and decayed it by 0.95 a step: after 8 steps of 4.0 then
    # 1.0 it showed 3.1 (the first loss kept 70 % of the weight) where the 8 losses' weighted
    # mean is 1.4
    with Progress(total=8, desc="epoch 1", enabled=False) as bar:
        for loss in (4.0,) + (1.0,) * 7:
            bar.update(64, loss)
    weights = [0.95 ** age for age in range(8)]  # newest first
    expected = (4.0 * weights[-1] + sum(weights[:-1])) / sum(weights)
    assert abs(bar.loss - expected) < 1e-12 and bar.loss < 1.5
    with Progress(total=1, enabled=False) as bar:
        bar.update(64, 2.5)
    assert bar.loss == 2.5

"""The progress bar: a bar on a terminal only, so logs get the epoch lines and no redraws."""

from ember.train.progress import Progress


def test_no_bar_when_stderr_is_not_a_terminal(capsys):
    with Progress(total=20, desc="epoch 1") as bar:
        for _ in range(20):
            bar.update(64, 0.5)
    assert capsys.readouterr().err == ""
    assert bar.steps == 20 and bar.samples == 1280 and bar.throughput > 0

"""The ``ember`` command."""

import subprocess
import sys

import pytest

import ember
from ember.cli import main


def test_info_prints_version_and_capabilities(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert f"ember {ember.__version__}" in out
    for word in ["BLAS", "SIMD", "cores", "memory", "primitives"]:
        assert word in out


@pytest.mark.parametrize("module", ["ember.cli", "ember"])  # (python -m ember was refused)
def test_console_script_runs(module):
    result = subprocess.run([sys.executable, "-m", module, "info"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0 and "ember" in result.stdout


def test_train_interrupted_says_how_to_resume(monkeypatch, capsys):
    import ember.train

    def interrupted(cfg):
        raise KeyboardInterrupt

    monkeypatch.setattr(ember.train, "run", interrupted)
    assert main(["train", "--out", "unused"]) == 130
    assert "interrupted; continue from the last finished epoch with --resume" in \
        capsys.readouterr().err


def test_launch_refuses_bad_arguments_with_the_usage(tmp_path, capsys):
    import pytest

    script = tmp_path / "job.py"
    script.write_text("")
    for args, message in [(["-n", "0", str(script)], "-n must be at least 1, got 0"),
                          (["--max-restarts", "-1", str(script)],
                           "--max-restarts must be 0 or more, got -1"),
                          ([str(tmp_path / "missing.py")],
                           f"script '{tmp_path / 'missing.py'}' is not a file"),
                          (["--hostfile", str(tmp_path / "hosts"), str(script)],
                           "--hostfile '" + str(tmp_path / "hosts") + "' is not a file")]:
        with pytest.raises(SystemExit) as stop:
            main(["launch", *args])
        err = capsys.readouterr().err
        assert stop.value.code == 2 and f"ember launch: error: {message}" in err, err


def test_launch_with_a_hostfile_leaves_the_script_to_the_other_hosts(tmp_path, monkeypatch):
    # (the script may exist only where the ranks run; the launch itself is not run here)
    from ember.distributed import run

    hosts = tmp_path / "hosts"
    hosts.write_text("node1 slots=2\n")
    started = []
    monkeypatch.setattr(run, "launch", lambda *a: started.append(a) or 0)
    assert main(["launch", "-n", "2", "--hostfile", str(hosts), "/only/on/node1.py"]) == 0
    assert started[0][:2] == (2, ["/only/on/node1.py"])

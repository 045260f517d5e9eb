"""The line profiler of compiled steps: each timed line is a line of the generated code."""

from benchmarks import line_profile, workloads


def test_lines_of_an_inference_step_are_its_generated_code(capsys):
    call, compiled = workloads.compiled_step("infer_mlp_b1")
    call()
    source = compiled.last.generated.fn.__code__.co_filename
    spent = line_profile.line_times(call, 3, source)
    lines = compiled.code.splitlines()
    assert spent and all(1 <= n <= len(lines) and t >= 0 for n, t in spent.items())
    assert any("matmul(" in lines[n - 1] for n in spent)
    assert line_profile.main(["infer_mlp_b1", "--top", "3", "--calls", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("infer_mlp_b1: ") and len(out) == 4

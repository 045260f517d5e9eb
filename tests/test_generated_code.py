"""ember.utils.generated_code.define: the shared way ember.jit and ember.fx run the Python they
generate."""

import doctest
import inspect
import linecache
import traceback

import ember.utils.generated_code
from ember.utils.generated_code import define
from tests.gc_off import gc_off


def test_define_runs_the_source_and_registers_it_for_tracebacks():
    source = "def f(x):\n    return x / k\n"
    f, g = define(source, "demo", "f", {"k": 2}), define(source, "demo", "f", {"k": 0})
    assert f(4) == 2.0
    assert inspect.getsource(f) == source
    assert f.__code__.co_filename != g.__code__.co_filename  # each its own file name
    try:
        g(1)
    except ZeroDivisionError as e:
        assert "return x / k" in "".join(traceback.format_exception(e))
    result = doctest.testmod(ember.utils.generated_code)
    assert result.attempted and not result.failed


def test_the_source_leaves_linecache_with_the_function():
    # (a compiled function tracing shape after shape drops its old graphs: their source goes)
    with gc_off():  # (by reference counting alone: no cycle keeps the function)
        f = define("def f(x):\n    return x\n", "demo", "f", {})
        filename = f.__code__.co_filename
        assert linecache.getlines(filename)
        del f
        assert filename not in linecache.cache

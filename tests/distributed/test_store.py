"""HashStore, FileStore, TCPStore and PrefixStore against torch.distributed's stores: the same
calls give the same answers; waiting, timeouts, threads, two handles on one file, TCP clients
and their errors (the cross-process cases run in the 2-rank collective job,
ranks/store_checks.py)."""

import datetime
import threading

import pytest
import torch.distributed as tdist

import ember.distributed as dist

SHORT = datetime.timedelta(seconds=0.1)


def _script(store):
    """A sequence of calls and what each returns."""
    out = [store.set("a", "1"), store.get("a"), store.add("c", 5), store.add("c", -2),
           store.get("c"), store.num_keys(),
           store.compare_set("a", "1", "x"), store.compare_set("a", "zz", "y"),
           store.compare_set("new", "", "n"), store.compare_set("none", "q", "r"),
           store.check(["a", "nope"]), store.check(["a", "c"]),
           store.delete_key("a"), store.delete_key("a"), store.num_keys()]
    store.set("b", b"\xff\x00")
    store.append("z", "ab")
    store.append("z", b"cd")
    store.multi_set(["m1", "m2"], ["1", b"2"])
    return out + [store.get("b"), store.multi_get(["z", "m2"])]


def _tcp_master(**kwargs):
    return dist.TCPStore("127.0.0.1", 0, world_size=1, is_master=True, **kwargs)


def test_stores_answer_as_torch(tmp_path):
    expected = _script(tdist.HashStore())
    assert _script(dist.HashStore()) == expected
    assert _script(dist.FileStore(tmp_path / "s")) == expected
    assert _script(_tcp_master()) == expected  # (torch's TCPStore counts a key of its own)
    assert (_script(dist.PrefixStore("p", dist.HashStore()))
            == _script(tdist.PrefixStore("p", tdist.HashStore())))


def _store(kind, tmp_path):
    if kind == "hash":
        return dist.HashStore()
    if kind == "file":
        return dist.FileStore(tmp_path / "store")
    if kind == "tcp":
        return _tcp_master()
    return dist.PrefixStore("scope", dist.PrefixStore("outer", dist.HashStore()))


@pytest.mark.parametrize("kind", ["hash", "file", "tcp", "prefix"])
def test_waiting_and_timeouts(kind, tmp_path):
    store = _store(kind, tmp_path)
    store.set_timeout(SHORT)
    assert store.timeout == SHORT
    with pytest.raises(dist.DistStoreError, match=r"wait timeout after 0.1 s; keys not set: "
                                                  r"\['late'\]") as caught:
        store.get("late")
    assert isinstance(caught.value, dist.DistError) and isinstance(caught.value, RuntimeError)
    with pytest.raises(dist.DistStoreError, match=r"\['y'\]"):
        store.set("x", "1")
        store.wait(["x", "y"], SHORT)
    threading.Timer(0.05, store.set, ("late", "here")).start()
    store.wait(["late"], datetime.timedelta(seconds=10))  # woken by the other thread's write
    assert store.get("late") == b"here"
    with pytest.raises(ValueError, match="not an integer"):
        store.add("late", 1)
    with pytest.raises(TypeError, match="str or bytes"):
        store.set("k", 3)
    # a zero timeout means no limit, as torch's kNoTimeout (torch.distributed.HashStore waits)
    threading.Timer(0.2, store.set, ("later", "1")).start()
    store.wait(["later"], datetime.timedelta(0))
    store.set_timeout(datetime.timedelta(0))
    threading.Timer(0.2, store.set, ("latest", "2")).start()
    assert store.get("latest") == b"2"


def test_file_store_handles_share_one_file(tmp_path):
    a, b = dist.FileStore(tmp_path / "f", 2), dist.FileStore(tmp_path / "f", 2)
    a.set("k", "v")
    assert b.get("k") == b"v" and b.add("n", 1) == 1 and a.add("n", 1) == 2
    with pytest.raises(ValueError, match="world_size must be positive or -1"):
        dist.FileStore(tmp_path / "g", 0)


def test_tcp_store_clients_and_errors():
    master = _tcp_master(timeout=datetime.timedelta(seconds=5))
    assert master.host == "127.0.0.1" and master.port > 0 and not master.libuvBackend
    client = dist.TCPStore("127.0.0.1", master.port, timeout=datetime.timedelta(seconds=5))
    threading.Timer(0.05, client.set, ("from_client", b"\x00\xff")).start()
    assert master.get("from_client") == b"\x00\xff"  # the master waits for the client
    counts = []
    adders = [threading.Thread(target=lambda: counts.append(
        [dist.TCPStore("127.0.0.1", master.port).add("n", 1) for _ in range(10)]))
        for _ in range(3)]
    for t in adders:
        t.start()
    for t in adders:
        t.join()
    assert master.get("n") == b"30" and sorted(sum(counts, [])) == list(range(1, 31))
    scoped = dist.PrefixStore("job", client)
    scoped.set("k", "v")
    assert master.get("job/k") == b"v" and scoped.underlying_store is client
    with pytest.raises(dist.DistNetworkError, match=r"timed out after 0.2 s while trying to "
                                                    r"connect to \(127.0.0.1, 1\)"):
        dist.TCPStore("127.0.0.1", 1, timeout=datetime.timedelta(seconds=0.2))
    with pytest.raises(dist.DistStoreError, match="1/2 clients joined"):
        dist.TCPStore("127.0.0.1", 0, 2, True, timeout=datetime.timedelta(seconds=0.2))
    with pytest.raises(ValueError, match="multi_tenant"):
        dist.TCPStore("127.0.0.1", 0, is_master=True, multi_tenant=True)
    with pytest.raises(TypeError, match="expected an ember.distributed.Store"):
        dist.PrefixStore("p", {})


def test_tcp_clients_fail_once_the_master_is_gone():
    """As torch's: when the master store goes, its server closes every connection, so the
    clients' next calls (and a call waiting in the server) raise instead of being served by a
    server nobody owns."""
    seconds = datetime.timedelta(seconds=5)
    master = _tcp_master(timeout=seconds)
    port = master.port
    client = dist.TCPStore("127.0.0.1", port, timeout=seconds)
    client.set("k", "v")
    waiting = []

    def wait_for_a_key_nobody_sets():
        try:
            dist.TCPStore("127.0.0.1", port, timeout=seconds).wait(["never"])
        except dist.DistError as exc:
            waiting.append(exc)

    waiter = threading.Thread(target=wait_for_a_key_nobody_sets)
    waiter.start()
    threading.Event().wait(0.2)
    del master  # (its finalizer stops the server)
    with pytest.raises(dist.DistNetworkError, match="closed the connection"):
        client.get("k")
    waiter.join(3)
    assert len(waiting) == 1 and isinstance(waiting[0], dist.DistNetworkError)


@pytest.mark.parametrize("make", [dist.HashStore, lambda: _tcp_master(), tdist.HashStore])
def test_keys_and_amounts_are_checked_as_torch(make):
    store = make()
    with pytest.raises(TypeError):
        store.set(5, "x")
    with pytest.raises(TypeError):
        store.add("n", 1.5)
    with pytest.raises(TypeError):
        store.check("k")  # (a str is not a list of keys)
    with pytest.raises(TypeError):
        store.wait(["k"], "soon")
    with pytest.raises(RuntimeError, match="(?i)wait timeout"):  # (both DistStoreErrors)
        store.wait(["never"], 0.05)  # (seconds, as a number)
    store.set(b"k", "v")  # a bytes key is its UTF-8 text
    assert store.get("k") == b"v" and store.add("n", 1) == 1

"""made_in (ember.export.local_state) tells the memory a block makes from memory that was there
before by the counters' creation order (version_counter.birth_mark), not by a heap scan."""

from __future__ import annotations

import threading

import ember
from ember.export.local_state import made_in
from ember.version_counter import VersionCounter, birth_mark


def test_counters_made_after_a_mark_are_born_above_it():
    old = VersionCounter()
    mark = birth_mark()
    assert old.born <= mark < VersionCounter().born


def test_a_view_of_older_memory_written_in_the_block_is_not_made_in_it():
    base = ember.zeros(4)
    with made_in() as made:
        base[1:].add_(1.0)
        fresh = ember.zeros(2)
        fresh.add_(1.0)
    assert [t is fresh for t in made.written] == [True]


def test_memory_another_thread_makes_meanwhile_is_not_the_blocks():
    kept = []

    def other() -> None:
        t = ember.zeros(2)
        t.add_(1.0)
        kept.append(t)

    with made_in() as made:
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
    assert made.written == []

"""mend60h: ember.overrides.is_tensor_method_or_property reads a cached member table."""

import ember
from ember import overrides


def test_is_tensor_method_or_property_scans_tensor_once():
    overrides.is_tensor_method_or_property(ember.Tensor.add)
    before = overrides._tensor_members.cache_info()
    for func in (ember.Tensor.add, ember.add, ember.Tensor.__add__, ember.Tensor.shape.__get__):
        overrides.is_tensor_method_or_property(func)
    after = overrides._tensor_members.cache_info()
    assert after.misses == before.misses  # (before: ~660 attributes scanned per call)
    assert [overrides.is_tensor_method_or_property(f) for f in
            (ember.Tensor.add, ember.add, ember.Tensor.__init__, None)] == [True] + [False] * 3
    # (None: True before, as a missing id's None "is" None; torch raises AttributeError)


def test_a_method_registered_later_is_a_tensor_method():
    def late_method(self):
        return self

    overrides.is_tensor_method_or_property(ember.Tensor.add)
    ember.Tensor.late_method_mend60 = late_method
    try:
        assert overrides.is_tensor_method_or_property(late_method)
    finally:
        del ember.Tensor.late_method_mend60
    assert not overrides.is_tensor_method_or_property(late_method)


def test_a_method_replaced_in_place_is_seen(monkeypatch):
    # (before: the table, rebuilt only when the member count changed, kept the old add)
    old_add = ember.Tensor.add
    overrides.is_tensor_method_or_property(old_add)

    def add(self, other):
        return old_add(self, other)

    monkeypatch.setattr(ember.Tensor, "add", add)
    assert overrides.is_tensor_method_or_property(add)
    assert not overrides.is_tensor_method_or_property(old_add)
    monkeypatch.undo()
    assert overrides.is_tensor_method_or_property(old_add)
    assert not overrides.is_tensor_method_or_property(add)

"""The one registry shape (issue 25 item 3): decorator and lazy paths, a clear unknown-name error,
listing, description, and no silent overwrite."""

from __future__ import annotations

import pytest

from storage.registry import Registry, UnknownName


def test_register_get_list_describe():
    reg: Registry = Registry("widget")

    @reg.register("b")
    def make_b():
        """Builds a b."""

    reg.add("a", "json:dumps")  # lazy: imported on first get
    assert reg.names() == ["a", "b"] and list(reg) == ["b", "a"]  # sorted listing; iteration in order added
    import json

    assert reg.get("a") is json.dumps and reg["b"] is make_b
    assert reg.describe("b") == "Builds a b." and "a" in reg and "c" not in reg


def test_unknown_name_lists_the_known_ones():
    reg: Registry = Registry("widget")
    reg.add("x", 1)
    reg.add("y", 2)
    with pytest.raises(UnknownName) as err:
        reg.get("z")
    assert str(err.value) == "unknown widget 'z'; known: x, y"
    assert isinstance(err.value, KeyError) and reg.get("z", None) is None


def test_a_taken_name_is_refused_unless_the_same_entry():
    reg: Registry = Registry("widget")

    def one():
        pass

    def two():
        pass

    reg.add("n", one)
    reg.add("n", one)  # a module imported twice: no-op
    with pytest.raises(ValueError, match=f"widget 'n' is already registered by {__name__}"):
        reg.add("n", two)


def test_loader_runs_once_before_the_first_miss_or_listing():
    calls = []
    reg: Registry = Registry("widget", loader=lambda: (calls.append(1), reg.add("late", 3)))
    reg.add("early", 1)
    assert reg.get("early") == 1 and calls == []  # a registered name needs no loading
    assert reg.get("late") == 3 and reg.names() == ["early", "late"] and calls == [1]

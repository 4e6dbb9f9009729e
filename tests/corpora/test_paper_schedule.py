"""The severity-balanced three-copy schedule and the sub-type registry."""

from collections import Counter

from corpora.papers.injectors import RULES
from corpora.papers.schedule import severity_schedule
from corpora.papers.subtypes import ERROR_TYPES, SEVERITIES, paper_subtypes


def test_each_combination_exactly_once_per_paper():
    for seed in range(5):
        for pid in ("a", "b", "legwork-2022", "x" * 30):
            sched = severity_schedule(pid, seed)
            assert sorted(sched) == [1, 2, 3]
            pairs = Counter((t, sev) for copy in sched.values() for t, sev in copy.items())
            assert pairs == Counter({(t, s): 1 for t in ERROR_TYPES for s in SEVERITIES})
            for copy in sched.values():
                assert sorted(copy) == sorted(ERROR_TYPES)


def test_seeded_and_independent_per_type():
    assert severity_schedule("p", 3) == severity_schedule("p", 3)
    draws = [severity_schedule(f"paper-{i}", 11) for i in range(300)]
    # independent permutations per type: all 6 permutations occur for each type, at roughly 1/6 each
    for t in ERROR_TYPES:
        perms = Counter(tuple(d[k][t] for k in (1, 2, 3)) for d in draws)
        assert len(perms) == 6 and min(perms.values()) > 25
    # independence between types: the copy-1 severities of two types agree about a third of the time
    agree = sum(d[1]["general"] == d[1]["numerics"] for d in draws) / len(draws)
    assert 0.2 < agree < 0.47
    assert any(severity_schedule(f"paper-{i}", 11) != severity_schedule(f"paper-{i}", 12) for i in range(10))


def test_registry_has_33_subtypes_and_rules_exist():
    reg = paper_subtypes()
    base = [s for s in reg.subtypes if s.corpus_variant is None and s.stands_in_for is None]
    assert len(base) == 33
    assert len([s for s in reg.subtypes if s.stands_in_for]) == 3  # rule stand-ins, never drawn (issue 21)
    for t in ERROR_TYPES:
        for sev in SEVERITIES:
            options = reg.for_combination(t, sev)
            assert 2 <= len(options) <= 3
            assert any(s.mechanism == "rule" for s in options), (t, sev)
    for s in reg.subtypes:
        assert (s.rule in RULES) if s.mechanism == "rule" else s.rule is None, s.name
    ml = {s.name for s in reg.for_combination("mathematics", "S3", "ml")}
    assert "shape_nonconformability" in ml and "dimensional_absurdity" not in ml
    assert set(reg.output_schema["required"]) == {"file", "original", "injected", "rationale"}

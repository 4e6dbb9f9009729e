"""System arguments are checked by type and closed set before Ray (issue 23 item 7), against a
typed model derived from each factory; identity vs runtime roles come from that model and run ids
of existing configs do not move."""

from __future__ import annotations

from verifiers.registry import SystemSpec, get_entry


def test_a_string_is_not_a_bool():
    problems = get_entry("field_match").argument_problems({"closed_world": "no"})
    assert problems == ["argument 'closed_world': Input should be a valid boolean (got 'no')"]


def test_values_outside_a_closed_set_are_named():
    (problem,) = get_entry("llm_agentic").argument_problems({"model": "m", "aggregation": "bogus"})
    assert problem.startswith("argument 'aggregation': Input should be 'model', 'consensus' or 'any_no_match'")
    (problem,) = get_entry("field_match").argument_problems({"aggregation": "bogus"})
    assert "argument 'aggregation'" in problem and "(got 'bogus')" in problem


def test_numbers_are_not_coerced_from_strings_or_fractions():
    problems = get_entry("field_match").argument_problems({"absence_quorum": 2.5, "title_threshold": "0.9"})
    assert [p.split(":")[0] for p in problems] == ["argument 'absence_quorum'", "argument 'title_threshold'"]


def test_config_values_pass():
    """What configs/sample.toml and the README give (TOML lists, ints for floats) is accepted."""
    entry = get_entry("field_match")
    assert entry.argument_problems({"sources": ["offline_index"], "index_path": "x.jsonl", "closed_world": True,
                                    "confidence": {"verified": 1}, "max_concurrency": 4}) == []  # fmt: skip
    assert get_entry("always_valid").argument_problems({"confidence": 1}) == []


def test_roles_come_from_the_arguments_model():
    model = get_entry("field_match").arguments_model()
    roles = {n: f.json_schema_extra["role"] for n, f in model.model_fields.items()}
    assert roles["max_concurrency"] == roles["client_options"] == "runtime" and roles["closed_world"] == "identity"
    identity, runtime = get_entry("field_match").argument_roles()
    assert set(runtime) == {"max_concurrency", "client_options"} and "closed_world" in identity


def test_run_ids_of_existing_configs_do_not_move():
    """The hashes main computed for configs/sample.toml's systems (issue 25: ids must not change)."""
    sample = SystemSpec("field_match", {"sources": ["offline_index"], "index_path": "corpora/samples/real_references.jsonl"})
    assert sample.config_hash() == HASHES["field_match"]
    assert SystemSpec("prescreen").config_hash() == HASHES["prescreen"]
    assert SystemSpec("always_valid").config_hash() == HASHES["always_valid"]
    assert SystemSpec("field_match", {**sample.args, "max_concurrency": 16}).config_hash() == HASHES["field_match"]


HASHES = {"field_match": "67bf39eb2ea8", "prescreen": "52bf0ff1f6a4", "always_valid": "8de74c24cf49"}  # main, c3cb568

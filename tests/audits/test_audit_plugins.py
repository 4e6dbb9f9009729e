"""Issue 25, item 1: an audit kind is a plug-in. Each audit owns its config sections (typed, closed,
paths relative to the config file), its identity (the run key) and its item kinds; `RunConfig`,
cluster/ and `jobs/run_corpus.py` know no kind. A toy kind registered at run time runs end to end."""

from __future__ import annotations

import json
import re
import sys

import pytest

from audits import AUDITS, get_audit
from audits.base import configure
from cluster.run_config import ConfigError, load_config
from tests.helpers.paths import REPO_ROOT

SNAPSHOT = "2026-11-01"
REVIEWS_DEFAULTS = {"path": None, "truth": None, "format": "auto", "track": "injected", "seed": 0, "copies": 1,
                    "min_injections": 1, "max_injections": 2, "anchors": None, "injector_model": None,
                    "injector_api_base": None, "unanswered": "exclude"}  # fmt: skip


def configured(path):
    config = load_config(path)
    return configure(get_audit(config.audit), config)


def write(tmp_path, text: str, name: str = "run.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_section_errors_name_the_file_and_the_field(tmp_path):
    bad = write(tmp_path, 'audit = "reviews"\n[reviews]\ncopies = -1\n')
    with pytest.raises(ConfigError, match=re.escape(f"{bad}: field 'reviews.copies': Input should be greater than")):
        configured(bad)
    typo = write(tmp_path, 'audit = "paper_audit"\n[papers]\npathz = ["p"]\n')
    with pytest.raises(ConfigError, match=re.escape(f"{typo}: field 'papers.pathz': Extra inputs are not permitted")):
        configured(typo)
    stray = write(tmp_path, 'workerz = 4\n')
    with pytest.raises(ConfigError, match=re.escape(f"{stray}: field 'workerz': Extra inputs are not permitted")):
        configured(stray)


def test_a_section_the_audit_does_not_use_is_an_error_naming_it(tmp_path):
    review_in_citations = write(tmp_path, '[reviews]\npath = "r.jsonl"\n')
    with pytest.raises(ConfigError) as err:
        configured(review_in_citations)
    assert str(err.value) == f"{review_in_citations}: section [reviews] is not used by audit 'citations' (its sections: none)"
    papers_in_reviews = write(tmp_path, 'audit = "reviews"\n[adjudication]\npanel = []\n')
    with pytest.raises(ConfigError, match=r"section \[adjudication\] is not used by audit 'reviews' \(its sections: \[reviews\]\)"):
        configured(papers_in_reviews)


def test_each_audit_resolves_its_own_paths_against_the_config_file(tmp_path, monkeypatch):
    conf = tmp_path / "configs"
    conf.mkdir()
    papers = configured(write(conf, 'audit = "paper_audit"\n[papers]\npaths = ["../p1", "/abs/p2"]\n'
                                    'errata_repos = ["../r1", { repo = "../r2", max_copies = 1 }]\n'))  # fmt: skip
    assert papers.papers.paths == [str(tmp_path / "p1"), "/abs/p2"]
    assert papers.papers.errata_repos == [str(tmp_path / "r1"), {"repo": str(tmp_path / "r2"), "max_copies": 1}]
    assert papers.adjudication.low_confidence == 0.7  # an absent section of the audit: its defaults
    monkeypatch.setenv("SCRUTINEER_SHARED_DATA", "/data/shared")
    reviews = configured(write(conf, 'audit = "reviews"\n[reviews]\npath = "$SCRUTINEER_SHARED_DATA/rc.jsonl"\n'
                                     'truth = "t.jsonl"\n'))  # fmt: skip
    assert reviews.reviews.path == "/data/shared/rc.jsonl" and reviews.reviews.truth == str(conf / "t.jsonl")


def test_a_stored_manifest_config_replays_with_the_sections_of_its_layout(tmp_path):
    """jobs/drift.py reruns a manifest's config (.json): one written before the sections moved carries
    every kind's sections with their defaults; the audit keeps its own and drops the rest."""
    old = {"audit": "citations", "snapshot": SNAPSHOT, "papers": {"paths": [], "seed": 7}, "reviews": REVIEWS_DEFAULTS,
           "adjudication": {"panel": []}}  # fmt: skip
    config = configured(write(tmp_path, json.dumps(old), "rerun.json"))
    assert config.sections == {} and "papers" not in config.model_dump()
    paper = configured(write(tmp_path, json.dumps({**old, "audit": "paper_audit"}), "paper.json"))
    assert set(paper.sections) == {"papers", "adjudication"} and paper.papers.seed == 7


def run_key_of(config_path, *argv: str) -> str:
    """The run key `jobs/run_corpus.py` gives the run's services (budget, ledger, outage guard)."""
    from unittest import mock

    from jobs import run_corpus

    config = run_corpus.build_config(run_corpus.parse_args(["--config", str(config_path), *argv]))
    with mock.patch("cluster.services_builder.build_services", side_effect=lambda llm, key, *a, **k: key):
        return run_corpus.make_services(config, get_audit(config.audit))


def test_run_keys_of_the_built_in_kinds_are_the_ones_before_the_sections_moved():
    """The run key names a run's budget, ledger and outage guard: existing runs must find theirs."""
    from cluster.services_builder import run_key
    from verifiers import SystemSpec

    assert run_key_of(REPO_ROOT / "configs" / "sample.toml", "--snapshot", SNAPSHOT) == "dbc49ee1ca4f9e56"
    paper = configured(REPO_ROOT / "configs" / "paper_audit.toml")
    systems = [SystemSpec("paper_reviewer_mechanical").config_hash()]
    legacy = run_key("paper_audit", "example_papers", [str(REPO_ROOT / "corpora/samples/papers/example-paper")], 7,
                     REVIEWS_DEFAULTS, SNAPSHOT, systems)  # the expression run_corpus.py had  # fmt: skip
    assert paper.papers.paths == [str(REPO_ROOT / "corpora/samples/papers/example-paper")]
    assert run_key_of(REPO_ROOT / "configs" / "paper_audit.toml", "--snapshot", SNAPSHOT) == legacy
    review = configured(REPO_ROOT / "configs" / "review_audit.toml")
    systems = sorted(SystemSpec(s.name, s.args).config_hash() for s in review.systems)
    legacy = run_key("reviews", review.corpus.name, [], 7, review.reviews.model_dump(mode="json"), SNAPSHOT, systems)
    assert run_key_of(REPO_ROOT / "configs" / "review_audit.toml", "--snapshot", SNAPSHOT) == legacy


def test_the_driver_and_the_run_config_know_no_audit_kind():
    """Adding a kind edits neither: no section, item kind or audit name of a built-in kind in them."""
    for path in ("jobs/run_corpus.py", "cluster/run_config.py", "cluster/run_plan.py"):
        code = (REPO_ROOT / path).read_text(encoding="utf-8")
        for word in ("papers", "reviews", "adjudication", "paper_audit", "paper_copy"):
            assert not re.search(rf"\b{word}\b", code), (path, word)


def test_a_system_that_cannot_read_the_audits_items_is_refused_before_ray(tmp_path, capsys):
    from jobs.run_corpus import EXIT_BAD_INPUT, main

    def ray_up() -> bool:
        return "ray" in sys.modules and sys.modules["ray"].is_initialized()

    # an earlier test in this worker (a job run in-process on the session's head) may have left Ray
    # connected: what counts is that this call connects nothing
    was_up = ray_up()
    storage = tmp_path / "runs"
    rc = main(["--systems", "prescreen,review_lexical", "--storage", str(storage), "--tracking-uri", "none",
               "--ray-address", "127.0.0.1:1"])  # fmt: skip
    assert rc == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "error: system 'review_lexical': reads review items, not citation, and audit 'citations' holds citation items" in err
    assert "prescreen" not in err and not storage.exists()  # named before storage or a cluster is touched
    assert was_up or "ray" not in sys.modules or not sys.modules["ray"].is_initialized()
    assert ray_up() == was_up


def test_built_in_systems_declare_the_kinds_they_read():
    from verifiers import registered

    kinds = {name: entry.accepts for name, entry in registered().items()}
    assert kinds["field_match"] == kinds["prescreen"] == ("citation",)
    assert kinds["paper_reviewer_mechanical"] == ("paper_copy",) and kinds["review_lexical"] == ("review",)
    assert kinds["ensemble"] is None  # a wrapper: whatever its members read
    assert registered()["review_null"].kind_problem(("review",)) is None


def toy_config(tmp_path, seed: int = 0, note: str = "") -> object:
    (tmp_path / "words.txt").write_text("apple\nxylo\nbanana\nxenon\ncherry\n")
    return write(tmp_path, f'audit = "toy"\nplugins = ["tests.audits.toy_audit"]\nsnapshot = "{SNAPSHOT}"\n'
                           f'tracking_uri = "none"\nbootstrap = 0\nworkers = 1\ncpus_per_worker = 0.5\n'
                           f'[corpus]\nname = "toy_words"\n[toy]\nwords = "words.txt"\nseed = {seed}\nnote = "{note}"\n'
                           '[[systems]]\nname = "toy_x_detector"\n', f"toy-{seed}-{note}.toml")  # fmt: skip


def test_a_toy_kinds_section_and_identity_come_from_its_plug_in(tmp_path):
    config = configured_with_plugins(toy_config(tmp_path))
    assert config.toy.words == str(tmp_path / "words.txt")  # relative to the config file
    assert "toy" in AUDITS
    base = run_key_of(toy_config(tmp_path))
    assert run_key_of(toy_config(tmp_path, note="runtime only")) == base  # not an identity field
    assert run_key_of(toy_config(tmp_path, seed=1)) != base
    # the extension cost (docs/design.md): files outside the plug-in that name the kind, its section or item kind
    rooms = ("storage", "clients", "checkers", "corpora", "verifiers", "adjudication", "scoring", "cluster", "audits",
             "jobs")  # fmt: skip
    outside = [p.relative_to(REPO_ROOT) for room in rooms for p in (REPO_ROOT / room).rglob("*.py")
               if re.search(r"\btoy(_word|_x_detector)?\b", p.read_text(encoding="utf-8"))]
    assert outside == []
    citations = write(tmp_path, '[toy]\nwords = "words.txt"\nplugins = []\n')
    with pytest.raises(ConfigError, match=r"section \[toy\] is not used by audit 'citations'"):
        configured(citations)


def configured_with_plugins(path):
    from jobs.run_corpus import build_config, parse_args

    return build_config(parse_args(["--config", str(path)]))


@pytest.mark.integration  # a Ray run: the session's head
def test_a_toy_audit_kind_runs_end_to_end_through_run_corpus(ray_head, tmp_path, monkeypatch, capsys):
    from jobs.run_corpus import EXIT_OK
    from storage.store import Store
    from tests.helpers.run_job import run_corpus_on_head

    rc = run_corpus_on_head(ray_head, monkeypatch, ["--config", str(toy_config(tmp_path)), "--storage", str(tmp_path / "runs")],
                            tmp_path)  # fmt: skip
    out = capsys.readouterr()
    assert rc == EXIT_OK, out.out[-3000:] + out.err[-3000:]
    assert "Toy audit: accuracy" in out.out
    [run_dir] = [p for p in (tmp_path / "runs").iterdir() if "@" in p.name]
    assert run_dir.name.startswith("toy_words@") and "__toy_x_detector@" in run_dir.name
    store = Store(str(tmp_path / "runs"))
    scores = store.read_json(run_dir.name, "scores.json")
    assert scores["accuracy"] == 1.0 and scores["num_scored"] == 5 and scores["status"] == "complete"
    items = store.read_table(run_dir.name, "items")
    assert set(items.column("kind").to_pylist()) == {"toy_word"}
    manifest = store.read_json(run_dir.name, "manifest.json")
    assert manifest["config"]["toy"] == {"words": str(tmp_path / "words.txt"), "seed": 0, "note": ""}

"""field_match: six sub-tests, the three aggregation rules, outage safety, true call counts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from clients.errors import TransientError
from index.build import IndexSource, build_index
from index.offline_index import open_index
from storage.records import Item
from tests.verifiers.conftest import ACL_XML
from tests.verifiers.sources import FailingSource, NamedIndex
from verifiers.registry import SystemSpec, build_system
from verifiers.system import RunContext

CTX = RunContext(run_id="test", snapshot="2026-05-05")
ADAPLER = {"title": "AdapLeR: Speeding up Inference by Adaptive Length Reduction",
           "author": "Ali Modarressi and Hosein Mohebbi and Mohammad Taher Pilehvar", "year": "2022",
           "booktitle": "ACL", "doi": "10.18653/v1/2022.acl-long.1"}


def item(item_id: str, **fields: str) -> Item:
    return Item(item_id, "citation", "test", "dev", {"bibtex_type": "inproceedings", "fields": fields})


def run(system, items):  # noqa: ANN001, ANN201
    return {o.item_id: o for o in asyncio.run(system.run(items, CTX))}


@pytest.fixture(scope="module")
def acl_only_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("acl") / "acl.parquet"
    build_index([IndexSource("acl_anthology", str(p)) for p in sorted(ACL_XML.glob("*.xml"))], path)
    return path


def perturbed_items(real_index_path: Path) -> list[Item]:
    index = open_index(real_index_path)
    other = index.record(index.find_doi("10.18653/v1/2022.acl-long.2"))
    no_doi = {k: v for k, v in ADAPLER.items() if k != "doi"}
    return [
        item("valid", **ADAPLER),
        item("wrong_venue", **{**no_doi, "booktitle": "ICML"}),
        item("swapped", **{**no_doi, "author": "Yann LeCun and Geoffrey Hinton and Yoshua Bengio"}),
        item("near_miss", **{**no_doi, "title": "AdapLeR: Speeding up Training by Adaptive Length Reduction"}),
        item("hybrid", **{**ADAPLER, "doi": other.doi}),
        item("chimeric", **{**ADAPLER, "title": "Length Reduction Makes Transformers Forget Their Inputs"}),
        item("version", **{**no_doi, "booktitle": "ICML", "year": "2019"}),
        item("future", **{**ADAPLER, "year": "2031"}),
        item("fabricated", title="Quantum Citation Alignment with Hallucinated Coconut Transformers",
             author="Alice Example and Bob Fiction", year="2023", booktitle="NeurIPS"),
    ]


def test_contradictions_are_typed_and_subtests_filled(real_index_path: Path) -> None:
    sources = ["offline_index", NamedIndex("dblp_snapshot", open_index(real_index_path))]
    system = build_system(SystemSpec("field_match", {"sources": sources, "index_path": str(real_index_path)}))
    out = run(system, perturbed_items(real_index_path))
    assert out["valid"].label == "VALID" and out["valid"].confidence == 0.95
    assert out["valid"].subtests == {"doi_resolves": True, "title_exists": True, "authors_match": True,
                                     "venue_correct": True, "cross_db_agreement": True, "fields_complete": True}
    expected = {"wrong_venue": "wrong_venue", "swapped": "swapped_authors", "near_miss": "near_miss_title",
                "hybrid": "hybrid_fabrication", "future": "future_date", "fabricated": "plausible_fabrication",
                "chimeric": "chimeric_title", "version": "arxiv_version_mismatch"}
    for key, kind in expected.items():
        assert (out[key].label, out[key].predicted_type) == ("HALLUCINATED", kind), (key, out[key].reason)
    assert out["wrong_venue"].subtests["venue_correct"] is False and out["wrong_venue"].subtests["authors_match"] is True
    assert out["swapped"].subtests["authors_match"] is False and out["swapped"].subtests["cross_db_agreement"] is False
    assert out["fabricated"].subtests["title_exists"] is False
    assert out["future"].subtests["fields_complete"] is False
    # true call counts: DOI lookup + title search per source for entries with a DOI, title search otherwise
    assert out["valid"].api_calls == 4 and out["wrong_venue"].api_calls == 2
    assert out["valid"].api_sources_queried == ["offline_index", "dblp_snapshot"]


def test_aggregation_rules_differ_only_on_partial_coverage(real_index_path: Path, acl_only_path: Path) -> None:
    full = open_index(real_index_path)
    partial = NamedIndex("acl_only", open_index(acl_only_path))
    crossref_record = full.record(next(i for i, o in enumerate(full.table.column("origin").to_pylist()) if o == "crossref"))
    crossref_item = item("crossref_only", title=crossref_record.title,
                         author=" and ".join(f"{a.given} {a.family}" for a in crossref_record.authors) or "Anonymous Author",
                         year=str(crossref_record.year), journal=crossref_record.venue or "")
    fabricated = perturbed_items(real_index_path)[-1]
    labels = {}
    for aggregation in ("any_missing", "consensus", "contradiction"):
        system = build_system(SystemSpec("field_match", {"sources": [full, partial], "aggregation": aggregation}))
        out = run(system, [crossref_item, fabricated])
        labels[aggregation] = (out["crossref_only"].label, out["fabricated"].label)
    assert labels["any_missing"] == ("HALLUCINATED", "HALLUCINATED")  # one database lacking it is enough: FP
    assert labels["consensus"] == ("VALID", "HALLUCINATED")
    assert labels["contradiction"] == ("VALID", "HALLUCINATED")


def test_absence_from_one_source_is_uncertain_unless_closed_world(real_index_path: Path) -> None:
    fabricated = perturbed_items(real_index_path)[-1]
    single = build_system(SystemSpec("field_match", {"index_path": str(real_index_path)}))
    out = run(single, [fabricated])["fabricated"]
    assert out.label == "UNCERTAIN" and "absence from one database is not fabrication" in out.reason
    assert out.subtests["title_exists"] is None
    closed = build_system(SystemSpec("field_match", {"index_path": str(real_index_path), "closed_world": True}))
    assert run(closed, [fabricated])["fabricated"].label == "HALLUCINATED"


@pytest.mark.parametrize("aggregation", ["any_missing", "consensus", "contradiction"])
def test_outage_is_never_a_fabrication(real_index_path: Path, aggregation: str) -> None:
    down = FailingSource("crossref", TransientError("HTTP 503", source="crossref", status=503))
    system = build_system(SystemSpec("field_match", {"sources": [down], "aggregation": aggregation, "closed_world": True}))
    items = perturbed_items(real_index_path)
    out = run(system, [items[0], items[-1]])
    for o in out.values():
        assert o.label == "UNCERTAIN" and "TransientError: crossref" in o.reason and o.predicted_type is None
        assert o.detail["outage_sources"] == ["crossref"]
    assert out["valid"].api_calls == 2 and down.calls == 3


def test_field_match_runs_in_a_ray_worker(ray_session, real_index_path: Path) -> None:  # noqa: ANN001
    import ray

    @ray.remote
    def audit(spec: dict, items: list[dict]) -> list[tuple[str, str, str | None]]:
        from storage.records import Item as RemoteItem
        from verifiers.registry import SystemSpec as Spec
        from verifiers.registry import build_system as build
        from verifiers.system import RunContext as Ctx

        system = build(Spec("field_match", spec))
        outs = asyncio.run(system.run([RemoteItem.from_row(r) for r in items], Ctx("ray", "2026-05-05")))
        return sorted((o.item_id, o.label, o.predicted_type) for o in outs)

    items = perturbed_items(real_index_path)
    spec = {"index_path": str(real_index_path), "closed_world": True}
    remote = ray.get(audit.remote(spec, [i.to_row() for i in items]), timeout=120)
    local = sorted((o.item_id, o.label, o.predicted_type) for o in run(build_system(SystemSpec("field_match", spec)), items).values())
    assert remote == local and ("valid", "VALID", None) in remote

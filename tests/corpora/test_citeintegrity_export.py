"""CiteIntegrity suite: what is exported reads back as built (compound surnames, venue initials,
entities), the 2019-2025 window, strata and deposited family names, and the export audit."""

from __future__ import annotations

import dataclasses

import pytest

from corpora.citations.citeintegrity_suite import (
    PAPER_YEAR_WINDOW,
    SourceRecord,
    StructuredCitation,
    SuiteConfig,
    audit_suite,
    build_suite,
    exported_fields,
    hallmark_entries,
    query_stratum,
    record_from_row,
    variants,
    venue_initials,
)
from corpora.citations.normalization import CitationFields, normalize_text, venue_similarity
from corpora.citations.normalization import venue_initials as matcher_initials


def _rec(rid: str, title: str, authors: tuple[str, ...], year: int = 2021, venue: str = "Journal of Tests",
         stratum: str = "s") -> SourceRecord:
    return SourceRecord(rid, stratum, StructuredCitation(f"10.5555/{rid}", title, authors, year, venue))


RECORDS = [
    _rec("a", "Semantic segmentation of urban scenes with transformers", ("Van Gool", "Zhang")),
    _rec("b", "Epidemic modelling with contact networks", ("VAN DEN DRIESSCHE", "Watmough")),
    _rec("c", "Speech recognition for low resource languages", ("Martinez Hinarejos", "Casacuberta"),
         venue="C&amp;EN Global Enterprise"),
    _rec("d", "Children&apos;s exposure to roadside pollutants", ("O&apos;Neill", "de la Cruz"),
         venue="Journal of Environmental Health"),
    _rec("e", "Perovskite photovoltaics: stability under humidity", ("García-López", "Smith")),
    _rec("f", "Graphene membranes for desalination at scale", ("Nguyen", "Le Roux")),
]


def _read(c: StructuredCitation) -> CitationFields:
    return CitationFields.from_bibtex_fields(exported_fields(c))


def test_compound_surnames_survive_export_and_parse():
    for rec in RECORDS:
        assert list(_read(rec.citation).authors) == list(rec.citation.authors)
    suite = build_suite(RECORDS, SuiteConfig(near_title_cutoff=None))
    for entry, inst in zip(hallmark_entries(suite), suite.instances, strict=True):
        read = CitationFields.from_bibtex_fields(entry["fields"])
        assert list(read.authors) == list(inst.citation.authors), entry["fields"]["author"]
    short = next(i for i in suite.instances if i.source_id == "a" and i.variant == "short")
    assert _read(short.citation).authors == ("Van Gool",) and _read(short.citation).truncated


def test_venue_initials_are_one_rule_for_generator_and_matcher():
    venue = "C&amp;EN Global Enterprise"
    assert venue_initials(venue) == "CEGE" == matcher_initials(venue).upper()
    short = dict((n, c) for n, _, c in variants(RECORDS[2].citation, RECORDS[0].citation))["short"]
    assert short.venue == "CEGE"
    assert venue_similarity(_read(short).venue, venue) == 1.0


def test_formatting_decodes_entities_before_upper_casing():
    fmt = dict((n, c) for n, _, c in variants(RECORDS[3].citation, RECORDS[0].citation))["formatting"]
    assert "&APOS;" not in fmt.title and "&APOS;" not in "".join(fmt.authors)
    assert fmt.normalized() == RECORDS[3].citation.normalized()


def test_formatting_keeps_a_double_encoded_entity_intact():
    src = StructuredCitation("10.3102/x", "Exploring Large Language Models&amp;#39; Responses", ("Nabizadeh",), 2025,
                             "AERA 2025")
    fmt = dict((n, c) for n, _, c in variants(src, RECORDS[0].citation))["formatting"]
    assert "&amp;" in fmt.title and fmt.normalized() == src.normalized()


def test_every_acceptable_export_agrees_with_its_source_and_audit_passes():
    suite = build_suite(RECORDS, SuiteConfig(near_title_cutoff=None))
    report = audit_suite(suite)
    assert report.ok, report.failures
    assert {i.variant for i in suite.instances} >= {"short", "formatting"}


def test_export_audit_catches_a_lossy_author_export(monkeypatch):
    """Defect 5: the audit reads the exported fields, so the old unbraced " and " join, which drops
    "Van" from "Van Gool", fails it."""
    import corpora.citations.citeintegrity_suite as suite_module

    suite = build_suite(RECORDS, SuiteConfig(near_title_cutoff=None))
    monkeypatch.setattr(suite_module, "bibtex_author_field",
                        lambda authors, truncated=False: " and ".join(authors) + (" and others" if truncated else ""))
    report = audit_suite(suite)
    assert any("Van Gool" in f for f in report.checks["export_round_trip"])
    assert any("authors score" in f for f in report.checks["acceptable_fields_agree"])
    assert any("/formatting" in f for f in report.checks["formatting_preserved"])


def test_export_audit_catches_disagreeing_venue_initials():
    suite = build_suite(RECORDS, SuiteConfig(near_title_cutoff=None))
    insts = list(suite.instances)
    k = next(k for k, i in enumerate(insts) if i.source_id == "c" and i.variant == "short")
    insts[k] = dataclasses.replace(insts[k], citation=dataclasses.replace(insts[k].citation, venue="CAEGE"))
    report = audit_suite(dataclasses.replace(suite, instances=tuple(insts)))
    assert any("c/short" in f and "venue score" in f for f in report.checks["acceptable_fields_agree"])


def test_year_window_is_the_papers_screen_and_configurable():
    recs = RECORDS + [_rec("old", "Convolutional networks for handwritten digits", ("LeCun",), year=1998),
                      _rec("new", "Forecasting heatwaves with ensembles", ("Fischer",), year=2026)]
    windowed = build_suite(recs, SuiteConfig(near_title_cutoff=None, year_window=PAPER_YEAR_WINDOW))
    excluded = dict(windowed.excluded)
    assert excluded["old"] == "year 1998 outside 2019-2025" and excluded["new"] == "year 2026 outside 2019-2025"
    assert "old" not in dict(build_suite(recs, SuiteConfig(near_title_cutoff=None)).excluded)


def test_rows_keep_deposited_family_names_and_their_own_stratum():
    row = {"doi": "10.5555/x", "title": "Deep learning for speech translation", "year": 2022,
           "venue": "Pattern Recognition Letters",
           "authors": [{"family": "Martinez Hinarejos", "given": "Carlos D."}, {"family": "van der Maaten", "given": "L"}]}
    rec = record_from_row(row)
    assert rec is not None and rec.citation.authors == ("Martinez Hinarejos", "van der Maaten")
    assert rec.stratum == "Artificial Intelligence"  # "learning" is a query word; no file index involved
    assert record_from_row({**row, "venue": None}) is None
    assert query_stratum("Heat waves and climate change adaptation", "Sustainability") == "Climate Sustainability"
    assert query_stratum("Cohort study of influenza epidemiology", "Public Health Reports") == "Public Health"
    assert query_stratum("Nanotechnology-enabled catalysts", "Materials Today") == "Materials Science"
    assert query_stratum("On the history of opera", "Music Quarterly") == "Other"


def _write_refs(path, rows):  # noqa: ANN001, ANN202
    import json

    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_generator_cli_exposes_near_title_cutoff_and_year_window(tmp_path):
    import json

    from jobs.generate_corpus import main

    base = {"bibtex_type": "article", "domain": "x", "journal": "Journal of Tests"}
    rows = [
        {**base, "ref_id": "a", "title": "Deep learning for protein folding", "authors": ["Ann Lee"], "year": 2020, "doi": "10.5555/a"},
        {**base, "ref_id": "b", "title": "Deep learning for protein folding tasks", "authors": ["Bo Chan"], "year": 2021, "doi": "10.5555/b"},
        {**base, "ref_id": "c", "title": "Glacier melting in alpine valleys", "authors": ["Cy Dunn"], "year": 2019, "doi": "10.5555/c"},
        {**base, "ref_id": "d", "title": "Urban heat islands and mortality", "authors": ["Eve Fox"], "year": 2012, "doi": "10.5555/d"},
    ]
    refs = tmp_path / "refs.jsonl"
    _write_refs(refs, rows)

    def sources(*flags: str) -> set[str]:
        out = tmp_path / "suite.jsonl"
        assert main(["citeintegrity", "--references", str(refs), "--out", str(out), *flags]) == 0
        return {json.loads(line)["source_id"] for line in out.read_text().splitlines()}

    assert "b" not in sources("--near-title-cutoff", "0.9")  # 0.9-similar to a: screened out
    assert sources("--near-title-cutoff", "none") == {"a", "b", "c", "d"}  # the ablation keeps it
    assert "d" not in sources("--near-title-cutoff", "none", "--years", "2019-2025")  # 2012 is outside the window


@pytest.mark.requires_shared_data
@pytest.mark.heavy
def test_generator_passes_its_own_audit_on_dev_public(tmp_path):
    """Defect 3: dev_public titles carry "&apos;"; the formatting variant used to upper-case it."""
    from jobs.generate_corpus import main
    from tests.helpers.paths import HALLMARK_DATA, require_shared_data

    require_shared_data()
    out = tmp_path / "dev_suite.jsonl"
    assert main(["citeintegrity", "--references", str(HALLMARK_DATA / "dev_public.jsonl"),
                 "--references-format", "hallmark", "--out", str(out)]) == 0
    assert out.read_text().count("\n") > 1000


def test_deposited_families_with_commas_or_and_survive_export():
    """Real Crossref deposits: an affiliation or two people in one family field stays one element."""
    odd = ("Lagkadinou, MD, Ph.D.", "Department of Science and Technology, Tokyo", "Roman Hornung, David Causeur")
    c = StructuredCitation("10.5555/odd", "Antibody conjugates in oncology", odd, 2025, "J")
    assert [normalize_text(a) for a in _read(c).authors] == [normalize_text(a) for a in odd]
    assert _read(c).authors[0] == odd[0] and _read(c).authors[2] == odd[2]
    assert _read(dataclasses.replace(c, authors=odd[:1], truncated=True)).authors == odd[:1]

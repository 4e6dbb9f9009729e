"""field_match and the seven CiteIntegrity rules on CiteIntegrity-style suites and on HALLMARK dev_public.

    python bench/bench_citation_verifiers.py            # everything (a few minutes on one core)
    python bench/bench_citation_verifiers.py --part suite
    python bench/bench_citation_verifiers.py --part hallmark

Suites (reference 003 protocol, `corpora/citations/citeintegrity_suite.py`):
  * `sample`: the bundled suite (hand-typed well-known references);
  * `crossref800`: built here from the first 800 usable real Crossref works recorded in
    ../shared/data/bibsources/refchecker (deposited family names; strata = the paper's keyword
    queries matched on each record's own title and venue, `query_stratum`).
  The index holds every retained source record (the paper's fixed reference collection). Rows:
  per rule the validation-selected threshold and test precision / recall / F1 / FAR / AUROC /
  separation margin; the title-deletion stress curve (budgets 1, 2, 4, 8, 16: correct retrieval,
  acceptance of the correct source, acceptance of a wrong candidate); reference omission; and
  field_match (closed world) per variant.

`--part real` (issue 13): dev_public against the index a user would have offline, the bibsources
dumps plus every dev_public VALID entry's own record (a closed-world upper bound, labelled so),
per system and rule mode: DR, FPR, MCC, ECE, decided fraction, per-type detection; and the
cascade prescreen -> offline index -> Gemini 2.5 Pro replayed from its released per-entry answers
(no network: the online-sources stage is left out), with a row per stage (items decided, DR/FPR
of the decided items, API calls, LLM tokens).

HALLMARK dev_public, three indexes:
  * `closed`: every dev_public VALID entry (513 records). Every valid entry is in the index by
    construction, so FPR is flattered: a closed-world upper bound, not a deployment estimate;
  * `half`: a seeded half of the VALID entries; FPR is reported separately for valid entries in
    and out of the index (the out half shows what a coverage gap does);
  * `real`: real records with no dev_public provenance (ACL toy anthology, RefChecker's Crossref
    works and BibTeX samples): coverage is reported, it is near zero for these ML venues.
  Rows: DR, FPR (UNCERTAIN counted as not flagged, HALLMARK's committed-valid convention),
  UNCERTAIN rate per class, type accuracy among detections, api calls, and for field_match the
  observed accuracy of each decision path (to compare with its stated confidence).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import json
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from corpora.citations.citeintegrity_suite import (  # noqa: E402
    SAMPLE_SUITE_PATH,
    SourceRecord,
    SuiteConfig,
    build_suite,
    hallmark_entries,
    load_suite_instances,
    records_from_rows,
    suite_from_instances,
)
from corpora.citations.hallmark import load_hallmark_jsonl  # noqa: E402
from corpora.citations.normalization import CitationFields, normalize_text  # noqa: E402
from index.build import IndexSource, build_index, write_index  # noqa: E402
from index.offline_index import OfflineIndex  # noqa: E402
from index.readers import read_source  # noqa: E402
from storage.records import Item  # noqa: E402
from verifiers.citations.citeintegrity_rules import (  # noqa: E402
    RULES,
    Calibration,
    calibrate,
    features,
    retrieve,
    rule_score,
)
from verifiers.citations.source_set import CountedSource  # noqa: E402
from verifiers.registry import SystemSpec, build_system  # noqa: E402
from verifiers.system import RunContext  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
REFCHECKER = DATA / "bibsources" / "refchecker" / "tests" / "fixtures"
ACL_XML = DATA / "bibsources" / "acl_anthology" / "python" / "tests" / "toy_anthology" / "xml"
DEV = DATA / "hallmark" / "dev_public.jsonl"
CTX = RunContext(run_id="bench", snapshot="2026-05-05")
BUDGETS = (1, 2, 4, 8, 16)


def row(**fields: object) -> None:
    print(json.dumps(fields, default=lambda v: round(float(v), 4)), flush=True)


# ---- suites -------------------------------------------------------------------------------------
def crossref_references(limit: int = 800, year_window: tuple[int, int] | None = None) -> list[SourceRecord]:
    """The first `limit` usable recorded Crossref works (`records_from_rows`: deposited family
    names, the keyword-query stratum of their own title and venue)."""
    files = sorted((REFCHECKER / "test_cache" / "api_cache" / "crossref").glob("*.json"))
    return records_from_rows((r for path in files for r in read_source("crossref", path)), limit, year_window)


def suite_index(suite, tmp: Path) -> Path:  # noqa: ANN001
    rows = [{"origin": "suite", "key": rid, "title": c.title, "authors": [{"family": a, "given": ""} for a in c.authors],
             "year": c.year, "venue": c.venue, "doi": c.doi, "arxiv_id": None, "type": "article", "file": None}
            for rid, c in sorted(suite.records.items())]
    path = tmp / f"suite_{len(rows)}.parquet"
    write_index(rows, path)
    return path


def auroc(scores: np.ndarray, z: np.ndarray) -> float:
    pos, neg = scores[z == 1], scores[z == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def delete_budget(title: str, budget: int, source_id: str) -> str:
    """Delete `budget` alphabetic characters of the normalized title at positions from a list
    shuffled with seed 20261101 + the source's id; budgets are nested; one letter always stays."""
    norm = normalize_text(title)
    letters = [i for i, c in enumerate(norm) if c.isalpha()]
    rng = random.Random(20261101 + int(hashlib.sha256(source_id.encode()).hexdigest()[:8], 16))
    rng.shuffle(letters)
    drop = set(letters[: min(budget, len(letters) - 1)])
    return "".join(c for i, c in enumerate(norm) if i not in drop)


def run_suite(name: str, suite, tmp: Path) -> dict:  # noqa: ANN001
    index_path = suite_index(suite, tmp)
    index = OfflineIndex.load(index_path)
    entries = hallmark_entries(suite)
    items = [Item(e["bibtex_key"], "citation", name, i.partition, {"bibtex_type": "article", "fields": e["fields"]})
             for e, i in zip(entries, suite.instances, strict=True)]

    async def candidates() -> list:
        return [await retrieve(CitationFields.from_bibtex_fields(it.payload["fields"]), CountedSource(index)) for it in items]

    start = time.perf_counter()
    cands = asyncio.run(candidates())
    feature_s = time.perf_counter() - start
    x = np.array([c.features if c.features else (np.nan,) * 4 for c in cands])
    z = np.array([i.z for i in suite.instances])
    part = np.array([i.partition for i in suite.instances])
    doi_in = np.array([c.doi_in_source for c in cands])
    cal = calibrate(x[part == "train"], z[part == "train"], x[part == "validation"], z[part == "validation"])
    logistic = (cal.logistic_coef, cal.logistic_intercept)
    test = part == "test"
    row(part="suite", suite=name, records=len(suite.records), pairs=len(suite.pairs), instances=len(items),
        test_instances=int(test.sum()), no_candidate=int(sum(c.record is None for c in cands)),
        feature_seconds=feature_s, logistic_coef=cal.logistic_coef, logistic_intercept=cal.logistic_intercept)
    for rule in RULES:
        s = np.array([rule_score(rule, None if np.isnan(v).any() else v, d, logistic) for v, d in zip(x, doi_in, strict=True)])
        thr = cal.thresholds[rule]
        acc = s >= thr
        tz, ta, ts = z[test], acc[test], s[test]
        tp, fp, fn = int((ta & (tz == 1)).sum()), int((ta & (tz == 0)).sum()), int((~ta & (tz == 1)).sum())
        precision = tp / (tp + fp) if tp + fp else float("nan")
        recall = tp / (tp + fn) if tp + fn else float("nan")
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        row(part="suite_rule", suite=name, rule=rule, threshold=thr, precision=precision, recall=recall, f1=f1,
            far=fp / max(1, int((tz == 0).sum())), auroc=auroc(ts, tz),
            min_acceptable=ts[tz == 1].min(), max_inconsistent=ts[tz == 0].max(),
            margin=ts[tz == 1].min() - ts[tz == 0].max())
    # title-deletion stress with frozen thresholds
    sources = sorted({i.source_id for i in suite.instances if i.partition == "test"})
    for budget in BUDGETS:
        retrieved = 0
        accepted_correct: Counter = Counter()
        accepted_wrong: Counter = Counter()
        for sid in sources:
            rec = suite.records[sid]
            cited = CitationFields(None, delete_budget(rec.title, budget, sid), rec.authors, rec.year, rec.venue, False)
            hits = index.search(cited.title, limit=1)
            if not hits:
                continue
            cand = index.record(hits[0].record_id)
            correct = cand.raw["key"] == sid
            retrieved += correct
            f = features(cited, cand)
            for rule in ("equal_weights", "weighted", "minimum_field", "logistic"):
                if rule_score(rule, f, logistic=logistic) >= cal.thresholds[rule]:
                    (accepted_correct if correct else accepted_wrong)[rule] += 1
        row(part="suite_stress", suite=name, budget=budget, queries=len(sources), correct_retrieval=retrieved,
            accepted_correct=dict(accepted_correct), accepted_wrong=dict(accepted_wrong))
    # reference omission: DOI-free test instances with their source removed from the candidates
    omitted = accepted = 0
    for inst in suite.instances:
        if inst.partition == "test" and inst.variant in ("doi_omitted", "title_typo"):
            source_rid = next(h.record_id for h in index.search(suite.records[inst.source_id].title, limit=3)
                              if index.record(h.record_id).raw["key"] == inst.source_id)
            hits = index.search(inst.citation.title, limit=1, exclude={source_rid})
            omitted += 1
            if hits:
                cited = CitationFields(None, inst.citation.title, inst.citation.authors, inst.citation.year,
                                       inst.citation.venue, inst.citation.truncated)
                accepted += rule_score("weighted", features(cited, index.record(hits[0].record_id))) >= cal.thresholds["weighted"]
    row(part="suite_omission", suite=name, queries=omitted, weighted_accepts_substitute=accepted)
    # field_match, closed world over the fixed collection
    system = build_system(SystemSpec("field_match", {"index_path": str(index_path), "closed_world": True,
                                                     "local_rules": False}))
    outs = {o.item_id: o for o in asyncio.run(system.run([it for it in items if it.split == "test"], CTX))}
    per_variant: dict[str, Counter] = defaultdict(Counter)
    for it, inst in zip(items, suite.instances, strict=True):
        if inst.partition == "test":
            per_variant[inst.variant][outs[it.item_id].label] += 1
    tz = [inst.z for inst in suite.instances if inst.partition == "test"]
    labels = [outs[it.item_id].label for it in items if it.split == "test"]
    tp = sum(1 for zz, lab in zip(tz, labels, strict=True) if zz == 1 and lab == "VALID")
    fp = sum(1 for zz, lab in zip(tz, labels, strict=True) if zz == 0 and lab == "VALID")
    fn = sum(1 for zz, lab in zip(tz, labels, strict=True) if zz == 1 and lab != "VALID")
    row(part="suite_field_match", suite=name, f1_accept=2 * tp / max(1, 2 * tp + fp + fn), far=fp / max(1, tz.count(0)),
        per_variant={v: dict(c) for v, c in sorted(per_variant.items())})
    return {"calibration": cal}


# ---- HALLMARK -------------------------------------------------------------------------------------
def hallmark_indexes(tmp: Path) -> dict[str, tuple[Path, set[str]]]:
    valid = list(read_source("hallmark", DEV))
    keys = sorted(r["key"] for r in valid)
    half = set(random.Random(20261129).sample(keys, len(keys) // 2))
    closed, halfp, real = tmp / "closed.parquet", tmp / "half.parquet", tmp / "real.parquet"
    write_index(valid, closed)
    write_index([r for r in valid if r["key"] in half], halfp)
    sources = [IndexSource("acl_anthology", str(p)) for p in sorted(ACL_XML.glob("*.xml"))]
    sources += [IndexSource("crossref", str(p)) for p in sorted((REFCHECKER / "test_cache" / "api_cache" / "crossref").glob("*.json"))]
    sources += [IndexSource("bibtex", str(p)) for p in sorted(REFCHECKER.glob("*.bib"))]
    build_index(sources, real)
    return {"closed": (closed, set(keys)), "half": (halfp, half), "real": (real, set())}


def _rate(count: Counter, groups: tuple[str, ...], label: str) -> float:
    n = sum(count[(g, x)] for g in groups for x in ("VALID", "HALLUCINATED", "UNCERTAIN"))
    return sum(count[(g, label)] for g in groups) / n if n else float("nan")


def hallmark(calibration) -> None:  # noqa: ANN001
    corpus = load_hallmark_jsonl(DEV)
    items = [Item.from_row(r) for r in corpus.items.to_pylist()]
    truth = {r["item_id"]: r for r in corpus.truth.to_pylist()}
    with tempfile.TemporaryDirectory() as tmp:
        indexes = hallmark_indexes(Path(tmp))
        configs = []
        for index_name in ("closed", "half", "real"):
            for aggregation in ("any_missing", "consensus", "contradiction"):
                for closed_world in (False, True):
                    configs.append((index_name, "field_match", {"aggregation": aggregation, "closed_world": closed_world}))
            configs.append((index_name, "doi_only", {"closed_world": True}))
            if calibration is not None:
                configs.append((index_name, "citeintegrity", {"rule": "weighted",
                                                              "threshold": calibration.thresholds["weighted"]}))
        for index_name, system_name, args in configs:
            path, in_index = indexes[index_name]
            spec = SystemSpec(system_name, {"sources": ["offline_index"], "index_path": str(path), **args})
            start = time.perf_counter()
            outs = asyncio.run(build_system(spec).run(items, CTX))
            seconds = time.perf_counter() - start
            count: Counter = Counter()
            paths: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            type_ok = type_n = calls = 0
            for o in outs:
                t = truth[o.item_id]
                if o.label != "UNCERTAIN" and o.detail and "decision_path" in o.detail:
                    paths[o.detail["decision_path"]][0] += o.label == t["label"]
                    paths[o.detail["decision_path"]][1] += 1
                group = t["label"] if t["label"] == "HALLUCINATED" else ("VALID_in" if o.item_id in in_index else "VALID_out")
                count[(group, o.label)] += 1
                calls += o.api_calls
                if t["label"] == "HALLUCINATED" and o.label == "HALLUCINATED":
                    type_n += 1
                    type_ok += o.predicted_type == t["hallucination_type"]
            rate = functools.partial(_rate, count)

            row(part="hallmark", index=index_name, system=system_name, **{k: v for k, v in args.items() if k != "threshold"},
                dr=rate(("HALLUCINATED",), "HALLUCINATED"), fpr=rate(("VALID_in", "VALID_out"), "HALLUCINATED"),
                fpr_valid_in_index=rate(("VALID_in",), "HALLUCINATED"), fpr_valid_not_in_index=rate(("VALID_out",), "HALLUCINATED"),
                uncertain_hallucinated=rate(("HALLUCINATED",), "UNCERTAIN"),
                uncertain_valid=rate(("VALID_in", "VALID_out"), "UNCERTAIN"),
                valid_in_index=sum(count[("VALID_in", x)] for x in ("VALID", "HALLUCINATED", "UNCERTAIN")),
                type_accuracy=type_ok / type_n if type_n else float("nan"), api_calls=calls, seconds=seconds,
                path_accuracy={p: f"{ok}/{n}" for p, (ok, n) in sorted(paths.items())})


# ---- issue 13: dev_public with an index of real records, per system and rule mode, and the cascade ---------
GEMINI = DATA / "hallmark" / "per_entry_predictions" / "llm_openrouter_gemini_pro_dev_public.jsonl"


def _scored(truth, outs: list, system: str) -> dict:  # noqa: ANN001
    """DR, FPR, MCC, ECE, coverage and per-type detection of `outs`, HALLMARK's way (scoring module)."""
    from scoring import score_citation_outputs
    from storage.schemas import OUTPUT_SCHEMA, table_from_rows

    table = table_from_rows([o.to_row("bench", system, 0) for o in outs], OUTPUT_SCHEMA)
    summary = score_citation_outputs(truth, table, run_id="bench", system=system).summary
    return {"dr": summary["detection_rate"], "fpr": summary["false_positive_rate"], "mcc": summary["mcc"],
            "ece": summary["ece"], "decided": summary["decided_fraction"],
            "per_type_dr": {t: m["detection_rate"] for t, m in summary["per_type_metrics"].items() if t != "valid"}}


def _stage_rows(outs: list, truth_by_id: dict, system: str) -> None:
    """Per cascade stage: items decided, DR/FPR among the decided items, API calls and LLM tokens."""
    per: dict[str, Counter] = defaultdict(Counter)
    for o in outs:
        d = o.detail or {}
        stage = d.get("decided_by") or "residual"
        gold = truth_by_id[o.item_id]["label"]
        per[stage][(gold, o.label)] += 1
        per[stage]["api_calls"] += o.api_calls or 0
        per[stage]["tokens"] += (o.tokens_in or 0) + (o.tokens_out or 0)
    for stage, c in per.items():
        h = c[("HALLUCINATED", "HALLUCINATED")] + c[("HALLUCINATED", "VALID")] + c[("HALLUCINATED", "UNCERTAIN")]
        v = c[("VALID", "HALLUCINATED")] + c[("VALID", "VALID")] + c[("VALID", "UNCERTAIN")]
        row(part="cascade_stage", system=system, stage=stage, decided=h + v,
            dr=c[("HALLUCINATED", "HALLUCINATED")] / h if h else None,
            fpr=c[("VALID", "HALLUCINATED")] / v if v else None, api_calls=c["api_calls"], llm_tokens=c["tokens"])


def real_index(tmp: Path) -> tuple[Path, dict]:
    """The index a user would have offline: the bibsources dumps, plus (labelled closed-world upper
    bound) every dev_public VALID entry's own record, so every real paper of the split is indexed."""
    sources = [IndexSource("acl_anthology", str(p)) for p in sorted(ACL_XML.glob("*.xml"))]
    sources += [IndexSource("crossref", str(p)) for p in
                sorted((REFCHECKER / "test_cache" / "api_cache" / "crossref").glob("*.json"))]
    sources += [IndexSource("bibtex", str(p)) for p in sorted(REFCHECKER.glob("*.bib"))]
    sources.append(IndexSource("hallmark", str(DEV)))
    path = tmp / "bibsources_plus_dev_valid.parquet"
    stats = build_index(sources, path, merged_path=tmp / "merged.jsonl")
    return path, {"records": stats.records, "merged_by_reason": stats.merged_by_reason, "per_origin": stats.per_origin}


def hallmark_real(limit: int | None = None) -> None:
    from jobs.llm_replay_server import build_hallmark_recording
    from tests.helpers.replay_server import replay_server

    corpus = load_hallmark_jsonl(DEV, split="dev_public")
    items = [Item.from_row(r) for r in corpus.items.to_pylist()][:limit]
    keep = {i.item_id for i in items}
    truth = corpus.truth.filter([r in keep for r in corpus.truth.column("item_id").to_pylist()])
    truth_by_id = {r["item_id"]: r for r in truth.to_pylist()}
    with tempfile.TemporaryDirectory() as tmp:
        index, stats = real_index(Path(tmp))
        row(part="real_index", label="closed-world upper bound: bibsources dumps + dev_public VALID records", **stats)
        recording = Path(tmp) / "gemini.jsonl"
        build_hallmark_recording(str(GEMINI), str(DATA / "hallmark" / "dev_public_blind.jsonl"), str(recording),
                                 "google/gemini-2.5-pro")
        with replay_server("--recording", str(recording)) as url:
            from clients.lent_services import RunServices
            from clients.llm_gateway import LLMServices

            ctx = RunContext("bench", "2026-05-05", cache_dir=str(Path(tmp) / "cache"),
                             services=RunServices("test", "", llm=LLMServices(concurrency=16)))
            llm = {"name": "llm_zero_shot", "args": {"model": "openai/replayed-gemini", "api_base": f"{url}/v1"}}
            on_index = {"sources": ["offline_index"], "index_path": str(index)}
            configs = [("prescreen", {}, "prescreen")]
            for aggregation in ("consensus", "contradiction"):
                for closed_world in (False, True):
                    configs.append(("field_match", {**on_index, "aggregation": aggregation, "closed_world": closed_world},
                                    f"field_match/{aggregation}/closed_world={closed_world}"))
            configs += [
                ("doi_only", {**on_index, "closed_world": True}, "doi_only/closed_world"),
                ("citeintegrity", {**on_index, "rule": "doi_membership", "closed_world": True},
                 "doi_membership/closed_world"),
                ("llm_zero_shot", llm["args"], "gemini_replay_alone"),
                ("cascade", {"stages": ["prescreen", {"name": "field_match", "args": on_index, "label": "index"}, llm]},
                 "cascade prescreen>index>gemini"),
                ("cascade", {"stages": ["prescreen", {"name": "field_match", "args": {**on_index, "closed_world": True},
                                                      "label": "index_closed"}, llm]},
                 "cascade prescreen>index(closed)>gemini"),
            ]
            for name, args, label in configs:
                start = time.perf_counter()
                outs = asyncio.run(build_system(SystemSpec(name, args)).run(items, ctx))
                row(part="hallmark_real", system=label, n=len(items), seconds=round(time.perf_counter() - start, 1),
                    api_calls=sum(o.api_calls or 0 for o in outs), **_scored(truth, outs, label))
                if name == "cascade":
                    _stage_rows(outs, truth_by_id, label)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("all", "suite", "hallmark", "real"), default="all")
    parser.add_argument("--limit", type=int, default=None, help="with --part real: the first N dev_public entries")
    parser.add_argument("--weighted-threshold", type=float, default=None,
                        help="with --part hallmark: the weighted rule's threshold (else it comes from crossref800)")
    args = parser.parse_args()
    calibration = None
    if args.weighted_threshold is not None:
        calibration = Calibration({"weighted": args.weighted_threshold}, [], 0.0)
    with tempfile.TemporaryDirectory() as tmp:
        if args.part in ("all", "suite"):
            sample = suite_from_instances(load_suite_instances(SAMPLE_SUITE_PATH))
            run_suite("sample", sample, Path(tmp))
            start = time.perf_counter()
            crossref = build_suite(crossref_references(), SuiteConfig())
            row(part="suite_build", suite="crossref800", seconds=time.perf_counter() - start,
                excluded=dict(Counter(reason.split(" to ")[0] for _, reason in crossref.excluded)))
            calibration = run_suite("crossref800", crossref, Path(tmp))["calibration"]
    if args.part in ("all", "hallmark"):
        hallmark(calibration)
    if args.part in ("all", "real"):
        hallmark_real(args.limit)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

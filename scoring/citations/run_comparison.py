"""What flipped between two runs on the same corpus, and why: `compare_runs(before, after)`.

Per shared item: each run's label and confidence, whether the change fixed it (wrong -> right),
broke it (right -> wrong), changed the label between two wrong/unknown answers, or only moved the
confidence. Each change is attributed to what differs: per item where the outputs' provenance
differs (the provider-returned `model_id`, the `prompt_hash`), else to every answer-deciding field
in which the two run records differ (system arguments, corpus version, snapshot, code revision,
package versions); with nothing recorded differing, to nondeterminism.

"Right" means the stated label equals the truth; UNCERTAIN, errored and missing answers are
wrong. On the items both runs answered, McNemar's exact test (binomial on the discordant pairs,
`scipy.stats.binomtest`) asks whether "fixed" and "broken" are equally likely, and the paired
bootstrap (`scoring.paired_test`) gives CIs of after - before for the headline metrics.

Two runs on different corpora (name or version) are refused (`DifferentCorpora`): their metrics
are of different populations. With `shared_items=True` only the items present in both (same id)
are compared, and the report says so.

Paper audits (verdicts with `unit_kind = "injection"`): per injection, detected before and not
after, or the other way round.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy.stats import binomtest

from scoring.citations.entry_table import EntryTable
from scoring.paired_test import PairedComparison, paired_bootstrap
from storage.run_record import RunRecord, differences

PAIRED_METRICS: tuple[str, ...] = ("f1_hallucination", "detection_rate", "false_positive_rate", "mcc")
CHANGE_KINDS: tuple[str, ...] = ("fixed", "broken", "label changed", "confidence only")
PROVENANCE_COLUMNS: tuple[str, ...] = ("model_id", "prompt_hash")
CONFIDENCE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Side:
    """One run as compared: its record, outputs, and (for paper audits) verdicts."""

    record: RunRecord
    outputs: pa.Table
    verdicts: pa.Table | None = None


@dataclass(frozen=True)
class ItemChange:
    item_id: str
    truth: str | None
    hallucination_type: str | None
    tier: int | None
    label_before: str
    label_after: str
    confidence_before: float | None
    confidence_after: float | None
    change: str  # one of CHANGE_KINDS
    attributed_to: str


@dataclass(frozen=True)
class McNemar:
    """Discordant pairs on the shared items: `fixed` (wrong -> right), `broken` (right -> wrong)."""

    fixed: int
    broken: int
    p_value: float  # exact two-sided; 1.0 with no discordant pair


@dataclass(frozen=True)
class InjectionChange:
    item_id: str
    unit_id: str
    error_type: str | None
    before: str
    after: str
    change: str  # "lost" (detected before, not after) | "gained"


@dataclass
class RunComparison:
    before: RunRecord
    after: RunRecord
    differences: list[tuple[str, Any, Any]]
    provenance: dict[str, tuple[list[str], list[str]]]
    shared: int
    only_before: int
    only_after: int
    changes: list[ItemChange]
    counts: list[dict[str, Any]]  # per stratum: n and one count per change kind
    mcnemar: McNemar | None
    paired: list[PairedComparison] = field(default_factory=list)
    injections: list[InjectionChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class DifferentCorpora(ValueError):
    """The two runs audit different corpora, and comparing their shared items was not asked for."""


def mcnemar_exact(fixed: int, broken: int) -> McNemar:
    """McNemar's exact test: under H0 a discordant pair is fixed or broken with probability 1/2."""
    n = fixed + broken
    p = float(binomtest(fixed, n, 0.5, alternative="two-sided").pvalue) if n else 1.0
    return McNemar(fixed, broken, p)


def _answers(outputs: pa.Table) -> dict[str, dict[str, Any]]:
    cols = [c for c in ("item_id", "label", "confidence", "error", "error_kind", *PROVENANCE_COLUMNS)
            if c in outputs.column_names]  # fmt: skip
    out = {}
    for row in outputs.select(cols).to_pylist():
        label = row.get("label")
        if row.get("error") is not None:
            label = f"ERROR({row.get('error_kind') or 'unknown'})"
        out[row["item_id"]] = {**row, "label": label or "MISSING"}
    return out


def _change(truth: str | None, a: dict[str, Any], b: dict[str, Any]) -> str | None:
    ra, rb = truth is not None and a["label"] == truth, truth is not None and b["label"] == truth
    if ra != rb:
        return "fixed" if rb else "broken"
    if a["label"] != b["label"]:
        return "label changed"
    ca, cb = a.get("confidence"), b.get("confidence")
    if (ca is None) != (cb is None) or (ca is not None and abs(ca - cb) > CONFIDENCE_TOLERANCE):
        return "confidence only"
    return None


def _run_level_cause(diffs: list[tuple[str, Any, Any]]) -> str:
    if not diffs:
        return "nothing recorded differs (nondeterminism)"
    return "; ".join(f"{k}: {_short(a)} -> {_short(b)}" for k, a, b in diffs)


def _short(v: Any) -> str:
    s = "(unset)" if v is None else str(v)
    return s if len(s) <= 60 else s[:57] + "..."


def compare_runs(before: Side, after: Side, truth: pa.Table, *, eval_mode: str = "conservative",
                 n_resamples: int = 2000, seed: int = 42, shared_items: bool = False) -> RunComparison:  # fmt: skip
    """Compare `after` against `before` item by item (see the module docstring). Runs on different
    corpora raise `DifferentCorpora` unless `shared_items` asks to compare the items both hold."""
    a, b = before.record, after.record
    notes = []
    if (a.corpus.name, a.corpus.version) != (b.corpus.name, b.corpus.version):
        if not shared_items:
            raise DifferentCorpora(f"the runs audit different corpora ({a.corpus.name}@{a.corpus.version} vs "
                                   f"{b.corpus.name}@{b.corpus.version}): their metrics are not comparable; "
                                   "compare only the items both hold (same id) with --shared-items")  # fmt: skip
        notes.append(f"the runs audit different corpora ({a.corpus.name}@{a.corpus.version} vs "
                     f"{b.corpus.name}@{b.corpus.version}): only items with the same id are compared")  # fmt: skip
    diffs = differences(a, b)
    ans_a, ans_b = _answers(before.outputs), _answers(after.outputs)
    shared_ids = [i for i in truth.column("item_id").to_pylist() if i in ans_a and i in ans_b]
    shared_ids += sorted((set(ans_a) & set(ans_b)) - set(shared_ids))  # answered items without truth
    truth_rows = {r["item_id"]: r for r in truth.to_pylist()}
    provenance = {}
    for col in PROVENANCE_COLUMNS:
        va = sorted({str(r[col]) for r in ans_a.values() if r.get(col)})
        vb = sorted({str(r[col]) for r in ans_b.values() if r.get(col)})
        if va or vb:
            provenance[col] = (va, vb)
    run_cause = _run_level_cause(diffs)

    changes: list[ItemChange] = []
    for item_id in shared_ids:
        t = truth_rows.get(item_id) or {}
        ra, rb = ans_a[item_id], ans_b[item_id]
        kind = _change(t.get("label"), ra, rb)
        if kind is None:
            continue
        item_causes = [f"{c}: {_short(ra.get(c))} -> {_short(rb.get(c))}" for c in PROVENANCE_COLUMNS
                       if ra.get(c) and rb.get(c) and ra.get(c) != rb.get(c)]  # fmt: skip
        changes.append(ItemChange(item_id, t.get("label"), t.get("hallucination_type"), t.get("difficulty_tier"),
                                  ra["label"], rb["label"], ra.get("confidence"), rb.get("confidence"), kind,
                                  "; ".join(item_causes) or run_cause))  # fmt: skip

    counts = _counts(shared_ids, truth_rows, changes)
    labelled = [i for i in shared_ids if (truth_rows.get(i) or {}).get("label") is not None]
    by_kind = Counter(c.change for c in changes if c.truth is not None)
    mcnemar = mcnemar_exact(by_kind["fixed"], by_kind["broken"]) if labelled else None
    if not labelled:
        notes.append("no labelled shared items: no McNemar test and no metric differences")
    paired = _paired(truth, before.outputs, after.outputs, labelled, eval_mode, n_resamples, seed, notes)
    injections = _injection_changes(before.verdicts, after.verdicts)
    return RunComparison(a, b, diffs, provenance, len(shared_ids), len(set(ans_a) - set(ans_b)),
                         len(set(ans_b) - set(ans_a)), changes, counts, mcnemar, paired, injections, notes)  # fmt: skip


def _counts(shared: list[str], truth_rows: dict[str, dict], changes: list[ItemChange]) -> list[dict[str, Any]]:
    def stratum_of(item_id: str) -> list[str]:
        t = truth_rows.get(item_id) or {}
        if t.get("label") is None:
            return ["all", "unlabelled"]
        if t["label"] == "VALID":
            return ["all", "valid"]
        return ["all", f"type={t.get('hallucination_type') or '?'}", f"tier={t.get('difficulty_tier') or '?'}"]

    n: Counter[str] = Counter(s for i in shared for s in stratum_of(i))
    c: Counter[tuple[str, str]] = Counter((s, ch.change) for ch in changes for s in stratum_of(ch.item_id))
    order = sorted(n, key=lambda s: (s != "all", s.split("=")[0], s))
    return [{"stratum": s, "n": n[s], **{k: c[(s, k)] for k in CHANGE_KINDS}} for s in order]


def _paired(truth: pa.Table, out_a: pa.Table, out_b: pa.Table, labelled: list[str], eval_mode: str,
            n_resamples: int, seed: int, notes: list[str]) -> list[PairedComparison]:  # fmt: skip
    if not labelled or n_resamples <= 0:
        return []
    ids = pa.array(labelled)
    t = truth.filter(pc.is_in(truth.column("item_id"), value_set=ids))
    ea = EntryTable.from_tables(t, out_a.filter(pc.is_in(out_a.column("item_id"), value_set=ids)))
    eb = EntryTable.from_tables(t, out_b.filter(pc.is_in(out_b.column("item_id"), value_set=ids)))
    if ea.hallucinated.all() or not ea.hallucinated.any():
        notes.append("the shared items hold one class only: no metric differences")
        return []
    out = []
    for metric in PAIRED_METRICS:
        r = paired_bootstrap(eb, ea, metric=metric, eval_mode=eval_mode, n_resamples=n_resamples, seed=seed,
                             names=("after", "before"))  # fmt: skip
        if np.isfinite(r.diff):
            out.append(r)
    return out


def _injection_changes(va: pa.Table | None, vb: pa.Table | None) -> list[InjectionChange]:
    if va is None or vb is None:
        return []

    def injections(t: pa.Table) -> dict[tuple[str, str], dict[str, Any]]:
        return {(r["item_id"], r["unit_id"]): r for r in t.to_pylist() if r.get("unit_kind") == "injection"}

    ia, ib = injections(va), injections(vb)
    out = []
    for key in sorted(set(ia) & set(ib)):
        da, db = ia[key].get("outcome") == "detected", ib[key].get("outcome") == "detected"
        if da != db:
            detail = json.loads(ia[key].get("detail_json") or "{}")
            out.append(InjectionChange(key[0], key[1], detail.get("error_type"), ia[key].get("outcome") or "unscored",
                                       ib[key].get("outcome") or "unscored", "lost" if da else "gained"))  # fmt: skip
    return out

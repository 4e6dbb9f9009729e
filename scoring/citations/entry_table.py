"""Truth and one system's outputs aligned entry by entry, as numpy arrays.

`EntryTable.from_tables` joins a TRUTH_SCHEMA table with an OUTPUT_SCHEMA table on `item_id`
(truth order is kept: HALLMARK's stable sorts and bootstrap strata depend on it). Truth rows with
a null label are not scored. An output with `error` set is handled by its `error_kind`:

- "parse" (the system answered but the answer could not be parsed): scored as UNCERTAIN at
  confidence 0.5, as HALLMARK's harness does (reference 000, B.2.4), so a parse failure is never
  a VALID verdict; it is flagged in `parse_failed` and counted apart.
- any other kind (input, provider, outage, system, budget, or none given): an errored item, counted
  apart in `errored` and, for the confusion matrix, a missing prediction.

`error_kind[i]` keeps the kind of every errored output (parse included; "unknown" when the row
gives none), None where the output has no error or is missing.

`EntryTable.view(mode)` applies an eval mode:

- conservative: UNCERTAIN is left out of the confusion matrix (HALLMARK's released aggregates
  are computed this way: Gemini 2.5 Pro's DR is 277/582, not 277/606); missing and errored
  predictions count as VALID; they carry no confidence.
- aggressive: UNCERTAIN, missing and errored predictions become HALLUCINATED at confidence 0.55.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa

EvalMode = Literal["conservative", "aggressive"]
EVAL_MODES: tuple[str, ...] = ("conservative", "aggressive")
AGGRESSIVE_CONFIDENCE = 0.55

#: Prediction codes in `EntryTable.pred`.
VALID, HALLUCINATED, UNCERTAIN, MISSING = 0, 1, 2, 3
_CODES = {"VALID": VALID, "HALLUCINATED": HALLUCINATED, "UNCERTAIN": UNCERTAIN}
#: The error kind scored as UNCERTAIN, and the confidence it gets (HALLMARK's harness fallback).
PARSE_ERROR_KIND = "parse"
PARSE_FAILURE_CONFIDENCE = 0.5


@dataclass(frozen=True)
class ModeView:
    """The arrays a metric needs under one eval mode (all of length N)."""

    mode: str
    in_matrix: np.ndarray  # bool: entry enters the confusion matrix
    flagged: np.ndarray  # bool: counted as predicted HALLUCINATED (only meaningful where in_matrix)
    has_confidence: np.ndarray  # bool: entry has a definite label and a confidence (ECE/AUROC input)
    confidence: np.ndarray  # float: P(label correct); NaN where has_confidence is False


@dataclass(frozen=True)
class EntryTable:
    """Scored entries in truth order. `hallucinated[i]` is the truth; `pred[i]` a prediction code."""

    item_id: np.ndarray  # object (str)
    hallucinated: np.ndarray  # bool
    tier: np.ndarray  # int64, 1 where truth has none (HALLMARK: `difficulty_tier or 1`)
    htype: np.ndarray  # object (str), "valid" for valid entries
    pred: np.ndarray  # int8 code: VALID, HALLUCINATED, UNCERTAIN, MISSING
    confidence: np.ndarray  # float64, NaN when missing
    errored: np.ndarray  # bool: an output with `error` set, other than a parse failure (missing prediction)
    num_unknown_truth: int = 0  # truth rows with null label, not scored
    num_unmatched_outputs: int = 0  # outputs whose item_id is not in the scored truth
    parse_failed: np.ndarray | None = None  # bool: a parse failure, scored as UNCERTAIN@0.5
    error_kind: np.ndarray | None = None  # object: kind of every errored output (parse included), else None

    def __post_init__(self) -> None:
        if self.parse_failed is None:
            object.__setattr__(self, "parse_failed", np.zeros(self.n, dtype=bool))
        if self.error_kind is None:
            kinds = np.full(self.n, None, dtype=object)
            kinds[self.errored] = "unknown"
            object.__setattr__(self, "error_kind", kinds)

    @property
    def n(self) -> int:
        return int(self.hallucinated.shape[0])

    @classmethod
    def from_tables(cls, truth: pa.Table, outputs: pa.Table) -> EntryTable:
        t = truth.to_pydict()
        o = outputs.to_pydict()
        by_id: dict[str, int] = {}
        for j, item_id in enumerate(o["item_id"]):
            if item_id in by_id:
                raise ValueError(f"outputs: item {item_id!r} appears more than once")
            by_id[item_id] = j
        keep = [i for i, label in enumerate(t["label"]) if label is not None]
        for i in keep:
            if t["label"][i] not in ("VALID", "HALLUCINATED"):
                raise ValueError(f"truth: item {t['item_id'][i]!r} has label {t['label'][i]!r}")
        n = len(keep)
        pred = np.full(n, MISSING, dtype=np.int8)
        conf = np.full(n, np.nan)
        errored = np.zeros(n, dtype=bool)
        parse_failed = np.zeros(n, dtype=bool)
        kinds = np.full(n, None, dtype=object)
        o_kinds = o.get("error_kind") or [None] * len(o["item_id"])
        seen = 0
        for k, i in enumerate(keep):
            j = by_id.get(t["item_id"][i])
            if j is None:
                continue
            seen += 1
            if o["error"][j] is not None:
                kinds[k] = o_kinds[j] or "unknown"
                if kinds[k] == PARSE_ERROR_KIND:
                    parse_failed[k] = True
                    pred[k], conf[k] = UNCERTAIN, PARSE_FAILURE_CONFIDENCE
                else:
                    errored[k] = True
                continue
            label = o["label"][j]
            if label not in _CODES:
                raise ValueError(f"outputs: item {o['item_id'][j]!r} has label {label!r}")
            pred[k] = _CODES[label]
            c = o["confidence"][j]
            conf[k] = np.nan if c is None else float(c)
        hallucinated = np.array([t["label"][i] == "HALLUCINATED" for i in keep], dtype=bool)
        tiers = t.get("difficulty_tier") or [None] * len(t["label"])
        types = t.get("hallucination_type") or [None] * len(t["label"])
        return cls(
            item_id=np.array([t["item_id"][i] for i in keep], dtype=object),
            hallucinated=hallucinated,
            tier=np.array([tiers[i] or 1 for i in keep], dtype=np.int64),
            htype=np.array(
                [("valid" if not h else (types[i] or "unknown")) for i, h in zip(keep, hallucinated, strict=True)],
                dtype=object,
            ),
            pred=pred,
            confidence=conf,
            errored=errored,
            num_unknown_truth=len(t["label"]) - n,
            num_unmatched_outputs=len(by_id) - seen,
            parse_failed=parse_failed,
            error_kind=kinds,
        )

    def subset(self, mask: np.ndarray) -> EntryTable:
        """The entries where `mask` is true, in the same order."""
        return EntryTable(
            item_id=self.item_id[mask],
            hallucinated=self.hallucinated[mask],
            tier=self.tier[mask],
            htype=self.htype[mask],
            pred=self.pred[mask],
            confidence=self.confidence[mask],
            errored=self.errored[mask],
            parse_failed=self.parse_failed[mask],
            error_kind=self.error_kind[mask],
        )

    def view(self, mode: str) -> ModeView:
        """The arrays metrics read under eval `mode`."""
        definite = (self.pred == VALID) | (self.pred == HALLUCINATED)
        if mode == "conservative":
            in_matrix = self.pred != UNCERTAIN
            flagged = self.pred == HALLUCINATED
            has_conf = definite & ~np.isnan(self.confidence)
            conf = np.where(has_conf, self.confidence, np.nan)
        elif mode == "aggressive":
            in_matrix = np.ones(self.n, dtype=bool)
            flagged = self.pred != VALID
            conf = np.where(definite, self.confidence, AGGRESSIVE_CONFIDENCE)
            has_conf = ~np.isnan(conf)
        else:
            raise ValueError(f"eval mode must be one of {EVAL_MODES}, got {mode!r}")
        return ModeView(mode=mode, in_matrix=in_matrix, flagged=flagged, has_confidence=has_conf, confidence=conf)

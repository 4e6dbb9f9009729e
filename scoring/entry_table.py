"""Truth and one system's outputs aligned entry by entry, as numpy arrays.

`EntryTable.from_tables` joins a TRUTH_SCHEMA table with an OUTPUT_SCHEMA table on `item_id`
(truth order is kept: HALLMARK's stable sorts and bootstrap strata depend on it). Truth rows with
a null label are not scored. An output with `error` set is an errored item: it is counted apart
and, for the confusion matrix, is a missing prediction.

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
    errored: np.ndarray  # bool: an output with `error` set
    num_unknown_truth: int = 0  # truth rows with null label, not scored
    num_unmatched_outputs: int = 0  # outputs whose item_id is not in the scored truth

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
        seen = 0
        for k, i in enumerate(keep):
            j = by_id.get(t["item_id"][i])
            if j is None:
                continue
            seen += 1
            if o["error"][j] is not None:
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

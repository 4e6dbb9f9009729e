"""The report's figures (matplotlib, Agg backend): one function per PNG, each returning its path."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from scoring.citation_score import CitationScore  # noqa: E402
from scoring.prevalence import ppv_at_prevalence  # noqa: E402
from scoring.risk_coverage import risk_coverage  # noqa: E402


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def type_heatmap(scores: list[CitationScore], path: Path) -> Path:
    """Detection rate per hallucination type (rows) and system (columns); blank = no entries."""
    types = sorted({t for s in scores for t in s.modes[s.eval_mode].per_type if t != "valid"})
    data = np.full((len(types), len(scores)), np.nan)
    for j, s in enumerate(scores):
        per = s.modes[s.eval_mode].per_type
        for i, t in enumerate(types):
            if t in per:
                data[i, j] = per[t].detection_rate
    fig, ax = plt.subplots(figsize=(2.0 + 1.3 * len(scores), 0.42 * len(types) + 1.8))
    im = ax.imshow(np.ma.masked_invalid(data), cmap="viridis", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(scores)), [s.system for s in scores], rotation=30, ha="right")
    ax.set_yticks(range(len(types)), types)
    for i in range(len(types)):
        for j in range(len(scores)):
            if np.isfinite(data[i, j]):
                ax.text(j, i, f"{data[i, j]:.2f}", ha="center", va="center",
                        color="white" if data[i, j] < 0.6 else "black", fontsize=8)
    fig.colorbar(im, ax=ax, label="detection rate")
    ax.set_title("Detection rate by hallucination type")
    return _save(fig, path)


def tier_bars(scores: list[CitationScore], path: Path) -> Path:
    """Detection rate per tier, one bar group per tier, with the overall FPR in the legend."""
    tiers = sorted({t for s in scores for t in s.modes[s.eval_mode].per_tier})
    width = 0.8 / max(len(scores), 1)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for j, s in enumerate(scores):
        per = s.modes[s.eval_mode].per_tier
        vals = [per[t].detection_rate if t in per else np.nan for t in tiers]
        fpr = s.modes[s.eval_mode].point["false_positive_rate"]
        ax.bar(np.arange(len(tiers)) + j * width, vals, width, label=f"{s.system} (FPR {fpr:.3f})")
    ax.set_xticks(np.arange(len(tiers)) + width * (len(scores) - 1) / 2, [f"tier {t}" for t in tiers])
    ax.set_ylim(0, 1)
    ax.set_ylabel("detection rate")
    ax.set_title("Detection rate by difficulty tier")
    ax.legend(fontsize=8)
    return _save(fig, path)


def ppv_curves(scores: list[CitationScore], path: Path) -> Path:
    """PPV against prevalence (log scale), one curve per system."""
    pi = np.logspace(-3, np.log10(0.6), 200)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for s in scores:
        p = s.modes[s.eval_mode].point
        ax.plot(pi, ppv_at_prevalence(p["detection_rate"], p["false_positive_rate"], pi), label=s.system)
    ax.axvline(0.02, color="grey", ls=":", lw=1)
    ax.text(0.021, 0.95, "2% audit base rate", fontsize=8, color="grey", va="top")
    ax.set_xscale("log")
    ax.set_ylim(0, 1)
    ax.set_xlabel("prevalence of hallucinated citations")
    ax.set_ylabel("PPV (share of flags that are real)")
    ax.set_title("Precision at deployment prevalence")
    ax.legend(fontsize=8)
    return _save(fig, path)


def risk_coverage_curves(scores: list[CitationScore], path: Path) -> Path:
    """FPR on committed entries against coverage (least-confident abstained first)."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for s in scores:
        rc = risk_coverage(s.entries, s.eval_mode)
        if rc.coverage.size:
            ax.plot(rc.coverage, rc.fpr, label=s.system)
    ax.axvline(0.9, color="grey", ls=":", lw=1)
    ax.set_xlim(0, 1)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("coverage (share of entries committed)")
    ax.set_ylabel("FPR on committed entries")
    ax.set_title("Risk–coverage")
    ax.legend(fontsize=8)
    return _save(fig, path)

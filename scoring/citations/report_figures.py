"""The report's figures (matplotlib, Agg backend): one function per PNG, each returning its path.

Readability rules every figure follows: saved with a tight bounding box (no clipped titles or
colorbar labels, whatever the number of systems); every system appears in the legend, and one
with nothing to draw says why there ("no flags: PPV undefined", "no committed entries"); values
that sit on an axis limit (FPR 0, PPV 1, detection rate 0) stay visible (padded limits, bar labels).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from scoring.citations.risk_coverage import risk_coverage  # noqa: E402
from scoring.citations.score import CitationScore  # noqa: E402
from scoring.prevalence import ppv_at_prevalence  # noqa: E402


def _save(fig, path: Path) -> Path:
    fig.savefig(path, dpi=120, bbox_inches="tight", pad_inches=0.15)
    plt.close(fig)
    return path


_LINESTYLES = ("-", "--", "-.", (0, (1, 1)))


def _color(j: int) -> str:
    """System j's colour, the same in every figure (j = position in the report's `scores`)."""
    return f"C{j % 10}"


def _line(j: int) -> dict:
    """System j's line style: colour plus a dash pattern, so overlapping curves stay apart."""
    return {"color": _color(j), "ls": _LINESTYLES[j % len(_LINESTYLES)], "lw": 1.6}


def _legend(ax) -> None:
    """A legend when something carries a label (never matplotlib's "No artists" warning)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def type_heatmap(scores: list[CitationScore], path: Path) -> Path:
    """Detection rate per hallucination type (rows) and system (columns); "n/a" = no scored entry
    (none of that type, or every one UNCERTAIN / errored under this eval mode)."""
    types = sorted({t for s in scores for t in s.modes[s.eval_mode].per_type if t != "valid"})
    data = np.full((len(types), len(scores)), np.nan)
    for j, s in enumerate(scores):
        per = s.modes[s.eval_mode].per_type
        for i, t in enumerate(types):
            if t in per:
                data[i, j] = per[t].detection_rate
    fig, ax = plt.subplots(figsize=(max(4.5, 2.0 + 1.3 * len(scores)), 0.42 * len(types) + 1.8))
    im = ax.imshow(np.ma.masked_invalid(data), cmap="viridis", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(scores)), [s.system for s in scores], rotation=30, ha="right")
    counts = {t: c.num_hallucinated for s in scores for t, c in s.modes[s.eval_mode].per_type.items()}
    ax.set_yticks(range(len(types)), [f"{t} (n={counts[t]})" for t in types])
    for i in range(len(types)):
        for j in range(len(scores)):
            if np.isfinite(data[i, j]):
                ax.text(j, i, f"{data[i, j]:.2f}", ha="center", va="center",
                        color="white" if data[i, j] < 0.6 else "black", fontsize=8)
            else:  # undefined, not zero: the system decided none of these entries
                ax.text(j, i, "n/a", ha="center", va="center", color="grey", fontsize=8)
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
        vals = np.array([per[t].detection_rate if t in per else np.nan for t in tiers], dtype=float)
        fpr = s.modes[s.eval_mode].point["false_positive_rate"]
        fpr_text = "n/a" if np.isnan(fpr) else f"{fpr:.3f}"
        bars = ax.bar(np.arange(len(tiers)) + j * width, np.nan_to_num(vals), width, color=_color(j),
                      label=f"{s.system} (FPR {fpr_text})")
        ax.bar_label(bars, ["n/a" if np.isnan(v) else f"{v:.2f}" for v in vals], fontsize=7, padding=1)
    ax.set_xticks(np.arange(len(tiers)) + width * (len(scores) - 1) / 2, [f"tier {t}" for t in tiers])
    ax.set_ylim(0, 1.08)
    ax.set_ylabel("detection rate")
    ax.set_title("Detection rate by difficulty tier")
    _legend(ax)
    return _save(fig, path)


def ppv_curves(scores: list[CitationScore], path: Path) -> Path:
    """PPV against prevalence (log scale), one curve per system."""
    pi = np.logspace(-3, np.log10(0.6), 200)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for j, s in enumerate(scores):
        p = s.modes[s.eval_mode].point
        ppv = ppv_at_prevalence(p["detection_rate"], p["false_positive_rate"], pi)
        if np.isfinite(ppv).any():
            note = " (FPR 0: PPV 1 at any prevalence)" if p["false_positive_rate"] == 0 else ""
            ax.plot(pi, ppv, label=s.system + note, **_line(j))
        else:  # nothing flagged (or a rate undefined): say so rather than drop the system silently
            ax.plot([], [], ls="none", marker="x", color=_color(j), label=f"{s.system} (no flags: PPV undefined)")
    ax.axvline(0.02, color="grey", ls=":", lw=1)
    ax.text(0.021, 0.5, "2% audit base rate", fontsize=8, color="grey", va="center", rotation=90)
    ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlabel("prevalence of hallucinated citations")
    ax.set_ylabel("PPV (share of flags that are real)")
    ax.set_title("Precision at deployment prevalence")
    _legend(ax)
    return _save(fig, path)


def risk_coverage_curves(scores: list[CitationScore], path: Path) -> Path:
    """FPR on committed entries against coverage (least-confident abstained first)."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for j, s in enumerate(scores):
        rc = risk_coverage(s.entries, s.eval_mode)
        if np.isfinite(rc.fpr).any():
            ax.plot(rc.coverage, rc.fpr, label=s.system, **_line(j))
        else:  # no committed entry, or none of them valid: no FPR to draw
            why = "no committed entries" if not rc.coverage.size else "no valid entry committed"
            ax.plot([], [], ls="none", marker="x", color=_color(j), label=f"{s.system} ({why})")
    ax.axvline(0.9, color="grey", ls=":", lw=1)
    ax.text(0.89, 0.5, "90% coverage", fontsize=8, color="grey", ha="right", va="center", rotation=90)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("coverage (share of entries committed)")
    ax.set_ylabel("FPR on committed entries")
    ax.set_title("Risk–coverage")
    _legend(ax)
    return _save(fig, path)


def said_bars(censuses: list, path: Path) -> Path:
    """What each system said (no labels to score against): stacked counts per system."""
    fig, ax = plt.subplots(figsize=(max(4.5, 2.0 + 1.2 * len(censuses)), 4))
    parts = (("VALID", "C2"), ("HALLUCINATED", "C3"), ("UNCERTAIN", "C7"), ("errored", "C1"))
    bottom = np.zeros(len(censuses))
    x = np.arange(len(censuses))
    for name, color in parts:
        vals = np.array([c.num_errors if name == "errored" else c.labels.get(name, 0) for c in censuses], dtype=float)
        bars = ax.bar(x, vals, bottom=bottom, color=color, label=name)
        ax.bar_label(bars, [f"{int(v)}" if v else "" for v in vals], label_type="center", fontsize=8)
        bottom += vals
    ax.set_xticks(x, [c.system for c in censuses], rotation=30, ha="right")
    ax.set_ylabel("items")
    ax.set_title("What each system said (no labels: nothing scored)")
    _legend(ax)
    return _save(fig, path)

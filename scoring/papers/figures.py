"""The paper-audit report's figures (matplotlib, Agg), drawn from METRIC_SCHEMA rows alone.

One function per PNG, each returning its path: `dose_response` (detection rate against severity,
one panel per error type, one line per reviewer, paper-bootstrap 95% intervals as error bars),
`false_positive_bars` (false-positive rate per reviewer with its interval and the FP / ambiguous /
flag counts) and `agreement_matrix` (pairwise Pearson r as a heatmap, kappa in each cell, for the
judges of one panel or for the reviewers). A figure with nothing to show says so in its title.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from scoring.papers.verdicts import ERROR_TYPES, SEVERITIES  # noqa: E402

Rows = Sequence[dict]


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _index(rows: Rows) -> dict[tuple[str, str, str], dict]:
    return {(r["system"], r["metric"], r["stratum"]): r for r in rows}


def dose_response(rows: Rows, path: Path) -> Path:
    """Detection rate vs severity, per error type (panels) and reviewer (lines)."""
    idx = _index(rows)
    systems = sorted({r["system"] for r in rows if r["metric"] == "detection_rate"})
    fig, axes = plt.subplots(1, len(ERROR_TYPES), figsize=(3.2 * len(ERROR_TYPES), 3.6), sharey=True)
    x = np.arange(len(SEVERITIES))
    for ax, t in zip(axes, ERROR_TYPES, strict=True):
        for j, s in enumerate(systems):
            got = [idx.get((s, "detection_rate", f"type={t}|severity={sev}")) for sev in SEVERITIES]
            v = np.array([g["value"] if g else np.nan for g in got], float)
            lo = np.array([g["ci_low"] if g else np.nan for g in got], float)
            hi = np.array([g["ci_high"] if g else np.nan for g in got], float)
            if not np.isfinite(v).any():
                continue
            shift = (j - (len(systems) - 1) / 2) * 0.06
            err = np.vstack([np.nan_to_num(v - lo), np.nan_to_num(hi - v)])
            ax.errorbar(x + shift, v, yerr=err, marker="o", capsize=3, lw=1.5, label=s)
        ax.set_xticks(x, [f"{s}" for s in SEVERITIES])
        ax.set_title(t)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("severity (subtle → blatant)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("detection rate")
    labelled = [ax for ax in axes if ax.get_legend_handles_labels()[0]]
    if labelled:  # reviewers with no scored injection in any panel draw no line
        labelled[-1].legend(fontsize=7, loc="lower right")
    fig.suptitle("Detection vs severity (paper-bootstrap 95% CI)" if systems else "Detection vs severity: no data")
    return _save(fig, path)


def false_positive_bars(rows: Rows, path: Path) -> Path:
    """False-positive rate on clean copies per reviewer, with interval and counts."""
    idx = _index(rows)
    systems = sorted({r["system"] for r in rows if r["metric"] == "false_positive_rate"
                      and r["stratum"] == "all"})
    vals = [idx[(s, "false_positive_rate", "all")] for s in systems]
    v = np.array([r["value"] for r in vals], float)
    fig, ax = plt.subplots(figsize=(1.2 * max(len(systems), 3) + 2, 4))
    x = np.arange(len(systems))
    lo = np.array([r["ci_low"] for r in vals], float)
    hi = np.array([r["ci_high"] for r in vals], float)
    ax.bar(x, np.nan_to_num(v), color="tab:red", alpha=0.75)
    ax.errorbar(x, np.nan_to_num(v), yerr=np.vstack([np.nan_to_num(v - lo), np.nan_to_num(hi - v)]),
                fmt="none", ecolor="black", capsize=4)
    for i, s in enumerate(systems):
        fp = idx.get((s, "false_positive_count", "all"))
        amb = idx.get((s, "ambiguous_count", "all"))
        label = "no flags" if not math.isfinite(v[i]) else (
            f"FP {int(fp['value'])} / amb {int(amb['value'])}\nof {fp['n']} flags")
        ax.text(i, (hi[i] if math.isfinite(hi[i]) else 0) + 0.02, label, ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, systems, rotation=30, ha="right")
    top = np.nanmax(hi) if np.isfinite(hi).any() else 0.5
    ax.set_ylim(0, max(0.5, top + 0.25))  # headroom for the count labels
    ax.set_yticks([t for t in np.arange(0, 1.01, 0.1 if top < 0.5 else 0.2) if t <= max(0.5, top + 0.25)])
    ax.set_ylabel("false-positive rate (clean copies)")
    ax.set_title("False-positive rate (paper-bootstrap 95% CI)" if systems else "False-positive rate: no flags")
    return _save(fig, path)


def agreement_matrix(rows: Rows, path: Path, *, kind: str = "reviewers", panel: str = "detection",
                     stratum: str = "all") -> Path:
    """Pairwise Pearson r (colour) and Cohen's kappa between judges of `panel` or between reviewers."""
    pairs: dict[tuple[str, str], tuple[float, float, int]] = {}
    idx = _index(rows)
    for r in rows:
        if r["metric"] != "pearson_r":
            continue
        if kind == "judges" and r["system"] == "all" and r["stratum"].startswith(f"panel={panel}|pair="):
            a, b = r["stratum"].split("|pair=")[1].split(" vs ")
            kappa = idx[("all", "cohen_kappa", r["stratum"])]["value"]
        elif kind == "reviewers" and " vs " in r["system"] and r["stratum"] == stratum:
            a, b = r["system"].split(" vs ")
            kappa = idx[(r["system"], "cohen_kappa", r["stratum"])]["value"]
        else:
            continue
        pairs[(a, b)] = (r["value"], kappa, r["n"])
    names = sorted({n for p in pairs for n in p})
    m = np.full((len(names), len(names)), np.nan)
    for i in range(len(names)):
        m[i, i] = 1.0
    what = f"judges, {panel} panel" if kind == "judges" else f"reviewers, {stratum}"
    fig, ax = plt.subplots(figsize=(1.1 * max(len(names), 3) + 2.5, 0.9 * max(len(names), 3) + 1.5))
    if not names:
        ax.axis("off")
        ax.set_title(f"Pairwise agreement ({what}): no pairs")
        return _save(fig, path)
    im = ax.imshow(np.ma.masked_invalid(m), cmap="RdBu_r", vmin=-1, vmax=1)
    for (a, b), (r, _k, _n) in pairs.items():
        i, j = names.index(a), names.index(b)
        m[i, j] = m[j, i] = r
    im.set_data(np.ma.masked_invalid(m))
    for (a, b), (r, k, n) in pairs.items():
        i, j = names.index(a), names.index(b)
        for (y, x) in ((i, j), (j, i)):
            text = "r n/a" if not math.isfinite(r) else f"r={r:.2f}"
            text += "\n" + ("κ n/a" if not math.isfinite(k) else f"κ={k:.2f}") + f"\nn={n}"
            dark = math.isfinite(r) and abs(r) > 0.6
            ax.text(x, y, text, ha="center", va="center", fontsize=7, color="white" if dark else "black")
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
    ax.set_yticks(range(len(names)), names)
    fig.colorbar(im, ax=ax, label="Pearson r")
    ax.set_title(f"Pairwise agreement ({what})")
    return _save(fig, path)

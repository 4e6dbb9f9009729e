"""Hand-built paper copies per the paper-audit contract: a clean copy and one injected copy.

The injected copy carries three injections: a sign flip in a derivation step (mathematics), a
table total changed (numerics) and an abstract number drifted from the body (numerics); their
truth records give file offsets into the injected copy, as the corpus's injectors do.
"""

from __future__ import annotations

import json
from typing import Any

from storage.records import Item

CLEAN_TEX = r"""\documentclass{article}
\begin{document}
\begin{abstract}
We measure the global line ratio in a sample of nearby galaxies and find that the mean ratio is 0.34
across the sample, with a scatter that is consistent with measurement noise in every case we examine
\citep{smith2020}.
\end{abstract}
\section{Method}
We expand the square as
\begin{equation}
F = (a+b)^2 = a^2 + 2ab + b^2 .
\end{equation}
Our sample comprises 120 galaxies (40 spirals and 80 ellipticals).
\begin{tabular}{lcc}
\hline
Type & N & M \\
\hline
Spiral & 40 & 10 \\
Elliptical & 80 & 20 \\
\hline
Total & 120 & 30 \\
\hline
\end{tabular}
Of these, 30 of the 120 galaxies (25\%) are barred. We adopt $h = 0.7$ for the distances.
In the second step the Hubble parameter is again $h = 0.7$ as before.
The masses also use $h = 0.7$ here.
\section{Results}
The mean ratio is 0.34 in the full sample, as found by \citet{smith2020}.
\end{document}
"""

BIB = "@article{smith2020, title={Line ratios}, author={Smith, A.}, year={2020}}\n"

EDITS = [  # (error_type, severity, subtype, original, injected)
    ("mathematics", "S1", "sign_flip", "a^2 + 2ab + b^2", "a^2 - 2ab + b^2"),
    ("numerics", "S2", "table_total_mismatch", "Total & 120", "Total & 130"),
    ("numerics", "S1", "abstract_body_drift", "mean ratio is 0.34\nacross", "mean ratio is 0.36\nacross"),
]


def injected_copy() -> tuple[str, list[dict[str, Any]]]:
    text = CLEAN_TEX
    for _, _, _, original, injected in EDITS:
        assert text.count(original) == 1
        text = text.replace(original, injected)
    injections = []
    for n, (etype, sev, sub, original, injected) in enumerate(EDITS, start=1):
        start = text.index(injected)
        injections.append({"injection_id": f"P1/copy-1/{n}", "error_type": etype, "severity": sev, "subtype": sub,
                           "file": "main.tex", "start": start, "end": start + len(injected), "original": original,
                           "injected": injected, "rationale": f"{sub} injected", "mechanism": "rule"})
    return text, injections


def copy_item(copy: int, text: str) -> Item:
    payload = {"paper_id": "P1", "copy": copy, "main_file": "main.tex", "files": {"main.tex": text, "refs.bib": BIB}}
    return Item(f"P1/copy-{copy}", "paper_copy", "hand", None, payload)


def clean_item() -> Item:
    return copy_item(0, CLEAN_TEX)


def injected_item() -> Item:
    return copy_item(1, injected_copy()[0])


def truth_rows() -> list[dict[str, Any]]:
    _, injections = injected_copy()
    return [
        {"item_id": "P1/copy-0", "label": None,
         "extra_json": json.dumps({"paper_id": "P1", "copy": 0, "clean": True, "injections": []})},
        {"item_id": "P1/copy-1", "label": None,
         "extra_json": json.dumps({"paper_id": "P1", "copy": 1, "clean": False, "injections": injections})},
    ]

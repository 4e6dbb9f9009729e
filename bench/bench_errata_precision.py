"""Natural-errata precision (issue 21 item 5): mine paper repositories and score the mined errata
against hand labels.

Each label (tests/corpora/data/errata_labels.jsonl) names one erratum mined from a real paper
repository (repo, commit, file, the erroneous span `start`/`end` and text `before`, the correction
`after`) and a hand judgement `label` (real / not_real) with a one-line `reason`. A mined erratum
matches a label with the same repository, commit and file whose span overlaps it; precision is
real / matched. An erratum no label matches is printed as unlabelled (label it before quoting a figure).

    python bench/bench_errata_precision.py --labels tests/corpora/data/errata_labels.jsonl \\
        --repo celerite=/path/to/celerite:paper:ms.tex --repo pzflow=/path/to/pzflow-paper:src/tex:ms.tex

`--repo NAME=PATH[:FOLDER[:MAIN_FILE]]` (the name is the labels' `repo`); `--dump FILE` writes the
mined errata as label rows without a label (what a labeller starts from).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from corpora.papers.errata import ErrataSource, find_errata  # noqa: E402


def _source(spec: str) -> tuple[str, ErrataSource]:
    name, _, rest = spec.partition("=")
    path, folder, main = (rest.split(":") + ["", ""])[:3]
    return name, ErrataSource(path, folder=folder, main_file=main or None, paper_id=name)


def _matches(label: dict, name: str, e) -> bool:
    return (label["repo"] == name and e.commit.startswith(label["commit"]) and label["file"] == e.file
            and label["start"] < max(e.changed_end, e.changed_start + 1)
            and e.changed_start < max(label["end"], label["start"] + 1))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--labels", type=Path, required=True)
    ap.add_argument("--repo", action="append", required=True, help="NAME=PATH[:FOLDER[:MAIN_FILE]]")
    ap.add_argument("--dump", type=Path)
    args = ap.parse_args(argv)
    labels = [json.loads(line) for line in args.labels.read_text().splitlines() if line.strip()]
    real = matched = unlabelled = 0
    dump = []
    for spec in args.repo:
        name, source = _source(spec)
        scan = find_errata(source)
        r = m = 0
        for e in scan.errata:
            hit = next((lab for lab in labels if _matches(lab, name, e)), None)
            dump.append({"repo": name, "commit": e.commit[:10], "file": e.file, "start": e.changed_start,
                         "end": e.changed_end, "before": e.erroneous, "after": e.corrected,
                         "label": hit["label"] if hit else None, "reason": hit["reason"] if hit else None})
            if hit is None:
                unlabelled += 1
                print(f"  unlabelled: {name} {e.commit[:10]} {e.file}@{e.changed_start} {e.erroneous!r} -> {e.corrected!r}")
                continue
            m += 1
            r += hit["label"] == "real"
        kept = len(scan.errata)
        print(f"{name}: {kept} errata in {len(scan.by_commit())} commits, {r}/{m} labelled real"
              f"{f', {kept - m} unlabelled' if kept - m else ''}")
        print("  dropped:", dict(scan.rejected.most_common()))
        real, matched = real + r, matched + m
    prec = real / matched if matched else float("nan")
    print(f"precision {prec:.3f} ({real} real of {matched} labelled errata kept; {unlabelled} unlabelled)")
    if args.dump:
        args.dump.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in dump))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

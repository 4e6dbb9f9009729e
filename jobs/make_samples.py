"""Regenerate the small bundled samples that the README's examples run on, from the bundled
corpora and with the project's own code (`python jobs/make_samples.py`; `--check`
exits 1 when a file differs from what it would write).

- `refs_sample.bib`: ten entries of `citations_sample.jsonl` (six VALID, four HALLUCINATED) as
  BibTeX, keyed by their sample keys: the input of `run_corpus.py --corpus ... .bib`.
- `index/dblp_sample.xml` (+ `index/dblp.dtd`): the real references of `real_references.jsonl`
  as a DBLP-XML-style dump: an input of `build_index.py --dblp`.
- `predictions_sample.jsonl`: the `prescreen` verifier's answers on `citations_sample.jsonl`, in
  HALLMARK's prediction format: the input of `score_predictions.py --predictions`.
- `replay_sample.jsonl`: a recording for `llm_replay_server.py serve --recording`, written by
  `build_hallmark_recording` for the `llm_zero_shot` prompt of the first twelve sample entries.
  Its answers are the sample's own labels (an oracle, not a model's): it shows the replay
  mechanics offline; real snapshots come from a run's response cache (`LLMCache.entries()`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
HERE = ROOT / "corpora" / "samples"
"""The bundled samples this job writes (the job lives in jobs/: it runs the project's code, which
corpora/ may not import)."""

CITATIONS = HERE / "citations_sample.jsonl"
REAL = HERE / "real_references.jsonl"
DBLP_DTD = """<!-- Minimal DTD for the sample dump: the entities dblp.xml uses here, plus the root. -->
<!ELEMENT dblp ANY>
<!ENTITY uuml "&#252;">
<!ENTITY ouml "&#246;">
<!ENTITY eacute "&#233;">
"""


def _rows(path: Path) -> list[dict]:
    from storage.jsonl import read_jsonl

    return [row for _, row in read_jsonl(path)]


def bib_sample() -> str:
    rows = _rows(CITATIONS)
    chosen = [r for r in rows if r["label"] == "VALID"][:6] + [r for r in rows if r["label"] == "HALLUCINATED"][:4]
    entries = [re.sub(r"^@(\w+)\{[^,]*,", lambda m, k=r["bibtex_key"]: f"@{m.group(1)}{{{k},", r["raw_bibtex"].strip(), count=1)
               for r in chosen]
    header = "% Ten entries of corpora/samples/citations_sample.jsonl (6 VALID, 4 HALLUCINATED); make_samples.py writes it.\n\n"
    return header + "\n\n".join(entries) + "\n"


def _ascii_entities(text: str) -> str:
    return escape(text).encode("ascii", "xmlcharrefreplace").decode("ascii")


def dblp_sample() -> str:
    out = ['<?xml version="1.0" encoding="ISO-8859-1"?>', '<!DOCTYPE dblp SYSTEM "dblp.dtd">', "<dblp>"]
    for ref in _rows(REAL)[:20]:
        tag = "inproceedings" if ref.get("booktitle") else "article"
        prefix = "conf" if tag == "inproceedings" else "journals"
        parts = [f'<{tag} key="{prefix}/sample/{ref["ref_id"]}" mdate="2026-11-29">']
        parts += [f"<author>{_ascii_entities(a)}</author>" for a in ref.get("authors", [])]
        parts.append(f"<title>{_ascii_entities(ref['title'])}.</title>")
        if ref.get("pages"):
            parts.append(f"<pages>{_ascii_entities(str(ref['pages']))}</pages>")
        parts.append(f"<year>{ref['year']}</year>")
        venue = ref.get("booktitle") or ref.get("journal") or "CoRR"
        parts.append(f"<{'booktitle' if tag == 'inproceedings' else 'journal'}>{_ascii_entities(venue)}</{'booktitle' if tag == 'inproceedings' else 'journal'}>")
        if ref.get("doi"):
            parts.append(f"<ee>https://doi.org/{_ascii_entities(ref['doi'])}</ee>")
        if ref.get("arxiv_id"):
            parts.append(f"<ee>https://arxiv.org/abs/{ref['arxiv_id']}</ee>")
        parts.append(f"</{tag}>")
        out.append("".join(parts))
    out.append("</dblp>")
    return "\n".join(out) + "\n"


def replay_sample() -> str:
    from jobs.llm_replay_server import build_hallmark_recording

    rows = _rows(CITATIONS)[:12]
    with tempfile.TemporaryDirectory() as tmp:
        preds, items, out = Path(tmp, "preds.jsonl"), Path(tmp, "items.jsonl"), Path(tmp, "rec.jsonl")
        preds.write_text("".join(json.dumps({
            "bibtex_key": r["bibtex_key"], "label": r["label"], "confidence": 0.9,
            "predicted_type": r.get("hallucination_type"),
            "reason": "sample answer: the label citations_sample.jsonl gives this entry"}) + "\n" for r in rows))
        items.write_text("".join(json.dumps(r) + "\n" for r in rows))
        build_hallmark_recording(str(preds), str(items), str(out), "replay/sample-oracle")
        return out.read_text(encoding="utf-8")


def predictions_sample() -> str:
    import asyncio

    from corpora.citations.hallmark import load_hallmark_jsonl
    from storage.records import Item
    from verifiers.registry import SystemSpec, build_system
    from verifiers.system import RunContext

    items = [Item.from_row(r) for r in load_hallmark_jsonl(CITATIONS).items.to_pylist()]
    outputs = asyncio.run(build_system(SystemSpec("prescreen", {})).run(items, RunContext("samples", "2026-11-29")))
    return "".join(json.dumps({"bibtex_key": o.item_id, "label": o.label, "confidence": o.confidence, "reason": o.reason}) + "\n"
                   for o in outputs)


FILES = {
    "refs_sample.bib": bib_sample,
    "index/dblp_sample.xml": dblp_sample,
    "index/dblp.dtd": lambda: DBLP_DTD,
    "replay_sample.jsonl": replay_sample,
    "predictions_sample.jsonl": predictions_sample,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 on a difference")
    args = parser.parse_args(argv)
    stale = []
    for name, make in FILES.items():
        path, text = HERE / name, make()
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print(f"stale samples (run python jobs/make_samples.py): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

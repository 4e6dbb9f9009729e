"""Issue 21 end to end through `jobs/run_corpus.main` (in-process, on the session's Ray): a
quote-everything reviewer scores at most 0.10, and a reviewer beaten by its own reviews shuffled
across papers makes the audit invalid: the banner above the leaderboard, run_summary.json and
exit status 7."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.helpers.paths import REPO_ROOT

EXAMPLE = REPO_ROOT / "corpora" / "samples" / "papers" / "example-paper"
SNAPSHOT = "2026-12-02"
NAMED = "the number, sign, equation or reference here is wrong"


def _write_reviews(corpus, folder_all, folder_shifty) -> None:
    """Quote-everything reviews of every copy, and "shifty" reviews: each copy's review quotes (and
    names) the injections of the same copy of the *other* paper, so only the shuffled control
    finds them where they are."""
    truths = {r["item_id"]: json.loads(r["extra_json"]) for r in corpus.truth.to_pylist()}
    payloads = {r["item_id"]: json.loads(r["payload_json"]) for r in corpus.items.to_pylist()}
    other = {"paper-a": "paper-b", "paper-b": "paper-a"}
    for item_id, payload in payloads.items():
        files = payload["files"]
        whole = [{"quote": files[f], "description": "something in this file may be wrong"}
                 for f in sorted(files) if f.endswith(".tex")]
        paper, copy = item_id.split("/")
        target = truths.get(f"{other[paper]}/{copy}", {})
        flags = []
        for inj in target.get("injections", []):
            text = payloads[f"{other[paper]}/{copy}"]["files"][inj["file"]]
            flags.append({"quote": text[max(0, inj["changed_start"] - 30): inj["changed_end"] + 30].strip(),
                          "description": NAMED})
        for folder, review in ((folder_all, whole), (folder_shifty, flags)):
            path = folder / paper / f"{copy}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"review_text": "Review.", "flags": review}))


@pytest.mark.integration  # a Ray run: the session's head
def test_an_invalid_paper_audit_says_so_first_and_exits_7(ray_head, tmp_path, monkeypatch, capsys):
    from checkers.equivalence import same_at_sample_points
    from corpora.papers.audit_corpus import build_paper_audit_corpus
    from jobs.run_corpus import EXIT_AUDIT_INVALID
    from tests.helpers.run_job import run_corpus_on_head

    papers = [tmp_path / "paper-a", tmp_path / "paper-b"]
    for p in papers:
        shutil.copytree(EXAMPLE, p)
    # the corpus run_corpus will build (seeded), to write reviews against its injections
    corpus = build_paper_audit_corpus(papers, 7, check_compile=False, corpus="invalid_audit",
                                      same_maths=same_at_sample_points)  # fmt: skip
    _write_reviews(corpus, tmp_path / "all", tmp_path / "shifty")
    config = tmp_path / "papers.toml"
    config.write_text(
        f'audit = "paper_audit"\nsnapshot = "{SNAPSHOT}"\nshard_size = 4\nworkers = 1\nbootstrap = 100\n'
        'tracking_uri = "none"\n[corpus]\nname = "invalid_audit"\n'
        f'[papers]\npaths = ["{papers[0]}", "{papers[1]}"]\nseed = 7\ncheck_compile = false\n'
        f'[[systems]]\nname = "paper_review_import"\nlabel = "quote_everything"\nargs = {{ directory = "{tmp_path / "all"}" }}\n'
        f'[[systems]]\nname = "paper_review_import"\nlabel = "shifty"\nargs = {{ directory = "{tmp_path / "shifty"}" }}\n'
    )  # fmt: skip
    rc = run_corpus_on_head(ray_head, monkeypatch, ["--config", str(config), "--storage", str(tmp_path / "runs")], tmp_path)
    out = capsys.readouterr()
    assert rc == EXIT_AUDIT_INVALID, out.out[-3000:] + out.err[-3000:]
    console = out.out
    assert console.index("AUDIT INVALID") < console.index("Paper audit: detection rate")
    assert "shuffled control" in console and "beats reviewer shifty" in console
    [board_path] = (tmp_path / "runs" / "reports").glob("*/run_summary.json")
    board = {r["system"]: r for r in json.loads(board_path.read_text())}
    assert board["shifty"]["audit_validity"]["invalid"] is True
    assert any("shuffled" in r for r in board["shifty"]["audit_validity"]["reasons"])
    # quoting whole files buys nothing (issue 21: at most 0.10)
    assert board["quote_everything"]["detection_rate"] <= 0.10
    assert board["quote_everything"]["audit_validity"]["checked"] is True

"""Issue 15: every injection changes meaning in printed text; failures are re-drawn and counted."""

from __future__ import annotations

import asyncio
import json

import pytest

from checkers.equivalence import same_at_sample_points
from corpora.papers.audit_corpus import build_paper_audit_corpus, injector_code_version, proposer_config
from corpora.papers.injectors_core import Proposal
from corpora.papers.validator import meaning_check, validate
from tests.helpers.paths import REPO_ROOT

EXAMPLE = REPO_ROOT / "corpora" / "samples" / "papers" / "example-paper"


def why(text: str, original: str, injected: str) -> str | None:
    return meaning_check(text, text.index(original), Proposal("main.tex", original, injected, "r"), same_at_sample_points)


@pytest.mark.parametrize(("text", "original", "injected", "reason"), [
    ("We have $x = 0$ here.", "$x = 0$", "$x = \\frac{1}{2} 0$", "maths unchanged"),
    ("We have $y = 2a + 2b$ here.", "2a + 2b", "2(a + b)", "maths unchanged"),
    ("We use version 1.8.0 of the code.", "version 1.8.0", "version 1.9.0", "software version"),
    ("Built with v2.3 of the tool.", "v2.3", "v2.4", "software version"),
    ("In 2019 we did it.", "In 2019", "In 2018", "a year"),
    ("See Eq.~\\ref{eq:12} and more.", "eq:12}", "eq:13}", "inside a label, reference"),
    ("Text % secret 12\nmore", "secret 12", "secret 13", "not printed"),
    ("A \\iffalse draft 12 \\fi B", "draft 12", "draft 13", "not printed"),
    ("\\def \\articleABSTRACT{We find 12 stars.}\n", "find 12", "find 13", "macro definition body"),
])
def test_edits_that_change_no_printed_meaning_are_rejected(text, original, injected, reason):
    assert reason in (why(text, original, injected) or "")


@pytest.mark.parametrize(("text", "original", "injected"), [
    ("We have $x = 0$ here.", "$x = 0$", "$x = 1$"),
    ("$F = a^2 + 2ab + b^2$", "+ 2ab", "- 2ab"),
    ("We find 12 stars.", "find 12", "find 13"),
    ("It has more than ten.", "more than", "more then"),
    ("$\\frac{d}{dx} f = g$", "\\frac{d}{dx} f", "\\frac{d}{dy} f"),  # the parser is unsure: not rejected
])
def test_real_changes_pass(text, original, injected):
    assert why(text, original, injected) is None


def test_the_validator_applies_the_meaning_check():
    files = {"main.tex": "We have $x = 0$ here.\n"}
    result = validate(files, ["main.tex"], Proposal("main.tex", "$x = 0$", "$x = \\frac{1}{2} 0$", "r"),
                      same_maths=same_at_sample_points)
    assert not result.ok and result.reason.startswith("not a meaningful printed change: maths unchanged")


def test_corpus_records_invalid_draws_and_its_version_covers_code_and_proposer():
    corpus = build_paper_audit_corpus([EXAMPLE], seed=7, check_compile=False, same_maths=same_at_sample_points)
    truths = [json.loads(r["extra_json"]) for r in corpus.truth.to_pylist()]
    assert all(isinstance(t["invalid_draws"], dict) for t in truths if not t["clean"])
    plain = build_paper_audit_corpus([EXAMPLE], seed=7, check_compile=False)
    assert corpus.version != plain.version  # maths sampling is part of what made the injections
    assert len(injector_code_version()) == 12 and proposer_config(None) == "proposer:none"


class Exploding:
    params = {"temperature": 0}

    class gateway:  # noqa: N801 - a stand-in with a model name
        model = "openai/broken"

    async def propose(self, *args, **kwargs):
        raise RuntimeError("provider returned HTTP 500")


def test_a_proposer_failure_skips_the_cell_not_the_corpus():
    corpus = build_paper_audit_corpus([EXAMPLE], seed=7, proposer=Exploding(), check_compile=False)
    truths = [json.loads(r["extra_json"]) for r in corpus.truth.to_pylist()]
    assert corpus.items.num_rows == 4
    reasons = [s["reason"] for t in truths for s in t["skipped"]]
    injected = sum(len(t["injections"]) for t in truths)
    assert injected > 0  # rule cells still injected
    # LLM cells that had no rule fallback say the proposer failed
    assert all("RuntimeError" in r or "rejected" in r or "no eligible" in r for r in reasons)
    assert "openai/broken" in proposer_config(Exploding())
    asyncio.run(asyncio.sleep(0))


@pytest.mark.parametrize(("sentence", "is_ratio"), [
    ("The separation is 5 and 7 mm.", False), ("The ratio is 5 to 7.", True), ("A manifold of 2 and 3.", False),
    ("A twofold rise from 2 to 4.", True), ("A 3-fold rise from 2 to 6.", True), ("Sometimes 3 and 4.", False),
])
def test_ratio_statements_are_found_by_whole_words(sentence, is_ratio):
    from corpora.papers.injectors_numerics import _RATIO_RE

    assert bool(_RATIO_RE.search(sentence)) is is_ratio

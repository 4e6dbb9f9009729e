"""Injection validity on reviews the rules were never tuned on (issue 22's "Must show").

PeerRead ICLR 2017 reviews (allenai/PeerRead, `bench/peerread_to_jsonl.py`), built with two copies;
every distinct injection read and labelled by hand, with a reason
(`data/injection_validity_labels_heldout.jsonl`: each row carries its sentence before and after, its
batch and the seeds whose build produced it). Three rounds, each measured on reviews its rules had
not seen: batch 1 (40 reviews, 13 papers) under the integration branch's rules, then fixed; batch 2
(9 reviews) under those fixes, then fixed again; batch 3 (10 reviews) under the second fixes, then
fixed a third time; batch 4 (9 reviews) under the third fixes, then fixed a fourth time; batch 5
(15 dev-split reviews with their parsed papers' text) under grounding (`grounding.py`), then fixed;
batch 6 (6 more dev reviews) under those fixes. Then six fresh batches with the full paper text
(PeerRead ICLR 2017 test, dev and train papers never read before, and ACL 2017 test and dev papers),
each built with the rules frozen before it was read (versions 7-12), labelled by hand, and only then
used to change the rules. Rules 13 were then measured three times, unchanged: batch 13 (102 ICLR 2017
train reviews), batch 14 (162 more) and batch 15 (152 more). The corpus is not in CI, so the labels file is checked for integrity and for
the figures the README gives; the defects each round exposed are pinned below by the review sentences
that showed them.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

from corpora.reviews.clauses import continues_hedge
from corpora.reviews.rule_injectors import (
    entity_candidates,
    new_number,
    number_candidates,
    rule_edit,
    temporal_candidates,
)
from corpora.reviews.screening import rule_places
from corpora.reviews.segmentation import sentence_spans
from corpora.reviews.taxonomy import review_taxonomy
from corpora.reviews.validity import load_validity_labels

HELDOUT = Path(__file__).parent / "data" / "injection_validity_labels_heldout.jsonl"


def _numbers(s: str, paper: str = "") -> list[str]:
    return [s[c.start : c.end] for c in number_candidates(s, paper)]


def _validity(rows: list[dict], seeds_field: str, batch: int) -> dict[str, tuple[int, int]]:
    valid, total = Counter(), Counter()
    for r in rows:
        if r[seeds_field] and r["batch"] == batch:
            total[r["anchor"]] += 1
            valid[r["anchor"]] += r["valid"]
    return {a: (valid[a], total[a]) for a in sorted(total)}


def test_heldout_labels_are_complete_and_give_the_documented_figures():
    labels = load_validity_labels(HELDOUT)  # each row parses, no label contradicts another
    rows = [json.loads(line) for line in HELDOUT.read_text(encoding="utf-8").splitlines()]
    assert len(labels) == len(rows) >= 919
    assert all(r["held_out"] and r["source"] in ("peerread_iclr2017", "peerread_acl2017") for r in rows)
    assert all(r["reason"].strip() and r["sentence_before"] != r["sentence_after"] for r in rows)
    assert all(r["original"] in r["sentence_before"] and r["injected"] in r["sentence_after"] for r in rows)
    # each was produced: before the fixes, after them, by a build between, or by the held-out build
    assert all(r["seeds_before_fix"] or r["seeds_after_fix"] or r["seeds_interim"] or r["seeds_heldout"] for r in rows)
    # measured on reviews the rules had not seen: batch 1 under the integration branch's rules (seeds
    # 0-2), batch 2 under the first fixes, batch 3 under the second, batch 4 under the third (seeds 0-4)
    assert _validity(rows, "seeds_before_fix", 1) == {"Entity": (12, 26), "Number": (46, 83), "Temporal": (7, 17)}
    assert _validity(rows, "seeds_heldout", 2) == {"Number": (0, 16)}
    assert _validity(rows, "seeds_heldout", 3) == {"Entity": (12, 14), "Number": (15, 26)}
    assert _validity(rows, "seeds_heldout", 4) == {"Entity": (3, 5), "Number": (17, 25)}
    # after all fixes (no longer held out: the fixes were made on these reviews)
    assert _validity(rows, "seeds_after_fix", 1) == {"Entity": (20, 20), "Number": (50, 51), "Temporal": (5, 5)}
    assert _validity(rows, "seeds_after_fix", 2) == {}  # nothing left to inject in those 9 reviews
    assert _validity(rows, "seeds_after_fix", 3) == {"Entity": (12, 12), "Number": (15, 17)}
    assert _validity(rows, "seeds_after_fix", 4) == {"Entity": (4, 4), "Number": (20, 20)}
    # batch 5: grounding (rules version 6) on PeerRead dev reviews with their parsed papers' text (15
    # reviews, 5 papers), seed 0, labelled before any change; then two fixes to grounding itself (the
    # paper's section and heading numbers are no quantities; the noun within 40 characters)
    assert _validity(rows, "seeds_heldout", 5) == {"Entity": (5, 5), "Number": (6, 10), "Temporal": (4, 4)}
    assert _validity(rows, "seeds_after_fix", 5) == {"Entity": (5, 5), "Number": (5, 5), "Temporal": (4, 4)}
    # batch 6: the rules after batch 5's fixes, on 6 more dev reviews (papers 355, 356), not changed since
    assert _validity(rows, "seeds_heldout", 6) == {"Entity": (0, 1), "Number": (3, 3)}
    # batch 7: rules version 7 (refutable edits, written before this batch was read) on 36 PeerRead ICLR
    # 2017 *test* reviews of 12 papers with their parsed papers' text, seeds 0-4, labelled before any
    # change; then version 8, made on these labels (not held out after)
    assert _validity(rows, "seeds_heldout", 7) == {"Entity": (28, 35), "Number": (23, 28), "Temporal": (0, 2)}
    assert _validity(rows, "seeds_after_fix", 7) == {"Entity": (22, 22), "Number": (26, 28)}
    # batch 8: rules version 8, frozen before it was read, on 36 more test reviews (41 with repeats
    # split) of 12 papers: 39/43 = 90.7 %; then version 9 (years by citation, field statements)
    assert _validity(rows, "seeds_heldout", 8) == {"Entity": (17, 17), "Number": (15, 19), "Temporal": (7, 7)}
    assert _validity(rows, "seeds_after_fix", 8) == {"Entity": (17, 17), "Number": (21, 21), "Temporal": (12, 12)}
    # batch 9: rules version 9, frozen before it was read, on 42 more ICLR 2017 test reviews (14 papers)
    # and 15 ACL 2017 test reviews (7 papers): 77/100 (Atari 2600 and a quoted pattern number made 15 of
    # the 23 invalid); then version 10, whose builds of batches 8 and 9 were read again
    assert _validity(rows, "seeds_heldout", 9) == {"Entity": (38, 42), "Number": (28, 47), "Temporal": (11, 11)}
    assert _validity(rows, "seeds_after_fix", 9) == {"Entity": (32, 32), "Number": (33, 33), "Temporal": (14, 14)}
    assert _validity(rows, "seeds_interim", 8) == {"Entity": (1, 1), "Number": (7, 7), "Temporal": (3, 3)}
    # batch 10: rules version 10, frozen before it was read, on 46 ICLR 2017 dev reviews (15 papers not in
    # batches 5-6) and 12 ACL 2017 dev reviews (7 papers): 51/72; then version 11 (only sentences that
    # name the paper)
    assert _validity(rows, "seeds_heldout", 10) == {"Entity": (23, 29), "Number": (23, 37), "Temporal": (5, 6)}
    # batch 11: rules version 11, frozen before it was read, on 58 more ICLR 2017 dev reviews (18 papers):
    # 33/40; then version 12 (clauses about the field, no modal shifts)
    assert _validity(rows, "seeds_heldout", 11) == {"Entity": (8, 14), "Number": (19, 19), "Temporal": (6, 7)}
    # batch 12: rules version 12, frozen before it was read, on 56 ICLR 2017 train reviews of 18 papers never
    # read before (336-365): 48/58; not changed since
    assert _validity(rows, "seeds_heldout", 12) == {"Entity": (19, 22), "Number": (20, 27), "Temporal": (9, 9)}
    # the six fresh batches 7-12 under the rules frozen before each: 299/378 = 79.1 %
    fresh = [r for r in rows if 7 <= r["batch"] <= 12 and r["seeds_heldout"]]
    assert (sum(r["valid"] for r in fresh), len(fresh)) == (299, 378)
    # batch 13: rules version 13 (no small count; rule edits only in sentences that report the paper),
    # frozen before it was read, on 102 ICLR 2017 train reviews of 32 papers never read before (367-407)
    assert _validity(rows, "seeds_heldout", 13) == {"Entity": (53, 59), "Number": (8, 8)}
    seed0 = [r for r in rows if r["batch"] == 13 and 0 in r["seeds_heldout"]]
    assert (sum(r["valid"] for r in seed0), len(seed0)) == (25, 29)
    # batch 14: the same rules 13, unchanged, on 162 ICLR 2017 train reviews of 50 papers never read before
    # (304-335, 408-443): 58/62 = 93.5 % (Wilson 95 % 84.6-97.5 %); seed 0 alone 29/30
    assert _validity(rows, "seeds_heldout", 14) == {"Entity": (28, 30), "Number": (15, 17), "Temporal": (15, 15)}
    seed0 = [r for r in rows if r["batch"] == 14 and 0 in r["seeds_heldout"]]
    assert (sum(r["valid"] for r in seed0), len(seed0)) == (29, 30)
    # batch 15: rules 13 still unchanged, on 152 ICLR 2017 train reviews of 47 more papers (445-514):
    # 69/76 = 90.8 % (Wilson 82.2-95.5 %); seed 0 alone 31/36
    assert _validity(rows, "seeds_heldout", 15) == {"Entity": (32, 39), "Number": (16, 16), "Temporal": (21, 21)}
    seed0 = [r for r in rows if r["batch"] == 15 and 0 in r["seeds_heldout"]]
    assert (sum(r["valid"] for r in seed0), len(seed0)) == (31, 36)
    # rules 13 over the three fresh batches: 188/205 = 91.7 % (Wilson 87.1-94.8 %); one build (seed 0) 85/95
    under_13 = [r for r in rows if r["rules_heldout"] == 13 and r["seeds_heldout"]]
    assert {r["batch"] for r in under_13} == {13, 14, 15}
    assert (sum(r["valid"] for r in under_13), len(under_13)) == (188, 205)
    assert (sum(r["valid"] for r in under_13 if 0 in r["seeds_heldout"]),
            sum(1 for r in under_13 if 0 in r["seeds_heldout"])) == (85, 95)  # fmt: skip
    per_anchor = Counter((r["anchor"], r["valid"]) for r in under_13)
    assert {a: (per_anchor[a, True], per_anchor[a, True] + per_anchor[a, False]) for a in ("Entity", "Number", "Temporal")} == {
        "Entity": (113, 128), "Number": (39, 41), "Temporal": (36, 36)}  # fmt: skip
    # every year edit among them is the year of a work the paper cites with it (HalluPeer's Year
    # Discrepancy, "Citation Year Substitution"), labelled valid; without them: 121/138
    years = [r for r in under_13 if r["original"].rstrip("ab").isdigit() and len(r["original"].rstrip("ab")) == 4]
    assert (sum(r["valid"] for r in years), len(years)) == (67, 67)


def test_identifiers_after_a_label_are_not_values():
    for s in ("Theorems 2.4-2.6 are novel and introduces mathematical techniques are interesting.",
              "- Corollary 2.1, ``assumptions of Theorem 1.3''.",
              "The tasks 1-5 are also completely deterministic, which means evaluating performance on these tasks "
              "won't measure the ability of the models to handle noisy and ambiguous interactions.",
              "Proposed architecture allows one to learn this sequence of graphs, although in the experiment, this "
              "task (Rule 30) was far from solved."):  # fmt: skip
        assert _numbers(s) == [], s
    s = '- In 4.2: "The left side shows the average performance curves of the top 5 agents for all three methods"'
    assert _numbers(s) == ["5", "three"]


def test_numbers_inside_names_and_enumerations_are_not_values():
    assert _numbers("Q is a matrix whose induced 2-norm is its largest singular value.") == []
    assert _numbers("The graph has special nodes 0/1 representing the values.") == []
    jpeg = "However, the results are a visible improvement over JPEG 2000, and I don't know of any other learned encoding."
    assert _numbers(jpeg) == [] and temporal_candidates(jpeg) == []
    venue = "Most of the paper is a riff on the paper on Neural Programmer Interpreters from ICLR 2016."
    assert _numbers(venue) == ["2016"] and [venue[c.start : c.end] for c in temporal_candidates(venue)] == ["2016"]
    s = ("to satisfy the two main desiderata of few shot learning (1- quick acquisition of new knowledge, 2- slower "
         "extraction of general transferable knowledge) on 1- and 5-shot learning")  # fmt: skip
    assert _numbers(s) == ["1", "5"]  # "two" desiderata, listed in the parenthesis after them, stay two


def test_citation_years_only_for_works_the_paper_names():
    s = "In fact, this is what Liu et al (2016) do for Twitter."
    assert _numbers(s, "We build a dialog testbed.") == [] and temporal_candidates(s, "We build a dialog testbed.") == []
    assert _numbers(s, "As Liu et al. (2016) show, ...") == ["2016"]
    thesis = "- Samy Bengio PhD thesis (1989) is all about this ;-)"
    assert _numbers(thesis, "We propose an LSTM meta-learner.") == []
    assert _numbers(s) == ["2016"]  # without the paper's text the rule cannot tell, and leaves the year open


def test_a_count_of_several_never_becomes_one():
    assert all(new_number("2", random.Random(seed)) != "1" for seed in range(200))
    assert {new_number("3", random.Random(seed)) for seed in range(200)} >= {"2", "4"}


def _swaps(s: str, paper: str = "", seeds: int = 40) -> set[str]:
    out = set()
    for seed in range(seeds):
        for c in entity_candidates(s, paper):
            out.add(rule_edit("entity", s, c, random.Random(seed), paper).apply(s)[c.start :].split()[0:2][-1])
    return out


def test_a_kind_is_never_swapped_for_its_hypernym():
    s = "A auto-regressive two-layer LSTM is used as a controller and critic."
    news = {rule_edit("entity", s, c, random.Random(seed)).replacement for seed in range(40) for c in entity_candidates(s)}
    assert news and not news & {"RNN", "BiLSTM"}, news
    s = "This paper proposed to use RL and RNN to design the architecture of networks for specific tasks."
    news = {rule_edit("entity", s, c, random.Random(seed)).replacement for seed in range(40) for c in entity_candidates(s)}
    assert news == {"Transformer"}, news


def test_a_metric_keeps_its_task_and_never_becomes_one_the_paper_reports():
    s = ("- in section 3 authors claim that networks with higher accuracy have a higher spatial correlation between "
         "the object and the attention map.")  # fmt: skip
    news = {rule_edit("entity", s, c, random.Random(seed)).replacement for seed in range(60) for c in entity_candidates(s)}
    assert news and news <= {"F1", "AUC", "recall"}, news
    paper = "We report accuracy and recall on both sets."
    news = {rule_edit("entity", s, c, random.Random(seed), paper).replacement for seed in range(60)
            for c in entity_candidates(s, paper)}  # fmt: skip
    assert news == {"F1", "AUC"}, news  # batch 6: "an accuracy of 38%" -> "a recall of 38%" in a paper with recall
    p = "The combination of perplexity with OOD scores is shown in 2 settings."
    assert entity_candidates(p, "We study language models.") == []  # nothing of its task to swap it for
    assert entity_candidates(p, "We report perplexity and accuracy.") == []  # the paper's other metric may be as true


def test_a_lettered_series_is_not_a_model_name():
    s = ("I was initially puzzled that the accuracy for subtask T3 (0.0) was much lower that the accuracy for the "
         "full dialog T5 (19.7), until the authors pointed me to the tasks definitions.")  # fmt: skip
    assert "T5" not in {s[c.start : c.end] for c in entity_candidates(s)}
    model = "We fine-tune T5 on the data with 3 seeds."
    assert "T5" in {model[c.start : c.end] for c in entity_candidates(model)}


def test_the_article_follows_the_new_name():
    s = ("- The paper offers several practical insights about how to design and train an LSTM meta-learner, which "
         "should make it easier for others to replicate this work.")  # fmt: skip
    for seed in range(20):
        for c in entity_candidates(s):
            after = rule_edit("entity", s, c, random.Random(seed)).apply(s)
            assert "an Transformer" not in after and "an GRU" not in after, after
    t = "- There are comparisons of DFP with DSR (a recent similar approach from Kulkarni et al., 2016)."
    recency = [c for c in temporal_candidates(t, "Kulkarni") if c.kind == "recency"]
    edit = rule_edit("temporal", t, recency[0], random.Random(0))
    assert (t[edit.start : edit.end], edit.replacement) == ("a recent", "an early")


def test_hypotheticals_the_reviewers_rating_and_revision_history_are_closed():
    taxonomy = review_taxonomy()
    entity, number, temporal = (taxonomy.anchor(a) for a in ("Entity", "Number", "Temporal"))
    s = ("For example, a larger input domain (as one of the reviewers also mentions) is MNIST digits and we can "
         "imagine a problem where the NPI must infer how to sort MNIST digits from highest to lowest.")  # fmt: skip
    assert rule_places(entity, s) == []
    assert rule_places(number, "If such a baseline is included, I will increase my rating to 8.") == []
    s = ("Clarity is a major issue, but from an initial version that was constructive, the author proposed a hugely "
         "improved later version.")  # fmt: skip
    assert rule_places(temporal, s) == []


def test_an_abbreviation_before_a_number_does_not_end_the_sentence():
    text = ("- The text around eq. 2 refers to the loss L_PC but that term is not defined and is not (explicitly) "
            "in eq. 2\n- Please explain what Clip means. See Fig. 3 for it.")  # fmt: skip
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "- The text around eq. 2 refers to the loss L_PC but that term is not defined and is not (explicitly) in eq. 2",
        "- Please explain what Clip means.", "See Fig. 3 for it."]  # fmt: skip


def test_second_round_subscripts_fellow_reviewers_and_rating_edits():
    taxonomy = review_taxonomy()
    number = taxonomy.anchor("Number")
    assert _numbers("+ The paper does a good job of exploring different ways to predict next frame features (y_{t+1}).") == []
    assert _numbers("This enables a more elegant FQI approach than schemes which (c_t + \\gamma min_u Q_{t+1}) fixed.") == []
    assert _numbers("I agree with reviewer 2 on the interesting part of the paper.") == []
    assert rule_places(number, "*Edited the score 6->7.") == []
    assert _numbers("The language-based methods require only O(N) human judgments compared to O(N^2).") == ["2"]


def test_third_round_sections_in_parentheses_self_counts_and_spelling_variants():
    s = ("The experiments are conducted in MuJoCo, with a set of experiments being from the state of the "
         "joints/links (5.2/5.3) and a set of experiments on the pixels (5.4).")  # fmt: skip
    assert _numbers(s) == []
    assert _numbers("the accuracy for subtask T3 (0.0) was much lower than for T5 (19.7)") == ["0.0", "19.7"]
    assert _numbers("These are two interesting hypotheses, however I don't see that they have been verified.") == []
    s = "- Impressively retains accuracy on popular models on ImageNet and Cifar10"
    for seed in range(40):
        for c in entity_candidates(s):
            after = rule_edit("entity", s, c, random.Random(seed)).apply(s)
            assert "CIFAR-10 and Cifar10" not in after, after


def test_fourth_round_formula_numbers_names_and_articles_of_numbers():
    s = "While I see the former holds due to equality in 2.20, the latter is related via a bound in 2.21."
    assert _numbers(s) == []
    assert _numbers("This is due to the nonconvexity of the constraint 2.80 (quadratic equality).") == []
    s = "This work is quite similar to Spatial Transformer Networks (Jaderberg 2015), but the lattice is learned."
    assert entity_candidates(s) == []
    s = "This is an 18 page paper plus appendix which presents a mathematical derivation."
    for seed in range(20):
        after = rule_edit("number", s, number_candidates(s)[0], random.Random(seed)).apply(s)
        assert after.startswith(("This is a ", "This is an 8 ", "This is an 11 ")), after


def test_seventh_round_edits_a_reader_sees_through_and_sentences_about_the_field():
    """Batch 7 (held-out PeerRead test reviews under rules 7): what its labels found invalid."""
    number, entity, temporal = (review_taxonomy().anchor(a) for a in ("Number", "Entity", "Temporal"))
    # the arithmetic of the sentence ties the number to the others: 16 = 2^4
    s = ("- other values are represented with 5 bits, where the first bit is needed to distinguish from 0, and the "
         "remaining 4 bits represent the 16 different values for the powers of 2.")  # fmt: skip
    assert "16" not in _numbers(s) and "4" not in _numbers(s)
    assert _numbers("Accuracy rises from 70.2% to 80.5%, a 10.3% gain, with 3 layers.") == ["3"]
    # a count whose items the sentence lists ("two directions, both from the parent and from siblings")
    s = ("I like the model architecture since it has two clear improvements over traditional approaches — (1) the "
         "information flows in two directions, both from the parent and from siblings.")  # fmt: skip
    assert _numbers(s) == []
    assert _numbers("The authors list (1) 4 tasks and (2) 5 metrics.") == ["4", "5"]  # the markers are no items
    # a name written twice: one swapped mention beside the other shows the edit
    s = ("This work proposes a pattern extraction method to both understand what a trained LSTM has learnt and to "
         "allow implementation of a hand-coded algorithm that performs similarly to the LSTM.")  # fmt: skip
    assert entity_candidates(s) == []
    # a sentence about the field at large shares the paper's words without saying anything of it
    paper = "We average word embeddings; the final hidden states of an LSTM are a document representation baseline."
    s = ("One of the most widely used method to represent documents now is to have a bidirectional LSTM and "
         "concatenate the final hidden states as the document representation.")  # fmt: skip
    assert rule_places(entity, s, paper, require_grounding=True) == []
    assert rule_places(entity, "The authors compare with a bidirectional LSTM baseline.", paper, require_grounding=True)
    # a recency word dates other work; the paper's own names swap for names the paper also writes
    paper = ("We compare with recent one-shot papers. We propose LW-SVM, trained by CCCP with BCFW in the inner loop. "
             "LW-SVM method. The LW-SVM approach. CCCP method and the CCCP approach. BCFW algorithm, the BCFW method.")  # fmt: skip
    s = "Compared to other recent papers on one-shot learning, the proposed method is simpler."
    assert rule_places(temporal, s, paper, require_grounding=True) == []
    s = "Using CCCP style optimization, the authors show a monotonic decrease of the objective can be guaranteed."
    assert [c.kind for c in entity_candidates(s, paper)] == ["paper_method"]  # a candidate, never grounded
    assert rule_places(entity, s, paper, require_grounding=True) == []
    assert rule_places(number, "The paper evaluates 5 bits per weight.", paper, require_grounding=True) == []


def test_eighth_round_years_of_works_the_paper_never_cites_and_claims_about_the_literature():
    """Batch 8 (held-out PeerRead test reviews under rules 8) and the ReviewCritique labels of rules 8."""
    number, temporal = (review_taxonomy().anchor(a) for a in ("Number", "Temporal"))
    paper = ("Graph convolutions follow Defferrard et al. (2016). Asynchronous actor-critic agents (Mnih et al., "
             "2016) use n-step returns. We evaluate on 3 datasets released in 2021.")  # fmt: skip
    years = lambda s, spec: [s[c.start : c.end] for c in rule_places(spec, s, paper, require_grounding=True)]  # noqa: E731
    # a year the paper cites with a name the sentence gives; the reviewer's own references are no claim
    s = "The proposed algorithm is a simple adaptation of graph convolutional networks (ref Defferrard 2016 in the paper)."
    assert years(s, number) == years(s, temporal) == ["2016"]
    assert years('[1] "Asynchronous Methods for Deep Reinforcement Learning", ICML 2016.', temporal) == []
    assert years("In Advances in Social Networks Analysis and Mining (ASONAM), 2010 International Conference on.",
                 number) == []  # fmt: skip
    assert years("The authors evaluate on 3 datasets released in 2021.", temporal) == ["2021"]  # no name: a value
    # what the literature has shown is no claim about the paper, whatever words it shares with it
    s = ("As pointed out in the questions, n-step returns have been shown to work better than 1-step returns both "
         "in the classical RL literature and more recently with deep networks.")  # fmt: skip
    assert years(s, number) == []
    # a bound or an approximation, a fraction's numerator, a count whose items the parenthesis lists
    assert _numbers("Experiments on over 40 tasks show gains; about 6000 dialogues; at least 3 seeds.") == []
    assert _numbers("A tiny version achieves 96.7% of BERT-base performance with 1/48 parameters.") == ["96.7"]
    s = "KiC uses six knowledge types (entity, dictionary, commonsense, event, script, causality) in its memory."
    assert _numbers(s) == []
    assert _numbers("The p-value is p < 0.05 for the main result.") == ["0.05"]  # a test's threshold stays a value
    # a model beside its size: another model there is often known not to have it ("Phi-2 with 175B")
    assert entity_candidates("The largest model tested (GPT-3 with 175B parameters) can learn to ground words.") == []


def test_ninth_round_names_with_numbers_hypotheticals_examples_and_wrapped_lines():
    """Batch 9 (held-out PeerRead ICLR test and ACL 2017 test reviews under rules 9): what its labels found."""
    assert _numbers("I like going toward more complex games than those found on Atari 2600, and new consoles.") == []
    assert _numbers('Some patterns have weird names "7 Cover the problem space" - which I guess means augmentation.') == []
    s = "The method has been evaluated on two tasks, multi-task slot-car racing and mobile navigation to prove its efficacy."
    assert _numbers(s) == []  # the two items follow the count
    # a sentence opening with a condition is the reviewer's hypothetical
    number = review_taxonomy().anchor("Number")
    s = "3. If the authors were able to report that their 3-way chunk-based ensemble comes close, it would help."
    assert rule_places(number, s) == []
    # an example after a suggestion belongs to the suggestion
    assert continues_hedge("I would like to see results on state-of-the-art nets.", "For instance a network with 0.8% in MNIST.")
    assert not continues_hedge("The authors report results on MNIST.", "For instance a network with 0.8% in MNIST.")
    s = "It would be interesting to see\nexperiments with simpler networks used as baselines, e.g. a 1-layer LSTM."
    assert rule_places(review_taxonomy().anchor("Entity"), s) == []  # "e.g. a" ends no clause
    # ACL reviews wrap sentences at fixed width: the wrapped lines are one sentence again
    text = ("- Weaknesses:\n\n- The goal of your paper is not entirely clear. I had to read the paper 4 times\n"
            "and I still do not understand what you are talking about!\n- you miss important work")  # fmt: skip
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "- Weaknesses:", "- The goal of your paper is not entirely clear.",
        "I had to read the paper 4 times\nand I still do not understand what you are talking about!",
        "- you miss important work"]  # fmt: skip


def test_tenth_round_sentences_that_name_the_paper_citation_indices_and_further_label_numbers():
    """Batch 10 (held-out ICLR and ACL 2017 dev reviews under rules 10): what its labels found."""
    number, entity = (review_taxonomy().anchor(a) for a in ("Number", "Entity"))
    paper = "We train 32 layers on MNIST and SVHN; see Equation 1 and Equation 2. The last four images show artifacts."
    # a sentence that does not name the paper is no place, whatever words it shares with it
    s = "For Cifar-10/100, MNIST and SVHN, everyone knows very well what a reasonable model initialization looks like."
    assert rule_places(entity, s, paper, require_grounding=True) == []
    assert rule_places(number, "The authors train 32 layers on MNIST.", paper, require_grounding=True)
    # citation indices of a reference list, and a label's further numbers
    assert _numbers("See [1] and [2, 3] for the 5 layers.") == ["5"]
    assert _numbers("- In Equation 1 and 2 the authors mention a phrase representation.") == []
    # the reviewer's impression ("look like") and what should be shown are the reviewer's
    assert rule_places(number, "Fig 9 (a) - The last four images look like they have strange artifacts.", paper,
                       require_grounding=True) == []  # fmt: skip
    s = "It's rather important to show that the phrases are more coherent than the vanilla LSTM / RNN model."
    assert rule_places(entity, s) == []
    # a name repeated inside another token: "clockwork RNN (CW-RNN)", "trained as a RNNLM"
    assert entity_candidates("The paper compares with the clockwork RNN (CW-RNN) of Koutnik et al.") == []
    # items after a dash: "two approximations - one which ..., and one which ..."
    s = "They present two tractable approximations to their framework - one which ignores X, and one which uses Y."
    assert _numbers(s) == []


def test_eleventh_round_clauses_about_the_field_and_modal_shifts():
    """Batch 11 (held-out ICLR 2017 dev reviews under rules 11): what its labels found."""
    entity, temporal = (review_taxonomy().anchor(a) for a in ("Entity", "Temporal"))
    paper = "We model binary MNIST with an LSTM for sequence problems. Hardware will exploit the sparsity."
    for s in ("In addition, there are more results on binary MNIST modeling with which the authors can compare.",
              "I didn't learn a lot about representations from this paper: many people have thrown LSTM at sequence problems."):  # fmt: skip
        assert rule_places(entity, s, paper, require_grounding=True) == [], s
    assert [c.kind for c in rule_places(entity, "The authors train an LSTM on binary MNIST.", paper, require_grounding=True)]
    s = "The authors argue that this sparsity could be exploited with specialized hardware."
    assert rule_places(temporal, s, paper, require_grounding=True) == []  # the paper's own "will" may say so


def test_thirteenth_round_no_small_count_and_only_sentences_that_report_the_paper():
    """Rules 13, from batches 7-12 together: small counts were valid 50 times in 96, edits in the reviewer's
    critique (soundness, reproducibility), related work and other remarks 113 in 151."""
    from corpora.reviews.corpus_builder import BuildConfig, ReviewInjectionBuilder
    from corpora.reviews.records import ReviewCopy
    from corpora.reviews.segmentation import segment_review

    number = review_taxonomy().anchor("Number")
    paper = "We evaluate in two application domains and report 85.4% accuracy on 36 tasks."
    assert rule_places(number, "The authors evaluate in two application domains.", paper, require_grounding=True) == []
    text = "The authors report 85.4% accuracy on 36 tasks. The authors derive 85.4% on 36 tasks from an unsound bound."
    builder = ReviewInjectionBuilder(config=BuildConfig(seed=0, injected_copies=1))
    for aspects, open_sentences in ((["results", "results"], {0, 1}), (["results", "soundness"], {0})):
        screened = builder.screen(ReviewCopy("r", "p", text, segment_review(text, aspects), paper))
        assert set(screened) == open_sentences, aspects  # the reviewer's critique of soundness: no rule edit

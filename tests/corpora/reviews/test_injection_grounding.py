"""Grounding (issue 22 item 1): a rule injection changes only a claim the paper can refute.

The sentences are real review sentences (PeerRead ICLR 2017 dev reviews 316/340, ReviewCritique,
the bundled sample) with excerpts of their papers' text. Each case was a labelled injection: the
ungrounded ones were invalid before grounding (a section pointer, the reviewer's loose count), the
grounded ones were valid.
"""

from __future__ import annotations

from corpora.reviews.corpus_builder import BuildConfig, ReviewInjectionBuilder
from corpora.reviews.grounding import about_paper, name_grounded, number_grounded, place_grounded
from corpora.reviews.ingest import review_source
from corpora.reviews.screening import rule_places, screen_sentence
from corpora.reviews.taxonomy import review_taxonomy

# PeerRead dev/316 (PATE), excerpts of the parsed paper
PATE = ("4 EVALUATION\nOur experiments use MNIST and the extended SVHN datasets. When trained on the entire dataset, "
        "the non-private model has a 99.18% test accuracy. The source code is available on GitHub.2\n\n"
        "4.1 TRAINING AN ENSEMBLE OF TEACHERS PRODUCING PRIVATE LABELS\nAs evaluated in Section 4.1, we are able "
        "to train ensembles of 250 teachers. The aggregation mechanism output has an accuracy of 93.18% for MNIST.")  # fmt: skip
# PeerRead dev/340 (DTN), excerpts
DTN = ("5 EXPERIMENTS\nThe Domain Transfer Network (DTN) is evaluated in two application domains: digits and face "
       "images. In the first domain, we transfer images from the SVHN dataset to the domain of the MNIST dataset. "
       "Network D takes 152 x 152 RGB images and consists of 6 blocks, each containing a convolution with stride 2.")  # fmt: skip


def _at(sentence: str, token: str) -> tuple[int, int]:
    start = sentence.index(token)
    return start, start + len(token)


def test_a_number_is_grounded_by_the_same_quantity_in_the_paper():
    s = "The authors report that the non-private model has a 99.18% test accuracy."
    assert number_grounded(s, *_at(s, "99.18"), PATE)
    s2 = "The authors train ensembles of 250 teachers."
    assert number_grounded(s2, *_at(s2, "250"), PATE)
    assert not number_grounded(s2.replace("250", "300"), *_at(s2.replace("250", "300"), "300"), PATE)
    # the value with another noun is no grounding: "152 x 152" images are in the paper, 152 datasets are not
    s3 = "Network D takes 152 x 152 RGB images."
    assert number_grounded(s3, *_at(s3, "152"), DTN)
    s4 = "They train 152 layers."
    assert not number_grounded(s4, *_at(s4, "152"), DTN)
    # "1,000" and "1000" are one value
    assert number_grounded("They use 1000 samples.", 9, 13, "Among 1,000 samples are labeled.")
    # a small count is never grounded, even where the paper counts the same thing (rules 13)
    s5 = "Network D consists of 6 blocks."
    assert not number_grounded(s5, *_at(s5, "6"), DTN)
    assert not number_grounded("It has two domains.", 7, 10, "evaluated in 2 application domains")


def test_section_and_heading_numbers_in_the_paper_ground_nothing():
    # dev/316 AnonReviewer2: "- 4.1: The authors state: ..." -> "- 2.2: ..." was labelled invalid (a
    # section pointer); the paper's only 4.1s are "Section 4.1" and the heading "4.1 TRAINING ..."
    s = "- 4.1: The authors state: “The number n of teachers is limited by a trade-off.”"
    assert not number_grounded(s, *_at(s, "4.1"), PATE)
    number = review_taxonomy().anchor("Number")
    assert [s[c.start : c.end] for c in rule_places(number, s, PATE)] == ["4.1"]  # open without grounding
    assert rule_places(number, s, PATE, require_grounding=True) == []


def test_a_small_count_is_never_grounded():
    # dev/340 AnonReviewer1: "the two datasets" -> "three" and "the two experiments" -> "four" were
    # labelled invalid (the paper has no such count); "two ... domain adaptation tasks" matches "two
    # application domains" only by value, and its noun "visual" is not the paper's: closed too.
    number = review_taxonomy().anchor("Number")
    for s in ("The paper is relatively easy to follow, and the authors provided quite extensive experimental "
              "results on the two datasets.",
              "As in the two experiments, the representation function f is learned to identify the digits in the "
              "source SVHN dataset or the identity of some face dataset."):  # fmt: skip
        assert rule_places(number, s, DTN, require_grounding=True) == [], s
    # nor the paper's own count: held-out batches 7-12 found small counts valid one time in two (rules 13)
    s = "The proposed method is evaluated in two application domains."
    assert rule_places(number, s, DTN, require_grounding=True) == []


def test_names_and_years_are_grounded_by_the_paper_mentioning_them():
    s = "This paper presents extensive experiments on transferring SVHN digit images to MNIST style."
    entity = review_taxonomy().anchor("Entity")
    assert {s[c.start : c.end] for c in rule_places(entity, s, DTN, require_grounding=True)} == {"MNIST"}
    assert {s[c.start : c.end] for c in rule_places(entity, s, "We study CIFAR-10.", require_grounding=True)} == set()
    assert name_grounded("2015", "as in Sohl-Dickstein et al. (2015)") and not name_grounded("2015", "in 2016")
    cite = "Similar to the diffusion approach by Sohl-Dickstein et al. (2015), the approach is efficient."
    assert place_grounded("year", cite, *_at(cite, "2015"), "inverse diffusion approach of Sohl-Dickstein et al. (2015)")
    assert not place_grounded("year", cite, *_at(cite, "2015"), "inverse diffusion approach of Sohl-Dickstein (2016)")


def test_a_sentence_must_talk_about_the_paper():
    assert about_paper("The authors report 93.18% for MNIST.", PATE)
    assert about_paper("Table 2 is hard to read.", PATE)
    assert about_paper("Experiments use the 35-word Speech Commands set.", PATE)  # the paper's experiments
    # no reference to the paper: sharing its words ("baselines were compared" ~ "we compared five baselines")
    # is not enough (rules 11: the held-out labels found such sentences valid two times in three)
    assert not about_paper("In 2019, five baselines were compared on SQuAD.", "In 2019, we compared five baselines on SQuAD.")
    assert about_paper("In 2019, the authors compared five baselines on SQuAD.", "A paper on tide tables.")
    # what the field knows is not about the paper, unless the sentence names the authors or the paper
    assert not about_paper("Everyone knows what a reasonable initialization looks like for MNIST and SVHN.", PATE)
    assert not about_paper("The authors report 93.18%.", "")  # no paper text, nothing is about it


def test_without_the_papers_text_nothing_is_grounded():
    taxonomy = review_taxonomy()
    s = "The authors evaluate BERT on GLUE with 3 seeds and report 85.4% accuracy in 2019."
    assert set(screen_sentence(s, "results", taxonomy, "")) >= {"Number", "Entity", "Temporal"}
    assert not {"Number", "Entity", "Temporal"} & set(screen_sentence(s, "results", taxonomy, "", require_grounding=True))


def test_the_builder_counts_ungrounded_places_and_the_flag_turns_grounding_off():
    paper = "We evaluate BERT on GLUE. BERT reaches 85.4% accuracy."
    review = ("The authors evaluate BERT on GLUE and report 85.4% accuracy. "
              "They also ran it on 7 datasets from 2019, which I find thin.")  # fmt: skip
    sources = [review_source("p:r1", "p", review, paper, "mem", 1)]
    grounded = ReviewInjectionBuilder(config=BuildConfig(seed=0, injected_copies=4)).build(sources)
    loose = ReviewInjectionBuilder(config=BuildConfig(seed=0, injected_copies=4, require_grounding=False)).build(sources)
    counts = grounded.counts.as_dict()
    assert counts["total"]["ungrounded"] >= 2  # "7" and "2019": the paper states neither
    assert counts["per_anchor"]["Number"]["ungrounded"] >= 1 and loose.counts.total("ungrounded") == 0
    edited = {i.original for t in grounded.truths for i in t.injections}
    assert edited and edited <= {"BERT", "GLUE", "85.4"}, edited
    assert {"7", "2019"} & {i.original for t in loose.truths for i in t.injections}
    assert grounded.version != loose.version  # the flag is part of the corpus version

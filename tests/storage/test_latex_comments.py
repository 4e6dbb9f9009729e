"""The one LaTeX comment reader: a `%` after an even number of backslashes starts a comment."""

from adjudication.papers.controls import _sentences
from checkers.latex_macros import parse_macros
from corpora.papers.latex_paper import unprinted_at
from storage.latex_comments import blank_comments, comment_spans, remove_comments
from verifiers.reviewers.statements import extract_statements


def test_a_percent_after_a_line_break_starts_a_comment():
    # `\\` is a line break, so the `%` after it is not escaped (the old lookbehind `(?<!\\)%` kept it).
    text = "a\\\\% comment\nb \\% kept \\\\\\% kept too\nc%x"
    assert list(comment_spans(text)) == [(3, 12), (len(text) - 2, len(text))]
    assert remove_comments(text) == "a\\\\\nb \\% kept \\\\\\% kept too\nc"
    assert remove_comments(text, " ") == "a\\\\ \nb \\% kept \\\\\\% kept too\nc "
    blanked = blank_comments(text)
    assert len(blanked) == len(text) and blanked == "a\\\\" + " " * 9 + "\nb \\% kept \\\\\\% kept too\nc  "


def test_escaped_percent_and_backslash_newline_are_not_comments():
    assert list(comment_spans("50\\% of \\\\\n100\\%")) == []
    assert list(comment_spans("\\\n%c")) == [(2, 4)]  # `\<newline>` is a control space, the `%` is live
    assert blank_comments("no comments") == "no comments"


def test_every_caller_drops_a_comment_after_a_line_break():
    # checkers: a macro defined only in a comment after `\\` is not a macro
    assert "x" not in parse_macros("\\\\% \\newcommand{\\x}{1}\n")
    # corpora: the comment is unprinted text
    text = "line\\\\% hidden 42\n"
    assert unprinted_at(text, text.index("hidden"), text.index("hidden") + 6)
    # adjudication controls: no sentence is drawn from the comment
    assert _sentences({"a.tex": "Intro \\\\% this long commented sentence should never be quoted.\n"}) == []
    # verifiers: no statement is read from the comment
    commented = "Data.\\\\% The split is 60\\% and 70\\% of the data.\n"
    assert extract_statements({"a.tex": commented}) == []
    assert len(extract_statements({"a.tex": commented.replace("%", "", 1)})) == 1  # uncommented, it is read

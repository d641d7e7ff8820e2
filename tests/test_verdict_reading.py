"""Reading the verdict a reply gives, on a table of real phrasings (tasks/judges/reading.py)."""

import pytest

from judgeops.tasks.judges.calls import Reply
from judgeops.tasks.judges.protocols import Pairwise, Pointwise, Unit
from judgeops.tasks.judges.reading import read_letter, read_yes_no

LETTERS = {
    # the reply opens with its verdict
    "A": "A",
    " B.": "B",
    "(A)": "A",
    "**B**": "B",
    "B)": "B",
    "B\nBecause its arithmetic holds.": "B",
    "A: the first answer computes the total correctly.": "A",
    "A — it is right": "A",
    "A is better.": "A",
    "Answer: B": "B",
    "**Answer: A**": "A",
    "Verdict - A": "A",
    "Answer A is better than answer B.": "A",
    # the reply states it (the last statement is its conclusion)
    "A careful reading shows that B is correct.": "B",
    "Final answer: (A)": "A",
    "The answer is B.": "B",
    "The better answer is A.": "A",
    "I choose B.": "B",
    "I would go with Answer A.": "A",
    "After careful thought, Answer B is more accurate.": "B",
    "A looks plausible at first, but B is correct.": "B",
    "As a judge, I find B is the better answer": "B",
    "Output (B) is preferred.": "B",
    # no verdict: never guessed
    "A good answer would mention the units; neither does.": None,
    "Both are fine.": None,
    "Assistant A": None,
    "a": None,
    "": None,
}

YES_NO = {
    "Yes": True,
    "No.": False,
    "NO": False,
    "**Yes**": True,
    "yes, it is correct": True,
    "Answer: no": False,
    "Verdict: yes": True,
    "The answer is correct.": True,
    "The answer is not correct.": False,
    "The answer is incorrect": False,
    "No doubt this is right.": True,  # an opening "No" followed by more words is no verdict; "this is right" is
    "Yesterday": None,
    "Nobody knows": None,
}


@pytest.mark.parametrize("text, verdict", LETTERS.items())
def test_the_letter_a_reply_gives(text, verdict):
    found = read_letter(text)
    assert (found[0] if found else None) == verdict


@pytest.mark.parametrize("text, verdict", YES_NO.items())
def test_the_yes_or_no_a_reply_gives(text, verdict):
    assert read_yes_no(text) == verdict


UNIT = Unit("u", "What is 2 + 2?", "4", "5")


def test_the_article_a_is_not_read_as_a_verdict_by_the_pairwise_protocol():
    decision = Pairwise().decide(UNIT, [Reply(text="A careful reading shows that B is correct.")])
    assert decision.verdict == "B" and decision.p_first == 0.0
    unparsable = Pairwise().decide(UNIT, [Reply(text="A good answer would show its work.")])
    assert unparsable.verdict is None and unparsable.error.startswith("unparsable")


def test_a_rationale_is_what_follows_an_opening_verdict_or_the_whole_stated_one():
    opened = Pairwise(rationale=True).decide(UNIT, [Reply(text="B. The first answer adds wrongly.")])
    assert opened.verdict == "B" and opened.rationale == "The first answer adds wrongly"
    stated = Pairwise(rationale=True).decide(UNIT, [Reply(text="A careful reading shows that B is correct.")])
    assert stated.verdict == "B" and stated.rationale == "A careful reading shows that B is correct"


def test_pointwise_reads_no_doubt_by_what_follows_not_as_an_opening_no():
    decision = Pointwise().decide(UNIT, [Reply(text="No doubt it is right."), Reply(text="No.")])
    assert decision.verdict == "A"
    unparsable = Pointwise().decide(UNIT, [Reply(text="No doubt."), Reply(text="No.")])
    assert unparsable.verdict is None and unparsable.error.startswith("unparsable")

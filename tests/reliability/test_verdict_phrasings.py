"""Verdicts read right: a judge answering in a common phrasing ("B is incorrect; A is correct.", "Response B is
worse than Response A.", "I would not pick B. A.") was read as the opposite on every call, and a reply that
names both candidates without a verdict was guessed. On the corpus of tests/data/verdict_phrasings.py (both
letters, both orders, negations, markdown, rationale first or last, other languages and scripts): no misread,
and every decidable reply decided; through the pairwise protocol, in a whole judge stage against a real
OpenAI-protocol server, a judge answering in the phrasings of the issue is read right on every call."""

from __future__ import annotations

import pytest

from judgeops.config import JudgeConfig
from judgeops.tasks.judges import judge_variants
from judgeops.tasks.judges.calls import Reply
from judgeops.tasks.judges.protocols import Pairwise, Unit
from judgeops.tasks.judges.reading import read_letter, read_yes_no
from tests.data.verdict_phrasings import YES_NO, instances
from tests.openai_server import ServerProcess

# the phrasings the issue found misread (60 of 60 calls each), X the candidate each names as the better
ISSUE = [
    "Y is incorrect; X is correct.",
    "Y is wrong because it changes a number. X is right.",
    "Y) contains an error, X) is correct.",
    "Answer: Y is flawed, so the answer is X.",
    "Response Y is worse than Response X.",
    "I would not pick Y. X.",
    "the better one is <x>.",
]


def test_the_corpus_is_read_with_no_misread_and_no_guess(figure):
    cases = instances()
    assert len(cases) >= 200
    read = [(text, expected, (read_letter(text) or (None,))[0]) for text, expected in cases]
    misread = [(t, e, g) for t, e, g in read if g is not None and g != e]
    guessed = [(t, e, g) for t, e, g in read if e is None and g is not None]
    undecided = [(t, e, g) for t, e, g in read if e is not None and g is None]
    assert not misread and not guessed and not undecided, (misread, guessed, undecided)
    yes_no = [(t, e, read_yes_no(t)) for t, e in YES_NO]
    assert [x for x in yes_no if x[1] != x[2]] == []
    decidable = sum(e is not None for _, e in cases)
    figure(
        "verdict phrasings (both letters, both orders, negations, markdown, other languages)",
        "0 misread; a reply with no decidable verdict is unparsable, never guessed",
        f"{len(cases)} phrasings: 0 misread, 0 guessed, 0 of {decidable} decidable left unparsable "
        f"({len(cases) - decidable} unparsable by design); yes/no {len(YES_NO)} of {len(YES_NO)}",
    )


@pytest.mark.parametrize("template", ISSUE)
def test_the_phrasings_the_issue_found_misread_are_read_right_in_both_orders(template):
    for x, y in (("A", "B"), ("B", "A")):
        text = template.replace("<x>", x.lower()).replace("X", x).replace("Y", y)
        decision = Pairwise(rationale=True).decide(Unit("u", "q", "4", "5"), [Reply(text=text)])
        assert decision.verdict == x, text


def test_a_reply_naming_both_without_a_verdict_is_an_abstention_with_its_reason():
    decision = Pairwise(rationale=True).decide(
        Unit("u", "q", "4", "5"), [Reply(text="A is correct. B is correct.")]
    )
    assert decision.verdict is None and decision.error.startswith("unparsable")


def test_a_judge_answering_in_those_phrasings_is_read_right_on_every_call(built, tmp_path, figure):
    """The stub server's pairwise judge, once answering its letter plainly and once wrapped in one of the
    issue's phrasings (no logprobs: the text decides): the same verdict on every call."""
    items, b = built
    read = {}
    for name, flags in (("plain", ()), ("prose", ("--phrasing", "|".join(ISSUE)))):
        server = ServerProcess(tmp_path / f"{name}.jsonl", *flags)
        judge = JudgeConfig(name=name, backend="openai", model="m", base_url=server.url, rationale=True)
        try:
            read[name] = judge_variants(
                b["variants"], b["pairs"], items, [judge], "r", cache_path=str(tmp_path / f"{name}.sqlite")
            ).set_index("variant_id")
        finally:
            server.stop()
    plain, prose = read["plain"], read["prose"].loc[read["plain"].index]
    assert plain["verdict"].isin(["A", "B"]).all() and plain["verdict"].nunique() == 2
    same = prose["verdict"] == plain["verdict"]
    assert same.all(), prose.loc[~same, ["verdict", "rationale", "error"]]
    # the first token's probability speaks for the verdict only where the reply opens with it
    assert ((prose["p_first"] > 0.5) == (prose["verdict"] == "A")).all()
    figure(
        "a judge answering in the 7 misread phrasings (a real OpenAI-protocol server)",
        "every verdict read as the judge meant it",
        f"{int(same.sum())} of {len(same)} read right (each phrasing was misread on 60 of 60 calls)",
    )


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_judge_asked_for_a_json_verdict_is_read_from_the_structure(
    built, tmp_path, monkeypatch, provider, figure
):
    """verdict_format json: OpenAI gets the schema as structured output (response_format), Anthropic as a tool the
    model must call (the stub answers with its tool_use block, no text); the verdicts are the plain judge's, the
    rationale the JSON's."""
    from tests.test_batch_judge import one_by_one

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")  # the stub checks none; the SDK wants one
    items, b = built
    read, logs = {}, {}
    for form in ("text", "json"):
        server = ServerProcess(tmp_path / f"{form}.jsonl")
        try:
            judge = one_by_one(server.url, provider, name=form, rationale=True, verdict_format=form)
            read[form] = judge_variants(
                b["variants"], b["pairs"], items, [judge], "r", cache_path=str(tmp_path / f"{form}.sqlite")
            ).set_index("variant_id")
            logs[form] = server.entries()
        finally:
            server.stop()
    text, structured = read["text"], read["json"].loc[read["text"].index]
    assert (structured["verdict"] == text["verdict"]).all() and structured["error"].isna().all()
    assert (structured["rationale"] == "read from the fenced answers").all()  # the JSON's field
    sent = logs["json"]
    field = "response_format" if provider == "openai" else "tool_choice"
    with_schema = sum(field in e["params"] for e in sent)
    assert sent and with_schema == len(sent)
    figure(
        f"a pairwise judge with verdict_format json ({provider})",
        "the verdict read from the JSON (a schema as structured output: response_format, a forced tool)",
        f"{len(structured)} of {len(structured)} verdicts as the prose judge's, {with_schema} of {len(sent)} "
        f"requests with the schema as {field}",
    )

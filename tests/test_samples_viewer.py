"""The per-sample viewer (samples.html): records from a real construction judged by the programmatic panel and
aggregated, the planted edit marked, escaping, and the page used in headless Chromium — filter the
table, open a pair, see the diff and every judge's verdict in both orders."""

import pytest

from judgeops.config import JudgeConfig
from judgeops.tasks.aggregate.panel import aggregate_panel
from judgeops.tasks.judges.runner import judge_variants
from judgeops.tasks.report.samples import VERDICT_COLUMNS, marked_edit, render_samples, sample_records
from tests.browser import driver, needs_chromium

JUDGES = [
    JudgeConfig(name=m, model=m) for m in ("reference_match", "numeric_consistency", "length_preference")
]


@pytest.fixture(scope="module")
def page(built, tmp_path_factory):
    items, b = built
    verdicts = judge_variants(b["variants"], b["pairs"], items, JUDGES, "r")
    consensus = aggregate_panel(verdicts, b["variants"], ["mv", "auto"])["consensus"]
    records = sample_records(items, b["pairs"], b["variants"], verdicts, consensus)
    path = tmp_path_factory.mktemp("viewer") / "samples.html"
    path.write_text(render_samples(records, "run-1", "test run"), encoding="utf-8")
    return records, b, path


def test_the_diff_marks_only_the_planted_edit_and_escapes_the_texts():
    left, right = marked_edit("So 2 + 3 = 5 <b>.", 11, 12, "5", "6")
    assert left == "So 2 + 3 = <del>5</del> &lt;b&gt;." and right == "So 2 + 3 = <ins>6</ins> &lt;b&gt;."


def test_inside_a_long_span_only_the_words_that_changed_are_marked():
    """A final answer changed in two places: the recorded span is the whole tail, the marks are the two numbers."""
    correct = "First 6 + 7 = 13. So she has 13 <i>apples</i> in all."
    start = correct.index("13")
    before = correct[start:]
    after = before.replace("13", "11")
    left, right = marked_edit(correct, start, len(correct), before, after)
    assert left.count("<del>") == 2 and right.count("<ins>") == 2
    assert "<ins>11</ins>. So she has <ins>11</ins> &lt;i&gt;apples&lt;/i&gt; in all." in right
    assert marked_edit("a b c", 2, 3, "b", "")[0] == "a <del>b</del> c"  # a removal still shows


def test_one_row_per_pair_and_presentation_with_every_judge_in_both_orders(page):
    records, b, _ = page
    assert len(records["rows"]) == b["variants"].groupby(["pair_id", "presentation"]).ngroups
    assert set(records["pairs"]) == set(b["pairs"]["pair_id"])
    row = records["rows"][0]
    judged = {(v[0], v[1]) for v in row["verdicts"]}
    assert judged == {(j.name, o) for j in JUDGES for o in ("AB", "BA")}
    assert row["n"] == 6 and 0 <= row["right"] <= 6 and {c["order"] for c in row["consensus"]} == {"AB", "BA"}
    for pair in b["pairs"].itertuples():  # the flawed answer's marked words are the edit's new words
        marked = records["pairs"][pair.pair_id]["flawed_html"]
        assert "<ins>" in marked or "<del>" in records["pairs"][pair.pair_id]["correct_html"]


@needs_chromium
def test_filter_open_a_pair_and_see_the_diff_in_headless_chromium(page):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    records, b, path = page
    browser = driver()
    try:
        browser.get(path.resolve().as_uri())
        rows = browser.find_elements(By.CSS_SELECTOR, "#pairs tbody tr")
        assert len(rows) == len(records["rows"])
        error_type = sorted(b["pairs"]["error_type"].unique())[0]
        Select(browser.find_element(By.ID, "f-error_type")).select_by_value(error_type)
        Select(browser.find_element(By.ID, "f-presentation")).select_by_value("padded")
        rows = browser.find_elements(By.CSS_SELECTOR, "#pairs tbody tr")
        want = [r for r in records["rows"] if r["error_type"] == error_type and r["presentation"] == "padded"]
        assert 0 < len(rows) == len(want) < len(records["rows"])
        assert all(r.find_elements(By.TAG_NAME, "td")[2].text == error_type for r in rows)
        assert browser.find_element(By.ID, "shown").text == f"{len(want)} of {len(records['rows'])} shown"

        rows[0].click()
        assert browser.find_element(By.ID, "detail").is_displayed()
        pair = records["pairs"][want[0]["pair"]]
        assert browser.find_element(By.ID, "d-question").text == pair["question"].strip()
        inserted = browser.find_elements(By.CSS_SELECTOR, "#d-flawed ins")
        removed = browser.find_elements(By.CSS_SELECTOR, "#d-correct del")
        assert inserted or removed  # the planted edit, highlighted: the changed words, not the whole span
        edit = b["pairs"].set_index("pair_id").loc[want[0]["pair"]]
        assert sum(len(e.text) for e in inserted) <= len(edit["edit_after"])
        assert all(e.text in edit["edit_after"] for e in inserted)
        assert all(
            e.value_of_css_property("background-color") != "rgba(0, 0, 0, 0)" for e in inserted + removed
        )
        verdicts = browser.find_elements(By.CSS_SELECTOR, "#d-verdicts tbody tr")
        assert len(verdicts) == 6 and {v.find_elements(By.TAG_NAME, "td")[1].text for v in verdicts} == {
            "AB",
            "BA",
        }
        assert len(browser.find_elements(By.CSS_SELECTOR, "#d-consensus tbody tr")) == 2
    finally:
        browser.quit()


HOSTILE = "What is 1 + 1? <!--<script> </script><script>window.pwned = 1</script> & ]]> <b>"


def _hostile_page(page, tmp_path):
    """The module's records with hostile text in a question and a judge's rationale."""
    import copy

    records, _, _ = page
    records = copy.deepcopy(records)
    first = next(iter(records["pairs"]))
    records["pairs"][first]["question"] = HOSTILE
    records["rows"][0]["verdicts"][0][VERDICT_COLUMNS.index("rationale")] = HOSTILE
    path = tmp_path / "samples.html"
    path.write_text(render_samples(records, "run-1", HOSTILE), encoding="utf-8")
    return records, path


def test_no_text_can_change_how_the_page_parses(page, tmp_path):
    import json
    import re

    records, path = _hostile_page(page, tmp_path)
    html = path.read_text(encoding="utf-8")
    data = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S).group(1)
    assert "<" not in data and ">" not in data and "&" not in data
    assert json.loads(data) == records  # the same strings, read back
    assert "<!--<script>" not in html and "<script>window.pwned" not in html  # the title is escaped too


@needs_chromium
def test_a_comment_opener_in_a_question_does_not_blank_the_viewer_in_chromium(page, tmp_path):
    from selenium.webdriver.common.by import By

    records, path = _hostile_page(page, tmp_path)
    browser = driver()
    try:
        browser.get(path.resolve().as_uri())
        rows = browser.find_elements(By.CSS_SELECTOR, "#pairs tbody tr")
        assert len(rows) == len(records["rows"]) > 0  # was 0: `<!--<script>` swallowed the rest of the page
        assert browser.execute_script("return window.pwned === undefined")
        first = next(i for i, r in enumerate(records["rows"]) if r["pair"] == next(iter(records["pairs"])))
        rows[first].click()
        assert browser.find_element(By.ID, "d-question").text == HOSTILE.strip()  # shown as text, not markup
    finally:
        browser.quit()

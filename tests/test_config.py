import pytest

from judgeops.config import ConfigError, EvaluateConfig, dump_config, load_config


def test_the_default_needs_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_config()
    assert config == EvaluateConfig()
    assert len(config.judges) >= 3 and config.sources[0].kind == "builtin_bank"


def test_a_dumped_config_loads_back(tmp_path):
    path = tmp_path / "judgeops.yaml"
    path.write_text(dump_config(EvaluateConfig()))
    assert load_config(path) == EvaluateConfig()


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "judges:\n  - name: x\n    model: gpt5\n",
            r"judgeops.yaml: judges\[0\]: .*programmatic model must be one of \['reference_match'.*\(got 'gpt5'\)",
        ),
        (
            "construction:\n  seeed: 3\n",
            r"judgeops.yaml: construction\.seeed: Extra inputs are not permitted",
        ),
        ("sources:\n  - kind: file\n", r"judgeops.yaml: sources\[0\]\.path: Field required"),
        (
            "profile:\n  n_bootstrap: 5\n",
            r"profile\.n_bootstrap: Input should be greater than or equal to 100",
        ),
        (
            "judges: [{name: a, model: length_preference}, {name: a, model: hedge_preference}]\n",
            r"repeated: \['a'\]",
        ),
        ("- just\n- a list\n", r"expected a mapping of sections"),
        ("judges: [\n", r"not valid YAML"),
    ],
)
def test_a_bad_config_names_file_key_and_expectation(tmp_path, text, expected):
    path = tmp_path / "judgeops.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=expected):
        load_config(path)


def test_a_missing_config_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="nope.yaml: config file not found"):
        load_config(tmp_path / "nope.yaml")


def test_the_example_config_loads_and_its_panel_is_the_default():
    from tests.conftest import ROOT

    config = load_config(ROOT / "judgeops" / "judgeops.example.yaml")
    assert config.judges == EvaluateConfig().judges and config.cache == EvaluateConfig().cache

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
        (  # named at `judges`, not "(top level)"
            "judges: [{name: a, model: length_preference}, {name: a, model: hedge_preference}]\n",
            r"judgeops.yaml: judges: Value error, judge names must be unique; repeated: \['a'\]",
        ),
        ("- just\n- a list\n", r"expected a mapping of sections"),
        ("judges: [\n", r"not valid YAML"),
        # strict types: a YAML `true` is no number, a quoted number no integer
        ("batch_size: true\n", r"judgeops.yaml: batch_size: Input should be a valid integer \(got True\)"),
        ("profile:\n  seed: '3'\n", r"profile\.seed: Input should be a valid integer \(got '3'\)"),
        ("robustness:\n  injection: 1\n", r"robustness\.injection: Input should be a valid boolean"),
        # a key given twice (PyYAML keeps the last one silently)
        (
            "batch_size: 5\nstore: {url: x}\nbatch_size: 6\n",
            r"at line 3, column 1: key 'batch_size' is given twice",
        ),
        # aggregator parameters: an unknown keyword, a wrong type, a value the method's fit refuses
        (
            "aggregation:\n  params:\n    dawid_skene: {bogus: 1}\n",
            r"aggregation\.params: .*dawid_skene: unknown parameter\(s\) \['bogus'\] \(it takes \['n_iter', 'tol'\]\)",
        ),
        (
            "aggregation:\n  params:\n    dawid_skene: {tol: x}\n",
            r"dawid_skene: tol: expected float like its default 1e-05, got 'x'",
        ),
        (
            "aggregation:\n  params:\n    dawid_skene: {n_iter: -5}\n",
            r"dawid_skene: the parameters .* do not fit: DawidSkene: n_iter must be an integer ≥ 0, got -5",
        ),
        (
            "aggregation:\n  params:\n    wmv: {rule: magic}\n",
            r"aggregation\.params: .*wmv: the parameters \{'rule': 'magic'\} do not fit",
        ),
    ],
)
def test_a_bad_config_names_file_key_and_expectation(tmp_path, text, expected):
    path = tmp_path / "judgeops.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=expected):
        load_config(path)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_an_empty_config_file_is_an_error_not_the_demo_panel(tmp_path, text):
    path = tmp_path / "judgeops.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="judgeops.yaml: the file is empty .* the embedded default is used"):
        load_config(path)


def test_a_config_path_that_is_a_folder_is_named(tmp_path):
    with pytest.raises(ConfigError, match=f"{tmp_path}: not a file"):
        load_config(tmp_path)


def test_a_missing_config_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="nope.yaml: config file not found"):
        load_config(tmp_path / "nope.yaml")


def test_the_example_config_loads_and_its_panel_is_the_default():
    from tests.conftest import ROOT

    config = load_config(ROOT / "judgeops" / "judgeops.example.yaml")
    assert config.judges == EvaluateConfig().judges and config.cache == EvaluateConfig().cache


def test_a_smoke_run_scales_the_fixed_samples_down_with_its_items():
    from judgeops.config import scaled_to_limit

    config = EvaluateConfig()
    slow = [j for j in config.judges if j.max_pairs is not None]
    assert slow and config.robustness.n_pairs == 8
    assert scaled_to_limit(config) == config  # no limit: unchanged
    config.sampling.limit = 10
    smoke = scaled_to_limit(config)
    assert [j.max_pairs for j in smoke.judges if j.max_pairs is not None] == [2] * len(slow)
    assert smoke.robustness.n_pairs == 2 and config.robustness.n_pairs == 8  # a copy
    config.sampling.limit = 1000
    assert scaled_to_limit(config).robustness.n_pairs == 8  # never more than configured

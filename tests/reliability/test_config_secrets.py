"""A key pasted into the config file is refused without being echoed: not by validation, not by YAML errors."""

from __future__ import annotations

import pytest

from judgeops.cli import main
from judgeops.config import ConfigError, load_config

CANARY = "sk-proj-judgeopsCanary0123456789abcdef"


@pytest.mark.parametrize(
    "judge",
    [
        f"    api_key: {CANARY}\n",  # an unknown field (the config takes api_key_env / api_key_secret)
        f"    api_key_env: {CANARY}\n",  # the key where the variable's name belongs
        f"    headers: {{Authorization: Bearer {CANARY}}}\n",  # a mapping holding it
        f"    protocol: {CANARY}\n    max_pairs: [{CANARY}]\n",  # a list holding it, beside a secret-looking value
    ],
    ids=["an unknown api_key field", "in api_key_env", "in a mapping", "in a list"],
)
def test_a_key_pasted_into_the_config_is_never_printed(tmp_path, capsys, judge, figure):
    path = tmp_path / "judgeops.yaml"
    path.write_text("judges:\n  - name: hosted\n    backend: openai\n    model: gpt-4o-mini\n" + judge)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert CANARY not in str(err.value) and "judges[0]" in str(err.value)
    assert main(["--config", str(path), "config"]) != 0
    printed = capsys.readouterr()
    assert CANARY not in printed.out + printed.err and "judges[0]" in printed.err
    if "api_key:" in judge:
        assert "api_key_env" in str(err.value)  # and says where a key goes instead
        figure(
            "API key pasted inline in the config",
            "never printed; the error names the field",
            f"canary in stdout/stderr: {int(CANARY in printed.out + printed.err)} times",
        )


def test_a_yaml_error_on_the_key_s_line_does_not_quote_the_line(tmp_path):
    path = tmp_path / "judgeops.yaml"
    path.write_text(f"judges:\n  - name: hosted\n    api_key: '{CANARY}\n    backend: [\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert CANARY not in str(err.value) and "line" in str(err.value)

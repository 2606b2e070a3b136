"""`python -m agent_loop_distiller`: configuration errors exit 2 with every problem named."""

from __future__ import annotations

import pytest

from agent_loop_distiller.__main__ import main


def test_a_configuration_error_exits_2_naming_the_variables(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("AGENT_LOOP_REPO", "GITHUB_TOKEN", "GITHUB_APP_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AGENT_LOOP_DIGEST_TOKEN_BUDGET", "12")

    assert main([]) == 2

    err = capsys.readouterr().err
    assert "AGENT_LOOP_REPO" in err
    assert "AGENT_LOOP_DIGEST_TOKEN_BUDGET" in err
    assert "GITHUB_TOKEN" in err


def test_help_names_the_remote_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "--remote" in capsys.readouterr().out

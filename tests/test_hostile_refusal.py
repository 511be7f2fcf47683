"""The same refusal, the same answer in every face (#15, #20): a private or loopback target
is an error — exit status 2 with one line on stderr in every CLI command, a tool error in
every MCP tool — never a verdict or an empty ok. Nothing here may reach a network: the
archive and HN endpoints point at a closed loopback port, and the refusal comes first."""

from __future__ import annotations

import pytest
from mcp import Client

from pagetrail.cli.main import main
from pagetrail.server.app import build_server
from pagetrail.tools.settings import Settings, get_settings

TARGETS = ["http://10.0.0.1/", "http://127.0.0.1:9/page", "http://[::1]/x",
           "http://169.254.169.254/latest/meta-data/", "http://localhost/admin"]
COMMANDS = [["check"], ["scan", "--quiet"], ["tags"], ["memento"], ["signature"],
            ["recover"], ["related"]]
CLOSED = "http://127.0.0.1:9"


@pytest.fixture
def offline_env(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PAGETRAIL_DATABASE_URL", f"sqlite:///{tmp_path / 'p.db'}")
    monkeypatch.setenv("PAGETRAIL_ARCHIVES", f"{CLOSED}/web")
    monkeypatch.setenv("PAGETRAIL_HN_API_URL", f"{CLOSED}/hn")
    monkeypatch.setenv("PAGETRAIL_SEARCH_ENGINES", "site")
    get_settings.cache_clear()


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("target", TARGETS)
def test_every_cli_command_refuses_with_status_2(offline_env, capsys, command, target) -> None:
    status = main([*command, target])
    err = capsys.readouterr().err
    assert status == 2, err
    assert "refused_address" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("target", TARGETS[:2])
def test_search_refuses_a_private_dead_url(offline_env, capsys, target) -> None:
    assert main(["search", "solar farms", "--dead-url", target]) == 2
    assert "refused_address" in capsys.readouterr().err


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_every_cli_command_rejects_an_invalid_url_with_status_2(offline_env, capsys,
                                                                 command) -> None:
    assert main([*command, "ftp://example.org/x"]) == 2
    assert "invalid_url" in capsys.readouterr().err


MCP_CALLS = [
    ("check_link", {}), ("fetch_memento", {}), ("extract_signature", {}), ("get_tags", {}),
    ("recover_link", {}), ("scan_page", {}), ("recommend_archived", {}),
]


@pytest.mark.parametrize("tool,extra", MCP_CALLS, ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("target", ["http://10.0.0.1/", "http://127.0.0.1:9/page"])
async def test_every_mcp_tool_answers_a_refusal_with_a_tool_error(offline_env, tmp_path, tool,
                                                                   extra, target) -> None:
    settings = Settings()
    server = build_server(settings)
    async with Client(server) as client:
        result = await client.call_tool(tool, {"url": target, **extra})
    assert result.is_error, result.structured_content
    assert "refused_address" in result.content[0].text


async def test_mcp_rank_refuses_a_private_reference(offline_env) -> None:
    server = build_server(Settings())
    async with Client(server) as client:
        result = await client.call_tool("rank_candidates", {
            "candidate_urls": ["https://example.org/"], "reference_url": "http://10.0.0.1/x"})
    assert result.is_error
    assert "refused_address" in result.content[0].text

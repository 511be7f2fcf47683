"""`pagetrail watch add|list|remove`, and digests of the watches without Slack."""

from __future__ import annotations

import json

from test_scanner import Site, page

from pagetrail.cli.main import main


def _site() -> Site:
    return Site({"/": page("Home", ("/gone.html", "Annual report"))})


def test_watch_add_list_digest_remove(store, capsys, monkeypatch) -> None:
    monkeypatch.setenv("PAGETRAIL_ALLOW_HOSTS", "127.0.0.1")
    monkeypatch.setenv("PAGETRAIL_PER_HOST_RPS", "0")
    with _site() as site:
        root = site.url("/")
        assert main(["watch", "add", root, "--channel", "team"]) == 0
        assert f"team now watches {root}" in capsys.readouterr().out
        assert main(["watch", "add", root, "--channel", "team"]) == 0
        assert "already watches" in capsys.readouterr().out
        assert main(["watch", "add", site.url("/other"), "--json"]) == 0  # default channel
        assert json.loads(capsys.readouterr().out)["channel"] == "cli"

        assert main(["watch", "list"]) == 0
        assert capsys.readouterr().out.splitlines() == [
            f"cli\t{site.url('/other')}", f"team\t{root}"]
        assert main(["watch", "list", "--channel", "team", "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == [{"channel": "team", "targets": [root]}]

        # The digest of the channel's watches, printed: no Slack involved.
        assert main(["digest", "run", "--channel", "team", "--no-recover", "--json"]) == 0
        [digest] = json.loads(capsys.readouterr().out)
        assert digest["channel"] == "team"
        assert [s["target"] for s in digest["scans"]] == [root]
        assert [link["url"] for link in digest["scans"][0]["suspect"]] == [
            site.url("/gone.html")]

    assert main(["watch", "remove", root, "--channel", "team"]) == 0
    assert f"team no longer watches {root}" in capsys.readouterr().out
    assert main(["watch", "remove", root, "--channel", "team"]) == 1
    assert "does not watch" in capsys.readouterr().err
    assert main(["watch", "list", "--channel", "team"]) == 0
    assert "nothing is watched by team" in capsys.readouterr().out


def test_watch_refuses_bad_and_private_targets(store, capsys) -> None:
    assert main(["watch", "add", "ftp://example.org/"]) == 2
    assert main(["watch", "add", "http://10.0.0.7/"]) == 2  # not allowed: refused
    err = capsys.readouterr().err
    assert "invalid_url" in err and "refused_address" in err
    assert main(["watch", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []

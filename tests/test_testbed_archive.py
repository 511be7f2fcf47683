"""The archive side of the testbed: pywb replaying the tiny world's WARCs (real Memento)."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.testbed


@pytest.fixture
def archive(testbed):
    with httpx.Client(trust_env=False, timeout=10) as client:
        yield client


def test_timemap_lists_every_capture(archive, testbed, tiny_world):
    response = archive.get(f"{testbed.archive_url}/timemap/link/{tiny_world.moved_from}")
    assert response.status_code == 200
    mementos = [line for line in response.text.splitlines() if 'rel="memento"' in line]
    assert len(mementos) == 2
    assert tiny_world.moved_from_capture in mementos[0]
    assert tiny_world.moved_from_redirect_capture in mementos[1]
    assert 'rel="original"' in response.text


def test_raw_memento_is_the_original_page(archive, testbed, tiny_world):
    url = f"{testbed.archive_url}/{tiny_world.moved_from_capture}id_/{tiny_world.moved_from}"
    response = archive.get(url)
    assert response.status_code == 200
    assert "<title>Solar farms double in a year</title>" in response.text
    assert response.headers["memento-datetime"] == "Sat, 01 Jun 2019 00:00:00 GMT"


def test_redirect_capture_replays_as_redirect(archive, testbed, tiny_world):
    url = (f"{testbed.archive_url}/{tiny_world.moved_from_redirect_capture}id_/"
           f"{tiny_world.moved_from}")
    response = archive.get(url)
    assert response.status_code == 301
    assert response.headers["location"] == tiny_world.moved_to


def test_error_capture_keeps_its_status(archive, testbed, tiny_world):
    url = f"{testbed.archive_url}/{tiny_world.error_capture}id_/{tiny_world.error_capture_url}"
    assert archive.get(url).status_code == 404


def test_timegate_redirects_to_the_closest_memento(archive, testbed, tiny_world):
    response = archive.get(f"{testbed.archive_url}/{tiny_world.moved_from}",
                           headers={"Accept-Datetime": "Mon, 01 Jul 2019 00:00:00 GMT"})
    assert response.status_code in (302, 307)
    assert f"/{tiny_world.moved_from_capture}" in response.headers["location"]
    assert "accept-datetime" in response.headers["vary"].lower()


def test_cdx_api(archive, testbed, tiny_world):
    response = archive.get(f"{testbed.archive_url}/cdx",
                           params={"url": tiny_world.archived_only, "output": "json"})
    rows = [line for line in response.text.splitlines() if line.strip()]
    assert len(rows) == 1
    assert tiny_world.archived_only_capture in rows[0]


def test_uncaptured_url_has_no_mementos(archive, testbed, tiny_world):
    response = archive.get(f"{testbed.archive_url}/timemap/link/{tiny_world.moved_to}")
    assert 'rel="memento"' not in response.text


async def test_pywb_takes_another_port_when_its_chosen_one_was_taken(tiny_world, tmp_path,
                                                                     monkeypatch):
    """A port chosen free can be bound by another process (a parallel test worker) before
    pywb binds it: pywb is started again on another port, and answers from its own."""
    import socket

    from pagetrail.tools.testbed import archive as archive_mod
    from pagetrail.tools.testbed.world import load_world

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    ports = iter([taken.getsockname()[1]])
    real_free_port = archive_mod.free_port
    monkeypatch.setattr(archive_mod, "free_port",
                        lambda host="127.0.0.1": next(ports, None) or real_free_port(host))
    pywb = archive_mod.PywbArchive(load_world(tiny_world.path), tmp_path / "pywb")
    try:
        await pywb.start()
        assert pywb.running and pywb.port != taken.getsockname()[1]
        async with httpx.AsyncClient(trust_env=False) as client:
            answer = await client.get(f"{pywb.collection_url}/cdx?url=example.invalid/")
        assert answer.status_code < 500
    finally:
        pywb.stop()
        taken.close()

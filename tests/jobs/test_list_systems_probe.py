"""`--list-systems` makes no network request unless asked (`--probe`): a listing is not a health check."""

from __future__ import annotations

import urllib.request

import pytest

from jobs.run_corpus import list_systems, parse_args


@pytest.fixture
def requests_made(monkeypatch) -> list[str]:
    """Every URL opened through urllib (the registry's probe), answered at once as if reachable."""
    from verifiers import registry

    opened: list[str] = []

    class Answer:
        def close(self) -> None:
            pass

    def fake_urlopen(request, timeout=None):
        opened.append(request.full_url if isinstance(request, urllib.request.Request) else str(request))
        return Answer()

    registry.probe_url.cache_clear()  # the probe's answers are cached per process
    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    yield opened
    registry.probe_url.cache_clear()


def test_listing_makes_no_network_request_by_default(requests_made, capsys):
    assert list_systems([]) == 0
    assert requests_made == []
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert " yes " in rows["doi_only"] and "not probed: doi_org; --probe asks them" in rows["doi_only"]
    assert "not probed" not in rows["prescreen"]  # offline systems have nothing to probe


def test_probe_asks_each_online_source_once(requests_made, capsys):
    from clients.source_catalog import SOURCE_CLASSES

    assert list_systems([], probe=True) == 0
    assert SOURCE_CLASSES["doi_org"].BASE_URL in requests_made
    assert len(requests_made) == len(set(requests_made))
    assert "not probed" not in capsys.readouterr().out


def test_probe_is_a_flag_of_the_listing():
    assert parse_args(["--list-systems"]).probe is False
    assert parse_args(["--list-systems", "--probe"]).probe is True

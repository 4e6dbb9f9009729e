"""Fixtures for the clients tests: one local bibliographic-API server for the session."""

from __future__ import annotations

import pytest

from tests.helpers.bib_server import BibServer, start_bib_server


@pytest.fixture(scope="session")
def bib_server_session():
    server = start_bib_server()
    yield server
    server.stop()


@pytest.fixture
def bib_server(bib_server_session: BibServer) -> BibServer:
    """The session's server with no faults, limits or counts left over from other tests."""
    server = bib_server_session
    server.faults.clear()
    for source in list(server.limits):
        server.set_rate_limit(source, None)
    server.extra_headers.clear()
    server.reset_stats()
    return server

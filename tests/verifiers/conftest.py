"""Fixtures for the citation-verifier tests: offline indexes built from the real shared data."""

from __future__ import annotations

from pathlib import Path

import pytest

from index.build import IndexSource, build_index
from tests.helpers.paths import SHARED_DATA, require_shared_data

BIBSOURCES = SHARED_DATA / "bibsources"
ACL_XML = BIBSOURCES / "acl_anthology" / "python" / "tests" / "toy_anthology" / "xml"
REFCHECKER = BIBSOURCES / "refchecker" / "tests" / "fixtures"
CROSSREF_CACHE = REFCHECKER / "test_cache" / "api_cache" / "crossref"
DEV_PUBLIC = SHARED_DATA / "hallmark" / "dev_public.jsonl"


def real_sources() -> list[IndexSource]:
    """ACL toy anthology XML, RefChecker's recorded Crossref works, RefChecker's BibTeX samples."""
    sources = [IndexSource("acl_anthology", str(p)) for p in sorted(ACL_XML.glob("*.xml"))]
    sources += [IndexSource("crossref", str(p)) for p in sorted(CROSSREF_CACHE.glob("*.json"))]
    sources += [IndexSource("bibtex", str(REFCHECKER / "hallucination_mixed_sample.bib"))]
    return sources


@pytest.fixture(scope="session")
def real_index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_shared_data()
    path = tmp_path_factory.mktemp("index") / "real.parquet"
    build_index(real_sources(), path)
    return path


@pytest.fixture(scope="session")
def dev_valid_index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Closed world for dev_public: its own VALID entries (flatters FPR; used for mechanics only)."""
    require_shared_data()
    path = tmp_path_factory.mktemp("index") / "dev_valid.parquet"
    build_index([IndexSource("hallmark", str(DEV_PUBLIC))], path)
    return path

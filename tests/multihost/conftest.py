"""One several-host Ray cluster (network namespaces on this machine) for the multihost tests."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def netns_ray():
    """A Ray head and two worker hosts, each in its own network namespace, with moto S3 and MLflow
    on the bridge. Skips where namespaces cannot be built (not root, no `ip`); in CI (CI=true),
    where the tests run as root, failing to build it is a failure, never a skip."""
    from tests.helpers.netns_cluster import NetnsUnavailable, netns_cluster, unavailable_reason

    in_ci = os.environ.get("CI", "").lower() == "true"
    reason = unavailable_reason()
    if reason:
        if in_ci:
            pytest.fail(f"CI=true but the multihost cluster cannot be built: {reason}")
        pytest.skip(reason)
    try:
        with netns_cluster(workers=2) as cluster:
            yield cluster
    except NetnsUnavailable as exc:
        if in_ci:
            pytest.fail(f"CI=true but the multihost cluster cannot be built: {exc}")
        pytest.skip(f"network namespaces unavailable here: {exc}")

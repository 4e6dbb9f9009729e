"""A test plugin (`--plugins tests.helpers.full_disk`): the store's writes to paths containing
`SCRUTINEER_TEST_FULL_DISK` fail with ENOSPC, as on a disk that filled up. Without the variable
it changes nothing. Imported by the driver (and by workers that load the run's plugins)."""

from __future__ import annotations

import errno
import os

from storage.store import Store

_FULL = os.environ.get("SCRUTINEER_TEST_FULL_DISK")

if _FULL:
    _real_put = Store._put

    def _put(self: Store, path: str, data: bytes) -> None:
        if _FULL in path:
            raise OSError(errno.ENOSPC, "No space left on device", path)
        _real_put(self, path, data)

    Store._put = _put  # type: ignore[method-assign]

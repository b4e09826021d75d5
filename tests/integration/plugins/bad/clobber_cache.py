"""A plugin that changes sys.path_importer_cache in place (one of the host's
entries removed, one added), then fails to load
(tests/integration/bridge_harness.c, case clobber): the same dict holds the
host's entries again, and only them."""
import sys

_cache = sys.path_importer_cache
_host_key = next(iter(_cache))
del _cache[_host_key]
_cache["/nonexistent/pyop-clobbered"] = None
raise RuntimeError("clobbered the importer cache in place")

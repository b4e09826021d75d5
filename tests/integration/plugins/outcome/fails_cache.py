"""Adds an entry to sys.path_importer_cache (in place), then fails at import
(the outcome case: the failed load's guard removes the entry). Its value is
no None: importlib.invalidate_caches() drops those by itself."""
import sys
import types

sys.path_importer_cache["/outcome/not-a-path"] = types.SimpleNamespace()
raise RuntimeError("outcome plugin fails after changing the importer cache")

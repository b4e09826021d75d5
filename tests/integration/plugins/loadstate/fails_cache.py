"""Adds an entry to sys.path_importer_cache (in place), then fails at import
(the loadstate case: the failed load's guard removes the entry). Its value is
no None: importlib.invalidate_caches() drops those by itself."""
import sys
import types

sys.path_importer_cache["/loadstate/not-a-path"] = types.SimpleNamespace()
raise RuntimeError("loadstate plugin fails after changing the importer cache")

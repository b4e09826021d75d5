"""A plugin that replaces a host module's sys.modules entry and then fails
(the cfstate case): the failed load puts the host's module back."""
import sys
import types

sys.modules["_cf_host_module"] = types.ModuleType("_cf_host_module_by_plugin")
raise RuntimeError("cfstate guard plugin fails after replacing a host module")

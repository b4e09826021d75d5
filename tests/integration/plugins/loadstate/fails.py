"""Fails at import (the loadstate case)."""
raise RuntimeError("loadstate plugin fails")

"""Fails at import (the outcome case)."""
raise RuntimeError("outcome plugin fails")

"""Deletes sys.path_hooks, then fails at import (the loadstate case: the
failed load's guard puts a list of the saved hooks back)."""
import sys

del sys.path_hooks
raise RuntimeError("loadstate plugin fails after deleting sys.path_hooks")

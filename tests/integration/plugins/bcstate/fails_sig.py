"""Replaces SIGUSR1 with a Python handler, then fails at import (the bcstate
case: a failed load after a reset, with no plugin left, gives the host's
handler back)."""
import signal

signal.signal(signal.SIGUSR1, lambda signum, frame: None)
raise RuntimeError("bcstate plugin fails after replacing SIGUSR1")

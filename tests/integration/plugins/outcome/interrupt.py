"""Interrupted at import (the outcome case: a C host gets PYOP_EINTR and no
interrupt left pending in Python)."""
raise KeyboardInterrupt

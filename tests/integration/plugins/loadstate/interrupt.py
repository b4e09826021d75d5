"""Interrupted at import (the loadstate case: a C host gets PYOP_EINTR and no
interrupt left pending in Python)."""
raise KeyboardInterrupt

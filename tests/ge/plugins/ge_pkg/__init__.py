"""A GE-style package plugin: loaded under its directory name as GE does,
its modules import each other and the directory's helper module
(_ge_shared.py) by absolute name."""

import ge_pkg.scale_ops
from ge_pkg import cast_ops
from ge_pkg.scale_ops import FACTOR
import _ge_shared

assert ge_pkg.scale_ops.FACTOR == FACTOR == 3.0
assert _ge_shared.LOADS == 1, "the helper module ran twice"

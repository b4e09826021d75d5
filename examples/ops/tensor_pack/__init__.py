"""tensor_pack: a plugin that is a package (a directory with __init__.py).

libpyop imports the package under a unique module name (never as
"tensor_pack", so it cannot clash with an installed module of that name) and
its relative imports work as usual: the ops live in submodules, the helpers
they share in _common.py. Nothing is added to sys.path.

Every op registered while the package is imported -- here, by importing the
submodules below -- belongs to this plugin:
- Clip   (clip.py):   y = min(max(x, min), max), float attributes;
- Concat (concat.py): joins a dynamic list of inputs along an int axis.
"""

from . import clip, concat  # noqa: F401  (importing registers the ops)

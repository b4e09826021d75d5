"""`python3 tools/pyop_cli ARGS` (or `python3 -m pyop_cli` with tools/ on
sys.path): the command from the source tree; libpyop from PYOP_LIBRARY or
the loader's search path."""

import os
import sys

if not __package__:
    _pkg = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.dirname(_pkg))
    import pyop_cli
    del sys.path[0]
else:
    import pyop_cli
pyop_cli.config.SCRIPT = pyop_cli.config.SCRIPT or os.path.dirname(os.path.abspath(__file__))

sys.exit(pyop_cli.main())

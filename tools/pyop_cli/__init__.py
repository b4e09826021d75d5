"""pyop — check, list and run Python custom operators through libpyop.

The command drives libpyop (the same library a C host links) through ctypes
from this Python process: libpyop finds this very interpreter, loads the
bridge built for it and imports the plugins of ASCEND_CUSTOM_OPP_PATH (or the
paths given to `check`).

Which Python: the installed command starts with the Python the bridge was
built for (the build's default, the one `pyop_options.start_python` starts
in a C host), so what `pyop check` accepts is what such a host loads.
PYOP_PYTHON=/path/to/python (or `/path/to/python pyop ...`) runs it under
another Python that has a bridge; `pyop doctor` says which one runs.

Exit status: 0 on success; 1 when the command ran and found a problem (a
failed load, a failed op, a missing capability, a disagreement in `check`);
2 for bad usage only (unknown option, malformed --input/--attr, an
attribute or input the op does not have). On failure one message goes to
stderr, `pyop: <command>: <message>`, with the plugin's traceback under it
when there is one. With --json the failure is also printed to stdout as
{"error": {"status", "message", "op", "file", "line"}}.

The package (tools/pyop_cli/, installed as <datadir>/pyop/pyop_cli/) has one
module per subcommand (doctor, list, check, run, bench), main for the
command line, one ctypes binding of pyop.h (binding), running one op
instance as a host does (instance), the --proto REG_OP files registered as
host prototypes (proto) and what the loaded plugins define, read in this
interpreter (plugins); `check` is check (the report), check_supervise (the
worker process it runs the ops in), check_worker (that process),
check_cases (what it runs), check_verdict (the rules) and check_plugin
(what it reads of the plugins). bin/pyop, made by
tools/CMakeLists.txt, imports it from its own location and fills in config;
`python3 tools/pyop_cli ...` runs it from the source tree.
"""

from .binding import (ALLOC_OUTPUT, ALLOC_WORKSPACE, Attr, AttrInfo, AttrValue,  # noqa: F401
                      EXEC_EXPECT_OUTPUTS, ExecCtx, HostHooks, INPUT_MUTATED, IntList,
                      IoInfo, Lib, OpInfo, OutputList, Str, Tensor, TensorList)
from .errors import CliError, PyopError, UsageError  # noqa: F401
from .main import main  # noqa: F401

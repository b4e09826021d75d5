"""What bin/pyop fills in when it starts the command (tools/CMakeLists.txt
writes the values into it): the build's default Python, its bridge artifact
directory name, and the command's own path (re-executed under PYOP_PYTHON;
libpyop is found next to it). None when run from the source tree."""

BUILD_PYTHON = None
BUILD_ARTIFACT = None
SCRIPT = None

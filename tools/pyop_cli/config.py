"""What bin/pyop fills in when it starts the command (tools/CMakeLists.txt
writes the values into it): the build's default Python, its bridge artifact
directory name, the command's own path (re-executed under PYOP_PYTHON), and
the directory of libpyop.so.0: relative to the command's own directory, or
absolute (the install's libdir, whatever its layout). None when run from
the source tree."""

BUILD_PYTHON = None
BUILD_ARTIFACT = None
BUILD_ARTIFACTS = ""  # the bridges' artifacts, ';'-separated, in -DPYOP_PYTHONS order
SCRIPT = None
LIBDIR = None

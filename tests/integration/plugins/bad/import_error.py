import pyop_no_such_module_anywhere  # noqa: F401

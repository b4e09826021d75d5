"""AddKernel: out = a + b by a C kernel that libpyop launches with libffi.

The implementation has no execute: declare_launch_args describes a call of

    void pyop_example_add_f32(const float *a, const float *b, float *out, int64_t n);

from libpyop_example_kernels.so (examples/kernels/). The host calls
pyop_op_declare_launch_args once for the tensors' descriptions and then
pyop_op_launch as often as it likes: no Python runs on that path. The
scalar n is fixed when the plan is declared (declare again when shapes
change).

Where the kernel library is: the first of
1. $PYOP_EXAMPLE_KERNELS (a full path), set by tests and runner scripts;
2. <dir of the libpyop.so loaded in this process>/pyop/examples/ -- the
   installed layout (<prefix>/lib/pyop/examples/);
3. <dir of libpyop.so>/../examples/kernels/ -- the build tree.
A relative path given to add_launch would be resolved against this file's
directory; absolute paths are used here because the kernels are installed
apart from the plugins. libpyop refuses a library that is writable by group
or others or owned by another user.
"""

import os

import pyop
from pyop import DataType, TensorDesc, launch

KERNELS = "libpyop_example_kernels.so"


def _libpyop_dir():
    """Directory of the libpyop.so mapped into this process, or None."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip("\n").partition("/")[2]
                if path and os.path.basename(path).startswith("libpyop.so"):
                    return os.path.dirname("/" + path)
    except OSError:
        pass
    return None


def kernel_library():
    """Absolute path of the example kernels (FileNotFoundError if none)."""
    env = os.environ.get("PYOP_EXAMPLE_KERNELS")
    if env:
        return env
    tried = []
    here = _libpyop_dir()
    if here is not None:
        for cand in (os.path.join(here, "pyop", "examples", KERNELS),
                     os.path.join(os.path.dirname(here), "examples", "kernels", KERNELS)):
            if os.path.isfile(cand):
                return os.path.realpath(cand)
            tried.append(cand)
    raise FileNotFoundError("AddKernel: %s not found (tried %s); set PYOP_EXAMPLE_KERNELS "
                            "to its full path" % (KERNELS, ", ".join(tried) or
                                                  "no libpyop.so mapped in this process"))


@pyop.register_op(op_type="AddKernel", outputs=("out",))
def add_kernel(a: TensorDesc, b: TensorDesc) -> TensorDesc:
    if a.dtype != DataType.float32 or b.dtype != DataType.float32:
        raise TypeError("AddKernel supports float32 only, got %s and %s" % (a.dtype, b.dtype))
    if a.shape != b.shape:
        raise ValueError("AddKernel: a%s and b%s must have the same shape"
                         % (list(a.shape), list(b.shape)))
    return TensorDesc(shape=a.shape, dtype=a.dtype)


@pyop.register_op_impl(op_type="AddKernel")
class AddKernelImpl:
    # declare_launch_args gets descriptions (TensorDesc, no data): the
    # inputs in prototype order, then the outputs.
    def declare_launch_args(self, a: TensorDesc, b: TensorDesc, out: TensorDesc) -> None:
        n = 1
        for d in out.shape:
            n *= d
        ctx = pyop.get_declare_launch_args_ctx()
        # Arguments in the kernel's order: input 0, input 1, output 0, then
        # the element count as a C int64_t.
        ctx.add_launch(kernel_library(), "pyop_example_add_f32",
                       [launch.input(0), launch.input(1), launch.output(0),
                        launch.scalar("int64", n)])

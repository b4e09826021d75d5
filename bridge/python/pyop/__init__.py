"""pyop: write custom operators in Python for a C host (libpyop).

    import pyop
    from pyop import TensorDesc, Tensor, DataType

    @pyop.register_op(op_type="ScaledAdd")
    def scaled_add(x: TensorDesc, y: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:
        return TensorDesc(shape=x.shape, dtype=x.dtype)

    @pyop.register_op_impl(op_type="ScaledAdd")
    class ScaledAddImpl:
        def execute(self, x: Tensor, y: Tensor, *, alpha: float) -> None:
            out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
            with pyop.elements(x) as a, pyop.elements(y) as b, pyop.elements(out) as o:
                for i in range(len(o)):
                    o[i] = a[i] + alpha * b[i]

Prototype (register_op on the infer_meta function):
- positional parameters are inputs: TensorDesc (or Tensor, or no annotation)
  required, Optional[TensorDesc] optional (None when absent),
  list[TensorDesc] dynamic (a list);
- keyword-only parameters are attributes: int, float, bool, str, DataType,
  list[int], list[float], list[bool], list[str], list[DataType],
  list[list[int]]; a default makes one optional;
- keyword-only parameters annotated Tensor are Tensor attributes (constants
  the host gives at create, read-only, no default);
- register_op(..., mutates_args=("x",)): execute writes into input x (a
  writable Tensor; the others are read-only); an output named like a mutated
  input is its buffer (execute binds it with
  get_execute_ctx().make_output_ref_input(out, in));
- the return annotation gives the outputs: None for none, TensorDesc for one,
  list[TensorDesc] for a dynamic one (a list), a tuple of those for several,
  e.g. tuple[TensorDesc, TensorDesc]; output names are
  register_op(..., outputs=("out", "idx")) when given (required with
  tuple[TensorDesc, ...]), else "y" for one output and "y0", "y1", ...
- infer_meta returns a TensorDesc, or a tuple/list of them (one per output).

Implementation (register_op_impl on a class, instantiated with no arguments
once per op instance; its capabilities are the methods it defines):
- execute(self, <inputs>, *, <attrs>) gets Tensor objects (inputs
  read-only) and allocates outputs with get_execute_ctx();
- compile(self, <inputs>, <outputs>, *, <attrs>) and
  declare_launch_args(self, <inputs>, <outputs>, *, <attrs>) get TensorDesc
  descriptions; they report through get_compile_ctx() /
  get_declare_launch_args_ctx().
Signatures are checked at load time against the prototype of the same load.
register_op_impl(..., deterministic=False): the op's outputs may differ for
the same inputs by design (`pyop check` then compares shapes only).

For `pyop check` (and pyop.testing.opcheck, its checks from a test):
register_samples(op_type) gives the cases to run the op on,
register_reference(op_type, rtol=, atol=) a numpy reference its outputs are
compared with.

Tensors are borrowed views valid only during the callback. Their elements:
pyop.elements(t), a flat sequence of Python numbers over t's memory for
every data type (bfloat16 included) and every shape (empty and rank-0
included), used in a `with`; numpy.asarray(t) for vectorised code (numpy is
optional). memoryview(t) is the raw view (buffer formats: float32 'f',
float16 'e', bfloat16 'H' (raw bits), float64 'd', int8..int64 'b' 'h' 'i'
'q', uint8..uint64 'B' 'H' 'I' 'Q', bool '?'). Keeping any view after the
callback returns fails that call.
"""

from ._types import DataType, Format, TensorDesc
from ._registry import register_op, register_op_impl, register_reference, register_samples
from ._elements import Elements, elements
from . import launch

try:  # provided by the bridge (libpyop_bridge.so) before this package runs
    from . import _native
except ImportError:  # pure-Python use: signature checks, unit tests
    _native = None

if _native is not None:
    Tensor = _native.Tensor
    from . import _ge_link  # CANN GE compatibility: `ge` next to pyop
    _ge_link.install()
else:
    class Tensor:
        """Placeholder for annotations when the bridge is not loaded."""

        def __init__(self, *args, **kwargs):
            raise RuntimeError("pyop.Tensor objects are made by the bridge only")

__all__ = ["DataType", "Format", "TensorDesc", "Tensor", "register_op",
           "register_op_impl", "register_samples", "register_reference", "get_execute_ctx",
           "get_compile_ctx", "get_declare_launch_args_ctx", "launch", "elements",
           "Elements", "__version__"]

# project(pyop VERSION) of CMakeLists.txt; tests/e2e/test_tables.py holds it to
# libpyop's pyop_version().
__version__ = "0.1.0"

# Callback kinds of _native.current_ctx().
_CTX_EXECUTE, _CTX_COMPILE, _CTX_LAUNCH = 1, 2, 3


def _ctx(kind, fname):
    if _native is None:
        raise RuntimeError("%s(): no bridge is loaded (pyop runs inside libpyop)" % fname)
    return _native.current_ctx(kind)


def get_execute_ctx():
    """The context of the execute callback running on this thread:
    malloc_output_tensor(index, shape, dtype, format=Format.ND) -> writable
    Tensor (for a dynamic output each call adds the next tensor);
    make_output_ref_input(output_index, input_index) -> the output, bound to
    a mutated input's buffer; malloc_workspace(nbytes) -> writable uint8
    Tensor; stream (int).
    RuntimeError outside an execute callback. The context works only on
    this thread and until the callback returns (RuntimeError otherwise)."""
    return _ctx(_CTX_EXECUTE, "get_execute_ctx")


def get_compile_ctx():
    """The context of the compile callback running on this thread:
    set_artifact(bytes)."""
    return _ctx(_CTX_COMPILE, "get_compile_ctx")


def get_declare_launch_args_ctx():
    """The context of the declare_launch_args callback on this thread:
    add_launch(library, symbol, args) with args from pyop.launch,
    add_workspace(nbytes)."""
    return _ctx(_CTX_LAUNCH, "get_declare_launch_args_ctx")

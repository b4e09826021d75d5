"""GE's Python API as libpyop's ge package gives it, without the bridge:
names, enums and their translation, ge.runtime types, register_op and
register_op_impl with GE's verdicts (same exception types, op and parameter
named), signature validation, contexts that can be built without a call,
and the loader's absolute sibling imports. Spec: CANN GE's Python API; what
libpyop offers of it: docs/ge-plugins.md."""

import math
import os
import sys
import typing
import unittest
from typing import List, Optional, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import support  # noqa: E402  (makes bridge/python importable)
from support import TempDir, write  # noqa: E402

import pyop  # noqa: E402
from pyop import _loader, _registry  # noqa: E402
import ge  # noqa: E402
import ge.custom_op as co  # noqa: E402
import ge.graph  # noqa: E402
from ge import _convert, _features  # noqa: E402
from ge.custom_op import proto as gproto, registry as greg  # noqa: E402
from ge.graph.types import DataType, Format, Placement, AttrValueType  # noqa: E402
from ge.runtime import (Tensor, TensorDesc, Shape, StorageShape, StorageFormat,  # noqa: E402
                        ExpandDimsType, TensorPlacement)


def fresh():
    """A fresh GE registry for decorations made outside a load."""
    from ge.custom_op import _state
    _state._fallback.__init__()


class ModulesTest(unittest.TestCase):
    def test_public_names(self):
        self.assertEqual(sorted(co.__all__), sorted([
            "register_op", "register_op_impl", "get_execute_ctx",
            "get_declare_launch_args_ctx", "BaseCustomOp", "EagerExecuteOp",
            "EagerOpExecutionContext", "AnnotatedArgsContext", "AnnotatedKernelArgs",
            "AnnotatedKernelLaunchInfo", "WorkspaceAddr", "get_registered_op_impls",
            "get_registered_op_impl_dicts", "get_registered_op_impl_by_descriptor_key",
            "clear_registered_op_impls"]))
        for n in co.__all__:
            self.assertTrue(hasattr(co, n), n)
        import ge.runtime as rt
        for n in ("Tensor", "TensorDesc", "Shape", "StorageShape", "StorageFormat",
                  "ExpandDimsType", "TensorPlacement"):
            self.assertTrue(hasattr(rt, n), n)
        for n in ("DataType", "Format", "Placement", "Graph", "Node", "Operator", "Tensor",
                  "TensorDesc", "Shape", "DumpFormat"):
            self.assertTrue(hasattr(ge.graph, n), n)
        self.assertIsNot(ge.graph.TensorDesc, TensorDesc)
        from ge.custom_op.proto import get_registered_op_protos, clear_registered_op_protos  # noqa
        self.assertTrue(ge.__pyop_ge__)

    def test_graph_classes_need_ge(self):
        for n in ("Graph", "Node", "Operator", "Tensor", "TensorDesc", "Shape", "DumpFormat"):
            with self.assertRaises(NotImplementedError) as cm:
                getattr(ge.graph, n)()
            self.assertIn("ge.graph.%s" % n, str(cm.exception))

    def test_onnx_plugin_is_refused(self):
        with self.assertRaises(ImportError) as cm:
            import ge.onnx_plugin  # noqa: F401
        self.assertIn("ge.onnx_plugin", str(cm.exception))
        self.assertNotIn("ge.onnx_plugin", sys.modules)


class EnumTest(unittest.TestCase):
    def test_numbers(self):
        self.assertEqual(len(DataType), 43)  # 0..43 without 5
        self.assertEqual([(m.name, m.value) for m in DataType][:6],
                         [("DT_FLOAT", 0), ("DT_FLOAT16", 1), ("DT_INT8", 2), ("DT_INT32", 3),
                          ("DT_UINT8", 4), ("DT_INT16", 6)])
        for name, v in (("DT_BF16", 27), ("DT_UNDEFINED", 28), ("DT_HIFLOAT4", 42),
                        ("DT_MAX", 43), ("DT_DOUBLE", 11), ("DT_BOOL", 12), ("DT_UINT64", 10)):
            self.assertEqual(DataType[name].value, v, name)
        with self.assertRaises(ValueError):
            DataType(5)
        self.assertEqual(len(Format), 54)
        for name, v in (("FORMAT_NCHW", 0), ("FORMAT_ND", 2), ("FORMAT_NC1HWC0", 3),
                        ("FORMAT_C1HWNCoC0", 25), ("FORMAT_FRACTAL_NZ", 29), ("FORMAT_NULL", 42),
                        ("FORMAT_FRACTAL_NZ_C0_32", 51), ("FORMAT_END", 52), ("FORMAT_MAX", 53)):
            self.assertEqual(Format[name].value, v, name)
        self.assertEqual(Placement.PLACEMENT_DEVICE.value, 1)
        self.assertEqual(AttrValueType.VT_LIST_DATA_TYPE.value, 1011)
        self.assertEqual(AttrValueType.VT_LIST_LIST_INT.value, 10)
        self.assertEqual(int(TensorPlacement.ON_HOST), 1)
        self.assertEqual(TensorPlacement.END.value, 4)
        self.assertFalse(isinstance(TensorPlacement.ON_HOST, int))
        self.assertEqual(TensorPlacement.ON_DEVICE_P2P.name, "ON_DEVICE_P2P")

    def test_translation_by_name(self):
        pairs = {"DT_FLOAT": "float32", "DT_FLOAT16": "float16", "DT_BF16": "bfloat16",
                 "DT_DOUBLE": "float64", "DT_INT8": "int8", "DT_INT16": "int16",
                 "DT_INT32": "int32", "DT_INT64": "int64", "DT_UINT8": "uint8",
                 "DT_UINT16": "uint16", "DT_UINT32": "uint32", "DT_UINT64": "uint64",
                 "DT_BOOL": "bool"}
        for g, p in pairs.items():
            self.assertIs(_convert.dtype_to_pyop(DataType[g]), pyop.DataType[p])
            self.assertIs(_convert.dtype_from_pyop(pyop.DataType[p]), DataType[g])
        # never by number: GE's DT_INT8 (2) is pyop's bfloat16 (2)
        self.assertIs(_convert.dtype_to_pyop(2), pyop.DataType.int8)
        for g in ("DT_STRING", "DT_COMPLEX64", "DT_INT4", "DT_UNDEFINED", "DT_HIFLOAT8"):
            with self.assertRaises(TypeError) as cm:
                _convert.dtype_to_pyop(DataType[g])
            self.assertIn(g, str(cm.exception))
        for g in ("ND", "NCHW", "NHWC", "NC1HWC0", "FRACTAL_NZ"):
            self.assertIs(_convert.format_to_pyop(Format["FORMAT_" + g]), pyop.Format[g])
            self.assertIs(_convert.format_from_pyop(pyop.Format[g]), Format["FORMAT_" + g])
        with self.assertRaises(TypeError) as cm:
            _convert.format_to_pyop(Format.FORMAT_FRACTAL_Z)
        self.assertIn("FORMAT_FRACTAL_Z", str(cm.exception))


class RuntimeTypesTest(unittest.TestCase):
    def test_tensor_desc(self):
        d = TensorDesc([2, 3], DataType.DT_FLOAT)
        self.assertEqual(d.shape.storage_shape.dims, [2, 3])
        self.assertEqual(d.shape.origin_shape.dims, [2, 3])
        self.assertIs(d.data_type, DataType.DT_FLOAT)
        self.assertEqual(TensorDesc(None, DataType.DT_INT8).shape.storage_shape.dim_num, 0)
        s = StorageShape([2, 3], [6])
        d2 = TensorDesc(s, DataType.DT_INT8)
        s.storage_shape.set_dim(0, 7)  # copied
        self.assertEqual(d2.shape.storage_shape.dims, [6])
        d2.shape.storage_shape.set_dim(0, 5)  # a live view of the desc
        self.assertEqual(d2.shape.storage_shape.dims, [5])
        for bad in ((2, 3), [2, True], [2.0], "23"):
            with self.assertRaises(TypeError):
                TensorDesc(bad, DataType.DT_FLOAT)
        with self.assertRaises(ValueError):
            TensorDesc([1] * 26, DataType.DT_FLOAT)
        TensorDesc([1] * 25, DataType.DT_FLOAT)
        with self.assertRaises(TypeError):
            TensorDesc([1], 0)
        with self.assertRaises(ValueError):
            TensorDesc([1], DataType.DT_MAX)
        with self.assertRaises(TypeError):
            d.data_type = 1
        d.shape = [4]
        self.assertEqual(d.shape.storage_shape.dims, [4])
        self.assertFalse(hasattr(d, "format"))

    def test_shape_and_formats(self):
        s = StorageShape()
        self.assertTrue(s.origin_shape.is_scalar())
        self.assertEqual(s.storage_shape.size, 1)
        sh = StorageShape([2, 3], [2, 3]).storage_shape
        self.assertEqual((sh.dim_num, sh.size, sh.get_dim(1)), (2, 6, 3))
        with self.assertRaises(ValueError):
            sh.get_dim(2)
        with self.assertRaises(ValueError):
            sh.set_dim(2, 1)
        self.assertIs(sh.append_dim(4), sh)
        self.assertEqual(sh.dims, [2, 3, 4])
        sh.set_scalar()
        self.assertTrue(sh.is_scalar())
        self.assertEqual(StorageShape([1 << 40, 1 << 40], [1]).origin_shape.size, -(1 << 63))
        with self.assertRaises(TypeError):
            Shape()
        f = StorageFormat()
        self.assertEqual((f.get_origin_format(), f.get_storage_format()),
                         (Format.FORMAT_ND, Format.FORMAT_ND))
        f = StorageFormat(0, Format.FORMAT_FRACTAL_NZ, ExpandDimsType("1100"))
        self.assertIs(f.get_origin_format(), Format.FORMAT_NCHW)
        self.assertTrue(f.expand_dims_type.is_expand_index(1))
        self.assertFalse(f.expand_dims_type.is_expand_index(2))
        self.assertEqual(f.expand_dims_type.full_size, 4)
        f.set_storage_format(Format.FORMAT_ND)
        self.assertIs(f.get_storage_format(), Format.FORMAT_ND)
        e = ExpandDimsType((3 << 56) | 0b101)
        self.assertEqual(e.full_size, 3)
        self.assertTrue(e.is_expand_index(2))
        self.assertEqual(ExpandDimsType("1" * 57).full_size, 0)  # longer than 56: ignored
        with self.assertRaises(TypeError):
            Tensor()

    def test_launch_info(self):
        co.AnnotatedKernelLaunchInfo(kernel_name="k", kernel_bin=b"x", block_dim=1, stream_id=0)
        with self.assertRaises(TypeError):
            co.AnnotatedKernelLaunchInfo("k", b"x", 1, 0)
        for kw, exc in ((dict(kernel_name=""), ValueError), (dict(kernel_bin=b""), ValueError),
                        (dict(block_dim=0), ValueError), (dict(stream_id=-1), TypeError),
                        (dict(block_dim=1 << 32), TypeError)):
            args = dict(kernel_name="k", kernel_bin=b"x", block_dim=1, stream_id=0)
            args.update(kw)
            with self.assertRaises(exc, msg=kw):
                co.AnnotatedKernelLaunchInfo(**args)

    def test_ctx_outside_a_call(self):
        with self.assertRaises(RuntimeError):
            co.get_execute_ctx()
        with self.assertRaises(RuntimeError):
            co.get_declare_launch_args_ctx()
        for cls in (co.EagerOpExecutionContext, co.AnnotatedArgsContext, co.AnnotatedKernelArgs,
                    co.WorkspaceAddr):
            with self.assertRaises(TypeError):
                cls()

    def test_declare_ctx_rules(self):
        from ge.custom_op.context import AnnotatedArgsContext, binding, _DECLARE
        ctx = AnnotatedArgsContext._make("Op", 2, 1)
        t = Tensor._make(ctx._s, 0, 0, [2], DataType.DT_FLOAT, Format.FORMAT_ND,
                         TensorPlacement.ON_HOST)
        with binding(_DECLARE, ctx, "Op"):
            self.assertIs(co.get_declare_launch_args_ctx(), ctx)
        args = ctx.create_kernel_args()
        args.append_input(1, t)
        with self.assertRaises(IndexError):
            args.append_input(2, t)
        with self.assertRaises(IndexError):
            args.append_output(1, t)
        with self.assertRaises(TypeError):
            args.append_scalar(-1)
        with self.assertRaises(TypeError):
            args.append_scalar(1 << 64)
        with self.assertRaises(ValueError):
            ctx.malloc_workspace(0)
        ws = ctx.malloc_workspace(8)
        self.assertEqual((ws.index, ctx.malloc_workspace(8).index), (0, 1))
        bad = co.AnnotatedKernelLaunchInfo(kernel_name="k", kernel_bin=b"x", block_dim=1,
                                           stream_id=1)
        with self.assertRaises(ValueError):
            ctx.add_launch(bad, args)
        args.append_workspace(ws)  # still usable
        info = co.AnnotatedKernelLaunchInfo(kernel_name="my_kernel", kernel_bin=b"x",
                                            block_dim=1, stream_id=0)
        with self.assertRaises(NotImplementedError) as cm:
            ctx.add_launch(info, args)
        msg = str(cm.exception)
        for s in ("AnnotatedArgsContext.add_launch", "my_kernel", "'Op'", "needs an NPU"):
            self.assertIn(s, msg)
        self.assertIsInstance(cm.exception, RuntimeError)
        with self.assertRaises(RuntimeError):  # consumed
            args.append_scalar(1)
        ctx._close()
        with self.assertRaises(RuntimeError):
            ctx.get_stream_id()
        with self.assertRaises(RuntimeError):
            t.addr
        with self.assertRaises(RuntimeError):
            ws.addr


def _ge_fail(test, exc, fragment, fn, op_type="T", mutates_args=()):
    fresh()
    with test.assertRaises(exc) as cm:
        co.register_op(op_type=op_type, mutates_args=mutates_args)(fn)
    msg = str(cm.exception)
    test.assertTrue(msg.startswith("register_op op_type %r failed: " % op_type), msg)
    test.assertIn(fragment, msg)
    test.assertIs(type(cm.exception), exc)
    return msg


class RegisterOpTest(unittest.TestCase):
    def setUp(self):
        fresh()

    def test_accepts_and_names(self):
        def f(x: TensorDesc, b: Optional[TensorDesc], xs: List[TensorDesc], ys: list[Tensor],
              *, n: int, alpha: float = 0.5) -> Tuple[TensorDesc, TensorDesc]:
            pass
        d = gproto.parse(f, "T")
        self.assertEqual(d.inputs, (("x", 0), ("b", 1), ("xs", 2), ("ys", 2)))
        self.assertEqual([a[:2] for a in d.attrs], [("n", "VT_INT"), ("alpha", "VT_FLOAT")])
        self.assertEqual(d.outputs, (("output0", 0), ("output1", 0)))
        self.assertEqual(d.descriptor_key, "%s:%s:T" % (f.__module__, f.__qualname__))

        def g(output0: TensorDesc, output0_1: TensorDesc) -> Tuple[TensorDesc, TensorDesc]:
            pass
        self.assertEqual([n for n, _ in gproto.parse(g, "T").outputs],
                         ["output0_2", "output1"])

        def dyn(x: TensorDesc) -> Tuple[TensorDesc, List[TensorDesc]]:
            pass
        self.assertEqual(gproto.parse(dyn, "T").outputs, (("output0", 0), ("output1", 1)))

        def none(x: TensorDesc) -> None:
            pass
        self.assertEqual(gproto.parse(none, "T").outputs, ())

        def strings(x: "TensorDesc", *, k: "List[int]" = [1]) -> "TensorDesc":
            pass
        self.assertEqual(gproto.parse(strings, "T").attrs[0][:2], ("k", "VT_LIST_INT"))

    def test_every_attr_type(self):
        def f(x: TensorDesc, *, a: int, b: float, c: bool, d: str, e: DataType, t: Tensor,
              f1: List[int], f2: list[float], f3: List[bool], f4: List[str],
              f5: List[DataType], f6: List[List[int]]) -> TensorDesc:
            pass
        self.assertEqual([a[1] for a in gproto.parse(f, "T").attrs],
                         ["VT_INT", "VT_FLOAT", "VT_BOOL", "VT_STRING", "VT_DATA_TYPE",
                          "VT_TENSOR", "VT_LIST_INT", "VT_LIST_FLOAT", "VT_LIST_BOOL",
                          "VT_LIST_STRING", "VT_LIST_DATA_TYPE", "VT_LIST_LIST_INT"])

    def test_decorator_rules(self):
        with self.assertRaises(TypeError):
            co.register_op("T")
        for bad in ("", 3, None):
            with self.assertRaises(TypeError):
                co.register_op(op_type=bad)

        class C:
            pass
        _ge_fail(self, TypeError, "decorates a function", C)
        # a lambda passes the function check (and fails later, for its annotations)
        _ge_fail(self, TypeError, "return annotation", lambda: None)

        def f(x: TensorDesc) -> TensorDesc:
            pass
        self.assertIs(co.register_op(op_type="T")(f), f)
        self.assertEqual(f.__ge_op_proto_descriptor__.op_type, "T")

    def test_input_rules(self):
        def no_ann(x) -> TensorDesc:
            pass
        _ge_fail(self, TypeError, "'x'", no_ann)

        def default(x: Optional[TensorDesc] = None) -> TensorDesc:
            pass
        _ge_fail(self, TypeError, "input 'x' has a default", default)

        def pep604(x: TensorDesc | None) -> TensorDesc:
            pass
        _ge_fail(self, TypeError, "input 'x'", pep604)

        def graph_desc(x: ge.graph.TensorDesc) -> TensorDesc:
            pass
        _ge_fail(self, TypeError, "input 'x'", graph_desc)

        def var(*xs: TensorDesc) -> TensorDesc:
            pass
        _ge_fail(self, TypeError, "'xs'", var)

        def kw(x: TensorDesc, **attrs: int) -> TensorDesc:
            pass
        _ge_fail(self, TypeError, "'attrs'", kw)

        def unresolved(x: "NoSuchType") -> TensorDesc:  # noqa: F821
            pass
        _ge_fail(self, TypeError, "NoSuchType", unresolved)

    def test_attr_rules(self):
        cases = [
            ("float_int", "def f(x: TensorDesc, *, a: float = 1) -> TensorDesc: pass", "'a'"),
            ("int_bool", "def f(x: TensorDesc, *, a: int = True) -> TensorDesc: pass", "'a'"),
            ("dt_int", "def f(x: TensorDesc, *, a: DataType = 0) -> TensorDesc: pass", "'a'"),
            ("none", "def f(x: TensorDesc, *, a: int = None) -> TensorDesc: pass", "'a'"),
            ("opt_none", "def f(x: TensorDesc, *, a: Optional[int] = None) -> TensorDesc: pass",
             "'a'"),
            ("opt", "def f(x: TensorDesc, *, a: Optional[int]) -> TensorDesc: pass", "'a'"),
            ("tensor_default", "def f(x: TensorDesc, *, t: Tensor = 0) -> TensorDesc: pass",
             "'t'"),
            ("tuple", "def f(x: TensorDesc, *, a: List[int] = (1,)) -> TensorDesc: pass", "'a'"),
            ("elem", "def f(x: TensorDesc, *, a: List[int] = [1, 2.0]) -> TensorDesc: pass",
             "'a'"),
            ("rows", "def f(x: TensorDesc, *, a: List[List[int]] = [(1,)]) -> TensorDesc: pass",
             "'a'"),
            ("dt_max", "def f(x: TensorDesc, *, a: DataType = DataType.DT_MAX) -> TensorDesc: "
             "pass", "DT_MAX"),
            ("no_ann", "def f(x: TensorDesc, *, a) -> TensorDesc: pass", "'a'"),
            ("dict", "def f(x: TensorDesc, *, a: dict) -> TensorDesc: pass", "'a'"),
            ("tuple_type", "def f(x: TensorDesc, *, a: Tuple[int]) -> TensorDesc: pass", "'a'"),
        ]
        ns = dict(TensorDesc=TensorDesc, Tensor=Tensor, DataType=DataType, List=List,
                  Optional=Optional, Tuple=Tuple)
        for name, src, frag in cases:
            with self.subTest(name):
                exec(src, ns)
                _ge_fail(self, TypeError, frag, ns["f"])
        exec("def f(x: TensorDesc, *, a: float = 1e39) -> TensorDesc: pass", ns)
        _ge_fail(self, ValueError, "float32", ns["f"])
        exec("def f(x: TensorDesc, *, a: float = float('nan'), b: float = float('inf'), "
             "c: int = 3, d: List[float] = [], e: DataType = DataType.DT_STRING) -> TensorDesc: "
             "pass", ns)
        gproto.parse(ns["f"], "T")  # accepted

    def test_output_rules(self):
        ns = dict(TensorDesc=TensorDesc, List=List, Tuple=Tuple, typing=typing)
        for name, ret in (("missing", ""), ("empty", " -> Tuple[()]"),
                          ("ellipsis", " -> Tuple[TensorDesc, ...]"), ("int", " -> int"),
                          ("nested", " -> Tuple[Tuple[TensorDesc]]"),
                          ("list_int", " -> List[int]")):
            with self.subTest(name):
                exec("def f(x: TensorDesc)%s: pass" % ret, ns)
                _ge_fail(self, TypeError, "annotation", ns["f"])

    def test_mutates_args(self):
        def two(x: TensorDesc, y: TensorDesc) -> Tuple[TensorDesc, TensorDesc]:
            pass
        d = gproto.parse(two, "T", ["y"])
        self.assertEqual([n for n, _ in d.outputs], ["y", "output1"])
        d = gproto.parse(two, "T", [("x", 1), ["y", 0]])
        self.assertEqual([n for n, _ in d.outputs], ["y", "x"])
        for bad, exc, frag in (("x", TypeError, "mutates_args"), (3, TypeError, "mutates_args"),
                               (["x", ("y", 1)], TypeError, "mixes"),
                               ([("x", 1, 2)], TypeError, "pair"),
                               ([("x", True)], TypeError, "pair"),
                               ([("x", 1.0)], TypeError, "pair"),
                               ([(1, 0)], TypeError, "pair"),
                               (["z"], ValueError, "'z'"), (["x", "x"], ValueError, "twice"),
                               ([("x", 2)], ValueError, "out of range"),
                               ([("x", 0), ("y", 0)], ValueError, "twice"),
                               (["x", "y", "x"], ValueError, "outputs")):
            with self.subTest(bad=bad):
                _ge_fail(self, exc, frag, two, mutates_args=bad)

    def test_registry(self):
        def f(x: TensorDesc) -> TensorDesc:
            pass
        co.register_op(op_type="R")(f)
        co.register_op(op_type="R")(f)  # same key, same content: idempotent
        self.assertEqual(len(gproto.get_registered_op_protos()), 1)

        def g(x: TensorDesc) -> TensorDesc:
            pass
        _ge_fail_keep(self, ValueError, "already registered", g, "R")

        def h(x: TensorDesc, y: TensorDesc) -> TensorDesc:
            pass
        h.__qualname__ = f.__qualname__  # same key, other content
        _ge_fail_keep(self, ValueError, "other content", h, "R")
        gproto.clear_registered_op_protos()
        self.assertEqual(gproto.get_registered_op_protos(), [])

    def test_nan_defaults_are_equal(self):
        def f(x: TensorDesc, *, a: float = float("nan")) -> TensorDesc:
            pass
        co.register_op(op_type="N")(f)
        co.register_op(op_type="N")(f)


def _ge_fail_keep(test, exc, fragment, fn, op_type):
    with test.assertRaises(exc) as cm:
        co.register_op(op_type=op_type)(fn)
    test.assertIn(fragment, str(cm.exception))


def _proto_src(extra=""):
    return ("from typing import List, Optional\n"
            "from ge.custom_op import register_op, register_op_impl, EagerExecuteOp\n"
            "from ge.runtime import Tensor, TensorDesc\n"
            "from ge.graph.types import DataType\n"
            "@register_op(op_type='Op')\n"
            "def op(x: TensorDesc, b: Optional[TensorDesc], xs: List[TensorDesc], *, n: int,\n"
            "       alpha: float = 1.0) -> TensorDesc:\n"
            "    return x\n" + extra)


class RegisterOpImplTest(unittest.TestCase):
    def setUp(self):
        fresh()

    def load(self, src):
        with TempDir() as d:
            write(d, "plugin.py", src)
            res = _loader.load_plugins([d])
            _loader.unload_modules(res.modules)
            return res

    def fails(self, src, exc, *fragments):
        with self.assertRaises(exc) as cm:
            self.load(src)
        for f in fragments:
            self.assertIn(f, str(cm.exception))
        self.assertEqual([m for m in sys.modules if m.startswith("_pyop_plugin_")], [])
        return str(cm.exception)

    def tearDown(self):
        _loader.shutdown()

    def test_schema_bound_accepted(self):
        res = self.load(_proto_src(
            "@register_op_impl(op_type='Op')\n"
            "class Impl:\n"
            "    def execute(self, a: Tensor, bb: 'Tensor | None', c: list[Tensor], *,\n"
            "                n: int, alpha: float = 2.0):\n"
            "        pass\n"))
        impl = res.impls[0]
        self.assertEqual(impl.input_kinds, (0, 1, 2))
        self.assertEqual(impl.methods, ("execute",))
        self.assertEqual(res.protos[0].outputs, ("output0",))

    def test_legacy_and_capabilities(self):
        res = self.load(_proto_src(
            "class Base:\n"
            "    def execute(self, ctx):\n"
            "        pass\n"
            "@register_op_impl(op_type='Op')\n"
            "class Impl(Base):\n"
            "    pass\n"))
        self.assertEqual(res.impls[0].methods, ("execute",))
        res = self.load(_proto_src(
            "@register_op_impl(op_type='Op')\n"
            "class Impl:\n"
            "    @staticmethod\n"
            "    def execute(ctx):\n"
            "        pass\n"))
        self.assertEqual(res.impls[0].methods, ("execute",))

    def test_decorator_rules(self):
        for bad in ("", 1):
            with self.assertRaises(TypeError):
                co.register_op_impl(op_type=bad)
        with self.assertRaises(TypeError):
            co.register_op_impl(op_type="X")(lambda: None)

        class Abstract(co.EagerExecuteOp):
            pass
        with self.assertRaises(TypeError) as cm:
            co.register_op_impl(op_type="X")(Abstract)
        self.assertIn("abstract", str(cm.exception))

        class Nothing:
            pass
        with self.assertRaises(TypeError):
            co.register_op_impl(op_type="X")(Nothing)

        class Fine:
            def execute(self, ctx):
                pass
        co.register_op_impl(op_type="X")(Fine)
        self.assertEqual(Fine.__ge_op_impl_descriptor__.capabilities, ("eager_execute",))
        with self.assertRaises(ValueError):  # not idempotent, even for the same class
            co.register_op_impl(op_type="X")(Fine)

        class Other:
            def execute(self, ctx):
                pass
        with self.assertRaises(ValueError):
            co.register_op_impl(op_type="X")(Other)
        self.assertEqual(len(co.get_registered_op_impls()), 1)
        key = Fine.__ge_op_impl_descriptor__.descriptor_key
        self.assertIs(co.get_registered_op_impl_by_descriptor_key(key),
                      Fine.__ge_op_impl_descriptor__)
        self.assertEqual(co.get_registered_op_impl_dicts()[0]["op_type"], "X")
        co.clear_registered_op_impls()
        self.assertEqual(co.get_registered_op_impls(), [])

    def test_signature_validation(self):
        cases = [
            ("count", "def execute(self, a, b, c, *, n): pass", "expected 5 parameters"),
            ("varargs", "def execute(self, *a, **k): pass", "not allowed"),
            ("context_not_legacy", "def execute(self, context): pass", "expected 5"),
            ("desc_annotation", "def execute(self, a: TensorDesc, b, c, *, n, alpha): pass",
             "'a'"),
            ("kind", "def execute(self, a, b: Tensor, c, *, n, alpha): pass", "'b'"),
            ("dyn_kind", "def execute(self, a, b, c: Tensor, *, n, alpha): pass", "'c'"),
            ("attr_order", "def execute(self, a, b, c, *, alpha, n): pass", "'alpha'"),
            ("attr_positional", "def execute(self, a, b, c, n, *, alpha): pass", "'n'"),
            ("attr_type", "def execute(self, a, b, c, *, n: float, alpha): pass", "'n'"),
            ("declare_count", "def declare_launch_args(self, a, b, c, *, n, alpha) -> None: "
             "pass", "expected 6"),
            ("declare_return", "def declare_launch_args(self, a, b, c, z, *, n, alpha): pass",
             "return annotation"),
            ("declare_out_kind", "def declare_launch_args(self, a, b, c, z: list[Tensor], *, "
             "n, alpha) -> None: pass", "'z'"),
        ]
        for name, method, frag in cases:
            with self.subTest(name):
                msg = self.fails(_proto_src(
                    "@register_op_impl(op_type='Op')\n"
                    "class Impl:\n"
                    "    " + method + "\n"), TypeError, "'Op'", frag)
                self.assertIn("plugin:Impl:Op", msg)

    def test_no_ir(self):
        self.fails("from ge.custom_op import register_op_impl\n"
                   "@register_op_impl(op_type='Lonely')\n"
                   "class Impl:\n"
                   "    def execute(self, x): pass\n", RuntimeError, "canonical IR", "Lonely")
        res = self.load("from ge.custom_op import register_op_impl\n"
                        "@register_op_impl(op_type='Lonely')\n"
                        "class Impl:\n"
                        "    def execute(self, ctx): pass\n")
        self.assertIsNone(res.impls[0].input_kinds)

    def test_no_state_between_loads(self):
        src = _proto_src("@register_op_impl(op_type='Op')\n"
                         "class Impl:\n"
                         "    def execute(self, ctx): pass\n")
        self.load(src)
        self.load(src)  # the same op types again: the registries were per load
        self.assertEqual(co.get_registered_op_impls(), [])

    def test_contract_features(self):
        """mutates_args, no outputs, dynamic outputs, Tensor attributes: handed
        to pyop's op contract when it has them, else refused at registration."""
        inplace = ("from typing import Optional\nfrom ge.custom_op import register_op\n"
                   "from ge.runtime import TensorDesc\n"
                   "@register_op(op_type='Inplace', mutates_args=[('x', 1)])\n"
                   "def f(y: TensorDesc, x: TensorDesc) -> tuple[TensorDesc, TensorDesc]:\n"
                   "    return x, x\n")
        noout = ("from ge.custom_op import register_op\nfrom ge.runtime import TensorDesc\n"
                 "@register_op(op_type='NoOut')\n"
                 "def f(x: TensorDesc) -> None: pass\n")
        dynout = ("from typing import List, Tuple\nfrom ge.custom_op import register_op\n"
                  "from ge.runtime import TensorDesc\n"
                  "@register_op(op_type='DynOut')\n"
                  "def f(x: TensorDesc) -> Tuple[List[TensorDesc], TensorDesc]: return [x], x\n")
        tattr = ("from ge.custom_op import register_op\n"
                 "from ge.runtime import TensorDesc, Tensor\n"
                 "@register_op(op_type='TAttr')\n"
                 "def f(x: TensorDesc, *, w: Tensor) -> TensorDesc: return x\n")
        if not _features.MUTATES_ARGS:
            self.fails(inplace, NotImplementedError, "'Inplace'", "mutates_args")
        else:
            p = self.load(inplace).protos[0]
            self.assertEqual(p.outputs, ("output0", "x"))
            self.assertEqual(p.input_flags, (0, 1))
            self.assertEqual(p.output_alias, (-1, 1))
            self.fails("from typing import Optional\nfrom ge.custom_op import register_op\n"
                       "from ge.runtime import TensorDesc\n"
                       "@register_op(op_type='OptRef', mutates_args=['x'])\n"
                       "def f(x: Optional[TensorDesc]) -> TensorDesc: return x\n",
                       NotImplementedError, "'OptRef'", "'x'")
        if not _features.NO_OUTPUTS:
            self.fails(noout, NotImplementedError, "'NoOut'", "without outputs")
        else:
            self.assertEqual(self.load(noout).protos[0].outputs, ())
        if not _features.DYNAMIC_OUTPUTS:
            self.fails(dynout, NotImplementedError, "'DynOut'", "output0")
        else:
            p = self.load(dynout).protos[0]
            self.assertEqual(p.outputs, ("output0", "output1"))
            self.assertEqual(tuple(int(k) for k in p.output_kinds), (2, 0))
        if _features.tensor_attr_type() is None:
            self.fails(tattr, TypeError, "'TAttr'", "'w'")
        else:
            p = self.load(tattr).protos[0]
            self.assertEqual(p.attrs[0][:3], ("w", _features.tensor_attr_type(), True))


class SiblingImportTest(unittest.TestCase):
    """GE's absolute imports inside a plugin directory, with libpyop's rules."""

    def tearDown(self):
        _loader.shutdown()

    def test_package_and_helper(self):
        with TempDir() as d:
            write(d, "mypkg/__init__.py", "import mypkg.sub\nfrom mypkg import sub as s2\n"
                  "import _helper\nassert mypkg.sub is s2\nVALUE = _helper.V + mypkg.sub.W\n")
            write(d, "mypkg/sub.py", "import mypkg\nfrom . import leaf\nW = 2\n")
            write(d, "mypkg/leaf.py", "import mypkg.sub\n")
            write(d, "_helper.py", "V = 40\nimport sys\nRUNS = sys.modules.get('_helper_runs', 0)\n")
            write(d, "a_first.py", "import zz_late\nassert zz_late.N == 1\n")
            write(d, "zz_late.py", "import sys\nN = getattr(sys, '_zz_runs', 0) + 1\n"
                  "sys._zz_runs = N\n")
            write(d, "uses_json.py", "import json, os\nassert json.dumps is not None\n"
                  "assert os.path is not None\n")
            write(d, "json.py", "X = 1\n")
            path_before = list(sys.path)
            meta_before = list(sys.meta_path)
            res = _loader.load_plugins([d])
            try:
                self.assertEqual(sys.path, path_before)
                self.assertEqual([f for f in sys.meta_path if f not in meta_before and
                                  f is not _loader._PluginFinder], [])
                for alias in ("mypkg", "mypkg.sub", "mypkg.leaf", "_helper", "zz_late"):
                    self.assertNotIn(alias, sys.modules)
                import json as j
                self.assertFalse(hasattr(j, "X"))
                pkg = sys.modules[[m for m in res.modules if m.endswith("_mypkg")][0]]
                self.assertEqual(pkg.VALUE, 42)
                self.assertEqual(sys._zz_runs, 1)  # imported early, not run again
                self.assertTrue(any(m.endswith("__helper") for m in res.modules), res.modules)
                self.assertEqual(len([m for m in res.modules if m.endswith(".sub")]), 1)
            finally:
                del sys._zz_runs
                _loader.unload_modules(res.modules)
            self.assertEqual([m for m in sys.modules if m.startswith("_pyop_plugin_")], [])

    def test_failed_load_leaves_nothing(self):
        with TempDir() as d:
            write(d, "a.py", "import _helper\nimport mypkg\nraise RuntimeError('boom')\n")
            write(d, "_helper.py", "X = 1\n")
            write(d, "mypkg/__init__.py", "import mypkg.sub\n")
            write(d, "mypkg/sub.py", "")
            with self.assertRaises(RuntimeError):
                _loader.load_plugins([d])
            for n in ("_helper", "mypkg", "mypkg.sub"):
                self.assertNotIn(n, sys.modules)
            self.assertEqual([m for m in sys.modules if m.startswith("_pyop_plugin_")], [])

    def test_site_names_are_never_siblings(self):
        with TempDir() as d:
            write(d, "sitecustomize.py", "SIBLING = True\n")
            write(d, "usercustomize.py", "SIBLING = True\n")
            write(d, "a.py", "for n in ('sitecustomize', 'usercustomize'):\n"
                  "    try:\n"
                  "        m = __import__(n)\n"
                  "    except ImportError:\n"
                  "        continue\n"
                  "    assert not getattr(m, 'SIBLING', False), 'sibling %s served' % n\n")
            res = _loader.load_plugins([d])
            _loader.unload_modules(res.modules)

    def test_linked_plugin_keeps_its_neighbours(self):
        with TempDir() as d:
            write(d, "real/_helper.py", "V = 7\n")
            write(d, "real/plug.py", "import _helper\nassert _helper.V == 7\n")
            write(d, "real/other.py", "raise AssertionError('a neighbour ran as a plugin')\n")
            os.makedirs(os.path.join(d, "holder"))
            os.symlink(os.path.join(d, "real", "plug.py"), os.path.join(d, "holder", "plug.py"))
            res = _loader.load_plugins([os.path.join(d, "holder")])
            self.assertEqual(len([m for m in res.modules if m.endswith("_plug")]), 1)
            _loader.unload_modules(res.modules)

    def test_file_element_has_no_siblings(self):
        with TempDir() as d:
            write(d, "_helper.py", "X = 1\n")
            p = write(d, "plugin.py", "import _helper\n")
            with self.assertRaises(ModuleNotFoundError):
                _loader.load_plugins([p])


if __name__ == "__main__":
    unittest.main()

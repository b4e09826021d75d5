"""What CANN GE's own unit tests hold GE's Python API to, held against
libpyop's ge package (issue 27 items 5 and 6; docs/ge-plugins.md, "GE's
own unit tests").

GE's tests are not in this repository (they are GE's); this file states
the same contracts in its own words: the exception types, the substrings
GE's tests search messages for (libpyop's messages say more, and keep
those words), the lifetime of views, the frozen descriptors, the registry
rules and the bootstrap readers. Runs without the bridge."""

import copy
import dataclasses
import gc
import math
import os
import pickle
import sys
import unittest
from typing import List, Optional, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import support  # noqa: E402  (makes bridge/python importable)
from support import TempDir, write  # noqa: E402

from pyop import _loader  # noqa: E402
import ge.runtime as rt  # noqa: E402
import ge.runtime._native as rt_native  # noqa: E402
import ge.custom_op as co  # noqa: E402
from ge.custom_op import bootstrap, proto  # noqa: E402
from ge.custom_op import _state  # noqa: E402
from ge.graph.types import DataType, Format  # noqa: E402
from ge.runtime import StorageFormat, StorageShape, Tensor, TensorDesc, ExpandDimsType  # noqa

F = DataType.DT_FLOAT


def dims(storage_shape):
    return storage_shape.origin_shape.dims, storage_shape.storage_shape.dims


class TensorDescTest(unittest.TestCase):
    def test_the_native_module_names_the_same_types(self):
        self.assertIn("TensorDesc", rt.__all__)
        for name in rt_native.__all__:
            self.assertIs(getattr(rt_native, name), getattr(rt, name), name)

    def test_owns_copies_of_what_it_is_given(self):
        src = StorageShape([4, 5], [4, 1, 5])
        d = TensorDesc(src, DataType.DT_INT8)
        src.origin_shape.set_dim(0, 7)
        self.assertEqual(dims(d.shape), ([4, 5], [4, 1, 5]))
        d.shape = [2, -1]  # a list: origin and storage alike
        self.assertEqual(dims(d.shape), ([2, -1], [2, -1]))
        other = StorageShape([8], [2, 4])
        d.shape = other
        other.storage_shape.set_dim(1, 9)
        self.assertEqual(dims(d.shape), ([8], [2, 4]))
        d.shape = None
        d.data_type = DataType.DT_UNDEFINED  # any member below DT_MAX
        self.assertEqual((dims(d.shape), d.data_type), (([], []), DataType.DT_UNDEFINED))

    def test_a_shape_is_a_storage_shape_a_list_of_ints_or_none(self):
        for bad, detail in (((3, 4), "got tuple (3, 4)"), ("3,4", "got str '3,4'"),
                            ([2, False], "dimension 1 is bool False"),
                            ([2.0], "dimension 0 is float 2.0")):
            with self.subTest(bad=bad):
                for make in (lambda: TensorDesc(bad, F), lambda: setattr(TensorDesc([], F),
                                                                         "shape", bad)):
                    with self.assertRaises(TypeError) as cm:
                        make()
                    self.assertIn("shape must be a StorageShape, list of integers, or None",
                                  str(cm.exception))
                    self.assertIn(detail, str(cm.exception))
        TensorDesc([1] * rt.MAX_DIM_NUM, F)
        with self.assertRaises(ValueError) as cm:
            TensorDesc([1] * 300, F)
        self.assertIn("maximum dimension count", str(cm.exception))
        self.assertIn("300 dimensions", str(cm.exception))

    def test_a_data_type_is_a_datatype_below_dt_max(self):
        for bad in (3, False, Format.FORMAT_ND, "DT_INT32", None):
            with self.subTest(bad=bad), self.assertRaises(TypeError) as cm:
                TensorDesc([1], bad)
            self.assertIn("data_type must be a DataType", str(cm.exception))
            self.assertIn(type(bad).__name__, str(cm.exception))
        for make in (lambda: TensorDesc(None, DataType.DT_MAX),
                     lambda: setattr(TensorDesc(None, F), "data_type", DataType.DT_MAX)):
            with self.assertRaises(ValueError) as cm:
                make()
            self.assertIn("less than DataType.DT_MAX", str(cm.exception))

    def test_views_expire_with_their_owner(self):
        d = TensorDesc([3, 2], F)
        view = d.shape
        inner = view.storage_shape
        self.assertEqual(inner.dims, [3, 2])
        del d
        gc.collect()
        for use in (lambda: view.origin_shape, lambda: inner.dims, lambda: inner.set_dim(0, 1),
                    lambda: TensorDesc(view, F)):
            with self.assertRaises(RuntimeError) as cm:
                use()
            self.assertIn("handle has expired", str(cm.exception))
        s = StorageShape([1], [1])
        shape = s.origin_shape
        del s
        with self.assertRaises(RuntimeError):
            shape.dims
        f = StorageFormat(Format.FORMAT_NCHW, Format.FORMAT_ND, ExpandDimsType("10"))
        e = f.expand_dims_type
        self.assertTrue(e.is_expand_index(0))
        del f
        with self.assertRaises(RuntimeError):
            e.full_size
        # a live owner keeps its views usable
        keep = TensorDesc([5], F)
        self.assertEqual(keep.shape.origin_shape.dims, [5])

    def test_copies_are_owners_of_their_own(self):
        d = TensorDesc(StorageShape([2, 3], [6]), DataType.DT_INT32)
        view = d.shape
        for c in (copy.copy(d), copy.deepcopy(d), pickle.loads(pickle.dumps(d))):
            c.shape = [9]
            self.assertEqual(dims(d.shape), ([2, 3], [6]))  # the original is untouched
            self.assertEqual((dims(c.shape), c.data_type), (([9], [9]), DataType.DT_INT32))
            del c
            gc.collect()
            self.assertEqual(view.origin_shape.dims, [2, 3])  # its views live on
        self.assertEqual(dims(copy.copy(view)), ([2, 3], [6]))  # a view copied: an owner
        f = copy.deepcopy(StorageFormat(Format.FORMAT_NCHW, Format.FORMAT_ND,
                                        ExpandDimsType("011")))
        e = f.expand_dims_type
        self.assertEqual((f.get_origin_format(), e.full_size, e.is_expand_index(0),
                          e.is_expand_index(1)), (Format.FORMAT_NCHW, 3, False, True))
        del d
        with self.assertRaises(RuntimeError):
            copy.copy(view)  # an expired view has nothing left to copy


def attrs_of(desc):
    return [(a.name, a.type, a.is_required) for a in desc.attrs]


class RegisterOpTest(unittest.TestCase):
    def setUp(self):
        _state._fallback.__init__()  # a fresh GE registry outside a load

    def failure(self, fn, exc=TypeError, op_type="T", mutates_args=()):
        with self.assertRaises(exc) as cm:
            proto.register_op(op_type=op_type, mutates_args=mutates_args)(fn)
        msg = str(cm.exception)
        self.assertIn("register_op op_type '%s' failed" % op_type, msg)
        return msg

    def test_every_input_kind_attr_type_and_output(self):
        def f(a: TensorDesc, b: Optional[TensorDesc], c: List[TensorDesc], *,
              t: Tensor, i: int = 2, x: float = 0.5, on: bool = True, s: str = "s",
              dt: DataType = DataType.DT_INT8, li: List[int], lf: List[float],
              lb: List[bool], ls: List[str], ld: List[DataType],
              lli: List[List[int]]) -> Tuple[TensorDesc, List[TensorDesc]]:
            return a, []
        f.__kwdefaults__.update(li=[3], lf=[0.5], lb=[False], ls=["a"], ld=[DataType.DT_BOOL],
                                lli=[[1], [2, 3]])
        desc = proto.register_op(op_type="All", mutates_args=("a",))(f).__ge_op_proto_descriptor__
        self.assertEqual([(i.name, i.index, i.kind) for i in desc.inputs],
                         [("a", 0, proto.InputType.REQUIRED), ("b", 1, proto.InputType.OPTIONAL),
                          ("c", 2, proto.InputType.DYNAMIC)])
        self.assertEqual(attrs_of(desc), [
            ("t", "VT_TENSOR", True), ("i", "VT_INT", False), ("x", "VT_FLOAT", False),
            ("on", "VT_BOOL", False), ("s", "VT_STRING", False), ("dt", "VT_DATA_TYPE", False),
            ("li", "VT_LIST_INT", False), ("lf", "VT_LIST_FLOAT", False),
            ("lb", "VT_LIST_BOOL", False), ("ls", "VT_LIST_STRING", False),
            ("ld", "VT_LIST_DATA_TYPE", False), ("lli", "VT_LIST_LIST_INT", False)])
        self.assertEqual([(o.name, o.kind) for o in desc.outputs],
                         [("a", proto.OutputType.REQUIRED), ("output1", proto.OutputType.DYNAMIC)])
        self.assertEqual(desc.attrs[11].default, ((1,), (2, 3)))  # frozen
        d = desc.to_bridge_dict()
        self.assertEqual(d["attrs"][0], {"name": "t", "type": "VT_TENSOR", "is_required": True,
                                         "default": None})
        self.assertEqual(d["attrs"][11]["default"], [[1], [2, 3]])  # thawed again
        self.assertEqual(d["outputs"], [{"name": "a", "kind": 0}, {"name": "output1", "kind": 1}])

    def test_no_inputs_no_attrs_no_outputs(self):
        def f() -> None:
            pass
        desc = co.register_op(op_type="Empty")(f).__ge_op_proto_descriptor__
        self.assertEqual((desc.inputs, desc.attrs, desc.outputs), ((), (), ()))
        self.assertIs(co.register_op, proto.register_op)

    def test_op_type_is_a_non_empty_string(self):
        for bad in (None, "", 7, b"T"):
            with self.subTest(bad=bad), self.assertRaises(TypeError) as cm:
                proto.register_op(op_type=bad)
            self.assertIn("register_op op_type must be a non-empty string", str(cm.exception))
            self.assertIn(repr(bad), str(cm.exception))
            self.assertIn(__file__, str(cm.exception))  # and where

    def test_only_a_function_is_decorated(self):
        for bad in (object(), len, type("K", (), {})):
            with self.subTest(bad=bad):
                self.assertIn("register_op expects a Python function", self.failure(bad))

    def test_descriptors_built_by_hand_are_frozen(self):
        default = [[7], [8, 9]]
        attr = proto.OpAttr("axes", 0, "VT_LIST_LIST_INT", False, default)
        default[0].append(1)
        self.assertEqual(attr.default, ((7,), (8, 9)))
        self.assertIs(proto.OpAttr("n", 0, "VT_INT", False, 3).default, 3)
        with self.assertRaises(dataclasses.FrozenInstanceError):
            attr.default = []
        ins, attrs = [proto.OpInput("x", 0, proto.InputType.REQUIRED)], [attr]
        outs = [proto.OpOutput("y", 0, proto.OutputType.REQUIRED)]
        desc = proto.OpProtoDescriptor("m:f:Hand", "Hand", "m", "f", ins, attrs, outs,
                                       infer_func=None)
        ins.clear()
        attrs.append(attr)
        self.assertEqual((desc.inputs, desc.attrs, desc.outputs),
                         ((proto.OpInput("x", 0, proto.InputType.REQUIRED),), (attr,),
                          (proto.OpOutput("y", 0, proto.OutputType.REQUIRED),)))

    def test_mutated_and_fresh_output_names(self):
        def f(output0: TensorDesc, s: TensorDesc) -> Tuple[TensorDesc, List[TensorDesc],
                                                            TensorDesc]:
            return output0, [], s
        desc = proto.register_op(op_type="M", mutates_args=(("s", 2),))(f)
        self.assertEqual([o.name for o in desc.__ge_op_proto_descriptor__.outputs],
                         ["output0_1", "output1", "s"])

    def test_attr_defaults_of_the_wrong_type(self):
        cases = [(int, False, "must be int, got bool False"),
                 (int, DataType.DT_INT8, "must be int, got DataType"),
                 (float, 2, "must be float, got int 2"), (bool, 0, "must be bool, got int 0"),
                 (str, 0, "must be str, got int 0"), (DataType, 1, "must be DataType, got int 1"),
                 (DataType, DataType.DT_MAX, "must be a valid DataType"),
                 (List[int], [False], "contains bool False, expected int"),
                 (List[float], [2], "contains int 2, expected float"),
                 (List[bool], [0], "contains int 0, expected bool"),
                 (List[str], [0], "contains int 0, expected str"),
                 (List[DataType], [1], "contains int 1, expected DataType"),
                 (List[DataType], [DataType.DT_MAX], "must contain valid DataType values"),
                 (List[List[int]], [[False]], "contains bool False, expected int"),
                 (List[List[int]], [3], "contains int 3, expected list"),
                 (List[int], (3,), "must be list, got tuple (3,)"),
                 (int, None, "must be int, got NoneType None")]
        for ann, default, detail in cases:
            with self.subTest(ann=ann, default=default):
                def f(*, value=default) -> None:
                    pass
                f.__annotations__["value"] = ann
                msg = self.failure(f)
                self.assertIn("default value for attr 'value'", msg)
                self.assertIn(detail, msg)

    def test_a_tensor_attr_takes_no_default(self):
        def f(*, value=None) -> None:
            pass
        f.__annotations__["value"] = Tensor
        self.assertIn("Tensor attr 'value' does not support a default", self.failure(f))

    def test_parameter_and_return_annotations(self):
        def no_ann(x) -> TensorDesc:
            return x

        def attr_no_ann(*, k) -> None:
            pass

        def prim(x: int) -> TensorDesc:
            return x

        def defaulted(x: TensorDesc = None) -> TensorDesc:
            return x

        def kw_tensor(*, x: TensorDesc) -> None:
            pass

        def star(*xs: TensorDesc) -> TensorDesc:
            return xs[0]

        def star2(x: TensorDesc, **kw: int) -> TensorDesc:
            return x

        def no_ret(x: TensorDesc):
            return x

        def opt_ret(x: TensorDesc) -> Optional[TensorDesc]:
            return x

        def bad_item(x: TensorDesc) -> Tuple[TensorDesc, TensorDesc, str]:
            return x, x, ""

        for fn, words in ((no_ann, "input 'x' must have a type annotation"),
                          (attr_no_ann, "attr 'k' must have a type annotation"),
                          (prim, "unsupported input annotation for 'x'"),
                          (defaulted, "input 'x' must not have a default value"),
                          (kw_tensor, "unsupported attr annotation for 'x'"),
                          (star, "does not support variadic parameter 'xs'"),
                          (star2, "does not support variadic parameter 'kw'"),
                          (no_ret, "return type annotation is required"),
                          (opt_ret, "unsupported return annotation"),
                          (bad_item, "unsupported return annotation at output index 2")):
            with self.subTest(fn.__name__):
                msg = self.failure(fn)
                self.assertIn(words, msg)
                self.assertIn("test_ge_parity.py:", msg)  # and where it is

    def test_mutates_args_forms(self):
        def f(x: TensorDesc, y: TensorDesc) -> Tuple[TensorDesc, TensorDesc]:
            return x, y
        for bad in ("x", ("x", ("y", 1)), ("nope",), ("y", "y"), (("x", 5),), (("x", False),),
                    (("x", 0, 1),)):
            with self.subTest(bad=bad):
                self.assertIn("mutates_args", self.failure(f, (TypeError, ValueError),
                                                           mutates_args=bad))

    def test_the_same_definition_again_is_the_same_registration(self):
        def make(module, ret=TensorDesc, nan=False):
            def infer_meta(x: TensorDesc, *, v: float = float("nan") if nan else 1.0) -> ret:
                return x
            infer_meta.__module__ = module
            infer_meta.__qualname__ = "infer_meta"
            return infer_meta
        first, again = make("src_a"), make("src_a")
        proto.register_op(op_type="Same")(first)
        proto.register_op(op_type="Same")(again)
        got = proto.get_registered_op_protos()
        self.assertEqual(len(got), 1)
        self.assertIs(got[0].infer_func, first)
        self.assertIs(again.__ge_op_proto_descriptor__, first.__ge_op_proto_descriptor__)
        proto.register_op(op_type="NaN")(make("src_n", nan=True))
        proto.register_op(op_type="NaN")(make("src_n", nan=True))  # NaN equals NaN here
        self.assertTrue(math.isnan(proto.get_registered_op_proto_by_op_type("NaN")
                                   .attrs[0].default))
        src = ("module_name.func_name 'src_a.infer_meta', descriptor_key "
               "'src_a:infer_meta:Same'")
        msg = self.failure(make("src_a", List[TensorDesc]), ValueError, op_type="Same")
        for words in ("descriptor content changed", "existing source: " + src,
                      "current source: " + src):
            self.assertIn(words, msg)
        msg = self.failure(make("src_b"), ValueError, op_type="Same")
        for words in ("op type 'Same' already registered", "existing source: " + src,
                      "current source: module_name.func_name 'src_b.infer_meta', "
                      "descriptor_key 'src_b:infer_meta:Same'", "test_ge_parity.py:"):
            self.assertIn(words, msg)
        self.assertEqual(len(proto.get_registered_op_protos()), 2)  # nothing was added

    def test_bootstrap_reads_the_registries_as_fresh_dicts(self):
        def f(*, axes: List[int]) -> None:
            pass
        f.__kwdefaults__ = {"axes": [4, 5]}
        f = proto.register_op(op_type="Boot")(f)
        first = bootstrap.get_registered_op_protos()
        first[0]["attrs"][0]["default"].append(6)
        second = bootstrap.get_registered_op_protos()
        self.assertEqual(second[0]["attrs"][0]["default"], [4, 5])
        self.assertEqual(second[0]["descriptor_key"],
                         f.__ge_op_proto_descriptor__.descriptor_key)
        self.assertTrue(second[0]["func_name"].endswith("f"))
        self.assertEqual(bootstrap.get_registered_op_impls(), [])
        self.assertEqual(bootstrap.ENV_PY_CUSTOM_OP_PATH, "ASCEND_CUSTOM_OPP_PATH")
        with self.assertRaises(NotImplementedError) as cm:
            bootstrap.load_custom_op_plugins()
        self.assertIn("pyop_load", str(cm.exception))


class RegisterOpImplTest(unittest.TestCase):
    def setUp(self):
        _state._fallback.__init__()

    def refused(self, exc, make):
        with self.assertRaises(exc) as cm:
            make()
        return str(cm.exception)

    def test_decorator_rules_in_ges_words(self):
        for bad in ("", None, 3):
            self.assertIn("register_op_impl op_type must be a non-empty string",
                          self.refused(TypeError, lambda: co.register_op_impl(op_type=bad)))
        self.assertIn("register_op_impl expects a class", self.refused(
            TypeError, lambda: co.register_op_impl(op_type="Fn")(lambda: None)))
        msg = self.refused(TypeError, lambda: co.register_op_impl(op_type="Abs")(
            co.EagerExecuteOp))
        self.assertIn("register_op_impl expects a concrete class", msg)
        self.assertIn("EagerExecuteOp is abstract (execute not implemented)", msg)

        class Bare:
            pass
        msg = self.refused(TypeError, lambda: co.register_op_impl(op_type="Bare")(Bare))
        # newer GE's list (libpyop has compile) and GE master's / develop's
        for words in ("Bare' must implement at least one supported method: execute, compile, "
                      "declare_launch_args",
                      "Bare' must implement at least one supported method: execute, "
                      "declare_launch_args", "test_ge_parity.py:"):
            self.assertIn(words, msg)

        @co.register_op_impl(op_type="Twice")
        class One:
            def execute(self, ctx):
                pass

        def again():
            @co.register_op_impl(op_type="Twice")
            class Two:
                def execute(self, ctx):
                    pass
        self.assertIn("op impl type already exists", self.refused(ValueError, again))


class SignatureTest(unittest.TestCase):
    """GE's compile test: an attribute written as a positional parameter is
    refused in GE's words ("keyword-only")."""

    def load(self, method):
        src = ("from ge.custom_op import register_op, register_op_impl\n"
               "from ge.runtime import Tensor, TensorDesc\n"
               "@register_op(op_type='Kw')\n"
               "def kw(x: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:\n"
               "    return x\n"
               "@register_op_impl(op_type='Kw')\n"
               "class Impl:\n"
               "    " + method + "\n")
        _state._fallback.__init__()
        with TempDir() as d:
            write(d, "plugin.py", src)
            try:
                res = _loader.load_plugins([d])
            finally:
                _loader.shutdown()
            _loader.unload_modules(res.modules)

    def test_a_positional_attr_is_refused_as_keyword_only(self):
        for method in ("compile", "declare_launch_args"):
            with self.subTest(method):
                with self.assertRaises(TypeError) as cm:
                    self.load("def %s(self, x, y, alpha) -> None: pass" % method)
                msg = str(cm.exception)
                for words in ("invalid %s signature for op type Kw" % method, "keyword-only",
                              "expected 2 positional parameters (1 inputs, 1 outputs) followed "
                              "by 1 keyword-only attrs ['alpha']",
                              "attr 'alpha' must be keyword-only (after '*')", "plugin.py:"):
                    self.assertIn(words, msg)
        with self.assertRaises(TypeError) as cm:
            self.load("def execute(self, x, alpha) -> None: pass")
        self.assertIn("attr 'alpha' must be keyword-only", str(cm.exception))
        self.load("def compile(self, x, y, *, alpha) -> None: pass")  # the right form


if __name__ == "__main__":
    unittest.main()

"""Tensors and contexts used after their callback."""
import pyop
from pyop import TensorDesc

KEPT = []
KEPT_OUT = []  # a writable byte view of an earlier call's output
KEPT_T = []  # Tensors kept past their calls: (keep_both's, keep_plain's)


@pyop.register_op(op_type="Escape")
def escape(x: TensorDesc, *, mode: str = "none") -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="Escape")
class EscapeImpl:
    def execute(self, x, *, mode):
        ctx = pyop.get_execute_ctx()
        out = ctx.malloc_output_tensor(0, x.shape, x.dtype)
        if mode == "keep":
            cls = type(self)  # kept on the class: any instance can try to use them
            cls.kept, cls.ctx, cls.out = x, ctx, out
        elif mode == "use_kept":
            for what, fn in (("shape", lambda: self.kept.shape),
                             ("buffer", lambda: memoryview(self.kept)),
                             ("out", lambda: memoryview(self.out)),
                             ("ctx", lambda: self.ctx.malloc_workspace(4))):
                try:
                    fn()
                except RuntimeError as e:
                    assert "outside its callback" in str(e), (what, e)
                else:
                    raise AssertionError("%s usable after its callback" % what)
            assert not self.kept.valid and repr(self.kept).startswith("<pyop.Tensor (released")
        elif mode == "keep_view":
            KEPT.append(memoryview(x))
        elif mode == "keep_numpy":
            import numpy
            KEPT.append(numpy.asarray(out))
        elif mode == "numpy":
            import numpy
            a = numpy.asarray(x)
            o = numpy.asarray(out)
            assert not a.flags.writeable and o.flags.writeable
            assert a.shape == tuple(x.shape) and a.dtype == numpy.float32, (a.shape, a.dtype)
            o[...] = a * 3
        elif mode == "stash_global":
            import builtins  # outlives the plugin and the pyop package
            builtins._pyop_test_kept = (x, ctx)
        elif mode == "keep_out_write":
            if KEPT_OUT:  # what an op keeping a view would do next: write through it
                KEPT_OUT[0][0] = 0x5A
            elif not getattr(type(self), "kept_out", False):
                type(self).kept_out = True
                KEPT_OUT.append(memoryview(out).cast("B"))
        elif mode == "keep_both":
            # First call: keep the input and a memoryview of it (the call
            # fails). Later calls: the bridge holds no reference to it any
            # more than to one kept without a view (keep_plain).
            if not getattr(type(self), "kept_both", False):
                type(self).kept_both = True
                KEPT_T.insert(0, x)
                KEPT.append(memoryview(x))
            else:
                import sys
                both, plain = KEPT_T
                assert both is not x and not both.valid and not plain.valid
                assert sys.getrefcount(both) == sys.getrefcount(plain), (
                    "the bridge still holds the Tensor kept with a view",
                    sys.getrefcount(both), sys.getrefcount(plain))
        elif mode == "keep_plain":
            KEPT_T.append(x)
        elif mode == "release":
            for v in KEPT:
                v.release()
            KEPT.clear()
        elif mode == "drop":
            KEPT.clear()
            KEPT_OUT.clear()
            KEPT_T.clear()
            for name in ("kept", "ctx", "out"):
                if hasattr(type(self), name):
                    delattr(type(self), name)

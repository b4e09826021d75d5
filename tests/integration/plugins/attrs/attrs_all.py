"""Every attribute type, required and with defaults. execute writes a text
rendering of the values it received into output 0 (uint8)."""
import pyop
from pyop import DataType, TensorDesc


@pyop.register_op(op_type="AllAttrs")
def all_attrs(x: TensorDesc, *, i: int, f: float, b: bool, s: str, d: DataType,
              li: list[int], lf: list[float], lb: list[bool], ls: list[str],
              ld: list[DataType], lli: list[list[int]],
              oi: int = 7, of: float = 0.5, ob: bool = True, os_: str = "dflt",
              od: DataType = DataType.bfloat16, oli: list[int] = [1, 2],
              olf: list[float] = [1.5], olb: list[bool] = [False, True],
              ols: list[str] = ["a", "b"], old: list[DataType] = [DataType.int8],
              olli: list[list[int]] = [[1], [2, 3]]) -> TensorDesc:
    return TensorDesc((1,), DataType.uint8)


def _render(v):
    if isinstance(v, DataType):
        return v.name
    if isinstance(v, list):
        return "[" + ",".join(_render(e) for e in v) + "]"
    return repr(v)


@pyop.register_op_impl(op_type="AllAttrs")
class AllAttrsImpl:
    def execute(self, x, *, i, f, b, s, d, li, lf, lb, ls, ld, lli,
                oi, of, ob, os_, od, oli, olf, olb, ols, old, olli):
        assert type(i) is int and type(f) is float and type(b) is bool and type(s) is str
        assert type(d) is DataType and all(type(e) is DataType for e in ld)
        vals = (i, f, b, s, d, li, lf, lb, ls, ld, lli, oi, of, ob, os_, od, oli, olf, olb,
                ols, old, olli)
        text = "|".join(_render(v) for v in vals).encode()
        out = pyop.get_execute_ctx().malloc_output_tensor(0, (len(text),), "uint8")
        with memoryview(out) as m:
            m[:] = text
        # Each call gets its own lists: changing them changes nothing the
        # next call sees.
        for v in (li, lf, lb, ls, ld, lli, oli, olf, olb, ols, old, olli):
            assert type(v) is list, type(v)
            if v and type(v[0]) is list:
                v[0].append(99)
            v.append(v[0] if v else 0)

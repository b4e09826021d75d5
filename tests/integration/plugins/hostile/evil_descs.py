"""A descriptor whose attribute lists empty themselves while the bridge
converts them (the descriptor is a plain object a plugin can rewrite)."""
import pyop
from pyop import TensorDesc
from pyop._types import AttrType


class Clearer:
    def __init__(self, victims, value):
        self.victims = victims
        self.value = value

    def __index__(self):
        for v in self.victims:
            v.clear()
        return self.value


@pyop.register_op(op_type="EvilDefaults")
def evil_defaults(x: TensorDesc, *, ls: list[str] = ["a"], li: list[int] = [1]) -> TensorDesc:
    return x


_ls = ["".join(("x", c)) for c in "ab"]  # strings only this list holds
_li = []
_li.extend([Clearer([_li, _ls], 1), 5])
evil_defaults.__pyop_descriptor__.attrs = (("ls", AttrType.LIST_STR, False, _ls),
                                           ("li", AttrType.LIST_INT, False, _li))
del _ls, _li

"""Both sides of each check, every configuration, every end of a table,
the second time (the both-sides pass, session 14; tests/mutation/
mutants.txt, bridge.bs.*): a rule held to the sibling input it was written
for too, a registration of a subclass kept apart from its base's."""

import unittest

import support  # noqa: F401  (makes bridge/python importable)
import pyop
from pyop import Tensor
from pyop._registry import collecting


class SubclassRegistrationTest(unittest.TestCase):
    def test_a_subclass_lists_its_own_registrations_only(self):
        """__pyop_descriptors__ (what pyop list and check read: every op
        type the class was registered for) holds the class's own
        registrations: a subclass registered for another op type does not
        list its base's, and the base keeps its own after it."""
        with collecting() as coll:
            @pyop.register_op_impl(op_type="BaseOp")
            class Base:
                def execute(self, x: Tensor) -> None:
                    pass

            @pyop.register_op_impl(op_type="SubOp")
            class Sub(Base):
                pass

            pyop.register_op_impl(op_type="SubOp2")(Sub)
        self.assertEqual([d.op_type for d in Base.__pyop_descriptors__], ["BaseOp"])
        self.assertEqual([d.op_type for d in Sub.__pyop_descriptors__], ["SubOp", "SubOp2"])
        self.assertIs(Sub.__pyop_descriptors__[-1], Sub.__pyop_descriptor__)
        self.assertIs(Base.__pyop_descriptors__[0], coll.impls["BaseOp"])
        self.assertEqual({d.cls for d in Sub.__pyop_descriptors__}, {Sub})


if __name__ == "__main__":
    unittest.main()

"""GE's refusals at their edges through the real bridge: `pyop run` on
plugins/ge_edges (a negative index, a dynamic input asked for as optional, a
bool for a DataType, an execute that returns a value). Driven by ctest:
PYOP_TEST_CLI is the build tree's bin/pyop. Standard library only."""

import json
import os
import subprocess
import unittest

ENV = os.environ
HERE = os.path.dirname(os.path.abspath(__file__))


class GeEdgesTest(unittest.TestCase):
    def run_op(self, *args):
        env = dict(ENV, PYTHONDONTWRITEBYTECODE="1",
                   ASCEND_CUSTOM_OPP_PATH=os.path.join(HERE, "plugins", "ge_edges"))
        env.pop("PYOP_PYTHON", None)
        return subprocess.run([ENV["PYOP_TEST_CLI"], "run"] + list(args), capture_output=True,
                              text=True, env=env, timeout=300)

    def test_refusals_inside_execute(self):
        r = self.run_op("GeEdges", "--input", "x=float32[2]:1,2", "--input", "xs=float32[1]:3",
                        "--input", "xs=float32[1]:4")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "output0: float32[2] = [1, 2]\n")

    def test_execute_returning_a_value_fails(self):
        for op in ("GeReturns", "GeReturnsDirect"):
            with self.subTest(op=op):
                r = self.run_op(op, "--input", "x=float32[2]:1,2", "--json")
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                err = json.loads(r.stdout)["error"]
                self.assertEqual((err["status"], err["op"]), ("PYOP_EPYTHON", op))
                self.assertIn("TypeError: execute must return None (op '%s' returned int)" % op,
                              err["message"])


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""register_kernel's rules (docs/ge-plugins.md, "What runs on a host, what is accepted, what needs an NPU"), each tried inside a class body
the way a plugin writes it; every refusal must be GE's TypeError with GE's
text. Run by tests/ge/test_ge_api.py (KernelRulesTest) when this file is
imported: it only defines the cases."""

from ge.custom_op import register_kernel, register_op_impl, OpBackend

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


@case
def backend_not_member():
    register_kernel(backend="host")


@case
def backend_positional():
    register_kernel(OpBackend.HOST)


@case
def not_a_function():
    class A:
        execute = register_kernel(backend=OpBackend.HOST)(len)


@case
def not_execute():
    class A:
        @register_kernel(backend=OpBackend.HOST)
        def run(self, x) -> None:
            pass


@case
def outside_class():
    def execute(self, x) -> None:
        pass
    register_kernel(backend=OpBackend.HOST)(execute)


@case
def earlier_undecorated():
    class A:
        def execute(self, x) -> None:
            pass

        @register_kernel(backend=OpBackend.HOST)
        def execute(self, x) -> None:  # noqa: F811
            pass


@case
def same_backend_twice():
    class A:
        @register_kernel(backend=OpBackend.HOST)
        def execute(self, x) -> None:
            pass

        @register_kernel(backend=OpBackend.HOST)
        def execute(self, x) -> None:  # noqa: F811
            pass


@case
def static_over_kernel():
    @register_op_impl(op_type="RuleStaticOver")
    class A:
        @staticmethod
        @register_kernel(backend=OpBackend.HOST)
        def execute(x) -> None:
            pass


@case
def later_undecorated():
    @register_op_impl(op_type="RuleLater")
    class A:
        @register_kernel(backend=OpBackend.HOST)
        def execute(self, x) -> None:
            pass

        def execute(self, x) -> None:  # noqa: F811
            pass


@case
def nothing_supported():
    @register_op_impl(op_type="RuleNothing")
    class A:
        pass


@case
def compile_not_callable():
    @register_op_impl(op_type="RuleCompile")
    class A:
        compile = None

        def execute(self, ctx):
            pass


# What is accepted: a staticmethod and a classmethod under register_kernel,
# an inherited descriptor's bindings, an inherited plain execute.
@register_op_impl(op_type="RuleOkStatic")
class OkStatic:
    @register_kernel(backend=OpBackend.HOST)
    @staticmethod
    def execute(x) -> None:
        pass


@register_op_impl(op_type="RuleOkBase")
class OkBase:
    @register_kernel(backend=OpBackend.HOST)
    def execute(self, x) -> None:
        pass

    @register_kernel(backend=OpBackend.DEVICE)
    def execute(self, x) -> None:  # noqa: F811
        pass


@register_op_impl(op_type="RuleOkInherits")
class OkInherits(OkBase):
    pass


class _PlainBase:
    def execute(self, x) -> None:
        pass


@register_op_impl(op_type="RuleOkPlainBase")
class OkPlainBase(_PlainBase):
    pass

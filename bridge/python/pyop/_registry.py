"""The decorators op authors use and the descriptors they produce.

register_op and register_op_impl validate what they can at decoration time
and add a descriptor to the collection of the load in progress (see
_loader.load_plugins). Outside a load they only validate and attach the
descriptor to the decorated object (``__pyop_descriptor__``).

Layers with decorators of their own (the ge package) reach these through
pyop.ext, never this module.
"""

import ast
import hashlib
import inspect
import linecache
import re
import sys

from ._signature import (check_impl_method, impl_input_kinds, op_type_problem,
                         parse_prototype, resolve_dtypes, resolve_mutates, where,
                         check_impl_attrs,
                         check_sync_function, check_sync_method, _method_params)
from ._errors import blame
from ._types import CAP_COMPILE, CAP_EXECUTE, CAP_INFER_META, CAP_LAUNCH, INPUT_MUTATED

__all__ = ["register_op", "register_op_impl", "register_samples", "loaded_samples",
           "register_reference",
           "OpProto", "OpImpl", "Collection", "collecting", "IMPL_METHODS"]

# Method name -> capability bit, in the order capabilities are reported.
IMPL_METHODS = (("execute", CAP_EXECUTE), ("compile", CAP_COMPILE),
                ("declare_launch_args", CAP_LAUNCH))

PLUGIN_PREFIX = "_pyop_plugin_"
_PLUGIN_NAME = re.compile("^" + re.escape(PLUGIN_PREFIX) + r"\d+_(.*)$")


class OpProto:
    """A prototype: what the bridge hands to libpyop as a pyop_proto_view.
    inputs: ((name, IoKind), ...); outputs: (name, ...);
    attrs: ((name, AttrType, required, default), ...); infer: the function.
    output_kinds: (IoKind, ...) per output (None: all required);
    input_flags: (INPUT_* bits, ...) per input (None: nothing mutated);
    output_alias: (input index or -1, ...) per output (None: no alias).
    input_dtypes/output_dtypes: ((PYOP_DTYPE_BIT mask, symbol), ...) per
    input/output, mask 0 for any (None: none constrained).
    source_digest: the identity of file's bytes (source_digest), set when a
    load collects the descriptor; None: unknown.
    element, code_digest: the index of the load's path it came from and the
    identity of every source that path's load compiled (Collection.seal;
    -1 and None outside a load): what interpreter lanes compare."""

    __slots__ = ("op_type", "key", "file", "line", "inputs", "outputs", "attrs",
                 "infer", "caps", "output_kinds", "input_flags", "output_alias",
                 "input_dtypes", "output_dtypes", "source_digest", "element", "code_digest")

    def __init__(self, op_type, key, file, line, inputs, outputs, attrs, infer,
                 output_kinds=None, input_flags=None, output_alias=None,
                 input_dtypes=None, output_dtypes=None):
        self.op_type = op_type
        self.key = key
        self.file = file
        self.line = line
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs
        self.infer = infer
        self.caps = CAP_INFER_META
        self.output_kinds = (tuple(int(k) for k in output_kinds)
                             if output_kinds is not None else None)
        self.input_flags = tuple(input_flags) if input_flags is not None else None
        self.output_alias = tuple(output_alias) if output_alias is not None else None
        self.input_dtypes = tuple(input_dtypes) if input_dtypes is not None else None
        self.output_dtypes = tuple(output_dtypes) if output_dtypes is not None else None
        self.source_digest = None
        self.element = -1
        self.code_digest = None

    @property
    def mutated_inputs(self):
        """Names of the inputs execute writes into (mutates_args)."""
        flags = self.input_flags or (0,) * len(self.inputs)
        return tuple(n for (n, _), f in zip(self.inputs, flags) if f & INPUT_MUTATED)

    @property
    def where(self):
        return where(self.file, self.line)

    def __repr__(self):
        return "<OpProto %s at %s>" % (self.op_type, self.where)


class OpImpl:
    """An implementation class of op_type. caps: the PYOP_CAP_* bits of the
    methods it defines. input_kinds: the kind of each input slot (from the
    Python prototype when there is one, else from execute's annotations, or
    None). proto_known: whether a Python prototype validated the methods.
    source_digest, element, code_digest: as OpProto's."""

    __slots__ = ("op_type", "key", "file", "line", "cls", "caps", "methods",
                 "input_kinds", "n_outputs", "proto_known", "source_digest", "element",
                 "code_digest")

    def __init__(self, op_type, key, file, line, cls, caps, methods):
        self.op_type = op_type
        self.key = key
        self.file = file
        self.line = line
        self.cls = cls
        self.caps = caps
        self.methods = methods
        self.input_kinds = None
        self.n_outputs = -1
        self.proto_known = False
        self.source_digest = None
        self.element = -1
        self.code_digest = None

    @property
    def where(self):
        return where(self.file, self.line)

    def bind(self, proto):
        """Validates every method against proto (TypeError on mismatch)."""
        inputs = [n for n, _ in proto.inputs]
        attrs = [a[0] for a in proto.attrs]
        for m in self.methods:
            try:
                check_impl_method(self.cls, m, self.op_type, self.where, inputs,
                                  len(proto.outputs), attrs)
            except (TypeError, ValueError) as e:
                raise self._blame(e, m)
        self.input_kinds = tuple(int(k) for _, k in proto.inputs)
        self.n_outputs = len(proto.outputs)
        self.proto_known = True

    def unbound(self):
        """No prototype in this load: input kinds from execute's annotations."""
        self.input_kinds = impl_input_kinds(self.cls, self.methods)

    def check_attrs(self, names):
        """Called by the bridge when an instance is created against a
        prototype that is not a Python one: the methods must accept exactly
        these attribute names (TypeError otherwise)."""
        for m in self.methods:
            mw = "op %r: %s() of class at %s" % (self.op_type, m, self.where)
            fn, _, kw, _, var_kw = _method_params(self.cls, m, mw)
            code = getattr(fn, "__code__", None)
            if code is not None:
                mw = "op %r: %s() at %s" % (self.op_type, m,
                                            where(code.co_filename, code.co_firstlineno))
            try:
                check_impl_attrs(kw, var_kw, list(names), mw)
            except (TypeError, ValueError) as e:
                raise self._blame(e, m)

    def _blame(self, exc, method):
        """exc (a check of method that failed after the plugin's code ran)
        marked as the fault of the method's definition, or of the class
        when its code is unknown (_errors.blame)."""
        fn = inspect.getattr_static(self.cls, method, None)
        fn = getattr(fn, "__func__", fn)  # staticmethod, classmethod
        code = getattr(fn, "__code__", None)
        file, line = ((code.co_filename, code.co_firstlineno) if code is not None
                      else (self.file, self.line))
        return blame(exc, file, line, "%s.%s" % (self.cls.__name__, method))

    def __repr__(self):
        return "<OpImpl %s at %s>" % (self.op_type, self.where)


class Collection:
    """The descriptors of one load.

    A second definition of an op type is kept too and handed to libpyop
    with the first: the registry decides (docs/design.md §Registry) — the same descriptor
    key and content load once, anything else is a conflict that names both
    definitions. Only the first prototype of an op type is used to check
    the implementations' signatures.
    """

    def __init__(self):
        self.protos = {}
        self.impls = {}
        self.extra = []  # later definitions of an op type already seen
        self.samples = {}  # op_type -> (function, "file:line")
        self.class_lines = {}  # file -> (linecache's lines, {qualname: line})
        self.digests = {}  # file -> source_digest(file), read once per load
        self.layer_states = {}  # a layer's name -> its state (pyop.ext.load_state)
        self.element = -1  # the index of the load's path being imported
        self.compiled = {}  # file -> digest of the bytes the loader compiled last
        self.element_sources = {}  # element -> [(file, digest)] in compile order

    def note_compiled(self, file, data):
        """The plugin loader compiled data (bytes) from file."""
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        self.compiled[file] = digest
        self.element_sources.setdefault(self.element, []).append((file, digest))

    def add(self, desc):
        # What was compiled, not what the file holds now (it may have been
        # replaced since: docs/design.md §Lanes).
        if desc.file not in self.digests:
            self.digests[desc.file] = self.compiled.get(desc.file) or source_digest(desc.file)
        desc.source_digest = self.digests[desc.file]
        desc.element = self.element
        table = self.protos if isinstance(desc, OpProto) else self.impls
        if desc.op_type in table:
            self.extra.append(desc)
        else:
            table[desc.op_type] = desc

    def discard(self, predicate):
        """Drops every descriptor for which predicate(desc) is true."""
        for table in (self.protos, self.impls):
            for t, d in list(table.items()):
                if predicate(d):
                    del table[t]
        self.extra[:] = [d for d in self.extra if not predicate(d)]

    def all_protos(self):
        return list(self.protos.values()) + [d for d in self.extra if isinstance(d, OpProto)]

    def all_impls(self):
        return list(self.impls.values()) + [d for d in self.extra if isinstance(d, OpImpl)]

    def seal(self):
        """Sets each descriptor's code_digest: the identity of every source
        the loader compiled for its path (modules, package submodules,
        sibling helpers, in order) and of its own file's."""
        elements = {}
        for desc in self.all_protos() + self.all_impls():
            if desc.element not in elements:
                text = "".join("%s\0%s\n" % fd for fd in self.element_sources.get(desc.element, ()))
                elements[desc.element] = hashlib.sha256(text.encode("utf-8", "surrogateescape"))
            h = elements[desc.element].copy()
            h.update(("\0%s" % (desc.source_digest or "")).encode())
            desc.code_digest = "sha256:" + h.hexdigest()

    def finalize(self):
        """Binds each implementation to the prototype of the same load, or
        derives its input kinds from its own annotations."""
        for impl in self.all_impls():
            proto = self.protos.get(impl.op_type)
            if proto is not None:
                impl.bind(proto)
            else:
                impl.unbound()


_active = []  # stack of Collections of the loads in progress


def source_digest(file):
    """The identity of a definition's source file that the bridge hands to
    libpyop (the views' source_digest, docs/bridge-abi.md "Source
    digests"): "sha256:" and the hex SHA-256 of the file's bytes, or None
    when it cannot be read (libpyop then compares file:line alone)."""
    try:
        with open(file, "rb") as f:
            return "sha256:" + hashlib.sha256(f.read()).hexdigest()
    except (OSError, TypeError, ValueError):
        return None


def note_compiled(file, data):
    """The plugin loader compiled data from file: recorded by the load in
    progress (none: nothing to record)."""
    if _active:
        _active[-1].note_compiled(file, data)


class collecting:
    """Context manager: decorators used inside add to a fresh Collection
    (what the loader uses; handy in tests)."""

    def __enter__(self):
        self.collection = Collection()
        _active.append(self.collection)
        return self.collection

    def __exit__(self, *exc):
        _active.remove(self.collection)
        return False


def _check_op_type(op_type, decorator):
    """Checks the op_type given to a decorator; errors name the plugin's
    file:line (the decorator's caller)."""
    if isinstance(op_type, str) and op_type and op_type_problem(op_type) is None:
        return
    try:
        frame = sys._getframe(2)
        loc = " at %s" % where(frame.f_code.co_filename, frame.f_lineno)
    except ValueError:
        loc = ""
    if not isinstance(op_type, str) or not op_type:
        raise TypeError("%s(op_type=%r)%s: op_type must be a non-empty str"
                        % (decorator, op_type, loc))
    raise ValueError("%s(op_type=%r)%s: not a valid op type: %s"
                     % (decorator, op_type, loc, op_type_problem(op_type)))


def _module_label(module_name):
    """'plugin_a' for the unique module name '_pyop_plugin_3_plugin_a'."""
    m = _PLUGIN_NAME.match(module_name or "")
    return m.group(1) if m else (module_name or "?")


def _function_location(fn):
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return "<unknown>", 0
    return code.co_filename, code.co_firstlineno


# What holds statements: a statement, an except clause, a match case.
_BLOCKS = (ast.stmt, ast.excepthandler) + ((ast.match_case,) if hasattr(ast, "match_case") else ())


def _index_classes(body, prefix, out):
    """Adds to out the line of each class statement in the statement list
    body (and in the statements nested in it), by qualified name: its first
    decorator's line when it has one, else the `class` line; for a name
    defined twice, the first in source order. The walk inspect's
    _ClassFinder makes for inspect.getsourcelines(cls) (classes are
    statements, so only statements are visited), once for all classes."""
    for node in body:
        if isinstance(node, ast.ClassDef):
            qual = prefix + node.name
            out.setdefault(qual, node.decorator_list[0].lineno if node.decorator_list
                           else node.lineno)
            _index_classes(node.body, qual + ".", out)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _index_classes(node.body, prefix + node.name + ".<locals>.", out)
        else:
            for field in node._fields:  # if/for/while/with/try/match bodies
                value = getattr(node, field, None)
                if isinstance(value, list) and value and isinstance(value[0], _BLOCKS):
                    _index_classes(value, prefix, out)


def _class_lines(file, module):
    """{qualname: line} of the classes of file as linecache holds it (read
    the way inspect reads it), or None without a source. Within a load the
    answer is kept per file for as long as linecache keeps the same lines,
    so a module is parsed once however many classes it registers."""
    linecache.checkcache(file)
    lines = linecache.getlines(file, getattr(module, "__dict__", None))
    if not lines:
        return None
    cache = _active[-1].class_lines if _active else {}
    hit = cache.get(file)
    if hit is not None and hit[0] is lines:
        return hit[1]
    index = {}
    try:
        _index_classes(ast.parse("".join(lines)).body, "", index)
    except (SyntaxError, ValueError, RecursionError):
        return None
    cache[file] = (lines, index)
    return index


def _class_location(cls):
    """(file, line) of a class statement: __firstlineno__ where Python
    records it (3.13), else the line inspect.getsourcelines gives (the first
    decorator's), else the first method's; ("<unknown>", 0) when none."""
    file = None
    mod = sys.modules.get(cls.__module__)
    if mod is not None:
        file = getattr(mod, "__file__", None)
    line = getattr(cls, "__firstlineno__", None)
    if line is None and isinstance(file, str):
        index = _class_lines(file, mod)
        line = index.get(cls.__qualname__) if index is not None else None
    if line is None or file is None:
        for v in vars(cls).values():
            code = getattr(getattr(v, "__func__", v), "__code__", None)
            if code is not None:
                file = file or code.co_filename
                line = line or code.co_firstlineno
                break
    return file or "<unknown>", line or 0


def _add(desc):
    if _active:
        _active[-1].add(desc)


def register_op(op_type=None, *, outputs=None, mutates_args=(), dtypes=None):
    """Decorator: the function is the op's infer_meta and its signature the
    prototype. Positional parameters are inputs, keyword-only ones attributes,
    the return annotation gives the outputs (None, TensorDesc,
    list[TensorDesc] for a dynamic output, or a tuple of those); their names
    are `outputs` when given, else "y" for one output and "y0", "y1", ... for
    several. Names are ASCII (see _signature.check_name and op_type_problem).

    mutates_args: names of the inputs execute writes into (in place); those
    are writable in execute, every other input stays read-only. An output
    named like a mutated input is that input's buffer (an alias): execute
    binds it with get_execute_ctx().make_output_ref_input(out, in).

    dtypes: {input or output name: allowed data types} (a DataType, a name
    such as "float32", or a list of them); libpyop refuses a call whose input
    is of another type before the op runs, and an execute that asks for such
    an output; `pyop check` sweeps only those types. Unnamed ones take any."""
    _check_op_type(op_type, "register_op")

    def decorate(fn):
        if not callable(fn) or isinstance(fn, type):
            raise TypeError("register_op(%r) decorates a function, got %r" % (op_type, fn))
        file, line = _function_location(fn)
        check_sync_function(fn, op_type, "infer_meta", where(file, line))
        what = "op %r (%s)" % (op_type, where(file, line))
        inputs, outs, attrs, kinds = parse_prototype(fn, op_type, outputs, what,
                                                     with_kinds=True)
        flags, alias = resolve_mutates(mutates_args, inputs, outs, kinds, what)
        in_dtypes, out_dtypes = resolve_dtypes(dtypes, inputs, outs, what)
        key = "pyop:%s.%s" % (_module_label(getattr(fn, "__module__", None)),
                              getattr(fn, "__qualname__", getattr(fn, "__name__", "?")))
        desc = OpProto(op_type, key, file, line, inputs, outs, attrs, fn,
                       kinds if any(int(k) for k in kinds) else None, flags, alias,
                       in_dtypes, out_dtypes)
        _add(desc)
        fn.__pyop_descriptor__ = desc
        return fn

    return decorate


_samples = {}  # op_type -> (function, "file:line") of the loaded plugins


def loaded_samples():
    """{op_type: (function, "file:line")} registered with register_samples
    by the plugins loaded now (what `pyop check` uses)."""
    return dict(_samples)


def register_samples(op_type=None):
    """Decorator: a function with no arguments returning the sample cases
    `pyop check` runs op_type on before its generated sweep (inputs that
    must fit together, which the sweep cannot make).
    Each case is a dict: {"inputs": {name: value}, "attrs": {name: value},
    "label": "..." (optional)}; a tensor value is (dtype, shape, values) or
    a numpy array, a list of them for a dynamic input, None (or missing) for
    an absent optional one."""
    _check_op_type(op_type, "register_samples")

    def decorate(fn):
        if not callable(fn):
            raise TypeError("register_samples(%r) decorates a function, got %r" % (op_type, fn))
        file, line = _function_location(fn)
        check_sync_function(fn, op_type, "samples", where(file, line))
        if _active:
            _active[-1].samples[op_type] = (fn, where(file, line))
        fn.__pyop_samples__ = op_type
        return fn

    return decorate


def register_reference(op_type=None, *, rtol=1e-5, atol=1e-8):
    """Decorator: a reference implementation of op_type that `pyop check`
    (and pyop.testing.opcheck) compares execute's outputs with, elementwise
    within |got - want| <= atol + rtol * |want|. The function takes the
    inputs as numpy arrays (a list for a dynamic input, None for an absent
    optional one) and the attributes as keywords, like execute, and returns
    one array per output (a tuple of them for several, a list for a dynamic
    one). Nothing is registered with libpyop: the function only carries
    ``__pyop_reference__`` (the op type) and ``__pyop_tolerance__``."""
    _check_op_type(op_type, "register_reference")
    for name, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not value >= 0 or value == float("inf"):
            raise TypeError("register_reference(%r): %s is a finite number >= 0, got %r"
                            % (op_type, name, value))

    def decorate(fn):
        if not callable(fn):
            raise TypeError("register_reference(%r) decorates a function, got %r"
                            % (op_type, fn))
        file, line = _function_location(fn)
        check_sync_function(fn, op_type, "reference", where(file, line))
        fn.__pyop_reference__ = op_type
        fn.__pyop_tolerance__ = (float(rtol), float(atol))
        return fn

    return decorate


def register_op_impl(op_type=None, *, deterministic=True):
    """Class decorator: an implementation of op_type. Its capabilities are
    the methods it defines among execute, compile and declare_launch_args.
    The class is instantiated with no arguments once per op instance.
    deterministic=False: the same inputs may give different outputs by
    design (random numbers); `pyop check` then compares shapes, not bytes
    (``__pyop_deterministic__`` on the class)."""
    _check_op_type(op_type, "register_op_impl")
    if not isinstance(deterministic, bool):
        raise TypeError("register_op_impl(%r): deterministic is True or False, got %r"
                        % (op_type, deterministic))

    def decorate(cls):
        if not isinstance(cls, type):
            raise TypeError("register_op_impl(%r) decorates a class, got %r" % (op_type, cls))
        file, line = _class_location(cls)
        caps = 0
        methods = []
        for name, bit in IMPL_METHODS:
            if callable(getattr(cls, name, None)):
                caps |= bit
                methods.append(name)
        if not caps:
            raise TypeError("op %r (%s): class %s defines none of execute, compile, "
                            "declare_launch_args" % (op_type, where(file, line), cls.__name__))
        for m in methods:
            check_sync_method(cls, m, op_type, where(file, line))
            check_impl_method(cls, m, op_type, where(file, line))
        key = "pyop:%s.%s" % (_module_label(cls.__module__), cls.__qualname__)
        desc = OpImpl(op_type, key, file, line, cls, caps, tuple(methods))
        _add(desc)
        cls.__pyop_descriptor__ = desc
        # Every registration of the class, one per op type (the attribute
        # above keeps the last): what pyop list and check read.
        cls.__pyop_descriptors__ = cls.__dict__.get("__pyop_descriptors__", ()) + (desc,)
        cls.__pyop_deterministic__ = deterministic
        return cls

    return decorate

"""The cases `pyop check` runs an op on: the generated sweep (every data
type the op may take, empty, rank-0 and one-element tensors, attributes
other than their defaults), the op's samples (added to the sweep) or the
inputs given on the command line, and the per-thread variants of a case
for the concurrency run."""

import numbers

from .binding import DTYPES
from .errors import plural
from .values import (check_shape, _default_attr, numel, plugin_attr_value,
                     plugin_tensor_values, _sample_values, shape_text)


# The shapes every generated case is also tried with (where infer_meta
# accepts them), besides [2,3] in every data type.
SWEEP_SHAPES = (([0, 3], "empty"), ([], "rank-0"), ([1], "one element"))


class Case:
    """One set of inputs and attributes check runs an op on. kind:
    "generated" ([2,3] in the first swept data type), "sweep" (another data
    type, shape or attribute values), "samples" or "given"; infer_meta may
    refuse a generated or sweep case (it is then skipped), never a sample or
    given one. short: how the report lists it."""

    __slots__ = ("label", "inputs", "attrs", "kind", "short")

    def __init__(self, label, inputs, attrs, kind, short=None):
        self.label, self.inputs, self.attrs, self.kind = label, inputs, attrs, kind
        self.short = short or label


def sweep_dtypes(info):
    """The data types the sweep runs the op's inputs in, the first the base
    case's, as (data type, per-input names): every pyop data type, float32
    first, the same for every input. Where the prototype declares the types
    its inputs allow (list --json's "dtypes": a REG_OP's TensorType/DATATYPE
    sets, register_op(dtypes=)), only the types some input allows, an input
    that does not allow one getting the first of its own, one case per
    distinct choice (float32 first when it is one). The one place the
    sweep's data types are chosen."""
    sets = [i.get("dtypes") for i in info["inputs"]]  # None: any
    wanted = DTYPES if None in sets or not sets else [
        d for d in DTYPES if any(d in s for s in sets)]
    out = []
    for d in sorted(wanted, key=lambda d: d != "float32"):
        pick = tuple(d if s is None or d in s else s[0] for s in sets)
        if pick not in [p for _, p in out]:
            out.append((d, pick))
    return out


def _short(info, dtype, pick, shape):
    """How the report names a case of dtype: "float16[2,3]", with the inputs
    that take another type ("float16[2,3] (idx: int32)")."""
    other = ", ".join("%s: %s" % (i["name"], t) for i, t in zip(info["inputs"], pick)
                      if t != dtype)
    return shape_text(dtype, shape) + (" (%s)" % other if other else "")


def _input_counts(info):
    """Generated input sets: every optional present and absent, dynamic with 2."""
    base = []
    has_optional = False
    for i in info["inputs"]:
        if i["kind"] == "dynamic":
            base.append(2)
        elif i["kind"] == "optional":
            base.append(1)
            has_optional = True
        else:
            base.append(1)
    cases = [base]
    if has_optional:
        cases.append([0 if i["kind"] == "optional" else n
                      for i, n in zip(info["inputs"], base)])
    return cases


def _make_case(info, counts, attrs, dtype_name, shape, kind, short, seed=0):
    """dtype_name: one name for every input, or a tuple of one per input."""
    names = dtype_name if isinstance(dtype_name, tuple) else (dtype_name,) * len(counts)
    dtypes = [DTYPES.index(n) for n in names]
    inputs = [[(dtypes[k], list(shape), _sample_values(dtypes[k], numel(shape), seed + k + j))
               for j in range(n)] for k, n in enumerate(counts)]
    label = "inputs %s" % ", ".join(
        "%s=%s" % (i["name"], "absent" if n == 0 else
                   ("%d x " % n if i["kind"] == "dynamic" else "")
                   + shape_text(d, shape))
        for i, n, d in zip(info["inputs"], counts, dtypes))
    return Case(label, inputs, attrs, kind, short)


def _other_value(a):
    """A value of optional scalar attribute a other than its default (None
    for other types): the sweep's attribute case, so an op that ignores an
    attribute differs from its reference."""
    d = a["default"]
    if a["type"] == "bool":
        return not d
    if a["type"] == "int" and isinstance(d, int):
        return d + 1 if d < (1 << 62) else d - 1
    if a["type"] == "float" and isinstance(d, float):
        if abs(d) < float("inf") and (d * 2 + 0.5 == d or abs(d * 2 + 0.5) == float("inf")):
            # -0.5 is its own double plus 0.5; past half the largest double
            # that is infinite: half the default there
            return d / 2
        return 0.5 if d != d or abs(d) == float("inf") else d * 2 + 0.5
    return None


def _attr_case(info, attrs, base, pick):
    """The base case (data type base, per-input pick) with every optional
    int, float and bool attribute at a value other than its default, or
    None when the op has none."""
    other = {a["name"]: _other_value(a) for a in info["attrs"] if not a["required"]}
    other = {k: v for k, v in other.items() if v is not None}
    if not other:
        return None
    counts = _input_counts(info)[0]
    text = ", ".join("%s=%s" % (k, ("%g" % v) if isinstance(v, float) else str(v).lower()
                                if isinstance(v, bool) else v) for k, v in other.items())
    case = _make_case(info, counts, dict(attrs, **other), pick, [2, 3], "sweep",
                      "%s (attrs %s)" % (_short(info, base, pick, [2, 3]), text))
    case.label += "; attrs %s" % text
    return case


def generated_cases(info, sweep=True):
    """The generated cases: [2,3] in the first swept data type (sweep_dtypes:
    float32, unless the inputs' declared data types exclude it) everywhere
    (each optional input present and absent), then (sweep) that shape in
    every other swept data type, the base data type in the SWEEP_SHAPES and
    with the optional scalar attributes off their defaults, the optional
    inputs present. Required attributes get a sample value."""
    attrs = {a["name"]: _default_attr(a) for a in info["attrs"] if a["required"]}
    all_counts = _input_counts(info)
    dtypes = sweep_dtypes(info)
    base, pick = dtypes[0]
    out = []
    for n, counts in enumerate(all_counts):
        short = "%s%s" % (_short(info, base, pick, [2, 3]),
                          " (optional inputs absent)" if n else "")
        out.append(_make_case(info, counts, attrs, pick, [2, 3], "generated", short))
    if not sweep:
        return out
    if info["inputs"]:
        for name, other in dtypes[1:]:
            out.append(_make_case(info, all_counts[0], attrs, other, [2, 3], "sweep",
                                  _short(info, name, other, [2, 3])))
        for shape, what in SWEEP_SHAPES:
            out.append(_make_case(info, all_counts[0], attrs, pick, shape, "sweep",
                                  "%s (%s)" % (_short(info, base, pick, shape), what)))
    case = _attr_case(info, attrs, base, pick)
    if case is not None:
        out.append(case)
    return out


def _sample_tensor(v, what):
    """A sample input value -> (dtype, shape, values): (dtype, shape, values)
    with a DataType or a name, or anything with .dtype/.shape/.tolist() (a
    numpy array)."""
    if isinstance(v, (tuple, list)) and len(v) == 3:
        dtype, shape, values = v
        name = getattr(dtype, "name", dtype)
        if name not in DTYPES:
            raise ValueError("%s: unknown data type %r" % (what, dtype))
        shape = _sample_shape(shape, what)
        check_shape(DTYPES.index(name), shape, what)
        values = list(values)
        if len(values) != numel(shape):
            raise ValueError("%s: %s for shape [%s]"
                             % (what, plural(len(values), "value"), ",".join(map(str, shape))))
        return DTYPES.index(name), shape, plugin_tensor_values(DTYPES.index(name), values,
                                                               what)
    if hasattr(v, "dtype") and hasattr(v, "shape") and hasattr(v, "tolist"):
        name = str(v.dtype)
        if name not in DTYPES:
            raise ValueError("%s: numpy dtype %s has no pyop equivalent" % (what, name))
        shape = _sample_shape(v.shape, what)
        check_shape(DTYPES.index(name), shape, what)
        flat = v.reshape(-1).tolist() if hasattr(v, "reshape") else list(v.tolist())
        return DTYPES.index(name), shape, plugin_tensor_values(DTYPES.index(name), flat, what)
    raise ValueError("%s: expected (dtype, shape, values) or a numpy array, got %r"
                     % (what, type(v).__name__))


def _sample_shape(shape, what):
    """A sample's shape as --input's is read: a sequence of integers (2.5 or
    True is no dim); check_shape then checks the count and the range."""
    if not isinstance(shape, (list, tuple)) and not hasattr(shape, "__len__"):
        raise ValueError("%s: shape %r is not a list of dims" % (what, shape))
    dims = list(shape)
    bad = [d for d in dims if not isinstance(d, numbers.Integral) or isinstance(d, bool)]
    if bad:
        raise ValueError("%s: dim %r is not an integer" % (what, bad[0]))
    return [int(d) for d in dims]


def sample_cases(info, fn, where):
    """The Cases a plugin registered with pyop.register_samples: each a dict
    {"inputs": {name: value}, "attrs": {name: value}} (a value is (dtype,
    shape, values) or a numpy array; a list of them for a dynamic input;
    None or missing for an absent optional one); "label" optional.
    ValueError naming the sample when one is wrong."""
    cases = fn()
    if not isinstance(cases, (list, tuple)) or not cases:
        raise ValueError("samples of %s (%s) must be a non-empty list of cases"
                         % (info["op_type"], where))
    out = []
    names = [i["name"] for i in info["inputs"]]
    for n, case in enumerate(cases):
        what = "sample %d of %s (%s)" % (n, info["op_type"], where)
        if not isinstance(case, dict):
            raise ValueError("%s: a case is a dict with 'inputs' and 'attrs'" % what)
        given = dict(case.get("inputs") or {})
        for name in given:
            if name not in names:
                raise ValueError("%s: %r is not an input (inputs: %s)" % (what, name, names))
        inputs = []
        for i in info["inputs"]:
            v = given.get(i["name"])
            if v is None:
                if i["kind"] == "required":
                    raise ValueError("%s: required input %r missing" % (what, i["name"]))
                inputs.append([])
            elif i["kind"] == "dynamic":
                inputs.append([_sample_tensor(x, "%s input %s" % (what, i["name"])) for x in v])
            else:
                inputs.append([_sample_tensor(v, "%s input %s" % (what, i["name"]))])
        out.append(Case(case.get("label") or "sample %d" % n, inputs,
                        _sample_attrs(info, case, what), "samples"))
    return out


def _sample_attrs(info, case, what):
    attrs = {}
    types = {a["name"]: a["type"] for a in info["attrs"]}
    for name, value in dict(case.get("attrs") or {}).items():
        if name not in types:
            raise ValueError("%s: %r is not an attribute" % (what, name))
        if types[name] == "Tensor":
            attrs[name] = _sample_tensor(value, "%s attr %s" % (what, name))
            continue
        try:
            attrs[name] = plugin_attr_value(value, types[name])
        except ValueError as e:
            raise ValueError("%s: attr %s (%s): %s" % (what, name, types[name], e)) from None
    return attrs


def thread_inputs(case, t):
    """The inputs thread t of the concurrency run gives case: thread 0 the
    case's own; another thread other values of the same descriptions
    (derived from the case, so each thread's result is its own): generated
    values from another seed for a generated or sweep case, the case's
    values rotated by t places for samples and given inputs (a tensor whose
    rotation changes nothing -- one element, all equal -- gets generated
    values instead)."""
    if t == 0:
        return case.inputs
    out = []
    for k, slot in enumerate(case.inputs):
        row = []
        for j, (d, s, values) in enumerate(slot):
            n = numel(s)
            fresh = _sample_values(d, n, 3 * t + k + j)
            if case.kind in ("samples", "given") and n:
                turned = list(values[t % n:]) + list(values[:t % n])
                row.append((d, s, turned if turned != list(values) else fresh))
            else:
                row.append((d, s, fresh))
        out.append(row)
    return out

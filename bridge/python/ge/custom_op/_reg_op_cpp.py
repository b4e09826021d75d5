"""The C++ REG_OP reader of host_proto.read: a header as GE's samples and
op-proto libraries write it, read without a compiler.

    #include "graph/operator_reg.h"
    namespace ge {
    REG_OP(AddCustom)                       // one or more per file
        .INPUT(x1, TensorType({DT_FLOAT, DT_FLOAT16}))
        .INPUT(x2, "T") .OUTPUT(y, "T")
        .DATATYPE(T, TensorType::ALL())
        .ATTR(axes, ListInt, {0, 1})
        .OP_END_FACTORY_REG(AddCustom);
    }

A small tokenizer (comments, line continuations, string and number
literals, preprocessor lines) and a recursive reader of each REG_OP chain;
everything else of the file is skipped. Preprocessor: every directive is
skipped; `#if 0` (and `#elif 0`) blocks are not read, every other
condition is taken as true (include guards, `#ifdef __cplusplus`). What the
reader cannot read is a ReadError naming the line and what it expected;
what it reads but libpyop has no form for makes that REG_OP unusable
(host_proto.Proto)."""

import math
import re
import sys

from pyop.ext import IoKind

from ..graph.types import DataType
from .host_proto import (FLT_MAX, NAMED_SETS, NO_FORM_TYPES, Promote, Proto, ListTensorType,
                         ReadError, TensorType, check_op_type_at)

__all__ = ["read", "tokenize"]


class Tok:
    """kind: "id", "num", "str", "char", "punct" or "eof"; text as
    written; value: a number's or string's value; line: 1-based."""

    __slots__ = ("kind", "text", "value", "line")

    def __init__(self, kind, text, line, value=None):
        self.kind, self.text, self.line, self.value = kind, text, line, value

    def __repr__(self):
        return "end of file" if self.kind == "eof" else repr(self.text)


_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A preprocessing number (one token however malformed: 1.2.3, 0x) and the
# literals it may be.
_PPNUM = re.compile(r"\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.']|)*")
_NUM = re.compile(r"(?:0[xX][0-9a-fA-F']+|0[bB][01']+|(?:[0-9][0-9']*\.?[0-9']*|\.[0-9][0-9']*)"
                  r"(?:[eE][+-]?[0-9]+)?)[uUlLfF]*")
_PUNCT2 = ("::", "->", "<<", ">>", "==", "!=", "<=", ">=", "&&", "||", "++", "--")
_ESC = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"',
        "a": "\a", "b": "\b", "f": "\f", "v": "\v", "?": "?"}


def _number(text, line):
    """The value of a C++ number literal (int or float; ReadError when it
    is malformed)."""
    t = text.replace("'", "")
    hexa = t[:2] in ("0x", "0X")
    body = t.rstrip("uUlL" if hexa else "uUlLfF")
    suffix = t[len(body):]
    try:
        if hexa:
            return int(body, 16)
        if body[:2] in ("0b", "0B"):
            return int(body, 2)
        if "." in body or "e" in body or "E" in body or "f" in suffix.lower():
            return float(body)
        if len(body) > 1 and body[0] == "0":
            return int(body, 8)
        return int(body)
    except ValueError:
        raise ReadError("%r is not a number literal" % text, line) from None


class _Lexer:
    """Turns src into tokens, line by line (see the module's doc)."""

    def __init__(self, src):
        self.src, self.i, self.line = src, 0, 1
        self.line_start = True
        self.conds = []  # [reading, taken, line] per open #if
        self.toks = []

    def reading(self):
        return all(c[0] for c in self.conds)

    def run(self):
        src = self.src
        while self.i < len(src):
            c = src[self.i]
            if c == "\\" and src.startswith(("\\\n", "\\\r\n"), self.i):
                self.i += 2 if src[self.i + 1] == "\n" else 3
                self.line += 1
            elif c == "\n":
                self.i += 1
                self.line += 1
                self.line_start = True
            elif c in " \t\r\f\v":
                self.i += 1
            elif src.startswith("//", self.i):
                self._line_comment()
            elif src.startswith("/*", self.i):
                self._block_comment()
            elif c == "#" and self.line_start:
                self._directive()
            else:
                self.line_start = False
                self._token()
        if self.conds:
            raise ReadError("#if at line %d has no #endif" % self.conds[-1][2], self.line)
        self.toks.append(Tok("eof", "", self.line))
        return self.toks

    def _line_comment(self):
        src = self.src
        while self.i < len(src) and src[self.i] != "\n":
            if src.startswith(("\\\n", "\\\r\n"), self.i):  # continues on the next line
                self.i += 2 if src[self.i + 1] == "\n" else 3
                self.line += 1
                continue
            self.i += 1

    def _block_comment(self):
        end = self.src.find("*/", self.i + 2)
        if end < 0:
            raise ReadError("a /* comment is not closed (expected */ before the end of the "
                            "file)", self.line)
        self.line += self.src.count("\n", self.i, end)
        self.i = end + 2

    def _logical_line(self):
        """The rest of a directive's line (continuations joined, comments
        dropped), consumed."""
        out = []
        src = self.src
        while self.i < len(src) and src[self.i] != "\n":
            if src.startswith(("\\\n", "\\\r\n"), self.i):
                self.i += 2 if src[self.i + 1] == "\n" else 3
                self.line += 1
            elif src.startswith("//", self.i):
                self._line_comment()
            elif src.startswith("/*", self.i):
                self._block_comment()
                out.append(" ")
            else:
                out.append(src[self.i])
                self.i += 1
        return "".join(out)

    def _directive(self):
        line = self.line
        self.i += 1
        text = self._logical_line().strip()
        m = re.match(r"([A-Za-z_]*)\s*(.*)", text)
        name, arg = m.group(1), m.group(2).strip()
        zero = arg in ("0", "false", "(0)")
        if name in ("if", "ifdef", "ifndef"):
            taking = not (name == "if" and zero)
            self.conds.append([taking, taking, line])
        elif name in ("elif", "else"):
            if not self.conds:
                raise ReadError("#%s without #if" % name, line)
            c = self.conds[-1]
            c[0] = not c[1] and not (name == "elif" and zero)
            c[1] = c[1] or c[0]
        elif name == "endif":
            if not self.conds:
                raise ReadError("#endif without #if", line)
            self.conds.pop()
        # every other directive (#include, #define, #pragma ...) is skipped

    def _token(self):
        src, i, line = self.src, self.i, self.line
        reading = self.reading()
        m = re.compile(r'(?:u8|[uUL])?R"([^()\\ ]{0,16})\(').match(src, i)
        if m:  # a raw string: R"delim( ... )delim"
            end = src.find(")" + m.group(1) + '"', m.end())
            if end < 0:
                if reading:
                    raise ReadError("a raw string literal is not closed", line)
                end = len(src)
            self._add("str", src[i:end + len(m.group(1)) + 2], line, src[m.end():end])
            self.line += src.count("\n", i, end)
            self.i = end + len(m.group(1)) + 2
            return
        m = re.compile(r'(?:u8|[uUL])?(["\'])').match(src, i)
        if m:
            self._quoted(m.end() - 1, m.group(1), reading)
            return
        m = _ID.match(src, i) if not src[i].isdigit() else None
        if m:
            self._add("id", m.group(0), line)
            self.i = m.end()
            return
        m = _PPNUM.match(src, i)
        if m:
            text = m.group(0)
            self.i = m.end()
            if reading:
                if not _NUM.fullmatch(text):
                    raise ReadError("%r is not a number literal" % text, line)
                self._add("num", text, line, _number(text, line))
            return
        two = src[i:i + 2]
        text = two if two in _PUNCT2 else src[i]
        self._add("punct", text, line)
        self.i = i + len(text)

    def _quoted(self, start, quote, reading):
        """A string or char literal from its opening quote at start."""
        src, line = self.src, self.line
        out = []
        k = start + 1
        while True:
            if k >= len(src) or src[k] == "\n":
                if not reading:  # an apostrophe in a skipped block: not a literal
                    self.i = start + 1
                    return
                raise ReadError("a %s literal is not closed on its line (expected %s)"
                                % ("string" if quote == '"' else "character", quote), line)
            ch = src[k]
            if ch == quote:
                break
            if ch == "\\":
                try:
                    k, value = self._escape(k, line)
                except ReadError:
                    if reading:
                        raise
                    k, value = k + 2, ""  # a skipped block: any text
                out.append(value)
                continue
            out.append(ch)
            k += 1
        self._add("str" if quote == '"' else "char", src[start - 0:k + 1], line, "".join(out))
        self.i = k + 1

    def _escape(self, k, line):
        """(index after the escape at k, its character)."""
        src = self.src
        nxt = src[k + 1:k + 2]
        if nxt == "x":
            m = re.compile(r"[0-9a-fA-F]+").match(src, k + 2)
            if not m:
                raise ReadError("\\x escape without hex digits", line)
            return m.end(), chr(int(m.group(0), 16) & 0x10FFFF)
        if nxt and nxt in "01234567":
            m = re.compile(r"[0-7]{1,3}").match(src, k + 1)
            return m.end(), chr(int(m.group(0), 8))
        if nxt in ("u", "U"):
            n = 4 if nxt == "u" else 8
            digits = src[k + 2:k + 2 + n]
            if not re.fullmatch(r"[0-9a-fA-F]{%d}" % n, digits):
                raise ReadError("\\%s escape needs %d hex digits" % (nxt, n), line)
            return k + 2 + n, chr(min(int(digits, 16), 0x10FFFF))
        if nxt in _ESC:
            return k + 2, _ESC[nxt]
        raise ReadError("unknown escape \\%s in a literal" % (nxt or "(end of line)"), line)

    def _add(self, kind, text, line, value=None):
        if self.reading():
            self.toks.append(Tok(kind, text, line, value))


def tokenize(src):
    """The tokens of src (a list ending with an "eof" token)."""
    return _Lexer(src).run()


# ------------------------------------------------------------ the reader

_IOS = {"INPUT": (False, IoKind.REQUIRED), "OPTIONAL_INPUT": (False, IoKind.OPTIONAL),
        "DYNAMIC_INPUT": (False, IoKind.DYNAMIC), "OUTPUT": (True, IoKind.REQUIRED),
        "DYNAMIC_OUTPUT": (True, IoKind.DYNAMIC)}
_ITEMS = ("INPUT", "OPTIONAL_INPUT", "DYNAMIC_INPUT", "OUTPUT", "DYNAMIC_OUTPUT", "ATTR",
          "REQUIRED_ATTR", "DATATYPE", "GRAPH", "DYNAMIC_GRAPH", "OP_END_FACTORY_REG")

# Named constants a default may use (GE's graph/types.h).
_CONSTANTS = {"UNKNOWN_SHAPE": [-1], "UNKNOWN_RANK": [-2], "UNKNOWN_DIM": -1,
              "UNKNOWN_DIM_NUM": -2, "INFINITY": math.inf, "NAN": math.nan,
              "HUGE_VALF": math.inf, "HUGE_VAL": math.inf, "FLT_MAX": FLT_MAX,
              "FLT_MIN": 1.1754943508222875e-38, "true": True, "false": False,
              "INT64_MAX": (1 << 63) - 1, "INT64_MIN": -(1 << 63), "INT32_MAX": (1 << 31) - 1,
              "INT32_MIN": -(1 << 31)}
_LIMITS = {"infinity": math.inf, "quiet_NaN": math.nan, "max": FLT_MAX, "lowest": -FLT_MAX}


class _NotLiteral(Exception):
    """A default the reader can parse but not evaluate (a variable, a call)."""


class _Reader:
    def __init__(self, path, toks):
        self.path, self.toks, self.k = path, toks, 0

    # -------- tokens

    def peek(self, n=0):
        return self.toks[min(self.k + n, len(self.toks) - 1)]

    def take(self):
        t = self.peek()
        if t.kind != "eof":
            self.k += 1
        return t

    def is_(self, text, n=0):
        t = self.peek(n)
        return t.kind in ("punct", "id") and t.text == text

    def expect(self, text, after):
        t = self.peek()
        if not self.is_(text):
            raise ReadError("expected %r %s, got %r" % (text, after, t), t.line)
        return self.take()

    def ident(self, what, after):
        t = self.peek()
        if t.kind != "id":
            hint = ""
            if t.kind == "str":
                hint = (" (a quoted name is the Python form, REG_OP(\"Name\")..., read from "
                        "files whose name does not end in .h/.hpp/...; in a C++ header names "
                        "are written bare: REG_OP(AddCustom))")
            raise ReadError("expected %s %s, got %r%s" % (what, after, t, hint), t.line)
        return self.take()

    def scoped(self):
        """An identifier with optional ge:: / DataType:: / std:: scopes: the
        last name and the full text."""
        parts = [self.ident("a name", "here").text]
        while self.is_("::") and self.peek(1).kind == "id":
            self.take()
            parts.append(self.take().text)
        return parts[-1], "::".join(parts)

    # -------- the file

    def read(self):
        found = []
        while self.peek().kind != "eof":
            if self.is_("REG_OP") and self.is_("(", 1) and self.peek().kind == "id":
                found.append(self.reg_op())
            else:
                self.take()
        return found

    def reg_op(self):
        start = self.take()
        self.expect("(", "after REG_OP")
        name = self.ident("the op type", "in REG_OP(...)")
        self.expect(")", "after REG_OP(%s" % name.text)
        check_op_type_at(name.text, name.line)
        p = Proto(name.text, start.line, lenient=True)
        while True:
            t = self.peek()
            if t.kind == "eof":
                raise ReadError("REG_OP(%s) (line %d) never ends: expected "
                                ".OP_END_FACTORY_REG(%s)" % (name.text, start.line, name.text),
                                t.line)
            self.expect(".", "and the next item of REG_OP(%s) (.INPUT(...), .ATTR(...), ..., "
                        ".OP_END_FACTORY_REG(%s))" % (name.text, name.text))
            item = self.ident("an item of REG_OP(%s)" % name.text, "after '.'")
            if item.text == "OP_END_FACTORY_REG":
                self.end(name)
                p.finish()
                return p
            self.item(p, item)

    def end(self, name):
        self.expect("(", "after OP_END_FACTORY_REG")
        e = self.ident("the op type", "in OP_END_FACTORY_REG(...)")
        if e.text != name.text:
            raise ReadError("OP_END_FACTORY_REG(%s) ends REG_OP(%s) (line %d): the names must "
                            "be the same" % (e.text, name.text, name.line), e.line)
        self.expect(")", "after OP_END_FACTORY_REG(%s" % e.text)
        if self.is_(";"):
            self.take()

    def item(self, p, item):
        what = ".%s(" % item.text
        if item.text in ("GRAPH", "DYNAMIC_GRAPH"):
            self.expect("(", "after ." + item.text)
            g = self.ident("the subgraph's name", "in " + what + "...)")
            self.expect(")", "after %s%s" % (what, g.text))
            p._no_form(item.line, "subgraph .%s(%s) has no pyop form" % (item.text, g.text))
        elif item.text == "INFER_SHAPE_AND_TYPE":
            self.expect("(", "after .INFER_SHAPE_AND_TYPE")
            self.expect(")", "after .INFER_SHAPE_AND_TYPE(")
        elif item.text in _IOS:
            output, kind = _IOS[item.text]
            self.expect("(", "after ." + item.text)
            n = self.ident("the %s name" % ("output" if output else "input"), "in " + what)
            self.expect(",", "after %s%s (then its type: TensorType(...) or \"T\")"
                        % (what, n.text))
            types = self.io_type("in %s%s, ...)" % (what, n.text))
            self.expect(")", "after the type of %s%s, ..." % (what, n.text))
            p.io(output, n.text, kind, types, n.line)
        elif item.text == "DATATYPE":
            self.expect("(", "after .DATATYPE")
            sym = self.ident("the type name", "in .DATATYPE(")
            self.expect(",", "after .DATATYPE(%s (then its TensorType(...))" % sym.text)
            types = self.datatype_arg(sym.text)
            self.expect(")", "after the types of .DATATYPE(%s, ..." % sym.text)
            p.datatype(sym.text, types, sym.line)
        elif item.text in ("ATTR", "REQUIRED_ATTR"):
            self.attr(p, item)
        else:
            raise ReadError("unknown REG_OP item .%s (expected one of %s)"
                            % (item.text, ", ".join(_ITEMS)), item.line)

    def attr(self, p, item):
        required = item.text == "REQUIRED_ATTR"
        what = ".%s(" % item.text
        self.expect("(", "after ." + item.text)
        n = self.ident("the attribute name", "in " + what)
        self.expect(",", "after %s%s (then its type: Int, Float, ListInt, ...)" % (what, n.text))
        at = self.ident("the attribute type", "in %s%s, ...)" % (what, n.text))
        if required:
            self.expect(")", "after %s%s, %s" % (what, n.text, at.text))
            p.attr(n.text, at.text, True, None, n.line)
            return
        self.expect(",", "after .ATTR(%s, %s (then its default value)" % (n.text, at.text))
        first = self.peek()
        toks = self.balanced(".ATTR(%s, %s, ..." % (n.text, at.text))
        if not toks:
            raise ReadError("expected the default value of .ATTR(%s, %s, ...), got ')'"
                            % (n.text, at.text), first.line)
        if at.text == "Tensor" or at.text in NO_FORM_TYPES:  # Proto says why, whatever the value
            p.attr(n.text, at.text, False, None, first.line)
            return
        try:
            value = _Value(toks).whole()
        except _NotLiteral as e:
            p._no_form(first.line, "attribute %r: default %s is not a literal libpyop can read"
                       % (n.text, e))
            return
        p.attr(n.text, at.text, False, value, first.line)

    def balanced(self, what):
        """The tokens up to the ')' closing the current item (consumed),
        brackets balanced."""
        depth, out = [], []
        while True:
            t = self.peek()
            if t.kind == "eof":
                raise ReadError("expected ')' to close %s, got the end of the file" % what, t.line)
            if t.kind == "punct" and t.text in "({[":
                depth.append({"(": ")", "{": "}", "[": "]"}[t.text])
            elif t.kind == "punct" and t.text in ")}]":
                if not depth:
                    if t.text != ")":
                        raise ReadError("expected ')' to close %s, got %r" % (what, t), t.line)
                    self.take()
                    return out
                if depth.pop() != t.text:
                    raise ReadError("unbalanced %r in %s" % (t.text, what), t.line)
            out.append(self.take())

    # -------- data types

    def io_type(self, where):
        t = self.peek()
        if t.kind == "str":
            self.take()
            while self.peek().kind == "str":  # "T" "1": adjacent literals
                t = Tok("str", t.text, t.line, t.value + self.take().value)
            return t.value
        name, _ = self.peek_scoped()
        if name == "TensorType" or name in NAMED_SETS and self.is_("::", 1):
            return self.tensor_type(where)
        if t.kind == "id":  # GE only stringifies the type: a bare DT_INT32 or BasicType()
            return TensorType(self.type_elem(where))
        raise ReadError("expected the type %s: TensorType(...), TensorType::ALL() or a type "
                        "name \"T\" declared with .DATATYPE(T, ...), got %r" % (where, t), t.line)

    def datatype_arg(self, sym):
        where = "in .DATATYPE(%s, ...)" % sym
        name, _ = self.peek_scoped()
        if name == "ListTensorType":
            self.scoped()
            self.expect("(", "after ListTensorType")
            tt = self.tensor_type(where)
            self.expect(")", "after ListTensorType(TensorType(...)")
            return ListTensorType(tt)
        if name == "Promote":
            self.scoped()
            self.expect("(", "after Promote")
            self.expect("{", "after Promote( (the type names: {\"T1\", \"T2\"})")
            syms = []
            while not self.is_("}"):
                s = self.peek()
                if s.kind != "str":
                    raise ReadError("expected a type name \"T1\" in Promote({...}), got %r"
                                    % (s,), s.line)
                syms.append(self.take().value)
                if not self.is_("}"):
                    self.expect(",", "between the type names of Promote({...})")
            self.take()
            self.expect(")", "after Promote({...}")
            return Promote(syms)
        return self.tensor_type(where)

    def peek_scoped(self):
        k = self.k
        try:
            return self.scoped() if self.peek().kind == "id" else (None, None)
        finally:
            self.k = k

    def tensor_type(self, where):
        """TensorType::NAME(), TensorType(DT_X), TensorType({...}),
        TensorType{...} (ge:: allowed)."""
        t = self.peek()
        name, full = self.peek_scoped()
        if name in NAMED_SETS and full.split("::")[-2:-1] == ["TensorType"]:
            self.scoped()
            self.expect("(", "after %s" % full)
            self.expect(")", "after %s(" % full)
            return TensorType(NAMED_SETS[name])
        if name != "TensorType":
            raise ReadError("expected a TensorType %s (TensorType({DT_FLOAT, ...}), "
                            "TensorType(DT_FLOAT) or TensorType::ALL()), got %r" % (where, t),
                            t.line)
        self.scoped()
        if self.is_("{"):
            return TensorType(self.type_list("TensorType{...}"))
        self.expect("(", "after TensorType (or '{' or '::')")
        if self.is_("{"):
            types = self.type_list("TensorType({...})")
        else:
            types = self.type_elem("TensorType(...)")
        self.expect(")", "after the types of TensorType(...")
        return TensorType(types)

    def type_list(self, what):
        self.expect("{", "to open %s" % what)
        out = set()
        while not self.is_("}"):
            out |= self.type_elem(what)
            if not self.is_("}"):
                self.expect(",", "between the data types of %s" % what)
        self.take()
        return out

    def type_elem(self, what):
        """A DT_x, a named set (BasicType(), TensorType::ALL(), UnaryDataType)
        or a parenthesised element: a set of GE DataTypes."""
        t = self.peek()
        if self.is_("("):
            self.take()
            out = self.type_elem(what)
            while self.is_(","):
                self.take()
                out |= self.type_elem(what)
            self.expect(")", "in %s" % what)
            return out
        if t.kind != "id":
            raise ReadError("expected a data type (DT_FLOAT, ...) in %s, got %r" % (what, t),
                            t.line)
        name, full = self.scoped()
        if name in NAMED_SETS:
            if self.is_("("):
                self.take()
                self.expect(")", "after %s(" % full)
            return set(NAMED_SETS[name])
        if name.startswith("DT_") and name in DataType.__members__ and name != "DT_MAX":
            return {DataType[name]}
        raise ReadError("%r is not a GE data type (DT_FLOAT, DT_INT32, ...) nor a named set "
                        "(%s) in %s" % (full, ", ".join(sorted(NAMED_SETS)), what), t.line)


class _Value:
    """Evaluates the tokens of an ATTR default: numbers (with a sign),
    strings (adjacent ones joined), true/false, DT_x (a GE DataType), {...}
    lists, GE's and <cmath>/<cfloat> named constants,
    std::numeric_limits<float>::infinity() and its kin. Anything else is
    _NotLiteral."""

    def __init__(self, toks):
        self.toks, self.k = toks, 0

    def peek(self):
        return self.toks[self.k] if self.k < len(self.toks) else None

    def take(self):
        t = self.peek()
        self.k += 1
        return t

    def text(self):
        return " ".join(t.text for t in self.toks)

    def whole(self):
        v = self.value()
        if self.peek() is not None:
            raise _NotLiteral("`%s`" % self.text())
        return v

    def value(self):
        t = self.peek()
        if t is None:
            raise _NotLiteral("`%s`" % self.text())
        if t.kind == "punct" and t.text in "+-":
            self.take()
            v = self.value()
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise _NotLiteral("`%s`" % self.text())
            return -v if t.text == "-" else v
        if t.kind == "num":
            return self.take().value
        if t.kind == "str":
            s = self.take().value
            while self.peek() is not None and self.peek().kind == "str":
                s += self.take().value
            return s
        if t.kind == "punct" and t.text == "{":
            self.take()
            out = []
            while not (self.peek() is not None and self.peek().text == "}"):
                out.append(self.value())
                if self.peek() is not None and self.peek().text == ",":
                    self.take()
                elif not (self.peek() is not None and self.peek().text == "}"):
                    raise _NotLiteral("`%s`" % self.text())
            self.take()
            return out
        if t.kind == "id":
            return self.named()
        raise _NotLiteral("`%s`" % self.text())

    def named(self):
        parts = [self.take().text]
        while self.peek() is not None and self.peek().text in ("::", "<", ">"):
            sep = self.take().text
            nxt = self.take()
            if nxt is None:
                raise _NotLiteral("`%s`" % self.text())
            if sep == "<":  # numeric_limits<float>
                parts[-1] += "<%s>" % nxt.text
                if self.take() is None:  # the '>'
                    raise _NotLiteral("`%s`" % self.text())
                continue
            parts.append(nxt.text)
        name = parts[-1]
        if len(parts) >= 2 and parts[-2].startswith("numeric_limits<"):
            if self.peek() is None or self.take().text != "(" or \
                    self.peek() is None or self.take().text != ")":
                raise _NotLiteral("`%s`" % self.text())
            kind = parts[-2][len("numeric_limits<"):-1]
            if name in _LIMITS and kind == "float":
                return _LIMITS[name]
            if name in _LIMITS and kind == "double":
                big = sys.float_info.max
                return {"max": big, "lowest": -big}.get(name, _LIMITS[name])
            raise _NotLiteral("`%s`" % self.text())
        if name.startswith("DT_") and name in DataType.__members__ and name != "DT_MAX":
            return DataType[name]
        if name in _CONSTANTS:
            return _CONSTANTS[name]
        raise _NotLiteral("`%s`" % self.text())


def read(path, src):
    """The REG_OPs of the C++ header src (host_proto.Proto, lenient), in
    order. ReadError naming the line and what was expected."""
    return _Reader(path, tokenize(src)).read()

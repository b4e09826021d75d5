"""The command line: argument parsing, PYOP_PYTHON, dispatch to the
subcommands, the one-line failure report."""

import argparse
import os
import shutil
import sys

from . import config, output, supervise
from .bench import cmd_bench
from .binding import _find_library, Lib
from .check import cmd_check
from .check_supervise import DEFAULT_CASE_TIMEOUT
from .doctor import cmd_doctor
from .errors import CliError, UsageError
from .host import end_now, _same_file, stray_threads
from .list import cmd_list
from .proto import note_unused, register_protos
from .run import cmd_run
from .supervise import DEFAULT_TIMEOUT
from .values import dump_json, INT64_MAX


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (so --json can report it) instead of
    exiting."""

    def error(self, message):
        raise UsageError("%s (see %s --help)" % (message, self.prog))

    def _print_message(self, message, file=None):
        # --help is the command's result: stdout (output.py), not stderr.
        if message and (file is None or file is sys.stdout):
            output.write(message)
        elif message:
            file.write(message)


def _count(least):
    """An argparse type: an integer >= least (and at most INT64_MAX)."""

    def parse(text):
        try:
            value = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError("%r is not an integer" % text) from None
        if not least <= value <= INT64_MAX:
            raise argparse.ArgumentTypeError("%d is not an integer >= %d" % (value, least))
        return value

    return parse


def _seconds(text):
    """An argparse type: a time limit in seconds, a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number of seconds" % text) from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError("%s is not a number of seconds > 0" % text)
    return value


def _supervised(p):
    """run's and bench's options of the worker they run the op in (supervise.py)."""
    p.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help="the time one step (the load, one call of the op) may take before "
                        "it counts as hung and the command fails (default %g)" % DEFAULT_TIMEOUT)
    p.add_argument("--_worker", type=int, help=argparse.SUPPRESS)  # supervise.become_worker


def run_under_requested_python(argv):
    """PYOP_PYTHON=/path/to/python: runs this command under that Python
    instead (once; a no-op when it already is that Python)."""
    want = os.environ.get("PYOP_PYTHON")
    if not want or os.environ.get("PYOP__REEXECUTED") == want:
        return
    exe = shutil.which(want) if os.sep not in want else want
    if not exe or not os.path.isfile(exe):
        raise UsageError("PYOP_PYTHON=%s: no such Python" % want)
    if _same_file(exe, sys.executable):
        return
    os.environ["PYOP__REEXECUTED"] = want
    output.release()
    os.execv(exe, [exe, os.path.abspath(config.SCRIPT)] + list(argv))


def _compile_option(p):
    p.add_argument("--compile-option", action="append", metavar="KEY=VALUE",
                   help="a compile option the op's compile reads, as a GE host gives it "
                        "(ge.custom_op.context.set_compile_options; OpCompileContext."
                        "get_option); compile runs before execute and the launch")


def _register_protos(lib, files, command, notes):
    """register_protos, with a --proto file that calls exit() (SystemExit,
    which the reader does not take for the file's error) refused naming
    the file and the line, as any other error of the file is."""
    try:
        return register_protos(lib, files, command, notes)
    except SystemExit as e:
        tb = e.__traceback__
        where = None
        while tb is not None:
            if any(os.path.abspath(f) == tb.tb_frame.f_code.co_filename for f in files or ()):
                where = "%s:%d" % (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
            tb = tb.tb_next
        raise CliError("--proto %s: the file called exit(%s) while it was read%s; a --proto "
                       "file only declares REG_OPs" % (
                           where.rsplit(":", 1)[0] if where else " ".join(files or ()),
                           "" if e.code is None else repr(e.code),
                           " (%s)" % where if where else ""), "PYOP_EDESCRIPTOR") from None


def leave_plugin_threads(command, code):
    """A plugin may start a thread and leave it running: a Python process
    waits for such a (non-daemon) thread at exit, a C host's pyop_shutdown
    never does. The command does not either: it says so on stderr and ends
    with its own status, its output flushed. A worker of run or bench
    (supervise.py) ends here, saying its status to the command."""
    left = stray_threads()
    if not left:
        supervise.worker_done(code)
        return
    sys.stderr.write("pyop: %swarning: a plugin left %s running (%s); the command does not "
                     "wait for %s, as a C host's pyop_shutdown does not\n"
                     % ("%s: " % command if command else "",
                        "a thread" if len(left) == 1 else "%d threads" % len(left),
                        ", ".join(t.name for t in left), "it" if len(left) == 1 else "them"))
    supervise.worker_done(code)
    end_now(code)


def report_failure(command, err, as_json):
    """One message on stderr (and the error object on stdout with --json)."""
    where = "pyop: %s: " % command if command else "pyop: "
    lines = err.message.splitlines() or [""]
    sys.stderr.write(where + lines[0] + "\n")
    for line in lines[1:]:
        sys.stderr.write(line + "\n")
    if as_json and not getattr(err, "result_said", False):
        dump_json({"error": err.to_json()})
    return err.exit_code


# The help of --json, --input and --attr (run, check, bench).
JSON_HELP = ("print the result as JSON (a stable schema: README.md, \"The pyop command\"); "
             "a failure as {\"error\": ...}")
INPUT_HELP = ("one tensor of input NAME, e.g. x=float32[2,3]:1,2,3,4,5,6 (data types as "
              "numpy names them; without :VALUES sample values are generated and printed); "
              "once per tensor: several times for a dynamic input, not at all for an "
              "absent optional one")
ATTR_HELP = ("attribute NAME, e.g. alpha=2, axes=1,2 or [1,2] for a list, [[1,2],[3]] for "
             "list[list[int]], a dtype name for a DataType, DTYPE[SHAPE]:VALUES for a Tensor "
             "attribute; omitted ones take their defaults")

# The exit status of an interrupted command (as a shell reports SIGINT).
EXIT_INTERRUPTED = 130


def main(argv=None):
    """The command; its exit status. An interrupt (Ctrl-C, or a
    KeyboardInterrupt raised in plugin code, which libpyop reports as
    PYOP_EINTR and raises again in this Python) ends any subcommand with
    one line on stderr and EXIT_INTERRUPTED, never a traceback; a thread a
    plugin left running never keeps it alive (leave_plugin_threads). stdout
    holds the command's result only, whatever plugin code prints, when and
    where (output.py)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((a for a in argv if a in ("doctor", "list", "check", "run", "bench")), None)
    with output.command_output():
        code = _interruptible(argv, command)
        leave_plugin_threads(command, code)
    return code


def _interruptible(argv, command):
    """_main's exit status, EXIT_INTERRUPTED (one line said) when interrupted."""
    try:
        return _main(argv, command)
    except KeyboardInterrupt as e:
        try:
            output.flush()
        except KeyboardInterrupt:
            pass
        what = str(e).strip()
        text = "interrupted%s" % (" (%s)" % what if what else "")
        sys.stderr.write("pyop: %s%s\n" % ("%s: " % command if command else "", text))
        if "--json" in argv:
            dump_json({"error": CliError(text, "PYOP_EINTR").to_json()})
        return EXIT_INTERRUPTED


def _main(argv, command):
    as_json = "--json" in argv
    ap = _Parser(prog="pyop", description=sys.modules[__package__].__doc__.split("\n\n")[0])
    ap.add_argument("--library", help="libpyop.so to use (default: next to this command)")
    ap.add_argument("--lanes", type=_count(0), default=0, metavar="N",
                    help="load with N interpreter lanes (pyop_options.lanes): list and "
                         "doctor say which ops run in parallel and why others do not; "
                         "check, run and bench run the instances in the lanes")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("doctor", help="the Python, path verdicts, bridge candidates, "
                       "a trial load with each plugin's verdict")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument("--proto", action="append", metavar="FILE",
                   help="REG_OP prototypes (a C++ header FILE.h, or the Python form of "
                        "ge.custom_op.host_proto) registered as the host's before the load, "
                        "for implementation-only plugins")
    p = sub.add_parser("list", help="every registered op with prototype, capabilities, source")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument("--proto", action="append", metavar="FILE",
                   help="REG_OP prototypes (a C++ header FILE.h, or the Python form of "
                        "ge.custom_op.host_proto) registered as the host's before the load, "
                        "for implementation-only plugins")
    p.add_argument("path", nargs="*", help="plugin files/dirs (default: ASCEND_CUSTOM_OPP_PATH)")
    p = sub.add_parser("check", help="import, validate, run infer_meta and execute, compare")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument("target", nargs="*", metavar="PATH|OP",
                   help="plugin files/dirs (default: ASCEND_CUSTOM_OPP_PATH) and/or op types "
                        "to check (default: every op)")
    p.add_argument("--input", action="append", metavar="NAME=DTYPE[SHAPE]:VALUES",
                   help="inputs of the one OP to check (as for run: " + INPUT_HELP + ")")
    p.add_argument("--attr", action="append", metavar="NAME=VALUE",
                   help="attributes of the one OP to check (as for run: " + ATTR_HELP + ")")
    p.add_argument("--proto", action="append", metavar="FILE",
                   help="REG_OP prototypes (a C++ header FILE.h, or the Python form of "
                        "ge.custom_op.host_proto) registered as the host's before the load, "
                        "for implementation-only plugins")
    _compile_option(p)
    p.add_argument("--case-timeout", type=float, metavar="SECONDS",
                   help="the time one case (or one load) may take before it counts as hung "
                        "(default %g)" % DEFAULT_CASE_TIMEOUT)
    p.add_argument("--_worker", type=int, help=argparse.SUPPRESS)  # check_worker.serve
    p.add_argument("--_job", help=argparse.SUPPRESS)
    p = sub.add_parser("run", help="run one op on host buffers and print the outputs",
                       description="Runs infer_meta and execute (or the kernel launch) of OP "
                                   "on host buffers and prints each output, and each input "
                                   "it generated values for.")
    p.add_argument("op", help="the op type, as `pyop list` names it")
    p.add_argument("--input", action="append", metavar="NAME=DTYPE[SHAPE]:VALUES",
                   help=INPUT_HELP)
    p.add_argument("--attr", action="append", metavar="NAME=VALUE", help=ATTR_HELP)
    _compile_option(p)
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument("--proto", action="append", metavar="FILE",
                   help="REG_OP prototypes (a C++ header FILE.h, or the Python form of "
                        "ge.custom_op.host_proto) registered as the host's before the load, "
                        "for implementation-only plugins")
    _supervised(p)
    p = sub.add_parser("bench", help="execute dispatch time of one op")
    p.add_argument("op")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument("--size", type=_count(0), default=16,
                   help="float32[SIZE] for every input when no --input is given")
    p.add_argument("--input", action="append", metavar="NAME=DTYPE[SHAPE]:VALUES",
                   help=INPUT_HELP)
    p.add_argument("--attr", action="append", metavar="NAME=VALUE", help=ATTR_HELP)
    _compile_option(p)
    p.add_argument("--calls", type=_count(1), default=2000)
    p.add_argument("--repeat", type=_count(1), default=5)
    p.add_argument("--proto", action="append", metavar="FILE",
                   help="REG_OP prototypes (a C++ header FILE.h, or the Python form of "
                        "ge.custom_op.host_proto) registered as the host's before the load, "
                        "for implementation-only plugins")
    _supervised(p)
    try:
        run_under_requested_python(argv)
        args = ap.parse_args(argv)
    except UsageError as e:
        return report_failure(command, e, as_json)
    if args.command in ("run", "bench"):
        if args._worker is None:  # the command: the op runs in a worker it watches
            try:
                return supervise.run_in_worker(args, argv, args.timeout)
            except CliError as e:
                return report_failure(args.command, e, args.json)
        supervise.become_worker(args._worker)
    try:
        lib = Lib(args.library or _find_library())
    except OSError as e:
        return report_failure(args.command, CliError(
            "cannot load libpyop: %s" % e, "PYOP_ENOENT"), args.json)
    handlers = {"doctor": cmd_doctor, "list": cmd_list, "check": cmd_check,
                "run": cmd_run, "bench": cmd_bench}
    try:
        if args.lanes:
            lib.set_lanes(args.lanes)
        # Before any load, as a GE-style engine registers its REG_OPs.
        # A check worker registers them again, quietly: the command said its notes.
        quiet = args.command == "check" and getattr(args, "_worker", None) is not None
        args.proto_files = _register_protos(lib, getattr(args, "proto", None), args.command,
                                            not quiet)
        status = handlers[args.command](lib, args)
        note_unused(args.command)
        return status
    except KeyboardInterrupt as e:
        # Raised again by libpyop (PYOP_EINTR) when it landed in plugin
        # code: its last error says where.
        raise KeyboardInterrupt(str(e) or lib.interrupt_detail() or "") from None
    except CliError as e:
        return report_failure(args.command, e, args.json)
    except BrokenPipeError:
        # The reader went away (`pyop list | head`): stop writing, quietly.
        output.discard()
        return 1
    finally:
        supervise.activity(supervise.UNLOADING)
        lib.shutdown()

# rpm_exact's start of DNF 4's command line (pkg/rpmexact/launcher.go). The supervisor
# writes this file, after DNF's own #! line and the constants below, into the transaction's
# record and executes it, so the kernel starts DNF's interpreter with DNF's options, the
# process is named as DNF's command, and the lock holder's command line reads as DNF's.
# DNF's command line is imported while the supervisor reads the host before DNF; DNF's own
# script runs only once the supervisor opens the gate, after that reading.
import os
import runpy
import sys

# The constants follow the #! line (launcher.go): SCRIPT, the path DNF's command resolves
# to through PATH, as the kernel would pass it; GATE, the descriptor of the gate's pipe;
# CLOSED, the exit code of a gate closed unopened.


def _here(path):
    return os.path.dirname(os.path.realpath(path))


# Python put this file's directory first on the path, where it puts a script's own;
# DNF's script drops its directory (/usr/bin) before it imports anything, so DNF's command
# line is imported here with neither.
_put_back = bool(sys.path) and sys.path[0] == _here(__file__)
if _put_back:
    del sys.path[0]

try:
    from dnf.cli import main  # noqa: F401 - what DNF's script imports first
except Exception:
    pass  # DNF's script imports it again, and fails as it would have

try:
    _opened = os.read(GATE, 1) == b"1"  # noqa: F821 - a constant written above
except OSError:
    _opened = False
try:
    os.close(GATE)  # noqa: F821 - nothing DNF starts inherits it
except OSError:
    pass
if not _opened:
    # The supervisor could not read the host before DNF, or it ended: DNF does not run.
    os._exit(CLOSED)  # noqa: F821

if _put_back:
    sys.path.insert(0, _here(SCRIPT))  # noqa: F821 - as Python sets it for DNF's script
try:
    runpy.run_path(SCRIPT, run_name="__main__")  # noqa: F821
    _code = 0
except SystemExit as e:
    if e.code is not None and not isinstance(e.code, int):
        raise  # a message for the interpreter to print: its own way out
    _code = e.code or 0

# DNF has ended: its base is closed (its RPM database and history with it), and all that is
# left is the interpreter's teardown, which writes nothing. Its output and log files are
# flushed and closed here, and the process leaves without the teardown.
try:
    sys.stdout.flush()
    sys.stderr.flush()
except Exception:
    sys.exit(_code)  # the interpreter reports it, as it would have
import logging  # noqa: E402

logging.shutdown()
os._exit(_code & 0xFF)

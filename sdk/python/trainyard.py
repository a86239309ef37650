"""trainyard - the report protocol's Python client (sdk/README.md).

A team's training program, launched by trainyard one process per rank,
imports this module to read its environment, report steps, heartbeats and
checkpoints to the worker, and stop cleanly when asked. Standard library
only (tested with Python 3.11).

Outside the platform (TRAINYARD_REPORT_FD unset) every report function
checks its arguments and then does nothing, so the same program runs on a
laptop. Step and checkpoint reports are sent by rank 0 only; on the other
ranks they check their arguments and send nothing.

    import trainyard

    def main():
        start = 1
        r = trainyard.resume()
        if r is not None:
            start = load(r[1]) + 1
        for step in range(start, (trainyard.steps() or 1000) + 1):
            loss = train_one_step()
            trainyard.report_step(step, loss=loss, tokens=524288)
            if step % 100 == 0 or trainyard.should_stop():
                save(trainyard.checkpoint_dir(step), step)
                barrier()
                trainyard.checkpoint_done(step)
            if trainyard.should_stop():
                return

    trainyard.run(main)
"""

import errno
import json
import math
import operator
import os
import re
import signal
import sys
import threading
import traceback

__all__ = [
    "EXIT_OK", "EXIT_INVALID_CONFIG", "EXIT_OUT_OF_MEMORY", "EXIT_DATA_ERROR",
    "EXIT_NUMERICAL", "EXIT_STOPPED", "LINE_MAX", "METRIC_NAME_MAX",
    "rank", "world_size", "local_rank", "local_world_size",
    "resume", "data_dir", "steps",
    "report_step", "progress", "checkpoint_dir", "checkpoint_done",
    "install_stop_handler", "should_stop", "run",
]

# Exit statuses the platform tells apart; any other status, or death by a
# signal, is a failure of the program (retried per the job's rules).
EXIT_OK = 0
EXIT_INVALID_CONFIG = 10
EXIT_OUT_OF_MEMORY = 11
EXIT_DATA_ERROR = 13
EXIT_NUMERICAL = 14
EXIT_STOPPED = 16

LINE_MAX = 65536  # bytes of one report line, its newline included
METRIC_NAME_MAX = 64

# Where checkpoint_dir() writes when TRAINYARD_CHECKPOINT_DIR is unset.
LOCAL_CHECKPOINT_DIR = "checkpoints"

_DECIMAL = re.compile(r"[0-9]+\Z")
_METRIC_NAME = re.compile(r"[A-Za-z0-9._/-]{1,%d}\Z" % METRIC_NAME_MAX)

_write_lock = threading.Lock()
_stop_requested = False
_handler_installed = False


def _env(name):
    """The variable's value; None when unset or empty."""
    value = os.environ.get(name)
    return value if value else None


def _env_int(name, default, minimum):
    value = _env(name)
    if value is None:
        return default
    if not _DECIMAL.match(value) or int(value) < minimum:
        raise ValueError("%s is not a decimal integer >= %d: %r" % (name, minimum, value))
    return int(value)


def rank():
    """RANK: this process's rank among all; 0 when unset."""
    return _env_int("RANK", 0, 0)


def world_size():
    """WORLD_SIZE: the number of ranks; 1 when unset."""
    return _env_int("WORLD_SIZE", 1, 1)


def local_rank():
    """LOCAL_RANK: this process's rank on its node; 0 when unset."""
    return _env_int("LOCAL_RANK", 0, 0)


def local_world_size():
    """LOCAL_WORLD_SIZE: the number of ranks on this node; 1 when unset."""
    return _env_int("LOCAL_WORLD_SIZE", 1, 1)


def resume():
    """(step, path) of the checkpoint to resume from, or None when there is none.

    path is TRAINYARD_RESUME_DIR, a read-only directory holding the files
    of that checkpoint under the relative paths they were written with.
    """
    path = _env("TRAINYARD_RESUME_DIR")
    step = _env_int("TRAINYARD_RESUME_STEP", None, 1)
    if path is None or step is None:
        return None
    return (step, path)


def data_dir():
    """TRAINYARD_DATA_DIR (the job's unsealed datasets), or None."""
    return _env("TRAINYARD_DATA_DIR")


def steps():
    """TRAINYARD_STEPS (the job's training.steps) as an int, or None."""
    return _env_int("TRAINYARD_STEPS", None, 1)


def _report_fd():
    """The report descriptor, or None outside the platform."""
    value = _env("TRAINYARD_REPORT_FD")
    if value is None:
        return None
    if not _DECIMAL.match(value):
        raise OSError(errno.EBADF, "TRAINYARD_REPORT_FD is not a descriptor number: %r" % value)
    return int(value)


def _integer(what, value, minimum):
    if isinstance(value, bool):
        raise TypeError("%s must be an integer, not bool" % what)
    value = operator.index(value)
    if value < minimum:
        raise ValueError("%s must be >= %d: %d" % (what, minimum, value))
    return value


def _number(what, value):
    """An int or a float (maybe not finite) from an int, float or anything float() takes
    that is not text (numpy and torch scalars)."""
    if isinstance(value, bool) or isinstance(value, (str, bytes, bytearray)):
        raise TypeError("%s must be a number, not %s" % (what, type(value).__name__))
    if isinstance(value, int):
        return value
    return float(value)


def _finite(value):
    return isinstance(value, int) or math.isfinite(value)


def _line(obj):
    """The report's line in bytes; ValueError when longer than LINE_MAX."""
    data = (json.dumps(obj, allow_nan=False, separators=(",", ":")) + "\n").encode("utf-8")
    if len(data) > LINE_MAX:
        raise ValueError("report line of %d bytes is over the limit of %d" % (len(data), LINE_MAX))
    return data


def _send(data):
    fd = _report_fd()
    if fd is None:
        return
    view = memoryview(data)
    with _write_lock:
        # One write() a line; a pipe writes it whole unless a signal cuts
        # it short, and then the rest follows.
        while view:
            n = os.write(fd, view)
            view = view[n:]


def report_step(step, loss=None, tokens=None, lr=None, grad_norm=None, **metrics):
    """Report that optimizer step `step` (>= 1) finished. Rank 0 only.

    loss: a number (a non-finite one is sent as null) or None (omitted).
    tokens: tokens this step processed over all ranks, int >= 0, or None.
    lr, grad_norm: numbers or None; a non-finite value is omitted.
    metrics: name=number; names 1-64 of [A-Za-z0-9._/-] (pass names that
    are not identifiers as **{"val/loss": x}); non-finite values omitted.
    """
    obj = {"type": "step", "step": _integer("step", step, 1)}
    if loss is not None:
        value = _number("loss", loss)
        obj["loss"] = value if _finite(value) else None
    if tokens is not None:
        obj["tokens"] = _integer("tokens", tokens, 0)
    for name, value in (("lr", lr), ("grad_norm", grad_norm)):
        if value is not None:
            value = _number(name, value)
            if _finite(value):
                obj[name] = value
    sent = {}
    for name, value in metrics.items():
        if not _METRIC_NAME.match(name):
            raise ValueError("metric name must be 1-%d of [A-Za-z0-9._/-]: %r"
                             % (METRIC_NAME_MAX, name))
        value = _number("metric " + name, value)
        if _finite(value):
            sent[name] = value
    if sent:
        obj["metrics"] = sent
    data = _line(obj)
    if rank() == 0:
        _send(data)


def progress(step=None):
    """A heartbeat, from any rank; step (>= 0) optional."""
    obj = {"type": "progress"}
    if step is not None:
        obj["step"] = _integer("step", step, 0)
    _send(_line(obj))


def checkpoint_dir(step):
    """The directory to write step's checkpoint into, created (0700) if needed.

    $TRAINYARD_CHECKPOINT_DIR/<step>; outside the platform
    checkpoints/<step> under the working directory. Every rank may call it;
    one that finds the directory made by another goes on.
    """
    step = _integer("step", step, 1)
    base = _env("TRAINYARD_CHECKPOINT_DIR")
    if base is None:
        base = LOCAL_CHECKPOINT_DIR
        _mkdir_0700(base)
    path = os.path.join(base, str(step))
    _mkdir_0700(path)
    return path


def _mkdir_0700(path):
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if not os.path.isdir(path) or os.path.islink(path):
            raise NotADirectoryError(errno.ENOTDIR, "exists and is not a directory", path)
        return
    os.chmod(path, 0o700)  # whatever the umask


def checkpoint_done(step):
    """Report that every rank has written and closed its files of step. Rank 0 only.

    Synchronise the ranks (a barrier) before calling it: the platform seals
    the directory's files as soon as it reads this report, then removes it.
    """
    data = _line({"type": "checkpoint", "step": _integer("step", step, 1)})
    if rank() == 0:
        _send(data)


def _on_sigterm(signum, frame):
    global _stop_requested
    _stop_requested = True


def install_stop_handler():
    """Catch SIGTERM from now on: should_stop() becomes True when it arrives.

    Call it from the main thread. should_stop() and run() call it too.
    """
    global _handler_installed
    if not _handler_installed:
        signal.signal(signal.SIGTERM, _on_sigterm)
        _handler_installed = True


def should_stop():
    """True once SIGTERM has arrived (the handler is installed on the first call)."""
    install_stop_handler()
    return _stop_requested


def _out_of_memory(exc):
    # MemoryError, and torch's OutOfMemoryError (a RuntimeError) by name
    return isinstance(exc, MemoryError) or any(
        cls.__name__ == "OutOfMemoryError" for cls in type(exc).__mro__)


def run(main):
    """Call main() with the stop handler installed, and exit as the platform expects.

    Out of memory (MemoryError, torch's OutOfMemoryError) exits 11 after
    printing the traceback; main returning after SIGTERM arrived exits 16;
    otherwise main's return value is returned and its exceptions (SystemExit
    included) propagate.
    """
    install_stop_handler()
    try:
        result = main()
    except Exception as exc:
        if not _out_of_memory(exc):
            raise
        traceback.print_exc()
        sys.exit(EXIT_OUT_OF_MEMORY)
    if _stop_requested:
        sys.exit(EXIT_STOPPED)
    return result

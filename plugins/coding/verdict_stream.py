"""The verdict stream: each pytest outcome reaches the grader as it happens, over a pipe.

A JUnit XML report is a file the process under test can rewrite after the tests ran (an
``atexit`` handler that drops the failures, then ``os._exit(0)`` so that the exit code agrees),
and a report object can be patched before the report is written. So every pytest run Horizon
starts for the coding plugin's Python tests (``testing.run_test_suite``) also carries Horizon's
own plugin (``verdict_plugin.py``, loaded by path from the run's folder, outside the workspace,
before any ``conftest.py`` or code under test is imported), which writes one numbered JSON
record per event to the write end of a pipe the sandboxed pytest inherits (``Sandbox.run``'s
``pass_fds``; bwrap keeps inherited descriptors open). Horizon reads the other end in a thread
while the tests run, so nothing written there can be taken back.

The grader counts only the outcomes it received (``read_stream``), and the run's
``stream_problems`` name anything unusual, each of which fails the verification
(``reward.grade``'s ``verdict_stream`` gate): a record missing, repeated or out of order; a
test pytest collected whose outcome never arrived; a report made as a failure (or for a phase
that raised) but logged as a pass; a JUnit report that disagrees with the stream; a process that
ended before pytest's end-of-session record (``os._exit``, a crash, a signal), or with an exit
code other than the one the session ended with, or that wrote records after it.

What it cannot stop: the code under test runs in the same process as the plugin, so it can write
to the descriptor too, or close it and write a whole forged stream, or unregister the plugin.
Forged records that interleave with the plugin's show as a broken numbering; a stream forged
from the start does not. The second run (``plugins.coding.second_run``: the fail-to-pass tests
in a fresh interpreter without pytest) and the static checks of the patch are the layers that
catch such a patch: it has to behave under pytest as it does not elsewhere.
"""

from __future__ import annotations

import json
import os
import select
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

#: Bytes of records kept; a run that writes more is a problem. A test's records are ~200 bytes plus
#: about seven copies of its node id, and real suites parametrize with large values: two tests of
#: python-multipart 0.0.29 have ids of 10 MB, about 200 MB of records (64 MiB cut that stream and
#: scored its real fix 0). What the grader holds in memory is bounded by this.
STREAM_LIMIT_BYTES = 512 << 20
#: Seconds the reader waits for the last records once the sandbox is gone.
DRAIN_S = 5.0
PLUGIN_SOURCE = Path(__file__).with_name("verdict_plugin.py")

#: How pytest is started with the stream: ``PYTEST_LAUNCHER``'s order (pytest imported before the
#: repository's folders are on ``sys.path``), plus Horizon's plugin loaded from the path given as
#: the second argument and registered before pytest reads its configuration; the first argument
#: is the pipe's descriptor. Both arguments are taken off ``sys.argv`` before pytest reads it.
STREAM_LAUNCHER = (
    "import os, sys\n"
    "fd, plugin = int(sys.argv.pop(1)), sys.argv.pop(1)\n"
    "here = os.getcwd()\n"
    "ours = {here, *(os.path.abspath(p) for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p)}\n"
    "kept = sys.path[:]\n"
    "sys.path[:] = [p for p in kept if os.path.abspath(p or here) not in ours]\n"
    "import importlib.util\n"
    "import pytest\n"
    "spec = importlib.util.spec_from_file_location('horizon_verdict_stream', plugin)\n"
    "module = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(module)\n"
    "sys.path[:] = [here, *(p for p in kept if p not in ('', here))]\n"
    "sys.exit(pytest.main(plugins=[module.VerdictStream(fd)]))\n"
)


class StreamReader:
    """A pipe whose write end a sandboxed command inherits, read in a thread while it runs.

    Use as a context manager: ``fd`` is the write end to pass (``pass_fds``); after the command
    returned, ``finish()`` closes Horizon's copy of the write end, waits for the last records (end
    of file: every process holding it is gone) and returns the bytes.
    """

    def __init__(self) -> None:
        self._read, self.fd = os.pipe()
        self._chunks: list[bytes] = []
        self._size = 0
        self.overflow = False
        self.eof = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._pump, name="verdict-stream", daemon=True)

    def __enter__(self) -> StreamReader:  # noqa: PYI034 - Self needs no import here, and nothing subclasses it
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._close_writer()
        self._stop.set()
        self._thread.join(DRAIN_S)
        if self._read >= 0 and not self._thread.is_alive():
            os.close(self._read)
            self._read = -1

    def _close_writer(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _pump(self) -> None:
        poller = select.poll()
        poller.register(self._read, select.POLLIN | select.POLLHUP)
        while True:
            if not poller.poll(200):
                if self._stop.is_set():
                    return
                continue
            try:
                chunk = os.read(self._read, 1 << 16)
            except OSError:
                return
            if not chunk:
                self.eof = True
                return
            if self._size + len(chunk) > STREAM_LIMIT_BYTES:
                self.overflow = True
                continue  # keep draining, so that the writer never blocks
            self._chunks.append(chunk)
            self._size += len(chunk)

    def so_far(self) -> bytes:
        """The bytes read until now (the command may still be running): for progress lines only."""
        return b"".join(list(self._chunks))

    def finish(self) -> bytes:
        """Close our write end, wait up to ``DRAIN_S`` for end of file, return what was read."""
        self._close_writer()
        self._thread.join(DRAIN_S)
        self._stop.set()
        self._thread.join(1.0)
        return b"".join(self._chunks)


@dataclass
class StreamVerdict:
    """What the stream says about one pytest run.

    Attributes:
        outcomes: ``{test id: outcome}`` from the records received (ids as the JUnit report's,
            ``testing.parse_pytest_report``).
        problems: why the run's outcomes cannot be believed, one line each; empty when none.
        records: how many records arrived.
        collected: how many tests pytest collected to run (None: no ``collected`` record arrived).
        not_run: node ids of collected tests whose outcome never arrived (a run the time limit
            stopped: the tests it did not reach).
    """

    outcomes: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    records: int = 0
    collected: int | None = None
    not_run: list[str] = field(default_factory=list)


_RANK = {"passed": 0, "skipped": 1, "error": 2, "failed": 3}


def _short(ids: list[str], count: int = 3) -> str:
    shown = ", ".join(ids[:count])
    return shown + (f" and {len(ids) - count} more" if len(ids) > count else "")


def install_plugin(run_dir: Path) -> Path:
    """Copy ``verdict_plugin.py`` into ``run_dir/horizon/`` (a fresh run folder: nothing in it was
    planted, and no code under test has run yet) and return its path."""
    from core.api import write_new

    target = run_dir / "horizon" / "verdict_plugin.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    write_new(target, PLUGIN_SOURCE.read_bytes())
    return target


def read_stream(data: bytes, workspace: Path, *, exit_code: int, timed_out: bool, report: dict[str, str] | None,
                overflow: bool = False) -> StreamVerdict:  # fmt: skip
    """Turn the stream's records into outcomes and the problems they show.

    Args:
        data: the bytes the pipe delivered (``StreamReader.finish``).
        workspace: the tree pytest ran in (to name tests as the JUnit report does).
        exit_code: the test command's exit code (negative: a signal).
        timed_out: the sandbox's time limit stopped the command (then a missing end is expected).
        report: the outcomes read from the JUnit report (None: there was none to read).
        overflow: more than ``STREAM_LIMIT_BYTES`` arrived.

    Returns:
        A ``StreamVerdict``; ``problems`` is empty for an ordinary run, a failing one included.
    """
    from plugins.coding.testing import _pytest_id

    verdict = StreamVerdict()
    problems = verdict.problems
    if overflow:
        problems.append(f"the test process wrote more than {STREAM_LIMIT_BYTES >> 20} MiB of records to the verdict stream")
    records = []
    for number, line in enumerate(data.split(b"\n")):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            problems.append(f"line {number + 1} of the verdict stream is not one of its records (something else wrote to it)")
            continue
        if not isinstance(record, dict):
            problems.append(f"line {number + 1} of the verdict stream is not one of its records (something else wrote to it)")
            continue
        records.append(record)
    verdict.records = len(records)
    if not records:
        if report:
            problems.append("no outcome reached the grader while the tests ran, yet the JUnit report lists "
                            f"{len(report)} tests (the plugin was bypassed or the report planted)")
        return verdict  # nothing ran (a conftest that does not import, a usage error): nothing to believe
    for index, record in enumerate(records):
        if record.get("n") != index:
            problems.append(f"record {index} of the verdict stream is numbered {record.get('n')!r}: records were forged, "
                            "repeated or held back")
            break
    if records[0].get("k") != "start":
        problems.append("the verdict stream does not begin with the plugin's start record")
    ends = [i for i, r in enumerate(records) if r.get("k") == "end"]
    end = records[ends[0]] if ends else None
    if ends and ends[0] != len(records) - 1:
        problems.append(f"{len(records) - 1 - ends[0]} record(s) arrived after pytest's end-of-session record")
    if end is None and not timed_out:
        problems.append(f"the test process ended (exit code {exit_code}) before pytest's end-of-session record: it was left "
                        "through os._exit, a crash or a signal")
    elif end is not None and not timed_out and end.get("exitstatus") != exit_code:
        problems.append(f"the test process exited with code {exit_code}, but pytest's session ended with "
                        f"{end.get('exitstatus')!r}: something ran after pytest finished (an atexit handler, os._exit)")
    if exit_code < 0 and not timed_out:
        problems.append(f"the test process was killed by signal {-exit_code}")
    distributed = any(r.get("k") == "start" and r.get("distributed") for r in records)
    made: dict[tuple[str, str], dict] = {}
    collected: list[str] | None = None
    logged_ids: set[str] = set()
    phase_outcome: dict[str, str] = {}
    junit_id: dict[str, str] = {}
    tampered: list[str] = []
    for record in records:
        kind = record.get("k")
        if kind == "collected" and isinstance(record.get("ids"), list):
            collected = [str(i) for i in record["ids"]]
        elif kind == "made":
            key = (str(record.get("id")), str(record.get("when")))
            made[key] = record
            if record.get("raised") and record.get("outcome") == "passed":
                tampered.append(f"{key[0]} ({key[1]}) raised {record.get('exc') or 'an exception'} but its report says passed")
        elif kind in ("logged", "collect"):
            node = str(record.get("id"))
            case = ET.Element("testcase", {"classname": str(record.get("classname", "")), "name": str(record.get("name", "")),
                                           "file": str(record.get("file") or "")})  # fmt: skip
            test_id = junit_id.setdefault(node, _pytest_id(workspace, case))
            when = str(record.get("when", "collect"))
            outcome = str(record.get("outcome"))
            if outcome == "rerun":
                continue
            if kind == "logged":
                if when == "call" or outcome != "passed":
                    logged_ids.add(node)
                first = made.get((node, when))
                if first is None and not distributed:
                    tampered.append(f"{node} ({when}) was logged without a report made through pytest's hook")
                elif first is not None and first.get("outcome") != outcome:
                    tampered.append(f"{node} ({when}) was made {first.get('outcome')!r} but logged {outcome!r}")
                if first is not None and first.get("raised") and outcome == "passed":
                    outcome = "failed"  # it raised: the pass is the patched report's, not the test's
            if outcome == "passed" and kind == "logged" and when != "call":
                continue  # a test passes by its call; a setup that passed says nothing yet
            if outcome == "passed":
                value = "passed"
            elif outcome == "skipped":
                value = "skipped"
            elif kind == "collect" or when != "call":
                value = "error"
            else:
                value = "failed"
            previous = phase_outcome.get(test_id)
            if previous is None or _RANK[value] > _RANK[previous]:
                phase_outcome[test_id] = value
    if tampered:
        problems.append("reports were changed between pytest making and logging them: " + _short(tampered, 2))
    missing = [t for t in collected or [] if t not in logged_ids]
    verdict.collected = None if collected is None else len(collected)
    verdict.not_run = missing
    if missing and not timed_out and not (end or {}).get("stopped"):
        problems.append(f"{len(missing)} test(s) pytest collected never reported an outcome: {_short(missing)}")
    verdict.outcomes = phase_outcome
    if report is not None and not timed_out and report != phase_outcome:
        differ = sorted(t for t in set(report) | set(phase_outcome) if report.get(t) != phase_outcome.get(t))
        said = [f"{t} ({report.get(t, 'absent')} in the report, {phase_outcome.get(t, 'absent')} as it ran)" for t in differ]
        problems.append("the JUnit report disagrees with the outcomes pytest reported as the tests ran: " + _short(said, 2))
    return verdict

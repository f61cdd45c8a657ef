"""Horizon's pytest plugin that streams each test's outcome to the grader as it happens.

This file runs inside the sandboxed pytest, not in Horizon: ``plugins.coding.verdict_stream``
copies its text into the run's folder and the launcher (``STREAM_LAUNCHER``) loads it by path
and registers it with ``pytest.main(plugins=[...])`` before pytest reads its configuration, so
before any ``conftest.py``, plugin or code under test is imported. It imports only the standard
library and pytest, and keeps to what pytest 6 to 9 and Python 3.7+ share.

Every record is one line of JSON written with ``os.write`` to an inherited pipe (the descriptor
number is the launcher's first argument), numbered from 0 (``n``) so that a record written by
anyone else, or one held back, shows as a gap or a repeat:

* ``start``: pid, pytest's version, whether the run is distributed (pytest-xdist);
* ``collected``: the node ids of the tests pytest will run (with ``shard``, ``"k/N"``, the share of
  this process when Horizon shards the suite: ``$HORIZON_SHARD``, read when the plugin is made,
  before any code under test runs; the whole collection's size is ``of``);
* ``made``: one per phase (setup, call, teardown) from around ``pytest_runtest_makereport``:
  the outcome of the report as made, and whether the phase raised (``call.excinfo``), which a
  report patched into a pass cannot hide;
* ``logged``: one per phase from ``pytest_runtest_logreport``, with the ids JUnit XML uses;
* ``collect``: a module or other collector that failed or was skipped;
* ``end``: from ``pytest_sessionfinish`` (last of its implementations), with the exit status and
  why pytest stopped early (``-x``, ``--maxfail``), if it did.
"""

import json
import os

import pytest

_write = os.write  # bound now: code under test imported later may replace os.write
_dumps = json.dumps


def _shard(text):
    """``"k/N"`` as ``(k, N)`` (0 <= k < N); None for anything else (no sharding)."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        return None
    return (index, count) if 0 <= index < count else None


def shard_files(files, count):
    """Split test files into ``count`` sets of about equal numbers of tests: the files with the
    most tests first, each to the set with the fewest so far (ties: the lowest index). ``files``
    has one entry per collected test (its file), in collection order; every process of a sharded
    run collects the same tests, so each computes the same split."""
    sizes = {}
    for name in files:
        sizes[name] = sizes.get(name, 0) + 1
    shares = [set() for _ in range(count)]
    loads = [0] * count
    for name in sorted(sizes, key=lambda n: (-sizes[n], n)):
        lightest = min(range(count), key=lambda i: (loads[i], i))
        shares[lightest].add(name)
        loads[lightest] += sizes[name]
    return shares


class VerdictStream:
    """The plugin object (one per run)."""

    def __init__(self, fd):
        self.fd = fd
        self.n = 0
        self.shard = _shard(os.environ.get("HORIZON_SHARD", ""))
        self.total = None
        try:
            from _pytest.junitxml import mangle_test_address
        except ImportError:  # pragma: no cover - every pytest since 3 has it
            mangle_test_address = None
        self._mangle = mangle_test_address

    def _send(self, kind, **fields):
        fields["k"] = kind
        fields["n"] = self.n
        self.n += 1
        data = (_dumps(fields, default=str) + "\n").encode("utf-8", "replace")
        while data:
            try:
                written = _write(self.fd, data)
            except InterruptedError:
                continue
            except OSError:
                return  # the grader is gone; it counts what it received
            data = data[written:]

    def _junit(self, report):
        """``(classname, name, file)`` as pytest's JUnit XML writes them (xunit1)."""
        location = getattr(report, "location", None) or ("", None, "")
        if self._mangle is None:
            names = report.nodeid.split("::")
        else:
            names = self._mangle(report.nodeid)
        return ".".join(names[:-1]), names[-1], location[0]

    def pytest_configure(self, config):
        distributed = hasattr(config, "workerinput") or (getattr(config.option, "dist", "no") or "no") != "no"
        self._send("start", pid=os.getpid(), pytest=getattr(pytest, "__version__", ""), distributed=bool(distributed))

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        """Keep this shard's share of the test files (``shard_files``); the others' are deselected."""
        self.total = len(items)
        if self.shard is None:
            return
        index, count = self.shard
        mine = shard_files([item.nodeid.split("::", 1)[0] for item in items], count)[index]
        kept = [item for item in items if item.nodeid.split("::", 1)[0] in mine]
        dropped = [item for item in items if item.nodeid.split("::", 1)[0] not in mine]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept

    def pytest_collection_finish(self, session):
        extra = {} if self.shard is None else {"shard": "{}/{}".format(*self.shard), "of": self.total}
        self._send("collected", ids=[item.nodeid for item in session.items], **extra)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        """pytest-xdist's controller collects nothing itself: the first worker's collection is the run's."""
        if self.total is None:
            self.total = len(ids)
            self._send("collected", ids=list(ids))

    def pytest_collectreport(self, report):
        if report.passed:
            return
        classname, name, file = self._junit(report)
        self._send("collect", id=report.nodeid, outcome=report.outcome, classname=classname, name=name, file=file)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        raised = call.excinfo is not None
        kind = ""
        if raised:
            try:
                kind = call.excinfo.typename
            except Exception:  # noqa: BLE001 - a broken exception must not break the run
                kind = "?"
        outcome = yield
        try:
            report = outcome.get_result()
        except BaseException:  # noqa: BLE001 - another hook's failure is pytest's to report
            return
        self._send("made", id=item.nodeid, when=call.when, outcome=str(report.outcome), raised=raised, exc=kind)

    def pytest_runtest_logreport(self, report):
        classname, name, file = self._junit(report)
        self._send("logged", id=report.nodeid, when=report.when, outcome=str(report.outcome),
                   xfail=hasattr(report, "wasxfail"), classname=classname, name=name, file=file)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        stopped = session.shouldfail or session.shouldstop or ""
        self._send("end", exitstatus=int(exitstatus), stopped=str(stopped) if stopped else "")

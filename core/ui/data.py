"""What the web UI shows, read from the run store and the evaluations' folders: plain dicts for
the templates, no HTML here (the templates escape every value).

The run list is read from the runs catalog (``core.catalog``); a run's page with ``core.runs``
(a run being written is read from its writer's live mirror);
evaluations from ``$HORIZON_HOME/evals/<id>/`` (``summary.json`` once finished, else the
``results.jsonl`` written so far, scored with ``core.eval.metrics.summarize``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from core.catalog import list_runs
from core.config import horizon_home, runs_dir
from core.errors import RunNotFound
from core.runs import RUN_ID, reading_store
from core.state import Pricing, Usage
from core.store import RUN_FIELDS
from core.store_mirror import MIRROR_NAME

__all__ = ["ARTIFACT_TYPES", "MAX_ARTIFACT_BYTES", "artifact_path", "eval_page", "list_evals", "read_artifact", "run_page", "runs_signature", "runs_table", "signature"]

#: Files of a run's folder the UI shows inline, by suffix, with their media types.
ARTIFACT_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
                  ".svg": "image/svg+xml", ".html": "text/html; charset=utf-8"}
#: Folders of a run not searched for artifacts: stores and snapshots, not outputs.
SKIPPED_FOLDERS = {".git", "baseline.git", "observations", "node_modules", "__pycache__", ".venv"}
MAX_ARTIFACTS = 40


def runs_table(home: Path | None = None) -> list[dict[str, Any]]:
    """The runs, newest first, from the runs catalog (``core.catalog.list_runs``: no store is opened), each with ``tokens`` (prompt +
    completion) and ``live`` (being written now) added."""
    rows = [{**dict.fromkeys(RUN_FIELDS), **row} for row in list_runs(home)]  # an unreadable store's row has only id and status
    for row in rows:
        row["tokens"] = (row.get("prompt_tokens") or 0) + (row.get("completion_tokens") or 0)
        row["live"] = row.get("status") == "running"
    return rows


def run_page(run_id: str, home: Path | None = None) -> dict[str, Any]:
    """Everything a run's page shows.

    Returns:
        ``{"run": the runs row (+ ``live``), "opening": [messages of step 0], "steps": [{"step",
        "text", "calls": [{"tool", "arguments", "output", "is_error", "duration_s"}], "usage",
        "cost", "latency_s", "seconds"}], "rewards": {name: {value, weight, detail}}, "patch":
        str or None, "artifacts": [relative paths]}``; ``seconds`` is the model call's latency
        plus its tool calls' durations.

    Raises:
        RunNotFound: no such run (or not a run id).
        UserError: the store cannot be read (``core.runs.store_error``).
    """
    with reading_store(run_id, home, live=True) as store:
        run, messages, rewards = store.run(), store.messages(), store.rewards()
        model_calls = {s["step"]: s for s in store.steps()}
        run["live"] = store.live
        seqs = store.con.execute("SELECT step, role FROM messages ORDER BY seq").fetchall()
    pricing = Pricing(**(run.get("config") or {}).get("pricing", {}))
    opening, steps, by_call = [], [], {}
    for (step, _role), message in zip(seqs, messages, strict=True):
        if step == 0:
            opening.append(message)
        elif message.role == "assistant":
            call = model_calls.get(step, {})
            usage = call.get("usage") or Usage()
            entry = {"step": step, "text": message.content or "", "calls": [], "usage": usage, "cost": pricing.cost(usage),
                     "latency_s": call.get("latency_s") or 0.0, "model": call.get("model"), "notes": []}
            recorded = {c["id"]: c for c in call.get("tool_calls", [])}
            for tool_call in message.tool_calls:
                done = recorded.get(tool_call.id, {})
                item = {"tool": tool_call.name, "arguments": _pretty_json(tool_call.arguments), "output": done.get("output"),
                        "is_error": bool(done.get("is_error")), "duration_s": done.get("duration_s")}
                by_call[tool_call.id] = item
                entry["calls"].append(item)
            steps.append(entry)
        elif steps and message.role != "tool":  # the loop's notes between steps (a stuck warning, a summary)
            steps[-1]["notes"].append(message)
    for entry in steps:
        entry["seconds"] = entry["latency_s"] + sum(c["duration_s"] or 0.0 for c in entry["calls"])
    return {"run": run, "opening": opening, "steps": steps, "rewards": rewards, "patch": _patch_text(run, run_id, home),
            "container_patch": _container_text(run_id, home),
            "artifacts": artifacts(run_id, home)}


def signature(run_id: str, home: Path | None = None) -> str:
    """A short text that changes whenever the run's page would: the sizes and modification
    times of its store, the store's write-ahead log and its live mirror (a stat, not a read:
    pages poll it every second)."""
    return _stat_mark(run_folder(run_id, home))


def runs_signature(home: Path | None = None) -> str:
    """Like ``signature``, over every run: changes when a run is added or written."""
    root = runs_dir(home)
    return ";".join(f"{folder.name}={_stat_mark(folder)}" for folder in sorted(root.glob("[!.]*/"))) if root.is_dir() else ""


def _stat_mark(folder: Path) -> str:
    parts = []
    for name in ("trajectory.duckdb", "trajectory.duckdb.wal", MIRROR_NAME):
        try:
            found = (folder / name).stat()
        except OSError:
            continue
        parts.append(f"{name}:{found.st_size}:{found.st_mtime_ns}")
    return "|".join(parts)


def _pretty_json(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=1, ensure_ascii=False)
    except (ValueError, TypeError):
        return text  # malformed arguments are shown as the model wrote them


def _patch_text(run: dict[str, Any], run_id: str, home: Path | None) -> str | None:
    folder = run_folder(run_id, home)
    path = folder / "patch.diff"
    if run.get("patch_path"):
        named = Path(run["patch_path"])
        if named.is_relative_to(folder) and named.is_file():
            path = named
    try:
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
    except OSError:
        return None


def _container_text(run_id: str, home: Path | None) -> str | None:
    """A container task's changes outside its working folder (``container.diff``), or None."""
    path = run_folder(run_id, home) / "container.diff"
    try:
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
    except OSError:
        return None


def run_folder(run_id: str, home: Path | None = None) -> Path:
    """The run's folder.

    Raises:
        RunNotFound: ``run_id`` is not a run id or names no folder.
    """
    folder = runs_dir(home) / run_id
    if not RUN_ID.fullmatch(run_id) or not folder.is_dir():
        raise RunNotFound(f"no run {run_id!r} in {runs_dir(home)}")
    return folder


def artifacts(run_id: str, home: Path | None = None) -> list[str]:
    """Images and HTML reports inside the run's folder (3D previews, finance charts and reports),
    as paths relative to it, sorted; at most ``MAX_ARTIFACTS``."""
    folder = run_folder(run_id, home).resolve()
    found: list[str] = []
    stack = [folder]
    while stack and len(found) < MAX_ARTIFACTS:
        current = stack.pop()
        try:
            entries = sorted(current.iterdir(), reverse=True)
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                continue  # a link could lead out of the run's folder
            if entry.is_dir() and entry.name not in SKIPPED_FOLDERS:
                stack.append(entry)
            elif entry.is_file() and entry.suffix.lower() in ARTIFACT_TYPES:
                found.append(entry.relative_to(folder).as_posix())
    return sorted(found)[:MAX_ARTIFACTS]


def artifact_path(run_id: str, relative: str, home: Path | None = None) -> Path:
    """The file ``relative`` inside the run's folder, checked to stay inside it.

    Raises:
        RunNotFound: no such run.
        PermissionError: the path leaves the run's folder (``..``, an absolute path, a link that
            points out), or is not a file type the UI shows (``ARTIFACT_TYPES``).
        FileNotFoundError: no such file.
    """
    folder = run_folder(run_id, home).resolve()
    if "\0" in relative:
        raise PermissionError(f"{relative!r} is not a file name (a NUL byte)")
    try:
        target = (folder / relative).resolve()
    except (RuntimeError, OSError) as exc:  # Python 3.11 says RuntimeError for a link loop
        raise PermissionError(f"{relative!r} cannot be followed in run {run_id}'s folder (a link loop?)") from exc
    if not target.is_relative_to(folder) or target == folder:
        raise PermissionError(f"{relative!r} is outside run {run_id}'s folder")
    if target.suffix.lower() not in ARTIFACT_TYPES:
        raise PermissionError(f"{relative!r} is not an image or report the UI serves")
    if not target.is_file():
        raise FileNotFoundError(f"no file {relative!r} in run {run_id}")
    return target


#: The biggest file the UI serves from a run's folder (a report or an image, read whole).
MAX_ARTIFACT_BYTES = 64 * 1024 * 1024


def read_artifact(run_id: str, path: Path, home: Path | None = None) -> bytes:
    """The bytes of ``path`` (what ``artifact_path`` returned), opened once without following a
    link anywhere below the run's folder (``core.safe_io.read_below``): a file swapped for a link
    after the check is refused, never followed.

    Raises:
        RunNotFound: no such run.
        PermissionError: ``path`` is outside the run's folder, or is (now) a link or not a regular file.
        FileNotFoundError: it is gone.
        OSError: bigger than ``MAX_ARTIFACT_BYTES`` (``EFBIG``).
    """
    import errno

    from core.safe_io import read_below

    folder = run_folder(run_id, home).resolve()
    if not path.is_relative_to(folder) or path == folder:
        raise PermissionError(f"{str(path)!r} is outside run {run_id}'s folder")
    relative = path.relative_to(folder)
    try:
        return read_below(folder, relative, MAX_ARTIFACT_BYTES)
    except FileNotFoundError:
        raise FileNotFoundError(f"no file {str(relative)!r} in run {run_id}") from None
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            raise
        raise PermissionError(f"{str(relative)!r} in run {run_id} is a link or not a regular file: not served") from None


def evals_dir(home: Path | None = None) -> Path:
    """``$HORIZON_HOME/evals``, where ``agent eval`` writes."""
    return (home or horizon_home()) / "evals"


def list_evals(home: Path | None = None) -> list[dict[str, Any]]:
    """Every evaluation, newest first: ``eval_id``, ``finished`` and the overall scores."""
    out = []
    folders = sorted(evals_dir(home).glob("[!.]*/"), reverse=True) if evals_dir(home).is_dir() else []
    for folder in folders:
        try:
            page = eval_page(folder.name, home)
        except (RunNotFound, ValueError):
            continue
        out.append({key: page[key] for key in ("eval_id", "finished", "overall", "k", "about")})
    return out


def _about(folder: Path, results: list[dict[str, Any]]) -> dict[str, Any]:
    """What an evaluation is: its ``eval.json`` (plugin, suite, policy, attempts), else what its
    results say (their plugins and policy labels); ``started`` from the id (``YYYYmmdd-HHMMSS-...``)."""
    try:
        about = json.loads((folder / "eval.json").read_text(encoding="utf-8"))
        about = about if isinstance(about, dict) else {}
    except (OSError, ValueError):
        about = {}
    for key, field in (("plugin", "plugin"), ("policy", "label")):
        if not about.get(key):
            about[key] = ", ".join(sorted({str(r.get(field)) for r in results if r.get(field)}))
    stamp = re.match(r"(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})", folder.name)
    about["started"] = "{}-{}-{} {}:{}".format(*stamp.groups()) if stamp else ""
    suite = str(about.get("suite") or "")
    about["suite_name"] = Path(suite).name if suite else ""
    return about


def eval_page(eval_id: str, home: Path | None = None) -> dict[str, Any]:
    """One evaluation: overall, per suite and per task scores, and its episodes.

    Returns:
        ``{"eval_id", "finished" (summary.json written), "k", "overall": summary, "about": what was
        evaluated (plugin, suite, policy, started; ``eval.json`` or the results), "suites":
        {suite: summary}, "tasks": {task: scores}, "results": [EpisodeResult dicts]}``; a suite
        is the first part of a task's name (``coding/x`` in a suite of suites), else the suite
        folder's name (``eval.json``), else the task's plugin.

    Raises:
        RunNotFound: no such evaluation.
        ValueError: its files are not an evaluation's.
    """
    from core.eval.metrics import summarize

    folder = evals_dir(home) / eval_id
    if not RUN_ID.fullmatch(eval_id) or not folder.is_dir():
        raise RunNotFound(f"no evaluation {eval_id!r} in {evals_dir(home)}")
    summary_file, results_file = folder / "summary.json", folder / "results.jsonl"
    finished = summary_file.is_file()
    if finished:
        summary = json.loads(summary_file.read_text(encoding="utf-8"))
        results = summary.get("results", [])
    else:
        lines = results_file.read_text(encoding="utf-8").splitlines() if results_file.is_file() else []
        results = [json.loads(line) for line in lines if line.strip()]
        summary = None
    attempts = _attempts_per_task(results).values()
    k = summary["k"] if summary else max(attempts, default=1)  # in progress: the attempts made so far
    k = max(1, min([k, *attempts]))  # pass@k needs k attempts at every task
    overall = summarize(results, k) if results else {"tasks": {}, "k": k, "pass@1": 0.0, f"pass@{k}": 0.0, "episodes": 0,
                                                      "resolved_tasks": 0, "tasks_total": 0, "cost": 0.0, "mean_reward": None}
    about = _about(folder, results)
    suites: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        suites.setdefault(r["task"].split("/")[0] if "/" in r["task"] else about["suite_name"] or r.get("plugin") or "suite", []).append(r)
    return {"eval_id": eval_id, "finished": finished, "k": k, "overall": overall, "about": about,
            "suites": {name: summarize(rows, k) for name, rows in sorted(suites.items())}, "tasks": overall["tasks"],
            "results": sorted(results, key=lambda r: (r["task"], r.get("attempt", 0)))}


def _attempts_per_task(results: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in results:
        counts[r["task"]] = counts.get(r["task"], 0) + 1
    return counts

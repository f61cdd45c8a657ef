"""agent ui in a real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright): the runs
list, a run updating live while another process writes it, a run page with its diff, an
evaluation page from a real `agent eval`, a 3D preview and a finance chart shown inline.

HORIZON_UI_SCREENSHOTS=docs/ui saves the pages as PNG there (how docs/ui/ was made).

Moved from tests/core/ (issue 17): its pages show a coding run, a coding eval, a 3D preview and a
finance chart (issue 18's Must-show), so it is an integration test; the coding run it starts is
``scripted_run`` below, which tests/core/test_ui.py used to share before it moved onto ``notes``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium (apt-get install chromium; setup.sh does)")
playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")
SHOTS = os.environ.get("HORIZON_UI_SCREENSHOTS")
REPO = Path(__file__).resolve().parents[2]


def scripted_run(home: Path, task: str = "fix NPE in user module") -> str:
    """A real `agent run` of the scripted Python fix into ``home``; returns its run id."""
    env = {**os.environ, "HORIZON_HOME": str(home)}
    before = set((home / "runs").glob("*")) if (home / "runs").is_dir() else set()
    done = subprocess.run(
        [sys.executable, "-c", "from core.cli import main; main()", "run", "coding", task, "--repo", str(REPO / "examples/python-user-service"),
         "--policy", "scripted", "--script", str(REPO / "examples/scripts/fix-python-npe.jsonl")],
        check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (new,) = set((home / "runs").glob("*")) - before
    return new.name


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("horizon")


@pytest.fixture(scope="module")
def run_id(home) -> str:
    """A real scripted coding run, with a 3D preview and a finance report placed in its workspace
    (committed example outputs: the plugins write them to these same paths)."""
    run = scripted_run(home)
    workspace = home / "runs" / run / "workspace"
    (workspace / "renders").mkdir()
    shutil.copy(REPO / "examples/threed/previews/low-table.png", workspace / "renders" / "preview.png")
    shutil.copytree(REPO / "examples/finance/report", workspace / "report")
    return run


@pytest.fixture(scope="module")
def eval_id(home) -> str:
    """A real `agent eval`: one task of the coding suite, two attempts with the reference policy."""
    env = {**os.environ, "HORIZON_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", "from core.cli import main; main()", "eval", "coding", "suites/coding", "--task", "parse-1.20.1*",
         "--attempts", "2", "--policy", "reference", "--backend", "processes", "--workers", "1"],
        check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (folder,) = (home / "evals").iterdir()
    return folder.name


@pytest.fixture(scope="module")
def server(home) -> str:
    """agent ui's app under uvicorn in a thread; yields its base URL."""
    import uvicorn

    from core.ui.app import create_app

    config = uvicorn.Config(create_app(home, poll_s=0.3), host="127.0.0.1", port=0, log_level="warning")
    serving = uvicorn.Server(config)
    thread = threading.Thread(target=serving.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not serving.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    port = serving.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    serving.should_exit = serving.force_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    tab = context.new_page()
    yield tab
    context.close()


def shot(page, name: str, full: bool = False) -> None:
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=full)


def test_the_runs_list(page, server, run_id):
    page.goto(server + "/")
    row = page.locator(f'tr[data-run="{run_id}"]')
    playwright_api.expect(row).to_contain_text("fix NPE in user module")
    playwright_api.expect(row.locator(".s-submitted")).to_be_visible()
    playwright_api.expect(row.locator("td").nth(6)).to_have_text("1.000")  # reward
    shot(page, "runs")


def test_a_run_page_with_its_diff(page, server, run_id):
    page.goto(f"{server}/runs/{run_id}")
    playwright_api.expect(page.locator("article.step")).to_have_count(6)
    patch = page.locator("section.patch pre.diff")
    playwright_api.expect(patch.locator("span.add")).to_contain_text(['        nickname = (user.nickname or "").strip()'])
    playwright_api.expect(patch.locator("span.del")).to_contain_text(["        nickname = user.nickname.strip()"])
    added = patch.locator("span.add").first
    assert added.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(230, 255, 236)"  # green
    assert patch.evaluate("e => getComputedStyle(e).fontFamily").lower().find("mono") >= 0
    observation = page.locator("details.observation").first
    assert not observation.evaluate("e => e.open")  # folded until clicked
    observation.locator("summary").click()
    assert observation.evaluate("e => e.open")
    playwright_api.expect(page.locator("section.verdict")).to_contain_text("solved")
    page.locator("details.observation").nth(1).locator("summary").click()
    shot(page, "run", full=True)


def test_a_3d_preview_and_a_finance_chart_inline(page, server, run_id):
    page.goto(f"{server}/runs/{run_id}")
    for path in ("workspace/renders/preview.png", "workspace/report/charts/3M_2018_10K.png"):
        image = page.locator(f'img[alt="{path}"]')
        playwright_api.expect(image).to_be_visible()
        image.scroll_into_view_if_needed()
        page.wait_for_function("e => e.complete && e.naturalWidth > 100", arg=image.element_handle())
    report = page.frame_locator('iframe[title="workspace/report/report.html"]')
    playwright_api.expect(report.locator("body")).to_contain_text("3M")
    page.evaluate("document.querySelector('section.artifacts').scrollIntoView()")
    shot(page, "images")


def test_an_evaluation_page(page, server, eval_id):
    page.goto(server + "/evals")
    listed = page.locator("table.grid tbody tr", has_text=eval_id)
    for shown in ("coding", "reference", "finished"):  # suite, plugin, policy: two evaluations can be told apart
        playwright_api.expect(listed).to_contain_text(shown)
    shot(page, "evals")
    page.click(f"text={eval_id}")
    playwright_api.expect(page.locator("h1")).to_contain_text("finished")
    task = page.locator("table.tasks tbody tr").first
    playwright_api.expect(task).to_contain_text("parse-1.20.1")
    cells = task.locator("td")
    assert [cells.nth(i).inner_text() for i in (1, 2, 3, 4)] == ["2", "2", "1.000", "1.000"]  # attempts, resolved, pass@1, pass@2
    playwright_api.expect(page.locator("table.suites")).to_contain_text("coding")
    shot(page, "eval")


def test_a_live_run_updates_without_reloading(page, server, home):
    """A real scripted run started in another process after the page opened: it appears on the
    runs list as running, its page shows it live, and both turn to submitted by themselves."""
    page.goto(server + "/")
    page.evaluate("window.notReloaded = true")
    known = set(page.locator("tr.run-row").evaluate_all("rows => rows.map(r => r.dataset.run)"))
    writer = threading.Thread(target=scripted_run, args=(home,), daemon=True)
    writer.start()
    running = page.locator("tr.run-row:has(.s-running)")
    running.wait_for(timeout=120_000)
    new_id = running.first.get_attribute("data-run")
    assert new_id not in known and page.evaluate("window.notReloaded")
    page.click(f'a[href="/runs/{new_id}"]')
    playwright_api.expect(page.locator("#run-body h1 .s-live")).to_be_visible()
    steps_at_first = int(page.locator("#step-count").inner_text())
    page.wait_for_function("() => Number(document.querySelector('#step-count').textContent) >= 2"
                           " || document.querySelector('#run-body h1 .s-submitted')", timeout=240_000)
    shot(page, "live", full=True)  # mid-run, as a reader sees it
    page.evaluate("window.notReloaded = true")
    playwright_api.expect(page.locator("#run-body h1 .s-submitted")).to_be_visible(timeout=240_000)
    assert page.evaluate("window.notReloaded")  # changed by server-sent events, not a reload
    assert int(page.locator("#step-count").inner_text()) == 6 > steps_at_first
    writer.join(60)


def test_a_patch_reviewed_and_applied_and_a_run_queued_from_the_browser(page, server, home, tmp_path, monkeypatch):
    """The buttons: a finished run's patch is reviewed (nothing changes) and applied on confirmation;
    the start form queues a run for `agent server` and says so."""
    from core.plugin import Task
    from core.policy import ScriptedPolicy
    from core.runner import Run
    from core.state import Limits, Pricing

    repo = tmp_path / "repo"
    shutil.copytree(REPO / "examples/python-user-service", repo)
    monkeypatch.chdir(tmp_path)  # the UI (no agent server has recorded its roots) starts runs of repositories under its folder
    run = Run.start(Task(plugin="coding", instruction="fix NPE in user module", repo=repo),
                    ScriptedPolicy.from_file(REPO / "examples/scripts/fix-python-npe.jsonl"),
                    policy_config={"kind": "scripted", "script": str(REPO / "examples/scripts/fix-python-npe.jsonl")},
                    limits=Limits(max_steps=20), pricing=Pricing(), home=home)  # fmt: skip
    try:
        run_id = run.execute().run_id
    finally:
        run.close()
    page.goto(f"{server}/runs/{run_id}")
    page.click("#apply-run")
    playwright_api.expect(page.locator("pre.review")).to_contain_text("users/service.py")
    assert "user.nickname or" not in (repo / "users/service.py").read_text()
    shot(page, "apply-review")
    page.click("#confirm-apply")
    playwright_api.expect(page.locator("#note")).to_contain_text(f"applied the patch of run {run_id}")
    assert '(user.nickname or "").strip()' in (repo / "users/service.py").read_text()

    page.goto(server + "/")
    page.click("details.start summary")
    page.fill('input[name="task"]', "fix NPE in user module")
    page.fill('input[name="repo"]', str(repo))
    page.select_option('select[name="policy"]', "scripted")
    script = Path(shutil.copy(REPO / "examples/scripts/fix-python-npe.jsonl", tmp_path / "fix-python-npe.jsonl"))  # under the root too
    page.fill('input[name="script"]', str(script))
    page.click("#start-run")
    playwright_api.expect(page.locator("#note")).to_contain_text("is queued; agent server runs it")
    playwright_api.expect(page.locator("table.queued")).to_contain_text("queued")
    shot(page, "start")

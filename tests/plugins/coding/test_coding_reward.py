"""The coding reward: fail-to-pass share gated by pass-to-pass and untouched tests."""

from plugins.coding.reward import edited_test_files, grade

BEFORE = {"t1": "failed", "t2": "error", "t3": "passed", "t4": "skipped"}


def test_share_of_fixed_targets():
    v = grade(BEFORE, {"t1": "passed", "t2": "failed", "t3": "passed", "t4": "skipped"}, [])
    assert v.reward == 0.5 and not v.correct
    v = grade(BEFORE, {"t1": "passed", "t2": "passed", "t3": "passed"}, [])
    assert v.reward == 1.0 and v.correct and v.components["fail_to_pass"].detail["fixed"] == ["t1", "t2"]


def test_a_broken_test_or_an_edited_test_file_gives_zero():
    v = grade(BEFORE, {"t1": "passed", "t2": "passed", "t3": "failed"}, [])
    assert v.reward == 0.0 and "t3" in v.summary and v.components["pass_to_pass"].value == 0.0
    v = grade(BEFORE, {"t1": "passed", "t2": "passed", "t3": "passed"}, ["tests/test_a.py"])
    assert v.reward == 0.0 and v.components["tests_untouched"].value == 0.0


def test_nothing_ran_at_the_end_is_never_a_success():
    assert grade({}, {}, []).reward == 0.0  # no test suite at all
    v = grade({"t1": "passed"}, {}, [])  # the build broke
    assert v.reward == 0.0 and "nothing verified" in v.summary


def test_edited_files_compare_digests():
    assert edited_test_files({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"}) == ["b", "c"]


def test_declared_fail_to_pass_and_pass_to_pass_replace_the_baseline_guess():
    before = {"t::target": "failed", "t::flaky_unrelated": "failed", "t::kept": "passed", "t::other": "passed"}
    after = {"t::target": "passed", "t::flaky_unrelated": "failed", "t::kept": "passed", "t::other": "failed"}
    guessed = grade(before, after, [])
    assert guessed.reward == 0.0  # every test failing at the start counted, every passing one kept
    declared = grade(before, after, [], fail_to_pass=["t::target"], pass_to_pass=["t::kept"])
    assert (declared.reward, declared.correct) == (1.0, True)
    assert declared.components["fail_to_pass"].detail["targets"] == ["t::target"]
    broken = grade(before, {**after, "t::kept": "failed"}, [], fail_to_pass=["t::target"], pass_to_pass=["t::kept"])
    assert broken.reward == 0.0 and "t::kept" in broken.summary


def test_a_green_suite_verifies_nothing_so_a_run_that_changed_nothing_is_not_rewarded():
    green = {"t1": "passed", "t2": "passed"}
    verdict = grade(green, dict(green), [])
    assert verdict.reward is None and not verdict.applicable and "not verified" in verdict.summary
    # breaking a test or touching the checker still scores 0: a negative signal, not "nothing to judge"
    assert grade(green, {"t1": "passed", "t2": "failed"}, []).reward == 0.0
    assert grade(green, dict(green), ["tests/test_x.py"]).reward == 0.0
    assert grade(green, dict(green), [], checker_changes=[".pytest.ini: ..."]).reward == 0.0


def test_only_the_pytest_sections_of_shared_configuration_files_count(tmp_path):
    from plugins.coding.checker_inputs import checker_changes

    start, graded = tmp_path / "start", tmp_path / "graded"
    for root, version, addopts in ((start, "1.0", ""), (graded, "1.1", "")):
        root.mkdir()
        (root / "setup.cfg").write_text(f"[metadata]\nversion = {version}\n[tool:pytest]\naddopts = -q{addopts}\n")
    starting = {"setup.cfg": ("100644", (start / "setup.cfg").read_bytes())}  # as core.workspace.start_files gives it
    assert checker_changes(starting, graded, ["setup.cfg"], set()) == []  # a version bump is fine
    (graded / "setup.cfg").write_text("[metadata]\nversion = 1.1\n[tool:pytest]\naddopts = -q -p flip\n")
    assert "setup.cfg" in checker_changes(starting, graded, ["setup.cfg"], set())[0]


def test_eval_counts_what_the_reward_judged_when_a_modules_tests_are_all_skipped():
    """A module id whose tests were all skipped at the end: the coding reward says it does not
    pass, and ``agent eval`` (which once re-graded from ``detail["after"]`` and said it did) agrees."""
    from core.eval.runner import declared_tests_outcome

    before = {"tests/test_m.py": "error", "t::kept": "passed"}
    after = {"tests/test_m.py::test_a": "skipped", "tests/test_m.py::test_b": "skipped", "t::kept": "passed"}
    v = grade(before, after, [], fail_to_pass=["tests/test_m.py"], pass_to_pass=["t::kept"])
    assert v.correct is False
    assert declared_tests_outcome(v, ["tests/test_m.py"], ["t::kept"]) == ([], [])

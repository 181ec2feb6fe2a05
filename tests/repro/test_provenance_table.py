"""RESULTS.md's provenance section (fltrust.repro.provenance_table): commits, BLAS, threads and whether
the training code changed since, per group of results; old results read 'not recorded'."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from fltrust.repro.provenance_table import COLUMNS, provenance_cells, provenance_frame, training_code_cell, unrecorded

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(cwd, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def record(commit, *, blas="openblas Haswell", threads=1, dirty=False):
    return {"code": {"source": "git", "commit": commit, "dirty": dirty},
            "blas": {"numpy": blas, "torch": "mkl 2024.2", "torch_cpu_capability": "AVX2"},
            "threads": {"torch": threads, "blas": threads}, "libraries": {"torch": "2.14.1", "numpy": "2.4.6"},
            "device": {"name": "cpu"}}


def result(name, *records):
    run_ids = [f"{name}-h-s{i}-r{i}" for i in range(len(records))]
    return {"condition": name, "run_ids": run_ids,
            "provenance": {"runs": dict(zip(run_ids, records))}}


@pytest.fixture
def checkout(tmp_path):
    """A checkout with two commits: the second changes an engine module."""
    root = tmp_path / "repo"
    (root / "fltrust" / "fl").mkdir(parents=True)
    (root / "fltrust" / "__init__.py").write_text("")
    (root / "fltrust" / "fl" / "engine.py").write_text("STEP = 1\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    first = git(root, "rev-parse", "HEAD")
    (root / "fltrust" / "fl" / "engine.py").write_text("STEP = 2\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "second")
    return root, first, git(root, "rev-parse", "HEAD")


def test_a_result_without_provenance_reads_not_recorded():
    cells = provenance_cells([None, None])
    assert cells[0] == "not recorded" and cells[-1] == "unknown" and len(cells) == len(COLUMNS)


@needs_git
def test_training_code_since_the_recorded_commit(checkout):
    root, first, second = checkout
    assert training_code_cell([record(second)], root) == "unchanged"
    assert training_code_cell([record(first)], root) == "**changed**: 1 file(s) (`fltrust/fl/engine.py`)"
    assert training_code_cell([record(second), None], root) == "unknown"  # one repeat not recorded
    assert training_code_cell([record("f" * 40)], root) == "unknown"  # a commit this repository lacks


@needs_git
def test_results_of_one_group_share_a_row_only_with_the_same_provenance(checkout):
    # Prepare: two conditions made at HEAD with the same kernels, one at the older commit with others
    root, first, second = checkout
    same_a = result("fedavg_x_1c_iid", record(second), record(second))
    same_b = result("ditto_x_1c_iid", record(second))
    other = result("qfedavg_x_1c_iid", record(first, blas="openblas SkylakeX", threads=2, dirty=True))

    # Execute
    frame = provenance_frame([(["X"], [same_a, same_b, other])], ["dataset", "conditions"], root=root)

    # Assert: one row for the two alike, one for the other, each naming its commit, kernels and threads
    rows = frame.to_dict(orient="records")
    assert [r["conditions"] for r in rows] == ["ditto_x_1c_iid, fedavg_x_1c_iid", "qfedavg_x_1c_iid"]
    assert rows[0]["commit"] == second[:10] and rows[0]["training code since"] == "unchanged"
    assert rows[0]["BLAS (numpy; torch)"] == "openblas Haswell; mkl 2024.2 AVX2"
    assert rows[1]["commit"] == first[:10] + "+dirty" and rows[1]["threads (torch, BLAS)"] == "2, 2"
    assert rows[1]["training code since"].startswith("**changed**")


def test_repeats_made_by_two_commits_list_both():
    cells = provenance_cells([record("a" * 40), record("b" * 40), None])
    assert cells[0] == f"{'a' * 10}, {'b' * 10}, not recorded"


def test_both_papers_render_the_section_for_old_results():
    from fltrust.repro.fairness.report import provenance_markdown

    text = "\n".join(provenance_markdown([{"condition": "fedavg_nslkdd_100c_iid", "mode": "faithful",
                                           "run_ids": ["r0"]}]))
    assert "| NSL-KDD (100C) | faithful | fedavg_nslkdd_100c_iid | not recorded | – | – | – | – | unknown |" in text
    assert "fltrust repro verify" in text
    assert "still to rerun (from a worktree pinned to a commit" in text and ": 1 result(s), 0.0 h of run time" in text


def test_results_still_to_rerun_and_their_committed_run_time():
    # Prepare: one result fully recorded, one with a repeat that predates provenance, one with none
    current = {**result("a", record("a" * 40)), "seconds_per_run": [100.0]}
    mixed = {**result("b", record("a" * 40), None), "seconds_per_run": [1800.0, 5400.0]}
    old = {"condition": "c", "run_ids": ["c-r0"], "seconds_per_run": [900.0, 900.0, 1800.0]}

    # Execute
    stale = unrecorded([current, old, mixed])

    # Assert: a and b's recorded run leave it; (1800 + 5400 + 900 + 900 + 1800) s = 3.0 h
    assert stale == {"names": ["b", "c"], "hours": 3.0}


@needs_git
def test_a_changed_result_verified_bit_identical_after_the_change_says_so(checkout):
    # Prepare: a result made at the first commit; verifications at the second (HEAD's training code)
    from fltrust.repro.provenance_table import verified_since

    root, first, second = checkout
    frame = provenance_frame([(["X"], [result("a_x_1c_iid", record(first)), result("b_x_1c_iid", record(first))])],
                             ["dataset", "conditions"], root=root)
    same = {"repeat": 0, "rounds": 3, "commit": second[:10], "identical": True}

    # Execute
    cells = {label: verified_since(frame, verified, root)["training code since"][0] for label, verified in {
        "current": {"a_x_1c_iid": same},
        "different": {"a_x_1c_iid": {**same, "identical": False}},
        "before the change": {"a_x_1c_iid": {**same, "commit": first[:10]}},
        "another result's": {"c_x_1c_iid": same}}.items()}

    # Assert: only an identical rerun at a commit with HEAD's training code is named, with what it covered
    assert cells["current"] == ("**changed**: 1 file(s) (`fltrust/fl/engine.py`); rerun bit-identical by "
                                f"`a_x_1c_iid` (repeat 0, rounds 1-3) at {second[:10]}, which has HEAD's training code")
    assert {cells[k] for k in ("different", "before the change", "another result's")} == {
        "**changed**: 1 file(s) (`fltrust/fl/engine.py`)"}

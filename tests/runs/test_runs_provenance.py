"""The provenance record (fltrust.runs.provenance): its fields, git state in a temporary checkout, no git."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from fltrust.runs.provenance import (
    NOT_RECORDED,
    SOURCE_GIT,
    SOURCE_INSTALLED,
    changed_since,
    code_state,
    commits_since,
    describe,
    differences,
    provenance,
    short_commit,
)

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path):
    """A git checkout with a package ``fltrust/`` (one engine module, one report module) and a README."""
    root = tmp_path / "repo"
    (root / "fltrust" / "fl").mkdir(parents=True)
    (root / "fltrust" / "repro").mkdir()
    (root / "fltrust" / "__init__.py").write_text("")
    (root / "fltrust" / "fl" / "engine.py").write_text("STEP = 1\n")
    (root / "fltrust" / "repro" / "report.py").write_text("TITLE = 'a'\n")
    (root / "README.md").write_text("hello\n")
    (root / "constraints.txt").write_text("torch==1\n")
    git(root, "init", "-q")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    return root


def commit_all(root, message):
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD")


def test_the_record_names_code_libraries_blas_threads_device_and_platform():
    # Execute
    import numpy
    import torch

    from fltrust.blas import numpy_blas

    record = provenance("cpu")

    # Assert: every section, read from this process
    assert record["schema"] == 1 and record["fltrust"]
    assert record["libraries"]["torch"] == torch.__version__.split("+")[0]
    assert record["libraries"]["numpy"] == numpy.__version__ == record["blas"]["numpy_version"]
    assert record["blas"]["numpy"] == numpy_blas()
    assert record["blas"]["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert record["threads"]["torch"] == torch.get_num_threads()
    assert record["device"] == {"name": "cpu"}
    assert record["platform"]["python"] and record["platform"]["cpu_count"]
    assert record["code"]["source"] in (SOURCE_GIT, SOURCE_INSTALLED)
    json.dumps(record, allow_nan=False)  # plain data


@needs_git
def test_a_clean_checkout_records_its_commit(checkout):
    state = code_state(checkout / "fltrust")
    assert state == {"source": SOURCE_GIT, "commit": git(checkout, "rev-parse", "HEAD"), "dirty": False,
                     "dirty_files": []}


@needs_git
def test_dirty_tree_is_detected_and_the_files_named(checkout):
    # files outside the package (a scratch file, an edited README or result a batch rewrites) are not code
    (checkout / "notes.txt").write_text("scratch")
    (checkout / "README.md").write_text("edited\n")
    assert code_state(checkout / "fltrust")["dirty"] is False

    # an edited or untracked module of the package, and an edited dependency pin, are
    (checkout / "fltrust" / "fl" / "engine.py").write_text("STEP = 5\n")
    (checkout / "fltrust" / "new_module.py").write_text("")
    state = code_state(checkout / "fltrust")
    assert state["dirty"] is True
    assert state["dirty_files"] == ["fltrust/fl/engine.py", "fltrust/new_module.py"]
    assert short_commit({"code": state}) == state["commit"][:10] + "+dirty"


@needs_git
def test_an_edited_dependency_pin_is_dirty(checkout):
    (checkout / "constraints.txt").write_text("torch==2\n")
    assert code_state(checkout / "fltrust")["dirty_files"] == ["constraints.txt"]


def test_no_checkout_is_recorded_as_installed(tmp_path):
    # a package folder outside any git work tree (an installed wheel)
    package = tmp_path / "site-packages" / "fltrust"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    assert code_state(package) == {"source": SOURCE_INSTALLED, "commit": None, "dirty": None, "dirty_files": []}
    record = provenance("cpu", package=package)
    assert record["code"]["commit"] is None and short_commit(record) == "installed"


@needs_git
def test_a_package_inside_some_other_checkout_is_not_that_checkout(checkout):
    # a virtual environment inside a checkout: its site-packages/fltrust is not tracked there
    package = checkout / ".venv" / "fltrust"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    assert code_state(package)["source"] == SOURCE_INSTALLED


def test_no_git_binary_never_crashes(checkout, monkeypatch):
    monkeypatch.setenv("PATH", "")
    assert code_state(checkout / "fltrust")["source"] == SOURCE_INSTALLED
    assert changed_since("abc", checkout) is None
    assert commits_since("README.md", checkout) is None


@needs_git
def test_changed_since_lists_only_training_code(checkout):
    # Prepare: a commit, then changes to an engine module, a report module and the README
    first = git(checkout, "rev-parse", "HEAD")
    (checkout / "fltrust" / "fl" / "engine.py").write_text("STEP = 2\n")
    (checkout / "fltrust" / "repro" / "report.py").write_text("TITLE = 'b'\n")
    (checkout / "README.md").write_text("more\n")
    second = commit_all(checkout, "second")

    # Assert: reports and docs are not training code; unknown commits cannot be compared
    assert changed_since(first, checkout) == ["fltrust/fl/engine.py"]
    assert changed_since(second, checkout) == []
    assert changed_since("0" * 40, checkout) is None and changed_since(None, checkout) is None


@needs_git
def test_commits_since_bounds_a_file_without_provenance(checkout):
    (checkout / "result.json").write_text("{}")
    written = commit_all(checkout, "result")
    (checkout / "fltrust" / "fl" / "engine.py").write_text("STEP = 3\n")
    engine = commit_all(checkout, "engine: faster step")
    (checkout / "README.md").write_text("docs\n")
    commit_all(checkout, "docs")

    commit, commits = commits_since("result.json", checkout)
    assert commit == written and commits == [f"{engine[:7]} engine: faster step"]
    assert commits_since("never-committed.json", checkout) is None


def test_differences_name_each_cause():
    base = {"code": {"commit": "a" * 40, "dirty": False}, "blas": {"numpy": "openblas Haswell", "torch": "mkl"},
            "threads": {"torch": 1, "blas": 1}, "libraries": {"torch": "2.14.1", "numpy": "2.4.6"},
            "device": {"name": "cpu"}, "platform": {"cpu": "x", "python": "3.11.7", "machine": "x86_64"}}
    other = json.loads(json.dumps(base))
    assert differences(base, other) == []
    other["code"] = {"commit": "b" * 40, "dirty": True}
    other["blas"]["numpy"] = "openblas SkylakeX"
    other["threads"]["torch"] = 2
    other["libraries"]["numpy"] = "2.5.0"
    found = differences(base, other)
    assert found == [f"other commit: {'a' * 10}, now {'b' * 10}+dirty",
                     "other BLAS kernel: numpy BLAS openblas Haswell, now openblas SkylakeX",
                     "other threads: torch 1, now 2",
                     "other library version: numpy 2.4.6, now 2.5.0"]
    assert differences(None, base)[0].startswith(NOT_RECORDED)
    assert describe(None) == NOT_RECORDED and "openblas Haswell" in describe(base)


def test_a_run_summary_holds_the_record_outside_its_run_id(tmp_path):
    # Prepare: a seconds-long run
    from fltrust.config import ExperimentConfig
    from fltrust.experiment import run_experiment
    from fltrust.runs import audit_run

    cfg = ExperimentConfig.tiny(training={"rounds": 1})

    # Execute
    record = run_experiment(cfg, out_dir=tmp_path)

    # Assert: summary.json has the record; the run id is the config's; the audit covers the summary
    assert record.run_id == cfg.run_id()
    recorded = record.summary["provenance"]
    assert recorded["device"]["name"] == "cpu" and recorded["threads"]["torch"] == 1
    assert set(recorded) >= {"code", "libraries", "blas", "threads", "platform"}
    assert audit_run(record.path).ok

"""The CLI's fault table: every user-facing failure is one or two stderr lines and a documented code.

Each test is one probe a newcomer hit, with the one line it must get. The exit codes are those of
``fltrust.cli`` (2 usage/config/data, 3 filesystem, 4 run folder, 70 internal, 130 interrupted).
"""

from __future__ import annotations

import dataclasses
import errno
import glob
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from fltrust import cli
from fltrust.cli import main

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """A private parsed-data cache, and no strict mode leaking in from the caller's environment."""
    monkeypatch.setenv("FLTRUST_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("FLTRUST_STRICT", raising=False)


def write_config(tmp_path: Path, **sections) -> Path:
    cfg = {
        "data": {"name": "synthetic_nsl_kdd", "synthetic_samples": 120},
        "partition": {"num_clients": 3},
        "strategy": {"clients_per_round": 2},
        "training": {"rounds": 1},
        "run": {"name": "faults", "progress": False},
    }
    for key, value in sections.items():
        cfg[key] = {**cfg.get(key, {}), **value}
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def one_line_error(capsys) -> str:
    """stderr of the last call: at most two lines, no traceback; returns it."""
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if not line.startswith("fltrust: warning:")]
    assert 1 <= len(lines) <= 2, err
    assert "Traceback" not in err, err
    return err


def fail_run_with(monkeypatch, exc: BaseException) -> None:
    """Make the run command raise ``exc`` (after config validation) without training anything."""
    import fltrust.experiment

    def boom(*args, **kwargs):
        raise exc

    monkeypatch.setattr(fltrust.experiment, "run_experiment", boom)


# -- configuration ----------------------------------------------------------------------------

def test_malformed_yaml_file_names_file_line_and_column(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("training:\n  rounds: [1\nrun: {}\n")

    code = main(["run", str(path)])

    assert code == 2
    err = one_line_error(capsys)
    assert f"{path}:3:4: invalid YAML" in err


def test_malformed_set_value_names_the_override(tmp_path, capsys):
    code = main(["run", str(write_config(tmp_path)), "--set", "training.rounds=[1"])

    assert code == 2
    assert "--set 'training.rounds=[1'" in one_line_error(capsys)


@pytest.mark.parametrize("override, field", [
    ("privacy.target_epsilon=.nan", "privacy.target_epsilon=nan"),
    ("partition.alpha=.inf", "partition.alpha=inf"),
    ("training.learning_rate=-.inf", "training.learning_rate=-inf"),
    ("training.learning_rate=nan", "training.learning_rate=nan"),  # the string 'nan' parses as a float
])
def test_nan_and_inf_are_rejected(tmp_path, capsys, override, field):
    code = main(["run", str(write_config(tmp_path)), "--set", override, "--out", str(tmp_path / "runs")])

    assert code == 2
    err = one_line_error(capsys)
    assert field in err and "finite" in err
    assert not (tmp_path / "runs").exists()


def test_model_that_does_not_fit_the_dataset_fails_before_any_folder(tmp_path, capsys):
    code = main(["run", str(write_config(tmp_path)), "--set", "model.name=cifar_cnn", "--out", str(tmp_path / "runs")])

    assert code == 2
    err = one_line_error(capsys)
    assert "model.name='cifar_cnn' does not fit data.name='synthetic_nsl_kdd'" in err and "nsl_kdd_mlp" in err
    assert not (tmp_path / "runs").exists()


# -- filesystem -------------------------------------------------------------------------------

def test_out_under_a_regular_file(tmp_path, capsys):
    blocker = tmp_path / "afile"
    blocker.write_text("")

    code = main(["run", str(write_config(tmp_path)), "--out", str(blocker / "runs")])

    assert code == 3
    err = one_line_error(capsys)
    assert f"{blocker} is a regular file, not a folder" in err and "--out" in err


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_out_under_proc_is_a_filesystem_error(tmp_path, capsys):
    # before: exit 2 ("no such file or folder"), as if a usage error
    code = main(["run", str(write_config(tmp_path)), "--out", "/proc/fltrust-nowhere/runs"])

    assert code == 3
    err = one_line_error(capsys)
    assert "cannot create /proc/fltrust-nowhere" in err and "pass --out a folder on a writable disk" in err


def test_a_missing_input_file_stays_a_usage_error(tmp_path, capsys):
    assert main(["run", str(tmp_path / "absent.yaml"), "--out", str(tmp_path / "runs")]) == 2
    one_line_error(capsys)


@pytest.mark.parametrize("exc, words", [
    (PermissionError(errno.EACCES, "Permission denied", "/ro/runs/x/config.yaml"), "permission denied"),
    (OSError(errno.EROFS, "Read-only file system", "/ro/runs/x/config.yaml"), "read-only file system"),
])
def test_unwritable_out(tmp_path, capsys, monkeypatch, exc, words):
    fail_run_with(monkeypatch, exc)

    code = main(["run", str(write_config(tmp_path)), "--out", "/ro/runs"])

    assert code == 3
    err = one_line_error(capsys)
    assert "/ro/runs/x/config.yaml" in err and words in err and "--out" in err


def test_full_disk_names_the_out_folder(tmp_path, capsys, monkeypatch):
    fail_run_with(monkeypatch, OSError(errno.ENOSPC, "No space left on device"))  # write() has no filename

    code = main(["run", str(write_config(tmp_path)), "--out", str(tmp_path / "runs")])

    assert code == 3
    err = one_line_error(capsys)
    assert "no space left on device" in err and str(tmp_path / "runs") in err


# -- data -------------------------------------------------------------------------------------

@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 truncated"], ids=["empty", "truncated"])
def test_unreadable_cifar_npz_names_the_file_and_says_refetch(tmp_path, capsys, content):
    npz = tmp_path / "data" / "cifar10" / "subset.npz"
    npz.parent.mkdir(parents=True)
    npz.write_bytes(content)
    config = write_config(tmp_path, data={"name": "cifar10"}, model={"name": "cifar_cnn"})

    code = main(["run", str(config), "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "runs")])

    assert code == 2
    err = one_line_error(capsys)
    assert str(npz) in err and "re-fetch" in err


@pytest.fixture
def official_kdd(tmp_path, monkeypatch):
    """A tiny NSL-KDD folder whose KDDTrain+.txt the registry 'knows' (its sha256 is registered)."""
    from fltrust.data import SPECS

    line = ",".join(["0", "tcp", "http", "SF"] + ["0"] * 37 + ["normal", "20"])
    attack = ",".join(["0", "udp", "private", "S0"] + ["1"] * 37 + ["neptune", "15"])
    folder = tmp_path / "data" / "nsl_kdd"
    folder.mkdir(parents=True)
    train = folder / "KDDTrain+.txt"
    train.write_text("\n".join([line, attack] * 20) + "\n")
    (folder / "KDDTest+.txt").write_text("\n".join([line, attack] * 5) + "\n")
    known = hashlib.sha256(train.read_bytes()).hexdigest()
    monkeypatch.setitem(SPECS, "nsl_kdd", dataclasses.replace(SPECS["nsl_kdd"], known_sha256={"KDDTrain+.txt": known}))
    return folder, known


def test_truncated_known_file_warns_and_strict_fails(tmp_path, capsys, official_kdd):
    folder, known = official_kdd
    train = folder / "KDDTrain+.txt"
    train.write_text("\n".join(train.read_text().splitlines()[:30]) + "\n")  # cut at a line boundary
    config = write_config(tmp_path, data={"name": "nsl_kdd"})
    args = ["run", str(config), "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "runs")]

    assert main(args + ["--strict"]) == 2
    err = one_line_error(capsys)
    assert str(train) in err and known in err and hashlib.sha256(train.read_bytes()).hexdigest() in err
    assert "FLTRUST_STRICT" not in os.environ  # --strict does not leak out of main

    assert main(args) == 0
    warning = capsys.readouterr().err
    assert f"fltrust: warning: {train}: sha256" in warning and known in warning


def test_data_info_strict_fails_on_a_checksum_mismatch(tmp_path, capsys, official_kdd):
    folder, known = official_kdd
    assert main(["data", "info", "--json", "--strict", "--data-dir", str(tmp_path / "data")]) == 0
    capsys.readouterr()

    (folder / "KDDTrain+.txt").write_text("0,tcp\n")
    code = main(["data", "info", "--json", "--strict", "--data-dir", str(tmp_path / "data")])

    captured = capsys.readouterr()
    assert code == 2
    assert "fltrust: error:" in captured.err and "KDDTrain+.txt: sha256" in captured.err and known in captured.err


# -- run folder -------------------------------------------------------------------------------

def test_run_folder_errors_exit_4(tmp_path, capsys, monkeypatch):
    from fltrust.runs import KEEP_THE_FOLDER, RunFolderError

    message = f"{tmp_path}/runs/x/rounds.jsonl:3 is corrupt (JSONDecodeError); {KEEP_THE_FOLDER}"
    fail_run_with(monkeypatch, RunFolderError(message))

    assert main(["run", str(write_config(tmp_path))]) == 4
    assert one_line_error(capsys).strip() == f"fltrust: error: {message}"


# -- interrupt and internal errors ------------------------------------------------------------

def test_keyboard_interrupt_is_one_line_with_exit_130(tmp_path, capsys, monkeypatch):
    fail_run_with(monkeypatch, KeyboardInterrupt())

    assert main(["run", str(write_config(tmp_path))]) == 130
    assert one_line_error(capsys).strip() == "fltrust: interrupted; rerun the same command to resume"


def test_interrupt_with_a_round_says_which(tmp_path, capsys, monkeypatch):
    class RunInterrupted(KeyboardInterrupt):
        round = 3

    fail_run_with(monkeypatch, RunInterrupted())

    assert main(["run", str(write_config(tmp_path))]) == 130
    assert "interrupted after round 3; rerun the same command to resume" in one_line_error(capsys)


def test_an_interrupted_command_does_not_wait_for_a_stuck_library_thread(tmp_path):
    # Flower's ServerApp thread can outlive a Ctrl-C, waiting for a reply that never comes; the
    # command line must still exit with 130 after its grace period, with its one line printed
    script = (
        "import sys, threading\n"
        "from fltrust import cli\n"
        "stuck = threading.Event()\n"
        "threading.Thread(target=stuck.wait, name='stuck-library-thread').start()  # non-daemon, never set\n"
        "cli.leave_lingering_threads(0, grace_s=0.1)  # not an interrupt: returns\n"
        "print('fltrust: interrupted; rerun the same command to resume', file=sys.stderr)\n"
        "cli.leave_lingering_threads(cli.EXIT_INTERRUPTED, grace_s=0.5)\n"
        "print('not reached')\n"
    )
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 130 and time.monotonic() - start < 30
    assert done.stderr.strip() == "fltrust: interrupted; rerun the same command to resume" and done.stdout == ""


def test_an_in_process_main_returns_without_the_exit_wait(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "leave_lingering_threads", lambda code: pytest.fail("called for an in-process main(argv)"))
    fail_run_with(monkeypatch, KeyboardInterrupt())
    assert main(["run", str(write_config(tmp_path))]) == 130


def test_internal_error_is_one_line_and_verbose_shows_the_traceback(tmp_path, capsys, monkeypatch):
    fail_run_with(monkeypatch, ZeroDivisionError("division by zero"))

    assert main(["run", str(write_config(tmp_path))]) == 70
    assert "internal error: ZeroDivisionError: division by zero (run with -v for the traceback)" in one_line_error(capsys)

    assert main(["run", str(write_config(tmp_path)), "-v"]) == 70
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().splitlines()[-1].startswith("fltrust: internal error")


def test_every_mapping_lives_in_describe_error():
    code, message = cli.describe_error(type("Locked", (Exception,), {"exit_code": 5})("busy"))
    assert (code, message) == (5, "error: busy")


@pytest.mark.slow
def test_sigint_during_a_run_exits_130_with_one_line(tmp_path):
    config = write_config(tmp_path, training={"rounds": 400})
    out = tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": str(REPO), "FLTRUST_CACHE": str(tmp_path / "cache")}
    # a child inherits an ignored SIGINT (Ray, started by earlier tests in this process, ignores it),
    # and Python then installs no KeyboardInterrupt handler; a user's shell never ignores it
    proc = subprocess.Popen([sys.executable, "-m", "fltrust", "run", str(config), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            rounds = glob.glob(str(out / "*" / "rounds.jsonl"))
            if rounds and len(Path(rounds[0]).read_text().splitlines()) >= 2:  # round 0 and round 1
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["fltrust: interrupted; rerun the same command to resume"], err


# -- files a user can be handed never run code -------------------------------------------------

class PlantedPayload:
    """Unpickling it runs a shell command that creates ``marker``."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch '{self.marker}'",))


def test_a_planted_checkpoint_is_one_warning_and_the_run_starts_over(tmp_path, capsys, caplog):
    import torch

    config, out = write_config(tmp_path, training={"rounds": 2}), tmp_path / "runs"
    assert main(["run", str(config), "--out", str(out)]) == 0
    (folder,) = out.iterdir()
    (folder / "summary.json").unlink()
    marker = tmp_path / "payload-ran"
    torch.save({"config_hash": "x", "payload": PlantedPayload(marker)}, folder / "checkpoint.pt")
    capsys.readouterr()

    with caplog.at_level("WARNING", logger="fltrust"):  # the CLI prints it as "WARNING <message>"
        assert main(["run", str(config), "--out", str(out)]) == 0
    assert not marker.exists()
    assert [r.getMessage() for r in caplog.records if "checkpoint" in r.getMessage()] == [
        f"{folder / 'checkpoint.pt'}: not a plain-data checkpoint: it references posix.system, which fltrust "
        "never writes (a file from an older fltrust, or a planted one); it was not unpickled, so nothing in it ran; "
        "starting the run from round 0"]
    assert main(["audit", str(folder)]) == 0


def test_a_planted_final_model_fails_the_audit_in_one_line_not_exit_70(tmp_path, capsys):
    import torch

    config, out = write_config(tmp_path), tmp_path / "runs"
    assert main(["run", str(config), "--out", str(out)]) == 0
    (folder,) = out.iterdir()
    marker = tmp_path / "payload-ran"
    torch.save(PlantedPayload(marker), folder / "final_model.pt")
    capsys.readouterr()

    assert main(["audit", str(folder)]) == 1
    captured = capsys.readouterr()
    assert not marker.exists() and captured.err == ""
    assert f"{folder / 'final_model.pt'}: not a plain-data final model: it references posix.system" in captured.out
    assert "weights_only" not in captured.out


def test_a_planted_cifar_batch_is_one_data_error_in_run_and_data_info(tmp_path, capsys):
    import pickle

    import numpy as np

    folder = tmp_path / "data" / "cifar10" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:  # the official layout
        (folder / name).write_bytes(pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 1]}))
    marker = tmp_path / "payload-ran"
    batch = {b"data": np.zeros((2, 3072), np.uint8), b"labels": [1, 2], b"x": PlantedPayload(marker)}
    (folder / "data_batch_2").write_bytes(pickle.dumps(batch))
    config = write_config(tmp_path, data={"name": "cifar10"}, model={"name": "cifar_cnn"})

    code = main(["run", str(config), "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "runs")])

    # none of these files is the official batch, so none is unpickled (the first checked is named)
    assert code == 2 and not marker.exists()
    line = one_line_error(capsys)
    assert f"fltrust: data error: {folder / 'data_batch_1'}: sha256 " in line
    assert "differs from the official data_batch_1's" in line and "only the official files are read" in line
    assert main(["data", "info", "--json", "--data-dir", str(tmp_path / "data")]) == 0
    assert "differs from the official data_batch_1's" in capsys.readouterr().out
    assert not marker.exists()


def test_an_unreadable_audit_key_file_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FLTRUST_AUDIT_KEY_FILE", str(tmp_path / "nope.key"))

    assert main(["run", str(write_config(tmp_path)), "--out", str(tmp_path / "runs")]) == 2
    assert f"FLTRUST_AUDIT_KEY_FILE={tmp_path / 'nope.key'}: cannot read the audit key file" in one_line_error(capsys)


# -- hostile or broken input: one line each, the right code -------------------------------------

def must_not_be_called(what: str):
    """A stand-in for a call the probe must never reach (it crashed or hung the old code)."""
    def call(*args, **kwargs):
        raise AssertionError(f"{what} was called: the bad value was not caught first")

    return call


def test_torch_threads_is_bounded(tmp_path, capsys, monkeypatch):
    # before: torch.set_num_threads(100000) crashed the process (exit 139, no output)
    import torch

    monkeypatch.setattr(torch, "set_num_threads", must_not_be_called("torch.set_num_threads"))

    code = main(["run", str(write_config(tmp_path)), "--set", "run.torch_threads=100000", "--out", str(tmp_path / "runs")])

    assert code == 2
    assert "run.torch_threads=100000 is too large: at most 1,024 (CPU threads of one process)" in one_line_error(capsys)
    assert not (tmp_path / "runs").exists()


def test_yaml_alias_bomb_in_declared_values_is_refused_in_one_short_line(tmp_path, capsys):
    # before: the 9^6 strings the aliases stand for were repr'd into one multi-megabyte error line
    levels = ["&l0 [" + ", ".join(["lol"] * 9) + "]"]
    levels += [f"&l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 7)]
    config = tmp_path / "bomb.yaml"
    config.write_text(f"metrics:\n  trust:\n    declared:\n      testing_coverage: [{', '.join(levels)}]\n")

    code = main(["run", str(config)])

    assert code == 2
    err = one_line_error(capsys)
    assert "metrics.trust.declared.testing_coverage=[['lol'," in err and "must be a number or a word" in err
    assert len(err) < 400, len(err)


def test_data_dir_on_a_symbolic_link_loop_is_one_line(tmp_path, capsys):
    # before: a 22-line RuntimeError traceback ("Symlink loop from ...") with exit 1
    (tmp_path / "loop_a").symlink_to(tmp_path / "loop_b")
    (tmp_path / "loop_b").symlink_to(tmp_path / "loop_a")

    code = main(["run", str(write_config(tmp_path)), "--data-dir", str(tmp_path / "loop_a")])

    assert code == 2
    err = one_line_error(capsys)
    assert f"--data-dir {tmp_path / 'loop_a'}: cannot resolve the path (a symbolic link loop)" in err


@pytest.mark.parametrize("value", [r'"a\0b"', r'"two\nlines"', r'"tab\there"', '"a/b"', '"-flag"', "a" * 101],
                         ids=["nul", "newline", "tab", "slash", "dash-first", "101-chars"])
def test_run_name_must_be_a_safe_folder_name(tmp_path, capsys, value):
    # before: a NUL gave exit 70, a newline made a folder with a newline in its name, 300 characters
    # gave "File name too long" (exit 3) without naming the field
    code = main(["run", str(write_config(tmp_path)), "--set", f"run.name={value}", "--out", str(tmp_path / "runs")])

    assert code == 2
    err = one_line_error(capsys)
    assert "run.name=" in err and "must be 1 to 100 characters: letters, digits, '.', '_' and '-'" in err
    assert not (tmp_path / "runs").exists()


def test_a_100_character_run_name_is_fine():
    from fltrust.config import ExperimentConfig

    assert ExperimentConfig.from_dict({"run": {"name": "a" * 100}}).run.name == "a" * 100


@pytest.mark.parametrize("files", ["[/etc/passwd]", "[../nsl_kdd/KDDTrain+.txt]", "[KDDTrain+.txt, sub/../../x]"])
def test_data_files_must_stay_inside_the_dataset_folder(tmp_path, capsys, files):
    # before: an absolute path was read (and failed with exit 70 after parsing); '..' left the folder
    config = write_config(tmp_path, data={"name": "nsl_kdd"})

    code = main(["run", str(config), "--set", f"data.train_files={files}", "--data-dir", str(tmp_path / "data")])

    assert code == 2
    err = one_line_error(capsys)
    assert "data.train_files[" in err and "must be a path relative to the dataset folder" in err


def test_synthetic_samples_is_bounded(tmp_path, capsys):
    # before: MemoryError (exit 70) allocating 74.5 GiB
    code = main(["run", str(write_config(tmp_path)), "--set", "data.synthetic_samples=10000000000"])

    assert code == 2
    err = one_line_error(capsys)
    assert "data.synthetic_samples=10000000000 is too large: at most 3,520,464 (2 GiB" in err


def test_unreadable_input_file_is_not_blamed_on_out(tmp_path, capsys, monkeypatch):
    # before: "cannot write <input>: permission denied; pass --out a writable folder"
    data_file = tmp_path / "data" / "nsl_kdd" / "KDDTrain+.txt"
    data_file.parent.mkdir(parents=True)
    data_file.write_text("")
    fail_run_with(monkeypatch, PermissionError(errno.EACCES, "Permission denied", str(data_file)))

    code = main(["run", str(write_config(tmp_path)), "--out", str(tmp_path / "runs")])

    assert code == 3
    err = one_line_error(capsys)
    assert f"cannot read {data_file}: permission denied" in err and "--out" not in err


def test_unreadable_config_file_names_it(tmp_path, capsys, monkeypatch):
    config = write_config(tmp_path)
    original = Path.read_text

    def read_text(self, *args, **kwargs):
        if self == config:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)

    assert main(["run", str(config)]) == 2
    assert f"config file '{config}' cannot be read (Permission denied)" in one_line_error(capsys)


def test_a_folder_as_config_file_says_so(tmp_path, capsys):
    # before: "config file ... does not exist"
    assert main(["run", str(tmp_path)]) == 2
    err = one_line_error(capsys)
    assert f"config file '{tmp_path}' is a folder; pass an experiment YAML file" in err
    assert str(tmp_path) + ":" not in err.split("config error: ", 1)[1].split(" ")[0]  # named once, not twice


@pytest.mark.parametrize("text", ["", "# only a comment\n"], ids=["empty", "comment-only"])
def test_an_empty_config_file_is_an_error(tmp_path, capsys, text):
    # before: it ran the default experiment, silently
    config = tmp_path / "empty.yaml"
    config.write_text(text)

    assert main(["run", str(config), "--out", str(tmp_path / "runs")]) == 2
    assert f"config file '{config}' is empty" in one_line_error(capsys)
    assert not (tmp_path / "runs").exists()


def test_duplicate_yaml_keys_name_the_key_and_both_lines(tmp_path, capsys):
    # before: the last one won, silently
    config = tmp_path / "dup.yaml"
    config.write_text("training:\n  rounds: 1\nrun:\n  name: x\n  name: y\n")

    assert main(["run", str(config)]) == 2
    assert f"{config}:5:3: invalid YAML: duplicate key 'name' (lines 4 and 5)" in one_line_error(capsys)


def test_duplicate_keys_in_a_set_value(tmp_path, capsys):
    assert main(["run", str(write_config(tmp_path)), "--set", "training={rounds: 1, rounds: 2}"]) == 2
    assert "duplicate key 'rounds' (lines 1 and 1)" in one_line_error(capsys)


def test_a_yaml_boolean_for_a_string_field_says_to_quote_it(tmp_path, capsys):
    # before: "run.name=True must be a string"
    assert main(["run", str(write_config(tmp_path)), "--set", "run.name=on"]) == 2
    err = one_line_error(capsys)
    assert "run.name=True must be a string; YAML reads an unquoted on, off, yes, no, true or false" in err
    assert "quote it" in err


@pytest.mark.parametrize("option", [["--jobs", "0"], ["--jobs", "-1"], ["--repeats", "0"]])
def test_jobs_and_repeats_must_be_at_least_one(capsys, option):
    # before: --jobs 0 / -1 silently ran one job; --repeats 0 ended in a KeyError inside a notebook
    with pytest.raises(SystemExit) as exit_:
        main(["repro", "fairness", "--quick", "--conditions", "nothing-matches", *option])

    assert exit_.value.code == 2
    assert f"argument {option[0]}: {option[1]} must be at least 1" in capsys.readouterr().err


def test_report_from_a_missing_or_non_batch_folder_is_an_error(tmp_path, capsys):
    # before: an empty report, exit 0
    out = tmp_path / "report.html"
    assert main(["report", "fairness", "--from", str(tmp_path / "missing"), "--out", str(out)]) == 2
    assert f"--from {tmp_path / 'missing'}: no such folder" in one_line_error(capsys)

    assert main(["report", "fairness", "--from", str(tmp_path), "--out", str(out)]) == 2
    assert "not a batch folder (it has no results/ folder)" in one_line_error(capsys)
    assert not out.exists()


@pytest.mark.parametrize("address", ["not_an_address", "10.0.0.1", "host:99999", "local"])
def test_a_malformed_ray_address_names_the_field(tmp_path, capsys, address):
    # before: exit 70 (ValueError: Invalid address format) once Ray was imported
    code = main(["run", str(write_config(tmp_path)), "--set", "run.engine=flower", "--set",
                 f"flower.ray_address={address}", "--out", str(tmp_path / "runs")])

    assert code == 2
    assert f"flower.ray_address='{address}' is not a Ray address" in one_line_error(capsys)
    assert not (tmp_path / "runs").exists()


def test_an_unreachable_ray_address_is_one_line_before_ray_starts(tmp_path, capsys, monkeypatch):
    # before: ray.init retried for minutes (the probe was killed after 60 s)
    pytest.importorskip("flwr")
    from fltrust.engines.flower.engine import FlowerEngine

    monkeypatch.setattr(FlowerEngine, "_start_ray", must_not_be_called("ray.init"))

    code = main(["run", str(write_config(tmp_path)), "--set", "run.engine=flower",
                 "--set", "flower.ray_address=127.0.0.1:1", "--out", str(tmp_path / "runs")])

    assert code == 2
    assert one_line_error(capsys).strip() == (
        "fltrust: config error: flower.ray_address='127.0.0.1:1': nothing answers at 127.0.0.1:1 (Connection refused); "
        "start the cluster (`ray start --head`) or unset flower.ray_address for a local Ray")


def test_flower_num_cpus_beyond_the_machine_is_one_line_before_ray_starts(tmp_path, capsys, monkeypatch):
    # before: Ray started, Flower printed 7 tracebacks ("The ActorPool is empty") and hung
    pytest.importorskip("flwr")
    from fltrust.engines.flower.engine import FlowerEngine
    from fltrust.engines.flower.simulation import available_cpus

    monkeypatch.setattr(FlowerEngine, "_start_ray", must_not_be_called("ray.init"))
    cpus = available_cpus()

    code = main(["run", str(write_config(tmp_path)), "--set", "run.engine=flower",
                 "--set", f"flower.num_cpus={cpus + 62}", "--out", str(tmp_path / "runs")])

    assert code == 2
    assert one_line_error(capsys).strip() == (
        f"fltrust: config error: flower.num_cpus={cpus + 62} asks more CPUs per ClientApp than the {cpus} available "
        f"to this process, so no client could start; use flower.num_cpus <= {cpus}")


def test_a_closed_output_pipe_stops_quietly_with_141(tmp_path):
    # before: "fltrust: error:: Broken pipe" with exit 3 (`fltrust data info | head -1`); and without
    # PYTHONUNBUFFERED, the buffered output's EPIPE at interpreter exit ("Exception ignored", exit 120)
    env = {**os.environ, "PYTHONPATH": str(REPO), "FLTRUST_CACHE": str(tmp_path / "cache")}
    env.pop("PYTHONUNBUFFERED", None)  # stdout block-buffered, as on a user's machine
    proc = subprocess.Popen([sys.executable, "-m", "fltrust", "data", "info", "--data-dir", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    proc.stdout.close()  # the reader is gone before the first line is written
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    proc.stderr.close()

    assert proc.returncode == 141, err
    assert err == ""


@pytest.mark.parametrize("make, words", [
    (lambda p: p / "missing", "does not exist"),
    (lambda p: (p / "file.txt").write_text("x") and p / "file.txt", "is a file"),
    (lambda p: p, "not a run folder (it has no config.yaml and no rounds.jsonl)"),
], ids=["missing", "file", "folder"])
def test_audit_of_something_that_is_not_a_run_folder(tmp_path, capsys, make, words):
    # before: "fltrust: error:: no such file or folder (<run>/config.yaml is missing: ...)"
    target = make(tmp_path)

    assert main(["audit", str(target)]) == 2
    err = one_line_error(capsys)
    assert err.strip().startswith(f"fltrust: error: audit {target}: {words}") and "error::" not in err


def test_exception_classes_are_matched_by_class_not_by_name():
    # before: any exception *named* RunInterrupted or RunFolderError got exit 130 / 4
    from fltrust.runs import RunFolderError

    stranger = type("RunInterrupted", (Exception,), {})("not an interrupt")
    impostor = type("RunFolderError", (Exception,), {})("not a run folder error")

    assert cli.describe_error(stranger)[0] == 70
    assert cli.describe_error(impostor)[0] == 70
    assert cli.describe_error(RunFolderError("busy")) == (4, "error: busy")


def test_nsl_kdd_infinity_is_a_data_error_naming_file_line_and_field(tmp_path, capsys, official_kdd):
    # before: 'inf' passed, min-max scaling turned src_bytes into NaN and the run was reported as diverged
    folder, _ = official_kdd
    test_file = folder / "KDDTest+.txt"
    lines = test_file.read_text().splitlines()
    fields = lines[3].split(",")
    fields[4] = "inf"
    lines[3] = ",".join(fields)
    test_file.write_text("\n".join(lines) + "\n")

    code = main(["run", str(write_config(tmp_path, data={"name": "nsl_kdd"})), "--data-dir", str(tmp_path / "data"),
                 "--out", str(tmp_path / "runs")])

    assert code == 2
    assert ("data error: KDDTest+.txt line 4: field 5 (src_bytes) = 'inf' is not a finite number"
            in one_line_error(capsys))


@pytest.mark.slow
def test_sigint_during_a_flower_run_exits_130_and_stops_ray(tmp_path):
    # before: the interrupt's line was printed, then the interpreter waited forever for Flower's
    # ServerApp thread (polling for replies from the stopped runtime) until a second SIGINT
    pytest.importorskip("flwr")
    psutil = pytest.importorskip("psutil")
    config = write_config(tmp_path, data={"synthetic_samples": 200}, partition={"num_clients": 2},
                          training={"rounds": 400}, run={"engine": "flower", "torch_threads": 1, "device": "cpu"})
    out = tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": str(REPO), "FLTRUST_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "fltrust", "run", str(config), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 300  # Ray's start-up on a busy 2-core machine takes about a minute
        while time.monotonic() < deadline and proc.poll() is None:
            rounds = glob.glob(str(out / "*" / "rounds.jsonl"))
            if rounds and len(Path(rounds[0]).read_text().splitlines()) >= 2:
                break
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()
        ray_processes = psutil.Process(proc.pid).children(recursive=True)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "fltrust: interrupted; rerun the same command to resume", err
    _, alive = psutil.wait_procs(ray_processes, timeout=30)
    assert alive == [], [p.info for p in alive]


@pytest.mark.parametrize(("overrides", "words"), [
    # before: exit 70, "ValueError: The privacy budget is too low." from Opacus
    (["privacy.mode=server", "privacy.target_epsilon=1e-300"], "privacy.target_epsilon=1e-300 with privacy.delta=1e-05"),
    # before: exit 1, "training diverged at round 1: the aggregated model has NaN/inf parameters"
    (["privacy.mode=nbafl", "privacy.target_epsilon=1e-300"], "NbAFL's upload noise std w_clip*T*c/(n_k*epsilon) would "
                                                               "exceed 3.4e+38"),
    # before: exit 70, numpy's "expected non-negative integer" / "Overflow when unpacking long long"
    (["run.seed=-1"], "run.seed=-1 must be >= 0"),
    (["run.seed=99999999999999999999"], "seed + repeat must be at most 4,294,967,295"),
])
def test_impossible_privacy_and_seed_settings_are_one_line_naming_the_field(tmp_path, capsys, overrides, words):
    args = ["run", str(write_config(tmp_path)), "--out", str(tmp_path / "runs")]
    for value in overrides:
        args += ["--set", value]

    assert main(args) == 2
    assert words in one_line_error(capsys)

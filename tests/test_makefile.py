"""The Makefile's shared environments: two clones building the same one at once take turns, and
the docs environment is made by the interpreter of the pinned stack it reads.

The environments live outside the checkout, keyed by the hash of their pinned requirements, so two
clones on one machine (two CI jobs, a worktree and its main checkout) can reach the same missing
environment at the same moment. Each build holds a lock beside the environment's folder: the second
``make`` waits, finds the first's completion stamp and reuses it, where it used to remove the
half-built folder under the first and fail on it (``[Errno 17] File exists``).

The tests drive the rules with stand-in interpreters (no package index needed) that log what they
are asked to do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    not (shutil.which("make") and shutil.which("flock")), reason="needs make and flock (util-linux)"
)

# "python3 -m venv DIR" makes DIR/bin/python, whose "-m pip install" logs a start, waits a second,
# checks that its folder is still there and logs the end.
FAKE_PYTHON = """#!/bin/bash
if [ "$1 $2" = "-m venv" ]; then
  mkdir -p "$3/bin"
  printf '#!/bin/bash\\necho start >> "%s"; sleep 1; test -x "%s/bin/python" || exit 3; echo end >> "%s"\\n' \\
    "$BUILD_LOG" "$3" "$BUILD_LOG" > "$3/bin/python"
  chmod +x "$3/bin/python"
fi
"""


def test_two_builds_of_one_environment_at_once_take_turns(tmp_path):
    fake = tmp_path / "python3"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    env_dir = tmp_path / "cache" / "lint-env"
    log = tmp_path / "builds.log"
    env = {**os.environ, "BUILD_LOG": str(log)}
    command = [
        "make", "--no-print-directory", "-C", str(CHECKOUT),
        f"PYTHON={fake}", f"LINT_VENV={env_dir}", f"{env_dir}/.fltrust-complete",
    ]

    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(0.3)  # the first holds the lock and is inside its one-second install
    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    first_out, _ = first.communicate(timeout=60)

    assert first.returncode == 0, first_out
    assert second.returncode == 0, second.stdout + second.stderr
    assert log.read_text().split() == ["start", "end"]  # built once, never removed under its builder
    assert (env_dir / ".fltrust-complete").is_file()
    assert "creating" not in second.stdout  # the second reused the first's environment


# Logs "<its path> <arguments>"; "-m venv DIR" copies itself to DIR/bin/python; "-c" prints a
# site-packages folder (the docs rule writes its .pth there); everything else ("-m pip") is a no-op.
LOGGING_PYTHON = """#!/bin/bash
echo "$0 $*" >> "$BUILD_LOG"
if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin"; cp "$0" "$3/bin/python"; fi
if [ "$1" = "-c" ]; then echo "$SITE_DIR"; fi
"""


def test_the_docs_environment_is_made_by_the_pinned_stacks_interpreter(tmp_path):
    # the docs environment reads the pinned stack through a .pth file, so another `python3` on
    # PATH must not make it: the pinned stack's packages broke under another interpreter
    other_python = tmp_path / "python3"
    other_python.write_text(LOGGING_PYTHON)
    other_python.chmod(0o755)
    pinned = tmp_path / "pinned"
    (pinned / "bin").mkdir(parents=True)
    shutil.copy(other_python, pinned / "bin" / "python")
    (pinned / ".fltrust-complete").touch()
    docs_env, log, site = tmp_path / "docs-env", tmp_path / "calls.log", tmp_path / "site"
    site.mkdir()
    env = {**os.environ, "BUILD_LOG": str(log), "SITE_DIR": str(site)}
    done = subprocess.run(
        ["make", "--no-print-directory", "-C", str(CHECKOUT), f"PYTHON={other_python}",
         f"VENV={pinned}", f"DOCS_VENV={docs_env}", f"{docs_env}/.fltrust-complete"],
        env=env, capture_output=True, text=True, timeout=60,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    made_by = [line.split()[0] for line in log.read_text().splitlines() if f"-m venv {docs_env}" in line]
    assert made_by == [str(pinned / "bin" / "python")]
    assert (site / "fltrust-stack.pth").read_text().strip() == str(site)

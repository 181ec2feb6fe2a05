"""The Makefile's shared environments: two clones building the same one at once take turns.

The environments live outside the checkout, keyed by the hash of their pinned requirements, so two
clones on one machine (two CI jobs, a worktree and its main checkout) can reach the same missing
environment at the same moment. Each build holds a lock beside the environment's folder: the second
``make`` waits, finds the first's completion stamp and reuses it, where it used to remove the
half-built folder under the first and fail on it (``[Errno 17] File exists``).

The test drives the lint environment's rule with a stand-in ``python3`` (no package index needed):
its ``-m venv`` makes the folder, its ``pip install`` takes a second and logs each build.
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

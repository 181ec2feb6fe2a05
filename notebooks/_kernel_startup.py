"""Kernel start-up of ``make lab`` (run through ``PYTHONSTARTUP``): work from the repository root.

papermill executes the notebooks with the repository root as working directory (fltrust.repro.batch),
and their default paths (``runs/repro/...``) are relative to it. JupyterLab starts a kernel in the
notebook's own folder; this moves a kernel started anywhere inside the repository to its root, so a
notebook behaves the same in the Lab and in a batch. Outside the repository nothing changes.
"""


def _fltrust_work_from_repo_root() -> None:
    import os
    from pathlib import Path

    repo = Path(os.environ.get("PYTHONSTARTUP", __file__)).resolve().parents[1]
    cwd = Path.cwd().resolve()
    if cwd != repo and repo in cwd.parents:
        os.chdir(repo)


_fltrust_work_from_repo_root()
del _fltrust_work_from_repo_root

"""The build step that puts the reproduction's inputs into the wheel (see fltrust/repro/paths.py).

The paper configurations, the papers' numbers and the notebooks the batches execute live once, in
the checkout (``papers_repro/``, ``notebooks/``); ``[tool.fltrust] resources`` in pyproject.toml
lists them as globs relative to this folder. ``build_py`` adds them to the package data as
``fltrust/_resources/<same path>``: a wheel carries them there, and an sdist, which takes
``build_py``'s data files, carries them at their checkout paths, so a wheel built from the sdist has
them too. An editable install skips them (the package finds its own checkout). Everything else about
the build is declared in pyproject.toml.
"""

from __future__ import annotations

import glob
import os
import tomllib

from setuptools import setup
from setuptools.command.build_py import build_py

RESOURCE_PACKAGE = "fltrust._resources"


def resource_files() -> list[str]:
    """The files of ``[tool.fltrust] resources``, relative to this folder; a glob that matches nothing stops the build."""
    with open("pyproject.toml", "rb") as stream:
        patterns = tomllib.load(stream)["tool"]["fltrust"]["resources"]
    files = []
    for pattern in patterns:
        matches = sorted(path for path in glob.glob(pattern) if os.path.isfile(path))
        if not matches:
            raise SystemExit(f"pyproject.toml [tool.fltrust] resources: {pattern!r} matches no file")
        files += matches
    return files


class BuildPyWithResources(build_py):
    """``build_py`` whose package data also holds :func:`resource_files` under ``fltrust/_resources/``."""

    def _get_data_files(self):
        return self._with_resources(super()._get_data_files())

    def get_data_files_without_manifest(self):
        return self._with_resources(super().get_data_files_without_manifest())

    def _with_resources(self, data_files):
        if self.editable_mode:
            return data_files
        build_dir = os.path.join(self.build_lib, *RESOURCE_PACKAGE.split("."))
        return [*data_files, (RESOURCE_PACKAGE, "", build_dir, resource_files())]


setup(cmdclass={"build_py": BuildPyWithResources})

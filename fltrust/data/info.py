"""What is on disk: the listing and sample counts of every real dataset folder (``fltrust data info``).

:func:`dataset_info` reports, per dataset of :data:`~fltrust.data.registry.SPECS`, its files
(:func:`file_listing`: size, SHA-256, whether it matches a known sum), checksum mismatches, and
with ``count`` the samples the loader reads; then, per published file set of
:data:`~fltrust.data.registry.REFERENCE_SPECS`, its files and how many of them are missing;
mismatches are reported, never warned about or raised.
Loading and checksum verification themselves are in :mod:`fltrust.data.registry`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fltrust.data import n_baiot
from fltrust.data.base import DatasetError
from fltrust.data.cache import DatasetNotFoundError, file_record
from fltrust.data.registry import (
    REFERENCE_SPECS,
    SPECS,
    FileSetSpec,
    _load_real,
    checksum_mismatches,
    data_root,
    describe_mismatches,
    expected_sha256,
)

__all__ = ["dataset_info", "file_listing", "file_set_info"]


def file_listing(name: str, folder: Path) -> list[dict[str, Any]]:
    """Every file under a dataset folder: path, bytes, sha256 and whether it matches a known sum.

    ``known`` is True/False when the registry knows the file's SHA-256 and None otherwise.
    """
    known = expected_sha256(name)
    paths = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")) if folder.is_dir() else []
    rows = [file_record(path, folder) for path in paths]
    for row in rows:
        expected = known.get(row["path"])
        row["known"] = None if expected is None else row["sha256"] == expected
    return rows


def dataset_info(root: str | os.PathLike[str] | None = None, *, count: bool = True) -> list[dict[str, Any]]:
    """What each real dataset folder holds (``fltrust data info``).

    Parameters
    ----------
    root : str or Path, optional
        Data root (default :func:`data_root`).
    count : bool
        Also load each dataset with default options to count samples (parsed results are cached,
        so only the first call is slow).

    Returns
    -------
    list of dict
        One entry per dataset: ``name``, ``title``, ``folder``, ``found`` (loadable), ``fetch``,
        ``files`` (see :func:`file_listing`), ``checksum_mismatch`` (files whose SHA-256 differs
        from the known one, see :func:`~fltrust.data.registry.checksum_mismatches`), and with ``count`` the ``layout``,
        ``train_samples``, ``test_samples``, ``natural_clients``; ``problem`` holds the loader's
        message when the dataset is missing or unreadable. N-BaIoT with ``count`` also has
        ``real_partial``: :func:`fltrust.data.n_baiot.real_partial_summary` of the partial real files
        (rows per device and traffic; not a training set), or ``{"problem": ...}``, or None without
        such files. Then one entry per published file set (:func:`file_set_info`). Mismatches are
        reported here, never warned about or raised (the caller decides: ``fltrust data info --strict`` fails).
    """
    entries = []
    for name, spec in SPECS.items():
        folder = data_root(root) / spec.folder
        entry: dict[str, Any] = {
            "name": name,
            "title": spec.title,
            "folder": str(folder),
            "found": False,
            "fetch": spec.fetch,
            "files": file_listing(name, folder),
            "problem": None,
        }
        entry["checksum_mismatch"] = checksum_mismatches(name, folder, entry["files"])
        if count:
            try:
                bundle = _load_real(None, folder, seed=0, real=spec.name)
            except DatasetError as exc:
                entry["problem"] = str(exc)
                if entry["checksum_mismatch"]:
                    entry["problem"] += "; also " + describe_mismatches(name, folder, entry["checksum_mismatch"])
            else:
                entry.update(
                    found=True,
                    layout=bundle.source.get("layout", "default"),
                    train_samples=len(bundle.train),
                    test_samples=len(bundle.test),
                    natural_clients=None if bundle.group_names is None else len(bundle.group_names),
                )
            if spec.name == "n_baiot":
                entry["real_partial"] = _n_baiot_real_partial_info(folder)
        else:
            entry["found"] = bool(entry["files"])
        entries.append(entry)
    entries += [file_set_info(spec, data_root(root) / spec.folder) for spec in REFERENCE_SPECS.values()]
    return entries


def file_set_info(spec: FileSetSpec, folder: Path) -> dict[str, Any]:
    """What a published file set's folder holds, as a :func:`dataset_info` entry.

    Parameters
    ----------
    spec : FileSetSpec
        The file set.
    folder : Path
        Its folder under the data root.

    Returns
    -------
    dict
        ``name``, ``title``, ``folder``, ``source``, ``fetch``, ``files`` (:func:`file_listing`),
        ``files_expected``, ``files_missing`` (counts), ``checksum_mismatch``, ``found`` (every file
        there with its known SHA-256) and ``problem`` (None, or one line: how many files are missing
        and the command that fetches them).
    """
    files = file_listing(spec.name, folder)
    expected = spec.expected_sha256()
    listed = {f["path"] for f in files}
    missing = [relative for relative in expected if relative not in listed]
    mismatch = checksum_mismatches(spec.name, folder, files)
    problem = None
    if missing:
        problem = (f"{len(missing)} of {len(expected)} files missing from {folder} "
                   f"(e.g. {missing[0]}); fetch them: fltrust data fetch {spec.name}")
    return {
        "name": spec.name,
        "title": spec.title,
        "folder": str(folder),
        "source": spec.source,
        "found": not missing and not mismatch,
        "fetch": spec.fetch,
        "files": files,
        "files_expected": len(expected),
        "files_missing": len(missing),
        "checksum_mismatch": mismatch,
        "problem": problem,
    }


def _n_baiot_real_partial_info(folder: Path) -> dict[str, Any] | None:
    """Row counts of N-BaIoT's partial real files for :func:`dataset_info` (None: there are none)."""
    try:
        summary = n_baiot.real_partial_summary(n_baiot.load_n_baiot_real_partial(folder))
    except DatasetNotFoundError:
        return None
    except DatasetError as exc:
        return {"problem": str(exc)}
    return {**summary, "use": "stand-in comparison only (fltrust.repro.trust.n_baiot_compare); not a training set"}

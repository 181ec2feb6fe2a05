"""``fltrust data fetch NAME``: get a real dataset's (or a published file set's) files from its public source.

===============  ==========================================================================
dataset          how
===============  ==========================================================================
``cifar10``      download the official python tarball from the University of Toronto,
                 check its SHA-256 and size, extract ``cifar-10-batches-py/``
``n_baiot``      download the UCI archive (dataset 442; no published checksum, so the SHA-256
                 is only printed), unzip it (each member at most
                 :data:`~fltrust.data.n_baiot.MAX_ZIP_MEMBER_BYTES`, all together at most
                 :data:`~fltrust.data.n_baiot.MAX_ZIP_TOTAL_BYTES`: checked on the declared sizes
                 before anything is written and on the bytes written, as they stream), extract
                 the per-device ``.rar`` attack archives with ``unrar``, ``7z`` or ``bsdtar``
                 when one is installed
``nsl_kdd``      manual: the UNB site sits behind a form
``femnist``      download TensorFlow Federated's federated EMNIST (3,400 writers), check the
                 SHA-256 that TFF's loader checked, extract ``fed_emnist_train.h5`` and
                 ``fed_emnist_test.h5``, which the FEMNIST loader reads as they are, and check
                 their layout (no conversion: see below)
``ffa-results``  download the fairness authors' 72 raw result files one by one from
                 raw.githubusercontent.com at the pinned commit into ``ffa_results/Results/``,
                 each checked against the SHA-256 committed in
                 ``known_sha256/ffa_results.sha256`` before it is put in place
===============  ==========================================================================

When the files are already in place, known checksums are verified and the folder is returned.
When offline, or for a manual dataset, :class:`~fltrust.data.base.DatasetError` says exactly which
files to place in which folder. Downloads use :mod:`urllib` with a short socket timeout and go to
a ``.part`` file that is renamed only when complete. The archive's SHA-256 is printed before it is
extracted, with whether it matches the published one. A published file set
(:data:`~fltrust.data.registry.REFERENCE_SPECS`) is fetched by :func:`fetch_file_set`: a file is
renamed into place only when its SHA-256 is the committed one, and what could not be fetched is
one line per file (missing: the folder and the source URL; wrong: both hashes). After the first
network failure the remaining files are not tried (each would wait for the timeout).

FEMNIST is read from TFF's h5 files directly rather than converted to LEAF JSON shards: the h5
files hold float32 pixels in LEAF's own convention (background 1.0) and LEAF's labels, so a
conversion would change nothing but the container, and it would turn ~2.3 GB of binary floats
into several GB of decimal text that is slow to write and slow to parse. Reading the files as
published also keeps them byte for byte the ones the published archive checksum covers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import urllib.error
import urllib.request
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from fltrust.data import cifar10, femnist, n_baiot, nsl_kdd
from fltrust.data.base import DatasetError
from fltrust.data.cache import DatasetNotFoundError, file_sha256
from fltrust.data.registry import REFERENCE_SPECS, DatasetSpec, FileSetSpec, data_root, spec_of
from fltrust.names import RealDataset

TIMEOUT_S = 30.0
"""Socket timeout of a download (seconds without data before giving up)."""


def _download(url: str, dest: Path, timeout: float) -> None:
    """Stream ``url`` into ``dest`` (via ``dest.part``; raises URLError/OSError when offline)."""
    part = dest.with_name(dest.name + ".part")
    request = urllib.request.Request(url, headers={"User-Agent": "fltrust-data-fetch"})
    with urllib.request.urlopen(request, timeout=timeout) as response, open(part, "wb") as handle:
        shutil.copyfileobj(response, handle, length=1 << 20)
    os.replace(part, dest)


def _present(name: RealDataset, folder: Path) -> bool:
    """True when the loader would find the dataset's files in ``folder``."""
    try:
        if name == "cifar10":
            cifar10.find_cifar10(folder)
        elif name == "femnist":
            femnist.shard_files(folder, "train")
            femnist.shard_files(folder, "test")
        elif name == "nsl_kdd":
            return all((folder / f).is_file() for f in nsl_kdd.DEFAULT_TRAIN_FILES + nsl_kdd.DEFAULT_TEST_FILES)
        elif name == "n_baiot":
            n_baiot.find_files(folder)
    except DatasetNotFoundError:
        return False
    return True


def verify_known_checksums(spec: DatasetSpec, folder: Path) -> None:
    """Raise :class:`DatasetError` if a file with a known SHA-256 has a different one."""
    for relative, expected in spec.expected_sha256().items():
        path = folder / relative
        if path.is_file() and file_sha256(path) != expected:
            raise DatasetError(
                f"{path}: sha256 {file_sha256(path)} differs from the known {expected}; "
                f"the file is corrupt or not the official one; replace it: {spec.instructions.format(folder=folder)}"
            )


def fetch_dataset(name: str, root: str | os.PathLike[str] | None = None, *, timeout: float = TIMEOUT_S) -> Path:
    """Make a real dataset available under the data root and return its folder.

    Parameters
    ----------
    name : str
        ``cifar10``, ``femnist``, ``nsl_kdd`` or ``n_baiot``, or a published file set
        (``ffa-results``, :func:`fetch_file_set`).
    root : str or Path, optional
        Data root (default :func:`fltrust.data.registry.data_root`).
    timeout : float
        Socket timeout of the download in seconds.

    Raises
    ------
    DatasetError
        Manual dataset not in place, download failed (offline), checksum mismatch, or the
        downloaded files are not in the expected layout. The message names the files and folder.
    """
    if name.startswith("synthetic_"):
        raise DatasetError(f"{name} is generated on the fly; there is nothing to fetch")
    if name in REFERENCE_SPECS:
        return fetch_file_set(REFERENCE_SPECS[name], root, timeout=timeout)
    spec = spec_of(name)
    real = spec.name  # the name, checked
    folder = data_root(root) / spec.folder
    where = spec.instructions.format(folder=folder)
    if _present(real, folder):
        verify_known_checksums(spec, folder)
        return folder
    if spec.fetch == "manual" or spec.url is None:
        raise DatasetError(f"{name} cannot be downloaded automatically; {where}")
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / (spec.archive or Path(spec.url).name)
    if not archive.is_file():
        try:
            _download(spec.url, archive, timeout)
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise DatasetError(
                f"could not download {name} from {spec.url} ({reason}); offline? Instead {where}"
            ) from exc
    _check_archive(spec, archive, where)
    _extract(real, archive, folder, where)
    if not _present(real, folder):
        raise DatasetError(
            f"{archive.name} was extracted into {folder} but the expected files are not there; {where}"
        )
    verify_known_checksums(spec, folder)
    if real == "femnist":
        for split in femnist.SPLITS:
            femnist.check_tff_h5(folder / femnist.TFF_H5_FILES[split])
    return folder


def _download_checked(url: str, dest: Path, expected: str, timeout: float) -> str:
    """Download ``url`` to a hidden file beside ``dest`` and rename it to ``dest`` only when its
    SHA-256 is ``expected``; nothing is left behind otherwise. Returns the download's SHA-256
    (raises what :func:`_download` raises)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    staged = dest.with_name(f".{dest.name}.download")
    try:
        _download(url, staged, timeout)
        digest = file_sha256(staged)
        if digest == expected:
            os.replace(staged, dest)
        return digest
    finally:
        for leftover in (staged, staged.with_name(staged.name + ".part")):
            leftover.unlink(missing_ok=True)


def fetch_file_set(spec: FileSetSpec, root: str | os.PathLike[str] | None = None, *,
                   timeout: float = TIMEOUT_S) -> Path:
    """Make every file of a published file set available under the data root; return its folder.

    A file already in place with the committed SHA-256 is kept; every other one is downloaded from
    ``spec.url(path)`` and renamed into place only when its SHA-256 matches (a wrong local file is
    replaced). After the first network failure (offline) the rest are not tried.

    Parameters
    ----------
    spec : FileSetSpec
        The file set (:data:`~fltrust.data.registry.REFERENCE_SPECS`).
    root : str or Path, optional
        Data root (default :func:`fltrust.data.registry.data_root`).
    timeout : float
        Socket timeout of each download in seconds.

    Returns
    -------
    Path
        ``<data root>/<spec.folder>``.

    Raises
    ------
    DatasetError
        When a file is still missing or wrong: a first line with the count (and the network error),
        then one line per file: a missing one with the folder to put it in and its source URL, a
        wrong one with both hashes.
    """
    folder = data_root(root) / spec.folder
    problems, offline = [], None
    for relative, expected in spec.expected_sha256().items():
        path, url = folder / relative, spec.url(relative)
        local = file_sha256(path) if path.is_file() else None
        if local == expected:
            continue
        if offline is None:
            try:
                digest = _download_checked(url, path, expected, timeout)
                if digest != expected:
                    problems.append(f"{path}: the download from {url} has sha256 {digest}, the known file "
                                    f"{expected}; not put in place (the source changed or the transfer is corrupt)")
                continue
            except urllib.error.HTTPError as exc:
                problems.append(f"{path}: {url} answered HTTP {exc.code} ({exc.reason}); put the file in {path.parent}/")
                continue
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                offline = str(getattr(exc, "reason", exc))
        if local is None:
            problems.append(f"{path.name} missing: put it in {path.parent}/ (source {url})")
        else:
            problems.append(f"{path}: sha256 {local} differs from the known {expected}; replace it with {url}")
    if problems:
        why = f"; could not download ({offline}; offline?)" if offline else ""
        raise DatasetError("\n".join([f"{spec.name}: {len(problems)} of {len(spec.known_sha256)} files missing or "
                                       f"wrong in {folder}{why}; one line per file:", *problems]))
    return folder


def _check_archive(spec: DatasetSpec, archive: Path, where: str) -> None:
    """Check the archive's size and published SHA-256 (removing it on a mismatch); print its SHA-256."""
    size = archive.stat().st_size
    if spec.archive_bytes is not None and size != spec.archive_bytes:
        archive.unlink()
        raise DatasetError(
            f"{archive.name}: {size} bytes, expected {spec.archive_bytes} (incomplete download?); retry, or {where}"
        )
    digest = file_sha256(archive)
    if spec.archive_sha256 is not None and digest != spec.archive_sha256:
        archive.unlink()
        raise DatasetError(
            f"{archive.name}: sha256 {digest} differs from the published {spec.archive_sha256}; retry, or {where}"
        )
    verdict = "matches the published one" if spec.archive_sha256 else "no published checksum: keep it to compare later copies"
    print(f"{archive}: sha256 {digest} ({verdict})")


def _extract(name: RealDataset, archive: Path, folder: Path, where: str) -> None:
    try:
        if archive.name.endswith((".tar.gz", ".tgz", ".tar.bz2")):
            with tarfile.open(archive, "r:bz2" if archive.name.endswith(".bz2") else "r:gz") as tar:
                tar.extractall(folder, filter="data")
        elif archive.suffix == ".zip":
            extract_zip(archive, folder)
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError, zlib.error) as exc:
        raise DatasetError(f"{archive.name}: cannot extract ({exc}); {where}") from exc
    if name == "n_baiot":
        _lift_device_folders(folder)
        _extract_rars(folder, where)


def extract_zip(archive: Path, folder: Path, *, max_member: int | None = None, max_total: int | None = None) -> int:
    """Extract a zip into ``folder`` within size caps; returns the bytes written.

    The declared sizes are checked before anything is written, and the bytes written as they
    stream (a member is written to ``<name>.part`` and renamed when complete; an over-size one is
    removed). A member whose name is absolute or climbs out of ``folder`` (``..``) is refused.

    Parameters
    ----------
    archive : Path
        The zip file.
    folder : Path
        Where its members go.
    max_member, max_total : int, optional
        Most bytes of one member, and of all members together (default
        :data:`~fltrust.data.n_baiot.MAX_ZIP_MEMBER_BYTES` and :data:`~fltrust.data.n_baiot.MAX_ZIP_TOTAL_BYTES`).

    Returns
    -------
    int
        Bytes written.

    Raises
    ------
    DatasetError
        A member over a cap or with an unsafe name (the message names the archive, the member and the cap).
    """
    max_member = n_baiot.MAX_ZIP_MEMBER_BYTES if max_member is None else max_member
    max_total = n_baiot.MAX_ZIP_TOTAL_BYTES if max_total is None else max_total

    def over(member: str, size: int, cap: int, what: str) -> DatasetError:
        which = "n_baiot.MAX_ZIP_MEMBER_BYTES per member" if cap == max_member else "n_baiot.MAX_ZIP_TOTAL_BYTES in all"
        return DatasetError(f"{archive}: member {member[:100]} {what} {size:,} bytes, over the cap of {cap:,} "
                            f"({which}); refused as a possible zip bomb: it is not the UCI archive; delete it and "
                            f"fetch again")

    with zipfile.ZipFile(archive) as zipped:
        members, declared = zipped.infolist(), 0
        for info in members:
            parts = PurePosixPath(info.filename).parts
            if not parts or info.filename.startswith(("/", "\\")) or ".." in parts or ":" in parts[0]:
                raise DatasetError(f"{archive}: member {info.filename[:100]!r} would be written outside {folder}; "
                                   f"refused: delete the archive and fetch again")
            declared += info.file_size
            if info.file_size > max_member:
                raise over(info.filename, info.file_size, max_member, "declares")
            if declared > max_total:
                raise over(info.filename, declared, max_total, "brings the declared total to")
        written = 0
        for info in members:
            target = folder.joinpath(*PurePosixPath(info.filename).parts)
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            part, size = target.with_name(target.name + ".part"), 0
            try:
                with zipped.open(info) as source, open(part, "wb") as sink:
                    while chunk := source.read(1 << 20):
                        size, written = size + len(chunk), written + len(chunk)
                        if size > max_member:
                            raise over(info.filename, size, max_member, "inflates to at least")
                        if written > max_total:
                            raise over(info.filename, written, max_total, "brings the bytes written to at least")
                        sink.write(chunk)
            except BaseException:
                part.unlink(missing_ok=True)
                raise
            os.replace(part, target)
    return written


def _lift_device_folders(folder: Path) -> None:
    """Move device folders that an archive nested one level deeper up into ``folder``."""
    if any((folder / d).is_dir() for d in n_baiot.DEVICES):
        return
    for parent in (p for p in folder.iterdir() if p.is_dir()):
        for device in n_baiot.DEVICES:
            if (parent / device).is_dir():
                shutil.move(str(parent / device), str(folder / device))


def _extract_rars(folder: Path, where: str) -> None:
    """Extract ``<device>/<family>_attacks.rar`` into ``<device>/<family>_attacks/`` with a system tool."""
    pending = [
        rar
        for device in n_baiot.DEVICES
        for rar in sorted((folder / device).glob("*_attacks.rar"))
        if not any((folder / device / rar.stem).glob("*.csv"))
    ]
    if not pending:
        return
    tools = {
        "unrar": lambda rar, out: ["unrar", "x", "-o+", str(rar), str(out) + os.sep],
        "7z": lambda rar, out: ["7z", "x", "-y", f"-o{out}", str(rar)],
        "bsdtar": lambda rar, out: ["bsdtar", "-xf", str(rar), "-C", str(out)],
    }
    tool = next((t for t in tools if shutil.which(t)), None)
    if tool is None:
        raise DatasetError(
            f"N-BaIoT attack traffic is in RAR archives and no unrar/7z/bsdtar is installed; extract "
            f"{[str(p.relative_to(folder)) for p in pending]} each into the folder of the same name "
            f"(for example {pending[0].parent.name}/{pending[0].stem}/); {where}"
        )
    for rar in pending:
        out = rar.with_suffix("")
        out.mkdir(exist_ok=True)
        result = subprocess.run(tools[tool](rar, out), capture_output=True, text=True)
        if result.returncode != 0:
            raise DatasetError(f"{tool} could not extract {rar}: {result.stderr.strip()[:500]}; {where}")

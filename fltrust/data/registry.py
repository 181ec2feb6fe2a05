"""Dataset registry: where each dataset lives, how to load it, and how to get its files.

:data:`SPECS` describes the four real datasets (folder under the data root, synthetic stand-in,
download source or manual instructions, known checksums); :data:`REFERENCE_SPECS` the published
result files that are fetched to compare with and never trained on (:class:`FileSetSpec`: one
pinned URL and one committed SHA-256 per file); :func:`load_dataset` turns a
:class:`~fltrust.config.DataConfig` into a :class:`~fltrust.data.base.DatasetBundle`;
:func:`fltrust.data.info.dataset_info` reports what is on disk (``fltrust data info``; also
importable from here).

Data root
---------
:func:`data_root`: an explicit ``root``, else ``$FLTRUST_DATA``, else ``./data``. Below it:
``cifar10/``, ``femnist/``, ``nsl_kdd/``, ``n_baiot/``, and ``ffa_results/`` (the fairness authors'
``Results/*.json``, read by :mod:`fltrust.repro.fairness.authors`).

Options of ``DataConfig`` and where they act
--------------------------------------------
- ``train_files``/``test_files``: NSL-KDD, FEMNIST, CIFAR-10 (not N-BaIoT).
- ``onehot_order``: NSL-KDD only; recorded in ``source`` and applied per partition by the caller
  with :func:`fltrust.data.nsl_kdd.per_partition_column_order`.
- ``scaling``: NSL-KDD only, ``"fit_train"`` or the authors' ``"fixed"`` table (synthetic NSL-KDD is
  generated in [0, 1] and only records it).
- ``balance``: N-BaIoT only.
- ``standin_calibration``: synthetic N-BaIoT only (also as the fallback of ``n_baiot``).
- ``synthetic_samples``: synthetic training size; the test split gets a quarter.
- ``max_train_samples``/``max_test_samples``: seeded uniform subsample without replacement, original
  order kept, applied after loading and scaling.
- ``allow_synthetic_fallback``: missing real files give a :class:`SyntheticFallbackWarning` and the
  synthetic stand-in, with ``source["fallback_reason"]``; corrupt files still raise.

Known checksums (data integrity)
--------------------------------
Every file a real dataset is loaded from whose SHA-256 is known (:attr:`DatasetSpec.known_sha256`:
the four NSL-KDD text files, the official CIFAR-10 batches, the shared CIFAR-10 subset npz) is
compared with it after loading; the hash compared is the one of the content that was parsed (the
parse cache is keyed on it). A mismatch
(a truncated download, a file edited in place, another release) is a :class:`DataIntegrityWarning`
naming the file and both hashes, and is recorded in ``source["checksum_mismatch"]`` (so in the run's
``dataset.json``). In strict mode -- environment variable ``FLTRUST_STRICT=1``, set by the CLI's
``--strict`` option and inherited by papermill kernels -- it is a :class:`DatasetError` instead.
When a loader rejects a corrupt file, the message also names any known file whose hash differs.
The N-BaIoT ``real_partial/`` files (no training set, never loaded by :func:`load_dataset`) have known
sums too: ``data info`` marks them, and the stand-in comparison refuses files that differ.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fltrust.data import cifar10, femnist, n_baiot, nsl_kdd
from fltrust.data.base import ArraySplit, DatasetBundle, DatasetError
from fltrust.data.cache import DatasetNotFoundError, file_sha256
from fltrust.data.specs import INPUT_SPECS, input_spec  # noqa: F401 (re-exported)
from fltrust.data.synthetic import GENERATORS
from fltrust.names import DatasetName, RealDataset, SyntheticDataset

if TYPE_CHECKING:  # config validation reads this module, so it may not import config at run time
    from fltrust.config import DataConfig

DATA_ENV = "FLTRUST_DATA"
"""Environment variable naming the data root."""

STRICT_ENV = "FLTRUST_STRICT"
"""Environment variable: ``1`` makes a known-checksum mismatch an error (CLI ``--strict``)."""


class SyntheticFallbackWarning(UserWarning):
    """Real dataset files were missing and the synthetic stand-in is used instead."""


class DataIntegrityWarning(UserWarning):
    """A data file's SHA-256 differs from the known one (an error in strict mode)."""


def strict_mode() -> bool:
    """True when ``$FLTRUST_STRICT`` is set to 1/true/yes (known-checksum mismatches are errors)."""
    return os.environ.get(STRICT_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class DatasetSpec:
    """Facts about one real dataset.

    Attributes
    ----------
    name, title : str
        Registry name and human name.
    folder : str
        Folder under the data root.
    synthetic : str
        Name of the synthetic stand-in.
    fetch : str
        ``"download"`` (an official public URL) or ``"manual"``.
    url, archive : str or None
        Download URL and the archive file name it is saved as (inside the dataset folder).
    archive_sha256 : str or None
        Expected SHA-256 of the archive (``None``: not published; the download is then unverified).
    archive_bytes : int or None
        Expected archive size.
    instructions : str
        Where to get the files and where to put them ({folder} is replaced by the real folder).
    known_sha256 : dict of str to str
        SHA-256 of known-good files other than the archive, by path relative to the folder.
    """

    name: RealDataset
    title: str
    folder: str
    synthetic: SyntheticDataset
    fetch: str
    instructions: str
    url: str | None = None
    archive: str | None = None
    archive_sha256: str | None = None
    archive_bytes: int | None = None
    known_sha256: dict[str, str] = field(default_factory=dict)

    def expected_sha256(self) -> dict[str, str]:
        """Every known SHA-256 by relative path: ``known_sha256`` plus the archive's."""
        archive = {self.archive: self.archive_sha256} if self.archive and self.archive_sha256 else {}
        return {**self.known_sha256, **archive}


SUMS_DIR = Path(__file__).with_name("known_sha256")


def read_known_sums(name: str) -> dict[str, str]:
    """The known SHA-256 of a dataset's files, from ``known_sha256/<name>.sha256`` (``sha256sum``
    format, ``#`` comments), by path relative to the dataset folder; empty when there is no list.

    >>> len(read_known_sums("femnist"))
    120
    """
    path = SUMS_DIR / f"{name}.sha256"
    if not path.is_file():
        return {}
    pairs = (line.split(maxsplit=1) for line in path.read_text().splitlines() if line.strip() and not line.startswith("#"))
    return {rel.strip(): digest for digest, rel in pairs}


SPECS: dict[str, DatasetSpec] = {
    "cifar10": DatasetSpec(
        name="cifar10",
        title="CIFAR-10 (Krizhevsky 2009)",
        folder="cifar10",
        synthetic="synthetic_cifar10",
        fetch="download",
        url="https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
        archive="cifar-10-python.tar.gz",
        # The SHA-256 that Keras' cifar10.load_data checks; md5 c58f30108f718f92721af3b95e74349a
        # (torchvision) belongs to the same 170,498,071-byte file.
        archive_sha256="6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
        archive_bytes=170_498_071,
        instructions=(
            "download https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz and extract it so that "
            "{folder}/cifar-10-batches-py/ holds data_batch_1 ... data_batch_5 and test_batch; "
            "or place .npz parts with arrays x_train (uint8 N,32,32,3), y_train, x_test, y_test "
            "(optional client_train, client_test) in {folder}/ (every *.npz there is read)"
        ),
        known_sha256={
            # The project's mirror of one PFLlib partition (data/PROVENANCE.md#cifar10):
            # clients 0-49 (26,666 images), clients 50-99 (32,199), and 934 recovered client-75 train images.
            "cifar10_subset.npz": "07d4bcbc21085ab7b22368283d79ddcbc0a7b89536d4e8a0e4575628c492eb39",
            "cifar10_subset_part2.npz": "2df52ab8fd947721a9bcf4fba44e2c9a632141adc6eb891341ed5cfe8ca7acdb",
            "cifar10_client75_train_fill.npz": "6e35f463eb67fe9c037ab2bed59657b6bf6b9415ce0d76fa11a95d21f5b61f19",
            # The official python batches, in cifar-10-batches-py/ or directly in the folder.
            **{f"{prefix}{name}": digest for name, digest in cifar10.OFFICIAL_SHA256.items()
               for prefix in (f"{cifar10.BATCHES_DIR}/", "")},
        },
    ),
    "femnist": DatasetSpec(
        name="femnist",
        title="FEMNIST (LEAF, Caldas et al. 2018)",
        folder="femnist",
        synthetic="synthetic_femnist",
        fetch="download",
        # TensorFlow Federated's federated EMNIST (3,400 writers, 62 classes), the h5 pair that TFF's
        # emnist.load_data(only_digits=False) read up to v0.18.0 (tensorflow_federated/python/simulation/
        # datasets/emnist.py: URL and sha256 there; TFF publishes no size). Later TFF releases read the
        # same writers from emnist_all.sqlite.lzma, for which TFF publishes no checksum.
        url="https://storage.googleapis.com/tff-datasets-public/fed_emnist.tar.bz2",
        archive="fed_emnist.tar.bz2",
        archive_sha256="fe1ed5a502cea3a952eb105920bff8cffb32836b5173cb18a57a32c3606f3ea0",
        instructions=(
            "download https://storage.googleapis.com/tff-datasets-public/fed_emnist.tar.bz2 (TensorFlow "
            "Federated's federated EMNIST, sha256 fe1ed5a502cea3a952eb105920bff8cffb32836b5173cb18a57a32c3606f3ea0) "
            "to {folder}/fed_emnist.tar.bz2 and extract it there, so that {folder}/fed_emnist_train.h5 and "
            "{folder}/fed_emnist_test.h5 exist; or build LEAF shards (git clone https://github.com/TalwalkarLab/leaf "
            "&& cd leaf/data/femnist && ./preprocess.sh -s niid --sf 0.05 -k 0 -t sample --tf 0.9) and copy "
            "leaf/data/femnist/data/train/*.json to {folder}/train/ and leaf/data/femnist/data/test/*.json to {folder}/test/"
        ),
        # the project's mirror: 120 shards of three LEAF runs (data/PROVENANCE.md#femnist)
        known_sha256=read_known_sums("femnist"),
    ),
    "nsl_kdd": DatasetSpec(
        name="nsl_kdd",
        title="NSL-KDD (Tavallaee et al. 2009)",
        folder="nsl_kdd",
        synthetic="synthetic_nsl_kdd",
        fetch="manual",
        instructions=(
            "download NSL-KDD from https://www.unb.ca/cic/datasets/nsl.html (the site asks for a form) "
            "and place KDDTrain+.txt and KDDTest+.txt (optionally KDDTrain+_20Percent.txt and "
            "KDDTest-21.txt) in {folder}/"
        ),
        known_sha256={
            "KDDTrain+.txt": "1b86d2f957b33082081bba410fe129b475efebcc13c9014c3f447c8271aadf95",
            "KDDTest+.txt": "fa46b0935342616aa83b7c2578db355b6a7aaabbc492248172c7a1e8b7ab8f84",
            "KDDTrain+_20Percent.txt": "7ea86479faab5ca2190b7f18b4982fb058ce5bf2b46e0e1017d0d9ef90f9c16e",
            "KDDTest-21.txt": "746993ac9e25868827cacf09eab450050a2a1056e1ce48a1ad39f5dc801d531d",
        },
    ),
    "n_baiot": DatasetSpec(
        name="n_baiot",
        title="N-BaIoT (Meidan et al. 2018)",
        folder="n_baiot",
        synthetic="synthetic_n_baiot",
        fetch="download",
        url="https://archive.ics.uci.edu/static/public/442/detection+of+iot+botnet+attacks+n+baiot.zip",
        archive="detection+of+iot+botnet+attacks+n+baiot.zip",
        instructions=(
            "download https://archive.ics.uci.edu/static/public/442/detection+of+iot+botnet+attacks+n+baiot.zip "
            "(UCI dataset 442), unzip it into {folder}/ so that each device folder "
            "(Danmini_Doorbell, Ecobee_Thermostat, ...) holds benign_traffic.csv, and extract each "
            "gafgyt_attacks.rar / mirai_attacks.rar into <device>/gafgyt_attacks/ and <device>/mirai_attacks/ "
            "(for example with unrar or 7z)"
        ),
        known_sha256={
            # The project's mirror's partial real files (data/PROVENANCE.md#n-baiot-real-partial),
            # read by n_baiot.load_n_baiot_real_partial, never by load_n_baiot.
            "real_partial/1.benign+gafgyt.scan.Danmini_Doorbell.csv":
                "b6103be32edebeb7c32558046bc7f34c749ea5c6d27be86dceaf75ce6c1278f7",
            "real_partial/3.gafgyt.tcp.zip": "f0547f7362970f3e9286576fe268e0f227ce59ec33066f087d7301ff35c94301",
            "real_partial/3.gafgyt.udp.zip": "d9deb57b0d55624fc84731ff3d377fdf20ce55852ac7d7af6a60163b3bdeab5c",
            "real_partial/5.gafgyt.tcp.zip": "bfb449ece299e8ca489b68d0cdca25753ddb19c37147817891df2e7b8986907d",
            "real_partial/5.gafgyt.udp.zip": "07f757d4d4d32ad07c78402f56976c6a7d861ce414574e19aa0e5a15db04298b",
        },
    ),
}
"""The real datasets by name."""


@dataclass(frozen=True)
class FileSetSpec:
    """Published files fetched one by one from pinned URLs, each checked against a committed SHA-256.

    Attributes
    ----------
    name, title : str
        Registry name (``fltrust data fetch NAME``) and human name.
    folder : str
        Folder under the data root; the files keep their paths relative to it.
    url_base : str
        A file's URL is ``url_base`` followed by its relative path (a URL pinned to one commit).
    source : str
        Where the files come from and under which licence (for ``fltrust data info``).
    known_sha256 : dict of str to str
        Every file of the set (all required) with its SHA-256, by path relative to ``folder``.
    """

    name: str
    title: str
    folder: str
    url_base: str
    source: str
    known_sha256: dict[str, str] = field(default_factory=dict)

    fetch = "download"

    def url(self, relative: str) -> str:
        """The download URL of one file of the set.

        >>> REFERENCE_SPECS["ffa-results"].url("Results/a.json")[-56:]
        '/5e3115eb2350501e93a6b1f6d085d43d08078da8/Results/a.json'
        """
        return self.url_base + relative

    def expected_sha256(self) -> dict[str, str]:
        """Every file's SHA-256 by relative path (as :meth:`DatasetSpec.expected_sha256`)."""
        return dict(self.known_sha256)

    def instructions(self, folder: Path) -> str:
        """Where to get the files by hand and where to put them."""
        subfolders = sorted({str(Path(rel).parent) for rel in self.known_sha256})
        return (f"download the {len(self.known_sha256)} files listed in fltrust/data/known_sha256/{self.folder}.sha256 "
                f"from {self.url_base}<path> into {', '.join(str(folder / s) + '/' for s in subfolders)}")


FFA_RESULTS_COMMIT = "5e3115eb2350501e93a6b1f6d085d43d08078da8"
"""The fairness authors' repository commit whose ``Results/`` the comparison reads (2024-08-08)."""

REFERENCE_SPECS: dict[str, FileSetSpec] = {
    "ffa-results": FileSetSpec(
        name="ffa-results",
        title="Federated Fairness Analytics: the authors' raw results (24 conditions x 3 repeats)",
        folder="ffa_results",
        url_base=f"https://raw.githubusercontent.com/oscardilley/federated-fairness/{FFA_RESULTS_COMMIT}/",
        source=(f"github.com/oscardilley/federated-fairness at commit {FFA_RESULTS_COMMIT}, folder Results/ "
                "(Apache-2.0); compared with, never trained on"),
        known_sha256=read_known_sums("ffa_results"),
    ),
}
"""Published result files by name (:data:`fltrust.names.REFERENCE_DATA`)."""


def reference_spec(name: str) -> FileSetSpec:
    """The :class:`FileSetSpec` of a published file set (a clear error for other names)."""
    if name not in REFERENCE_SPECS:
        raise DatasetError(f"unknown published file set {name!r}; choose one of {sorted(REFERENCE_SPECS)}")
    return REFERENCE_SPECS[name]


def data_root(root: str | os.PathLike[str] | None = None) -> Path:
    """The data root: ``root`` if given, else ``$FLTRUST_DATA``, else ``./data``."""
    if root is not None:
        return Path(root).expanduser()
    env = os.environ.get(DATA_ENV)
    return Path(env).expanduser() if env else Path("data")


def dataset_folder(name: str, root: str | os.PathLike[str] | None = None) -> Path:
    """``<data root>/<folder>`` of a real dataset."""
    return data_root(root) / spec_of(name).folder


def spec_of(name: str) -> DatasetSpec:
    """The :class:`DatasetSpec` of a real dataset (a clear error for other names)."""
    if name not in SPECS:
        raise DatasetError(f"unknown real dataset {name!r}; choose one of {sorted(SPECS)}")
    return SPECS[name]


def expected_sha256(name: str) -> dict[str, str]:
    """Every known SHA-256 of a real dataset or a published file set, by path relative to its folder."""
    return (reference_spec(name) if name in REFERENCE_SPECS else spec_of(name)).expected_sha256()


# -- loading -----------------------------------------------------------------------------------

def _check_options(cfg: DataConfig) -> None:
    base = cfg.name.removeprefix("synthetic_")
    for option, default, dataset, title in (("onehot_order", "global", "nsl_kdd", "NSL-KDD"),
                                            ("scaling", "fit_train", "nsl_kdd", "NSL-KDD"),
                                            ("standin_calibration", "none", "n_baiot", "synthetic N-BaIoT")):
        if getattr(cfg, option) != default and base != dataset:
            raise DatasetError(f"data.{option}={getattr(cfg, option)!r} only applies to {title}; "
                               f"use {default!r} for {cfg.name}")
    if cfg.balance and base != "n_baiot":
        raise DatasetError(f"data.balance=true only applies to N-BaIoT; set it to false for {cfg.name}")
    if cfg.name == "n_baiot" and (cfg.train_files or cfg.test_files):
        raise DatasetError(
            "data.train_files/test_files are not used by n_baiot (it reads every device's CSVs); remove them"
        )


def _load_real(cfg: DataConfig | None, folder: Path, seed: int, real: RealDataset | None = None) -> DatasetBundle:
    """Load real files with ``cfg``'s options, or with each loader's defaults when ``cfg`` is None (``real``)."""
    name: DatasetName | None = cfg.name if cfg is not None else real
    files: dict[str, Any] = {} if cfg is None else {"train_files": cfg.train_files, "test_files": cfg.test_files}
    if name == "cifar10":
        return cifar10.load_cifar10(folder, **files)
    if name == "femnist":
        return femnist.load_femnist(folder, **files)
    if name == "nsl_kdd":
        options: dict[str, Any] = {} if cfg is None else {"onehot_order": cfg.onehot_order, "scaling": cfg.scaling}
        return nsl_kdd.load_nsl_kdd(folder, **files, **options)
    if name == "n_baiot":
        return n_baiot.load_n_baiot(folder, seed=seed, **({} if cfg is None else {"balance": cfg.balance}))
    raise DatasetError(f"data.name={name!r} has no loader")  # pragma: no cover - DATASETS and SPECS agree


def _source_records(source: dict[str, Any]) -> list[dict[str, Any]]:
    """The file provenance records (``path`` relative to the folder, ``sha256``) of a bundle source."""
    out = []
    for key in ("files", "train_files", "test_files"):
        out += [r for r in source.get(key) or [] if isinstance(r, dict) and "sha256" in r]
    return out


def checksum_mismatches(name: str, folder: Path, records: list[dict[str, Any]] | None = None) -> list[dict[str, str]]:
    """Files whose SHA-256 differs from the registry's known one.

    Parameters
    ----------
    name : str
        Real dataset or published file set name.
    folder : Path
        The dataset folder.
    records : list of dict, optional
        Provenance records of what was parsed (``path`` relative to ``folder``, ``sha256``); default:
        every file with a known checksum that exists in ``folder`` (hashed now).

    Returns
    -------
    list of dict
        ``{"path", "sha256", "expected"}`` per mismatching file (``path`` relative to ``folder``).
    """
    known = expected_sha256(name)
    if records is None:
        records = [
            {"path": rel, "sha256": file_sha256(folder / rel)} for rel in known if (folder / rel).is_file()
        ]
    return [
        {"path": r["path"], "sha256": r["sha256"], "expected": known[r["path"]]}
        for r in records
        if r["path"] in known and r["sha256"] != known[r["path"]]
    ]


def describe_mismatches(name: str, folder: Path, mismatches: list[dict[str, str]]) -> str:
    """One sentence naming each mismatching file, both hashes, and the fix."""
    files = "; ".join(f"{folder / m['path']}: sha256 {m['sha256']} differs from the known {m['expected']}"
                      for m in mismatches)
    return (f"{files} (the file is truncated, edited or not the official release; "
            f"re-fetch it, see `fltrust data fetch {name}`)")


def _verify_checksums(name: str, folder: Path, bundle: DatasetBundle) -> DatasetBundle:
    """Warn (strict: raise) when a parsed file's hash differs from the known one; record it in ``source``."""
    mismatches = checksum_mismatches(name, folder, _source_records(bundle.source))
    if not mismatches:
        return bundle
    message = describe_mismatches(name, folder, mismatches)
    if strict_mode():
        raise DatasetError(f"{message} [strict mode: {STRICT_ENV}=1 / --strict]")
    warnings.warn(f"{message}; --strict (or {STRICT_ENV}=1) makes this an error", DataIntegrityWarning, stacklevel=3)
    return dataclasses.replace(bundle, source={**bundle.source, "checksum_mismatch": mismatches})


def _load_verified(cfg: DataConfig, folder: Path, seed: int) -> DatasetBundle:
    """:func:`_load_real` plus the known-checksum check (module docstring)."""
    try:
        bundle = _load_real(cfg, folder, seed)
    except DatasetNotFoundError:
        raise
    except DatasetError as exc:
        mismatches = checksum_mismatches(cfg.name, folder)
        if mismatches:
            hashes = "; ".join(f"{m['path']} has sha256 {m['sha256'][:12]}..., the known file {m['expected'][:12]}..."
                               for m in mismatches)
            raise DatasetError(f"{exc} ({hashes})") from exc
        raise
    return _verify_checksums(cfg.name, folder, bundle)


FALLBACK_FEMNIST_WRITERS = 110
"""Writers of the FEMNIST stand-in when it replaces missing real data: as many as the local LEAF
subset has, so the experiments with 50 and 100 natural clients still run."""


def _synthetic(name: DatasetName, cfg: DataConfig, seed: int, *, fallback: bool = False) -> DatasetBundle:
    kwargs: dict[str, Any] = {"seed": seed}
    if name == "synthetic_n_baiot":
        kwargs["balance"] = cfg.balance
        if cfg.standin_calibration != "none":
            kwargs["calibration"] = cfg.standin_calibration
    if name == "synthetic_femnist" and fallback:
        kwargs["num_writers"] = FALLBACK_FEMNIST_WRITERS
    bundle = GENERATORS[name](cfg.synthetic_samples, **kwargs)
    if name == "synthetic_nsl_kdd":
        options = {"onehot_order": cfg.onehot_order, "scaling": cfg.scaling}
        bundle = dataclasses.replace(bundle, source={**bundle.source, **options})
    return bundle


def _subsample(split: ArraySplit, limit: int | None, rng: np.random.Generator) -> ArraySplit:
    if limit is None or len(split) <= limit:
        return split
    return split.subset(np.sort(rng.choice(len(split), size=limit, replace=False)))


def pool_and_split(bundle: DatasetBundle, train_samples: int, seed: int) -> DatasetBundle:
    """Pool ``bundle``'s train and test splits and draw ``train_samples`` of them (seeded) as the
    new train split; the rest, in pool order, is the new test split (``data.pooled_train_samples``).

    Raises
    ------
    DatasetError
        If the pool holds fewer than ``train_samples + 1`` samples.
    """
    train, test = bundle.train, bundle.test
    total = len(train) + len(test)
    if train_samples >= total:
        raise DatasetError(
            f"data.pooled_train_samples={train_samples} needs a larger pool: {bundle.name} has "
            f"{total} samples (train + test); use at most {total - 1}"
        )
    if (train.groups is None) != (test.groups is None) or set(train.extras) != set(test.extras):
        raise DatasetError(f"data.pooled_train_samples: {bundle.name}'s train and test splits carry different columns")
    pool = ArraySplit(
        x=np.concatenate([train.x, test.x]),
        y=np.concatenate([train.y, test.y]),
        groups=None if train.groups is None else np.concatenate([train.groups, test.groups]),
        extras={k: np.concatenate([train.extras[k], test.extras[k]]) for k in train.extras},
    )
    chosen = np.zeros(total, dtype=bool)
    chosen[np.random.default_rng(seed).choice(total, size=train_samples, replace=False)] = True
    return dataclasses.replace(
        bundle,
        train=pool.subset(np.flatnonzero(chosen)),
        test=pool.subset(np.flatnonzero(~chosen)),
        source={**bundle.source, "pooled": {"train_samples": train_samples, "test_samples": total - train_samples,
                                            "seed": seed}},
    )


def load_dataset(cfg: DataConfig, *, seed: int = 0) -> DatasetBundle:
    """Load the dataset a :class:`~fltrust.config.DataConfig` describes.

    Parameters
    ----------
    cfg : DataConfig
        Dataset name, root and options (see the module docstring).
    seed : int
        Seed of every random step here: synthetic generation, the N-BaIoT split and balancing, the
        ``pooled_train_samples`` redraw and the ``max_*_samples`` subsample.

    Returns
    -------
    DatasetBundle
        Deterministic given ``cfg``, ``seed`` and the files.

    Raises
    ------
    DatasetError
        Missing files (unless ``cfg.allow_synthetic_fallback``), corrupt files, options that do not
        apply to the dataset, and in strict mode a file whose SHA-256 differs from the known one.

    Warns
    -----
    DataIntegrityWarning
        A file's SHA-256 differs from the known one (not strict mode).
    """
    _check_options(cfg)
    if cfg.name in GENERATORS:
        bundle = _synthetic(cfg.name, cfg, seed)
    else:
        folder = dataset_folder(cfg.name, cfg.root)
        try:
            bundle = _load_verified(cfg, folder, seed)
        except DatasetNotFoundError as exc:
            if not cfg.allow_synthetic_fallback:
                raise
            stand_in = SPECS[cfg.name].synthetic
            warnings.warn(
                f"{cfg.name}: real files not found ({exc}). Using the SYNTHETIC stand-in {stand_in} "
                f"because data.allow_synthetic_fallback=true; results are not about the real data.",
                SyntheticFallbackWarning,
                stacklevel=2,
            )
            bundle = _synthetic(stand_in, cfg, seed, fallback=True)
            bundle = dataclasses.replace(
                bundle, source={**bundle.source, "requested": cfg.name, "fallback_reason": str(exc)}
            )
    if cfg.pooled_train_samples is not None:
        bundle = pool_and_split(bundle, cfg.pooled_train_samples, seed)
    if cfg.max_train_samples is not None or cfg.max_test_samples is not None:
        rng = np.random.default_rng(seed)
        bundle = dataclasses.replace(
            bundle,
            train=_subsample(bundle.train, cfg.max_train_samples, rng),
            test=_subsample(bundle.test, cfg.max_test_samples, rng),
            source={
                **bundle.source,
                "subsample": {
                    "max_train_samples": cfg.max_train_samples,
                    "max_test_samples": cfg.max_test_samples,
                    "seed": seed,
                },
            },
        )
    if cfg.normalize is not None:
        bundle = normalized(bundle, *cfg.normalize)
    return bundle


def normalized(bundle: DatasetBundle, mean: float, std: float) -> DatasetBundle:
    """The bundle with every input value x replaced by ``(x - mean) / std`` (``data.normalize``).

    Parameters
    ----------
    bundle : DatasetBundle
        A loaded dataset.
    mean, std : float
        torchvision's ``Normalize(mean, std)`` for one channel (``std > 0``).

    Returns
    -------
    DatasetBundle
        A new bundle (float32 inputs), its ``source`` recording the transform.

    Examples
    --------
    >>> split = ArraySplit(np.array([[0.0, 1.0]], dtype=np.float32), np.array([0]))
    >>> normalized(DatasetBundle("x", split, split, 2, (2,)), 0.5, 0.5).train.x.tolist()
    [[-1.0, 1.0]]
    """
    def apply(split: ArraySplit) -> ArraySplit:
        x = ((split.x.astype(np.float32) - np.float32(mean)) / np.float32(std)).astype(np.float32)
        return dataclasses.replace(split, x=x)

    return dataclasses.replace(bundle, train=apply(bundle.train), test=apply(bundle.test),
                               source={**bundle.source, "normalize": {"mean": mean, "std": std}})

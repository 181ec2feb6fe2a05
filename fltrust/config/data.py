"""The ``data``, ``partition`` and ``model`` sections: which dataset, how it becomes clients, which model."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fltrust.config.checks import ConfigError, check_fields, fraction, nonnegative, positive, share
from fltrust.names import (
    AUX_SOURCES,
    DATASETS,
    FEATURE_SCALINGS,
    MODEL_NAMES,
    ONEHOT_ORDERS,
    PARTITION_SCHEMES,
    STANDIN_CALIBRATIONS,
    AuxSource,
    DatasetName,
    FeatureScaling,
    ModelName,
    OnehotOrder,
    PartitionScheme,
    StandinCalibration,
)
from fltrust.settings import show


@dataclass(frozen=True)
class DataConfig:
    """Which dataset, where, and loader options.

    Attributes
    ----------
    name : str
        One of ``DATASETS``. ``synthetic_*`` generate stand-ins of the same shape.
    root : str or None
        Data root; ``None`` means ``$FLTRUST_DATA``, else ``./data``.
    train_files, test_files : list of str or None
        Files (relative to the dataset folder, no ``..``) to read; ``None`` = the loader's default.
        NSL-KDD default: ``KDDTrain+.txt`` / ``KDDTest+.txt``; the fairness paper used the union
        with ``KDDTrain+_20Percent.txt`` / ``KDDTest-21.txt``.
    onehot_order : str
        NSL-KDD categorical columns: ``"global"`` (one fixed order, the correct default),
        ``"per_split"`` (what the fairness authors ran: each client's train split, each client's
        validation split and the auxiliary set one-hot encoded on its own, fairness spec 6.7;
        docs/references.md#fairness-6-7) or ``"per_partition"`` (a client's train and validation rows encoded together;
        an earlier reading of the authors' code, kept for comparison).
    scaling : str
        NSL-KDD continuous columns: ``"fit_train"`` (min-max fitted on the training data, the
        default) or ``"fixed"`` (the fairness authors' fixed maxima table, fairness spec 6.7).
    balance : bool
        N-BaIoT: balance benign/attack 50/50 per client (trust experiment 5).
    synthetic_samples : int
        Training samples of a synthetic dataset (test gets a quarter); at most 2 GiB of float32
        features (e.g. 139,810 CIFAR-10-shaped or 3,520,464 NSL-KDD-shaped samples).
    max_train_samples, max_test_samples : int or None
        Seeded subsample for quick runs (``None`` = all).
    pooled_train_samples : int or None
        Pool the loaded train and test splits and draw a new train split of this many samples
        (seeded); the rest becomes the test split (from which the server's auxiliary set is drawn).
        For data whose own split is not the authors': the CIFAR-10 mirror is a federated
        partition's per-client shares (59,799 images), so 50,000 are drawn for the clients, as the
        authors gave the official 50,000 training images to theirs, and the other 9,799 play the
        10,000-image test batch; FEMNIST iid pools the writers' samples as the authors' builder did.
        ``None`` (default) keeps the loader's split.
    allow_synthetic_fallback : bool
        If the real files are missing, use the synthetic stand-in (and say so) instead of failing.
    standin_calibration : str
        Synthetic N-BaIoT only: ``"none"`` (the default stand-in) or ``"real_partial"`` (each class
        gets the per-feature mean and std of the real ``real_partial/`` rows,
        :func:`fltrust.data.synthetic.synthetic_n_baiot`).
    normalize : list of float or None
        ``[mean, std]``: every input value x becomes ``(x - mean) / std`` after loading, in both
        splits (torchvision's ``Normalize(mean, std)`` on one channel). The FederatedTrust
        prototype's FederatedScope configuration applies ``Normalize(0.1307, 0.3081)`` to FEMNIST's
        [0, 1] pixels. ``None`` (default) keeps the loader's values.
    """

    name: DatasetName = "synthetic_nsl_kdd"
    root: str | None = None
    train_files: list[str] | None = None
    test_files: list[str] | None = None
    onehot_order: OnehotOrder = "global"
    scaling: FeatureScaling = "fit_train"
    balance: bool = False
    synthetic_samples: int = 2000
    max_train_samples: int | None = None
    max_test_samples: int | None = None
    pooled_train_samples: int | None = None
    allow_synthetic_fallback: bool = False
    standin_calibration: StandinCalibration = "none"
    normalize: list[float] | None = None

    def __post_init__(self) -> None:
        check_fields(self, "data", name=DATASETS)
        if self.normalize is not None and (len(self.normalize) != 2 or not self.normalize[1] > 0):
            raise ConfigError(f"data.normalize={self.normalize!r} must be [mean, std] with std > 0, e.g. [0.1307, 0.3081]")
        check_fields(self, "data", standin_calibration=STANDIN_CALIBRATIONS, onehot_order=ONEHOT_ORDERS,
                     scaling=FEATURE_SCALINGS, synthetic_samples=positive)
        for name in ("train_files", "test_files"):
            _check_relative_files(name, getattr(self, name))
        check_fields(self, "data", max_train_samples=positive, max_test_samples=positive, pooled_train_samples=positive)


def _check_relative_files(name: str, files: list[str] | None) -> None:
    """``data.train_files`` / ``data.test_files`` name files inside the dataset folder."""
    for i, file in enumerate(files or []):
        parts = Path(file).parts
        if not file or Path(file).is_absolute() or ".." in parts or file.startswith("~"):
            raise ConfigError(f"data.{name}[{i}]={show(file)} must be a path relative to the dataset folder "
                              f"(e.g. 'KDDTrain+.txt'), without '..'; use data.root to read another folder")


@dataclass(frozen=True)
class PartitionConfig:
    """How samples become clients.

    Attributes
    ----------
    num_clients : int
        Number of clients C.
    scheme : str
        ``"iid"`` (shuffled equal shards), ``"dirichlet"`` (label skew, Dirichlet(alpha)),
        ``"natural"`` (one client per writer/device; C must not exceed the natural clients).
    alpha : float
        Dirichlet concentration; smaller = more skew.
    min_partition_size : int
        Dirichlet: redraw until every client has at least this many samples.
    self_balancing : bool
        Dirichlet: stop giving a class to clients that already hold more than the average
        (flwr-datasets' ``self_balancing``, used by the fairness authors).
    val_fraction : float
        Share of each client's data held out as its local validation set (rounded up).
    aux_fraction : float
        Share of the test split used as the server's auxiliary set D (seeded draw).
    aux_max_samples : int or None
        Cap on |D|.
    aux_source : {"test", "client_pool"}
        Where D is drawn from. ``"test"`` (default): the test split, disjoint from every client's
        data (fairness spec 9, docs/references.md#fairness-9). ``"client_pool"``: the clients' own data (training and
        validation rows of all clients; ``aux_fraction`` is then a share of that pool), the
        overlap of the authors' FEMNIST iid builder (fairness spec 6.6: ~60 % of client samples
        also lie in D; docs/references.md#fairness-6-6). A switch for experiments on that leakage; no Table 3 config
        uses it.
    seed : int or None
        Partition seed; ``None`` = the run's seed (``run.seed`` + ``run.repeat``). It also seeds the
        dataset's own draws (``data.pooled_train_samples``, ``data.max_*_samples``, a synthetic
        generator), so repeats with one ``partition.seed`` share all their data.
    """

    num_clients: int = 10
    scheme: PartitionScheme = "iid"
    alpha: float = 0.5
    min_partition_size: int = 10
    self_balancing: bool = True
    val_fraction: float = 0.1
    aux_fraction: float = 1.0
    aux_max_samples: int | None = None
    aux_source: AuxSource = "test"
    client_splits: list[float] | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        check_fields(self, "partition", num_clients=positive, aux_source=AUX_SOURCES, scheme=PARTITION_SCHEMES,
                     alpha=positive, min_partition_size=nonnegative, val_fraction=share)
        if self.val_fraction >= 1:
            raise ConfigError("partition.val_fraction must be < 1 so that clients keep training data")
        check_fields(self, "partition", aux_fraction=fraction, aux_max_samples=positive)
        if self.client_splits is not None:
            shares = list(self.client_splits)
            if len(shares) != 3 or any(not isinstance(v, (int, float)) or v < 0 for v in shares) \
                    or abs(sum(shares) - 1) > 1e-9 or shares[0] <= 0 or shares[2] <= 0:
                raise ConfigError(
                    f"partition.client_splits={self.client_splits!r} must be three shares [train, val, test] that are "
                    "non-negative and sum to 1, with train and test above 0 (FederatedScope: [0.6, 0.2, 0.2])"
                )


@dataclass(frozen=True)
class ModelConfig:
    """Model architecture, by registry name (see :mod:`fltrust.models`)."""

    name: ModelName = "nsl_kdd_mlp"

    def __post_init__(self) -> None:
        check_fields(self, "model", name=MODEL_NAMES)

"""Synthetic stand-ins with the shapes, dtypes and structure of the real datasets.

They serve two purposes: tiny, fast datasets for unit tests and smoke runs, and a clearly labelled
fallback when the real files are absent (``data.allow_synthetic_fallback``). Every bundle has
``synthetic=True`` and ``source = {"generator", "seed", "train_samples", "test_samples"}``; results
computed on them are not results about the real data.

Each generator is a deterministic function of ``seed``: class- (and writer- or device-) specific
means plus Gaussian noise, so models can learn something and clients differ. The test split
(default: a quarter of ``n_train``) is drawn from the same distribution after the training split.

==========================  ================================================================
generator                   imitates
==========================  ================================================================
``synthetic_cifar10``       float32 (N, 3, 32, 32) in [-1, 1], 10 classes (blocky class templates)
``synthetic_femnist``       float32 (N, 1, 28, 28) in [0, 1], 62 classes, 20 writers as natural
                            clients with writer-specific label skew (Dirichlet(0.3)) and brightness
``synthetic_nsl_kdd``       122 features: 38 continuous in [0, 1] + valid one-hot blocks of
                            protocol_type/service/flag in the global order; 46.5 % attacks (as
                            KDDTrain+); the same ``extras`` as the real loader
``synthetic_n_baiot``       115 standardised features, 9 devices as natural clients with
                            device- and attack-specific means, about 80 % attack traffic;
                            ``calibration="real_partial"`` gives each class the real rows'
                            per-feature mean and standard deviation
==========================  ================================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fltrust.data import cifar10, femnist, n_baiot, nsl_kdd
from fltrust.data.base import ArraySplit, DatasetBundle, DatasetError
from fltrust.data.n_baiot_calibration import REAL_PARTIAL_CLASS_STATS
from fltrust.names import STANDIN_CALIBRATIONS, StandinCalibration


def _sizes(n_train: int, n_test: int | None) -> tuple[int, int]:
    if n_train < 1:
        raise DatasetError(f"synthetic datasets need n_train >= 1, got {n_train}")
    n_test = max(1, n_train // 4) if n_test is None else n_test
    if n_test < 1:
        raise DatasetError(f"synthetic datasets need n_test >= 1, got {n_test}")
    return n_train, n_test


def _bundle(name: str, seed: int, train: ArraySplit, test: ArraySplit, *, extra: dict[str, object] | None = None,
            **facts: Any) -> DatasetBundle:
    """A synthetic bundle whose ``source`` records the generator, seed, split sizes and ``extra``."""
    source = {"generator": name, "seed": seed, "train_samples": len(train), "test_samples": len(test), **(extra or {})}
    return DatasetBundle(name=name, train=train, test=test, synthetic=True, source=source, **facts)


def _upsample(templates: np.ndarray, factor: int) -> np.ndarray:
    """Nearest-neighbour upsampling of the last two axes."""
    return np.repeat(np.repeat(templates, factor, axis=-2), factor, axis=-1)


def synthetic_cifar10(n_train: int = 2000, *, seed: int = 0, n_test: int | None = None) -> DatasetBundle:
    """CIFAR-10-shaped images: a random 4x4 colour template per class, upsampled, plus noise.

    :math:`x = \\mathrm{clip}(T_y + 0.35\\,\\varepsilon, -1, 1)`, :math:`T_y \\sim U(-0.6, 0.6)`
    per 8x8 block and channel, :math:`\\varepsilon \\sim N(0, 1)`; labels uniform over 10 classes.
    """
    n_train, n_test = _sizes(n_train, n_test)
    rng = np.random.default_rng(seed)
    templates = _upsample(rng.uniform(-0.6, 0.6, size=(10, 3, 4, 4)), 8).astype(np.float32)

    def draw(n: int) -> ArraySplit:
        y = rng.integers(0, 10, size=n)
        noise = rng.standard_normal((n, 3, 32, 32), dtype=np.float32)
        x = np.clip(templates[y] + np.float32(0.35) * noise, -1.0, 1.0)
        return ArraySplit(x=x, y=y.astype(np.int64))

    return _bundle("synthetic_cifar10", seed, draw(n_train), draw(n_test), num_classes=10,
                   input_shape=cifar10.INPUT_SHAPE, class_names=list(cifar10.CLASS_NAMES))


def synthetic_femnist(
    n_train: int = 2000, *, seed: int = 0, n_test: int | None = None, num_writers: int = 20
) -> DatasetBundle:
    """FEMNIST-shaped images with writers as natural clients.

    Writer w has a share of the samples drawn from Dirichlet(2), a label distribution drawn from
    Dirichlet(0.3) over the 62 classes (label skew) and a brightness shift :math:`b_w \\sim N(0, 0.1)`;
    :math:`x = \\mathrm{clip}(T_y + b_w + 0.2\\,\\varepsilon, 0, 1)` with a random 7x7 template per
    class upsampled to 28x28. Test samples come from the same writers (same group ids).
    """
    n_train, n_test = _sizes(n_train, n_test)
    if num_writers < 1:
        raise DatasetError(f"synthetic_femnist needs num_writers >= 1, got {num_writers}")
    rng = np.random.default_rng(seed)
    k = len(femnist.CLASS_NAMES)
    templates = _upsample(rng.uniform(0.0, 1.0, size=(k, 1, 7, 7)), 4).astype(np.float32)
    writer_share = rng.dirichlet(np.full(num_writers, 2.0))
    label_dist = rng.dirichlet(np.full(k, 0.3), size=num_writers)
    brightness = rng.normal(0.0, 0.1, size=num_writers).astype(np.float32)

    def draw(n: int) -> ArraySplit:
        groups = rng.choice(num_writers, size=n, p=writer_share)
        y = np.empty(n, dtype=np.int64)
        for writer in range(num_writers):
            rows = np.flatnonzero(groups == writer)
            y[rows] = rng.choice(k, size=len(rows), p=label_dist[writer])
        noise = rng.standard_normal((n, 1, 28, 28), dtype=np.float32)
        x = np.clip(templates[y] + brightness[groups, None, None, None] + np.float32(0.2) * noise, 0.0, 1.0)
        return ArraySplit(x=x, y=y, groups=groups.astype(np.int64))

    return _bundle("synthetic_femnist", seed, draw(n_train), draw(n_test), num_classes=k,
                   input_shape=femnist.INPUT_SHAPE, group_names=[f"writer_{i:02d}" for i in range(num_writers)],
                   class_names=list(femnist.CLASS_NAMES))


_SYNTHETIC_ATTACKS = np.array(
    ["neptune", "satan", "ipsweep", "portsweep", "smurf", "back", "guess_passwd", "buffer_overflow"]
)


def synthetic_nsl_kdd(n_train: int = 2000, *, seed: int = 0, n_test: int | None = None) -> DatasetBundle:
    """NSL-KDD-shaped records built through the real loader's encoding.

    Label 1 (attack) with probability 0.465 (the KDDTrain+ share). Continuous columns:
    :math:`\\mathrm{clip}(\\mu_y + 0.15\\,\\varepsilon, 0, 1)` with class means :math:`\\mu_y \\sim U(0, 0.6)`;
    each categorical field is drawn from a class-specific Dirichlet(0.5) distribution over its
    categories, then one-hot encoded by :func:`fltrust.data.nsl_kdd.build_split` (global order).
    ``extras`` hold attack names (``normal`` or one of a few real attack names), categories and the
    raw categorical strings, so :func:`~fltrust.data.nsl_kdd.per_partition_column_order` works.
    """
    n_train, n_test = _sizes(n_train, n_test)
    rng = np.random.default_rng(seed)
    means = rng.uniform(0.0, 0.6, size=(2, len(nsl_kdd.CONTINUOUS_COLUMNS)))
    field_probs = {f: rng.dirichlet(np.full(len(v), 0.5), size=2) for f, v in nsl_kdd.CATEGORIES.items()}

    def draw(n: int) -> ArraySplit:
        y = (rng.random(n) < 0.465).astype(np.int64)
        continuous = np.clip(means[y] + 0.15 * rng.standard_normal((n, means.shape[1])), 0.0, 1.0)
        raw: dict[str, np.ndarray] = {}
        for field, values in nsl_kdd.CATEGORIES.items():
            codes = np.empty(n, dtype=np.int64)
            for label in (0, 1):
                rows = np.flatnonzero(y == label)
                codes[rows] = rng.choice(len(values), size=len(rows), p=field_probs[field][label])
            raw[field] = np.asarray(values)[codes]
        attack_names = _SYNTHETIC_ATTACKS[rng.integers(0, len(_SYNTHETIC_ATTACKS), n)]
        raw["attack"] = np.where(y == 1, attack_names, "normal")
        return nsl_kdd.build_split(raw, continuous)

    return _bundle("synthetic_nsl_kdd", seed, draw(n_train), draw(n_test), num_classes=2,
                   input_shape=(nsl_kdd.NUM_FEATURES,), class_names=list(nsl_kdd.CLASS_NAMES))


def _device_traffic(device: str) -> list[str]:
    """Traffic labels of one device: benign plus its gafgyt (and, where it exists, mirai) attacks."""
    labels = [f"gafgyt.{a}" for a in n_baiot.GAFGYT_ATTACKS]
    if device not in ("Ennio_Doorbell", "Samsung_SNH_1011_N_Webcam"):
        labels += [f"mirai.{a}" for a in n_baiot.MIRAI_ATTACKS]
    return labels


def synthetic_n_baiot(
    n_train: int = 2000,
    *,
    seed: int = 0,
    n_test: int | None = None,
    balance: bool = False,
    calibration: StandinCalibration = "none",
) -> DatasetBundle:
    """N-BaIoT-shaped traffic: 9 devices as natural clients, about 80 % attacks.

    Device d gets a share of the rows from Dirichlet(5) and a mean :math:`\\mu_d \\sim N(0, I)`;
    each attack type a of the device adds :math:`\\delta_a \\sim N(0, 1.5^2 I)`; a row is
    :math:`\\mu_d + \\delta_a + \\varepsilon`. Labels: attack with probability 0.8 (attack type
    uniform among the device's real attack files), else benign. ``balance=True`` balances each
    device 50/50 in each split as :func:`fltrust.data.n_baiot.balance_per_group`. Features are then
    standardised with the training statistics, as the real loader does.

    ``calibration="real_partial"`` (default ``"none"``: the rows above, unchanged) maps the same
    draws, per class c and feature j, to the real rows' class mean :math:`m_{cj}` and standard
    deviation :math:`s_{cj}` (:mod:`fltrust.data.n_baiot_calibration`, from ``real_partial/``) before
    the standardisation: :math:`x' = m_{cj} + s_{cj} (x - \\bar x_{cj}) / \\hat s_{cj}`, with
    :math:`\\bar x_{cj}, \\hat s_{cj}` the class mean and standard deviation of the training split
    (applied to both splits). The device and attack structure is kept, the marginal shapes stay Gaussian.
    """
    if calibration not in STANDIN_CALIBRATIONS:
        raise DatasetError(
            f"synthetic_n_baiot calibration={calibration!r} is not known; choose one of {list(STANDIN_CALIBRATIONS)}"
        )
    n_train, n_test = _sizes(n_train, n_test)
    rng = np.random.default_rng(seed)
    devices = n_baiot.DEVICES
    share = rng.dirichlet(np.full(len(devices), 5.0))
    device_mean = rng.standard_normal((len(devices), n_baiot.NUM_FEATURES))
    attack_labels = sorted({label for d in devices for label in _device_traffic(d)})
    attack_shift = 1.5 * rng.standard_normal((len(attack_labels), n_baiot.NUM_FEATURES))

    def draw(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        groups = rng.choice(len(devices), size=n, p=share).astype(np.int64)
        y = (rng.random(n) < 0.8).astype(np.int64)
        attack = np.full(n, "benign", dtype=object)
        x = device_mean[groups] + rng.standard_normal((n, n_baiot.NUM_FEATURES))
        for d, device in enumerate(devices):
            rows = np.flatnonzero((groups == d) & (y == 1))
            own = _device_traffic(device)
            picked = np.asarray(own)[rng.integers(0, len(own), len(rows))]
            attack[rows] = picked
            x[rows] += attack_shift[[attack_labels.index(a) for a in picked]] if len(rows) else 0.0
        keep = n_baiot.balance_per_group(y, groups, rng) if balance else np.arange(n)
        return x[keep], y[keep], groups[keep], attack[keep].astype(str)

    train, test = draw(n_train), draw(n_test)
    if calibration == "real_partial":
        x_raw = _calibrate_to_real_partial(train[0], train[1], [(train[0], train[1]), (test[0], test[1])])
        train, test = (x_raw[0], *train[1:]), (x_raw[1], *test[1:])
    x_train, x_test = n_baiot.standardise(train[0], test[0])
    return _bundle("synthetic_n_baiot", seed, ArraySplit(x_train, train[1], train[2], {"attack": train[3]}),
                   ArraySplit(x_test, test[1], test[2], {"attack": test[3]}), num_classes=2,
                   input_shape=(n_baiot.NUM_FEATURES,), group_names=list(devices),
                   class_names=list(n_baiot.CLASS_NAMES),
                   extra={"balance": balance, **({"calibration": calibration} if calibration != "none" else {})})


def _calibrate_to_real_partial(
    x_fit: np.ndarray, y_fit: np.ndarray, splits: list[tuple[np.ndarray, np.ndarray]]
) -> list[np.ndarray]:
    """Each split's rows with class c moved to the real class mean and std (``synthetic_n_baiot``)."""
    table = np.array([REAL_PARTIAL_CLASS_STATS[f] for f in n_baiot.FEATURE_NAMES], dtype=np.float64)
    out = [x.astype(np.float64, copy=True) for x, _ in splits]
    for label in (0, 1):
        fit = x_fit[y_fit == label]
        if len(fit) < 2:
            raise DatasetError(
                f"synthetic_n_baiot calibration needs at least 2 {n_baiot.CLASS_NAMES[label]} training rows, "
                f"got {len(fit)}; raise data.synthetic_samples"
            )
        mean, std = fit.mean(axis=0), fit.std(axis=0)
        target_mean, target_std = table[:, 2 * label], table[:, 2 * label + 1]
        for x, (_, y) in zip(out, splits):
            rows = y == label
            x[rows] = target_mean + target_std * (x[rows] - mean) / std
    return out


GENERATORS: dict[str, Callable[..., DatasetBundle]] = {
    "synthetic_cifar10": synthetic_cifar10,
    "synthetic_femnist": synthetic_femnist,
    "synthetic_nsl_kdd": synthetic_nsl_kdd,
    "synthetic_n_baiot": synthetic_n_baiot,
}
"""Synthetic generator by dataset name: ``f(n_train, *, seed, n_test=None)``."""

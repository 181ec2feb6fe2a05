"""The 24 conditions of Federated Fairness Analytics (Table 3), generated from one definition.

Strategy (FedAvg, q-FedAvg, Ditto) x dataset (CIFAR-10 with 100 and 10 clients, FEMNIST, NSL-KDD)
x setting (iid, non-iid). Hyper-parameters are those of the authors' code (fairness spec 4-6,
docs/references.md#fairness-4, #fairness-5, #fairness-6); :func:`write_condition_configs` writes one YAML per condition
into ``papers_repro/fairness_analytics/configs/`` (the committed files are checked against this module
by the tests).

Local adaptations (stored in each config's ``run.deviations`` and printed under every table):
CIFAR-10 comes from a mirror of one federated partition (59,799 of the 60,000 images, as
per-client shares rather than the official train/test split), so its images are pooled and
50,000 are drawn for the clients, as the authors gave the official 50,000 training images to
theirs; the other 9,799 stand in for the 10,000-image test batch the authors used as D.
FEMNIST: 205 of the 311 writers of the local copy (three LEAF runs); iid pools them and draws
205 x 221 samples, as the authors' builder. With the full datasets, :func:`condition_config` with
``full_data=True`` gives the paper's settings unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fltrust.repro.paths import write_configs

STRATEGIES = ("fedavg", "qfedavg", "ditto")
SETTINGS = ("iid", "niid")


@dataclass(frozen=True)
class DatasetSetup:
    """One dataset column of Table 3 with the authors' hyper-parameters (fairness spec 4)."""

    key: str  # condition-name part, e.g. "cifar10_100c"
    paper_label: str  # Table 3 row label
    data: str
    model: str
    num_clients: int
    fraction_fit: float
    local_epochs: int
    niid_scheme: str  # "dirichlet" or "natural"
    niid_alpha: float
    val_fraction_iid: float
    val_fraction_niid: float
    aux_fraction: float
    q: float
    ditto_lambda: float
    ditto_lr: float
    # iid: pool the dataset and draw this many samples per client (the authors' FEMNIST random_split)
    iid_samples_per_client: int | None = None
    # what this machine's data forces us to change (None = paper setting holds)
    local_aux_max_samples: int | None = None
    local_pooled_train_samples: int | None = None
    local_notes: tuple[str, ...] = ()


CIFAR10_MIRROR_NOTES = (
    "CIFAR-10 mirror of one federated partition (59,799 of the 60,000 images, per-client shares, not the official "
    "split): pooled, 50,000 drawn (seeded) for the clients as the authors' official training set",
    "server aux set = the other 9,799 images instead of the official 10,000-image test batch",
)

_CIFAR10_100C = DatasetSetup(
    "cifar10_100c", "CIFAR-10 cross-device (100C)", "cifar10", "cifar_cnn", 100, 0.05, 10,
    "dirichlet", 0.5, 0.1, 0.1, 1.0, q=0.2, ditto_lambda=0.8, ditto_lr=0.01,
    local_pooled_train_samples=50_000,
    local_notes=CIFAR10_MIRROR_NOTES,
)

DATASETS: dict[str, DatasetSetup] = {
    s.key: s
    for s in (
        _CIFAR10_100C,
        # cross-silo: the same setup with 10 clients, half of them per round
        replace(_CIFAR10_100C, key="cifar10_10c", paper_label="CIFAR-10 cross-silo (10C)", num_clients=10,
                fraction_fit=0.5),
        DatasetSetup(
            "femnist_205c", "FEMNIST (205C)", "femnist", "femnist_cnn", 205, 0.025, 5,
            "natural", 0.0, 25 / 221, 0.1, 1.0, q=0.0005, ditto_lambda=0.836, ditto_lr=0.02,
            iid_samples_per_client=221,
            local_aux_max_samples=500,
            local_notes=(
                "FEMNIST: 205 of the 311 writers of three LEAF runs (niid: drawn with the seed, each with its LEAF "
                "training rows; the authors' 205 writers came from TFF's 3,400)",
                "iid: all 47,414 samples of the 311 writers pooled, 205 x 221 drawn for the clients as the authors' "
                "random_split, the remaining 2,109 held out",
                "server aux set = 500 held-out samples (niid: the writers' LEAF test rows), disjoint from client data; "
                "the authors' D (iid: 46,873 samples from the client pool itself, niid: 4,654 from other writers) "
                "costs 10-90x more FedSV evaluations per round than this CPU allows",
            ),
        ),
        DatasetSetup(
            "nslkdd_100c", "NSL-KDD (100C)", "nsl_kdd", "nsl_kdd_mlp", 100, 0.05, 5,
            "dirichlet", 3.0, 0.01, 0.1, 0.01, q=0.2, ditto_lambda=0.5, ditto_lr=0.01,
            local_notes=("model trained in float32 (authors: float64 with float32 parameter transfer)",),
        ),
    )
}


def condition_name(strategy: str, dataset_key: str, setting: str) -> str:
    """E.g. ``fedavg_nslkdd_100c_iid``."""
    return f"{strategy}_{dataset_key}_{setting}"


def split_condition(name: str) -> tuple[str, str, str]:
    """(strategy, dataset key, setting) of a condition name; the inverse of :func:`condition_name`.

    >>> split_condition("fedavg_nslkdd_100c_iid")
    ('fedavg', 'nslkdd_100c', 'iid')
    """
    parts = name.split("_")
    return parts[0], "_".join(parts[1:-1]), parts[-1]


def all_conditions() -> list[tuple[str, str, str]]:
    """(strategy, dataset key, setting) of the 24 conditions, in Table 3 order."""
    return [(s, d, t) for d in DATASETS for s in STRATEGIES for t in SETTINGS]


CONDITIONS = {condition_name(*c): c for c in all_conditions()}
"""The 24 conditions by name (:func:`condition_name`) to (strategy, dataset key, setting), in Table 3 order."""


def condition_config(strategy: str, dataset_key: str, setting: str, *, full_data: bool = False) -> dict[str, Any]:
    """The faithful configuration of one condition as a nested dict.

    ``full_data=True`` returns the paper's settings unchanged (for users with the full datasets).
    """
    if strategy not in STRATEGIES or dataset_key not in DATASETS or setting not in SETTINGS:
        raise ValueError(
            f"unknown condition {strategy}/{dataset_key}/{setting}; strategies {STRATEGIES}, "
            f"datasets {list(DATASETS)}, settings {SETTINGS}"
        )
    d = DATASETS[dataset_key]
    per_round = max(1, int(d.num_clients * d.fraction_fit))  # 5 in every condition of the paper
    partition: dict[str, Any] = {
        "num_clients": d.num_clients,
        "val_fraction": d.val_fraction_iid if setting == "iid" else d.val_fraction_niid,
        "aux_fraction": d.aux_fraction,
    }
    if setting == "iid":
        partition["scheme"] = "iid"
    elif d.niid_scheme == "natural":
        partition["scheme"] = "natural"
    else:
        partition.update(scheme="dirichlet", alpha=d.niid_alpha, min_partition_size=10, self_balancing=True)
    if not full_data and d.local_aux_max_samples is not None:
        partition["aux_max_samples"] = d.local_aux_max_samples
    data: dict[str, Any] = {"name": d.data}
    if not full_data and d.local_pooled_train_samples is not None:
        data["pooled_train_samples"] = d.local_pooled_train_samples
    if setting == "iid" and d.iid_samples_per_client is not None:
        data["pooled_train_samples"] = d.num_clients * d.iid_samples_per_client
    if d.data == "nsl_kdd":
        # the authors' HF copy = KDDTrain+ u KDDTrain+_20Percent, KDDTest+ u KDDTest-21, their fixed
        # min-max table, and their one-hot encoding of every split on its own (fairness spec 6.7,
        # docs/references.md#fairness-6-7); corrected mode uses the global one-hot order
        # (fltrust.repro.fairness.run.condition_configs)
        data.update(
            train_files=["KDDTrain+.txt", "KDDTrain+_20Percent.txt"],
            test_files=["KDDTest+.txt", "KDDTest-21.txt"],
            scaling="fixed",
            onehot_order="per_split",
        )
    strategy_cfg: dict[str, Any] = {"name": strategy, "clients_per_round": per_round, "weighting": "batches"}
    if strategy == "qfedavg":
        strategy_cfg.update(q=d.q, qffl_learning_rate=0.1, qfedavg_variant="flower_legacy")
    if strategy == "ditto":
        strategy_cfg.update(ditto_lambda=d.ditto_lambda, ditto_lr=d.ditto_lr, ditto_epochs=10, ditto_anchor="local")
    # a note that starts with "iid:" or "niid:" concerns that setting only
    notes = [n for n in d.local_notes if n.split(":")[0] not in SETTINGS or n.startswith(f"{setting}:")]
    deviations = [] if full_data else notes
    return {
        "data": data,
        "partition": partition,
        "model": {"name": d.model},
        "strategy": strategy_cfg,
        "training": {
            "rounds": 30,
            "local_epochs": d.local_epochs,
            "batch_size": 32,
            "optimizer": "adam",
            "learning_rate": 0.001,
            "loss_scaling": "per_batch_sum",
        },
        "metrics": {"fairness": {"enabled": True, "mode": "faithful"}},
        "run": {"name": condition_name(strategy, dataset_key, setting), "seed": 0, "deviations": deviations},
    }


QUICK_OVERRIDES: dict[str, Any] = {
    "training.rounds": 3,
    "training.local_epochs": 1,
    "strategy.ditto_epochs": 1,
    "data.max_train_samples": 1000,
    "data.max_test_samples": 200,
    "data.pooled_train_samples": None,
    "partition.aux_max_samples": 64,
    "data.allow_synthetic_fallback": True,
}
"""Applied by ``--quick``: a CPU-seconds smoke version of a condition (not comparable with the paper).
Where the real data is missing, the quick version runs on the labelled synthetic stand-in. The
server's aux set D is capped at 64 samples: FedSV evaluates every coalition of the 5 participants
(32 models) on D each round, which is most of a quick condition's time."""


QUICK_FEMNIST_FALLBACK_SAMPLES = 6000
"""Rows of the FEMNIST stand-in in quick mode when the real data is missing (default 2,000): spread
over its 110 writers, the 20 drawn clients then hold about 55 rows each, so that every one has a
validation row and the fairness notions are defined."""


def quick_overrides(dataset_key: str) -> dict[str, Any]:
    """Quick-mode overrides, with client counts that fit the subsample."""
    out = dict(QUICK_OVERRIDES)
    d = DATASETS[dataset_key]
    if d.data == "femnist":
        out.pop("data.max_train_samples")  # writers must keep their samples; FEMNIST is small anyway
        out["partition.num_clients"] = 20
        out["data.synthetic_samples"] = QUICK_FEMNIST_FALLBACK_SAMPLES  # used by the stand-in only
    else:
        out["partition.num_clients"] = min(d.num_clients, 20)
        out["partition.min_partition_size"] = 5
    return out


def write_condition_configs(folder: str | Path) -> list[Path]:
    """Write the 24 condition YAML files (validated) into ``folder``; returns their paths."""
    return write_configs(folder, (
        (condition_name(strategy, key, setting), condition_config(strategy, key, setting),
         "# Generated by fltrust.repro.fairness.conditions.write_condition_configs -- do not edit by hand.\n"
         f"# Federated Fairness Analytics, Table 3 condition: {strategy} / {DATASETS[key].paper_label} / {setting}\n")
        for strategy, key, setting in all_conditions()))

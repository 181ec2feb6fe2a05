"""Three-round runs on the real datasets (subsampled); skipped when the data root lacks them."""

from __future__ import annotations

import numpy as np
import pytest

from fltrust.config import ExperimentConfig
from fltrust.data import data_root
from fltrust.experiment import run_experiment

FAMILIES = [
    # dataset folder, config sections
    ("nsl_kdd", {"data": {"name": "nsl_kdd", "max_train_samples": 3000, "max_test_samples": 500},
                 "model": {"name": "nsl_kdd_mlp"}, "partition": {"scheme": "dirichlet", "alpha": 3.0}}),
    ("cifar10", {"data": {"name": "cifar10", "max_train_samples": 900, "max_test_samples": 300},
                 "model": {"name": "cifar_cnn"}, "partition": {"scheme": "iid"}}),
    ("femnist", {"data": {"name": "femnist"}, "model": {"name": "femnist_cnn"},
                 "partition": {"scheme": "natural", "aux_max_samples": 200}}),
]


@pytest.mark.realdata
@pytest.mark.slow
@pytest.mark.parametrize("folder, sections", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_three_rounds_on_real_data_with_fairness(tmp_path, folder, sections):
    if not (data_root() / folder).is_dir():
        pytest.skip(f"{data_root() / folder} not found (real {folder} data)")
    base = {
        "partition": {"num_clients": 6},
        "strategy": {"name": "fedavg", "clients_per_round": 3},
        "training": {"rounds": 3, "local_epochs": 1},
        "metrics": {"fairness": {"enabled": True}},
        "run": {"name": f"real-{folder}", "progress": False},
    }
    for key, value in sections.items():
        base.setdefault(key, {}).update(value)
    record = run_experiment(ExperimentConfig.from_dict(base), out_dir=tmp_path)
    assert record.summary["synthetic"] is False
    rounds = record.rounds[1:]
    assert len(rounds) == 3
    for r in rounds:
        fairness = r.observations["fairness"]
        assert 0.0 <= fairness["f_o"] <= 1.0
        assert np.isfinite(fairness["F_T"]) or fairness["F_T"] is None
        assert len(fairness["phi"]) == 3

"""Poisoning attacks (fltrust.attacks): definitions by hand, the federation's poisoned rows, the
in-process engine's update-level hook, the run summary's attack block and the defence comparison."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from fltrust.attacks import (
    AttackPlan,
    apply_trigger,
    attack_success_rate,
    clean_accuracy,
    flip_labels,
    malicious_clients,
    poison_update,
)
from fltrust.core.observers import BaseObserver
from fltrust.config import AttackConfig, ConfigError, ExperimentConfig
from fltrust.experiment import defence_comparison
from fltrust.federation import prepare_federation


def config(**sections) -> ExperimentConfig:
    base = {"partition": {"num_clients": 6}, "strategy": {"clients_per_round": 5},
            "training": {"rounds": 2, "vectorize": "off"}, "run": {"name": "att"}}
    for key, value in sections.items():
        base.setdefault(key, {}).update(value)
    return ExperimentConfig.tiny(**base)


# -- definitions by hand --------------------------------------------------------------------------
def test_sign_flip_and_scale_by_hand():
    theta = [np.array([1.0, 2.0], dtype=np.float32), np.array(10, dtype=np.int64)]
    w = [np.array([2.0, 0.5], dtype=np.float32), np.array(13, dtype=np.int64)]
    flipped = poison_update(theta, w, -1.0)               # theta - (w - theta) = 2 theta - w
    assert flipped[0].tolist() == [0.0, 3.5] and flipped[0].dtype == np.float32
    assert flipped[1] == 7 and flipped[1].dtype == np.int64
    scaled = poison_update(theta, w, 10.0)                # theta + 10 (w - theta)
    assert scaled[0].tolist() == [11.0, -13.0] and scaled[1] == 40
    assert [a.tolist() for a in poison_update(theta, w, 1.0)] == [a.tolist() for a in w]  # s = 1: honest


def test_label_flip_and_trigger_by_hand():
    assert flip_labels(torch.tensor([0, 1, 2, 9]), 10).tolist() == [9, 8, 7, 0]
    assert flip_labels(torch.tensor([0, 1, 1]), 2).tolist() == [1, 0, 0]
    assert flip_labels(torch.tensor([3, 4]), 10, target_label=7).tolist() == [7, 7]
    x = apply_trigger(torch.zeros(2, 4), 2, 0.5)
    assert x.tolist() == [[0.5, 0.5, 0.0, 0.0]] * 2
    img = apply_trigger(torch.zeros(1, 3, 4, 4), 2, 1.0)
    assert img.sum() == 3 * 4 and img[0, :, 2:, 2:].min() == 1.0 and img[0, :, :2, :].max() == 0.0


def test_malicious_clients_explicit_or_seeded():
    assert malicious_clients(AttackConfig(kind="scale", malicious_clients=[5, 2]), 6, seed=0) == [2, 5]
    a = malicious_clients(AttackConfig(kind="scale", num_malicious=3), 20, seed=4)
    assert a == malicious_clients(AttackConfig(kind="scale", num_malicious=3), 20, seed=4)  # reproducible
    assert len(a) == 3 and a == sorted(a) and all(0 <= c < 20 for c in a)
    assert any(malicious_clients(AttackConfig(kind="scale", num_malicious=3), 20, seed=s) != a for s in range(5, 10))
    assert malicious_clients(AttackConfig(), 20, seed=0) == []


def test_attack_config_validation_and_run_ids():
    with pytest.raises(ConfigError, match="num_malicious"):
        config(attack={"kind": "sign_flip"})
    with pytest.raises(ConfigError, match="not client ids"):
        config(attack={"kind": "sign_flip", "malicious_clients": [6]})
    from fltrust.compatibility import check_compatible

    with pytest.raises(ConfigError, match="target_label"):  # a dataset fact: checked above the config
        check_compatible(config(attack={"kind": "backdoor", "num_malicious": 1, "target_label": 2}))  # NSL-KDD: 0, 1
    with pytest.raises(ConfigError, match="attack.kind"):
        config(attack={"kind": "gaussian", "num_malicious": 1})
    # the new sections change no existing run id: only non-default values enter the hash
    assert ExperimentConfig().run_id() == "experiment-44136fa355-s0-r0"  # the id before attacks existed
    assert config().run_id() == config(attack={}, reliability={}, privacy={"secure_aggregation": None}).run_id()
    assert config().run_id() != config(attack={"kind": "sign_flip", "num_malicious": 1}).run_id()


# -- data level: the federation -------------------------------------------------------------------
def test_label_flip_rewrites_copies_of_the_malicious_clients_rows_only():
    clean = prepare_federation(config(), torch.device("cpu"))
    cfg = config(attack={"kind": "label_flip", "malicious_clients": [1, 4], "flip_fraction": 0.5})
    fed = prepare_federation(cfg, torch.device("cpu"))
    assert fed.attack.malicious == [1, 4] and fed.attack.kind == "label_flip"
    n_rows = len(clean.y_train)
    assert torch.equal(fed.x_train[:n_rows], clean.x_train) and torch.equal(fed.y_train[:n_rows], clean.y_train)
    for cid in range(6):
        x, y, xv, yv = fed.client_tensors(cid)
        x0, y0, xv0, yv0 = clean.client_tensors(cid)
        assert torch.equal(x, x0) and torch.equal(xv, xv0) and torch.equal(yv, yv0)  # features, validation untouched
        changed = int((y != y0).sum())
        if cid in (1, 4):
            assert changed == round(0.5 * len(y0)) == fed.attack.poisoned_rows[cid]  # 45 of 90 rows
            assert torch.equal(y[y != y0], 1 - y0[y != y0])                         # K - 1 - y
        else:
            assert changed == 0
    assert torch.equal(fed.x_test, clean.x_test) and torch.equal(fed.y_aux, clean.y_aux)


def test_backdoor_rows_carry_trigger_and_target():
    cfg = config(attack={"kind": "backdoor", "malicious_clients": [2], "poison_fraction": 0.25, "trigger_size": 4,
                         "target_label": 1})
    fed = prepare_federation(cfg, torch.device("cpu"))
    clean = prepare_federation(config(), torch.device("cpu"))
    x, y, _, _ = fed.client_tensors(2)
    x0, y0, _, _ = clean.client_tensors(2)
    poisoned = (x != x0).any(dim=1) | (y != y0)
    triggered = (x[:, :4] == fed.attack.trigger_value).all(dim=1)
    assert fed.attack.trigger_value == float(clean.x_train.max()) == 1.0
    assert fed.attack.poisoned_rows == {2: round(0.25 * 90)}
    assert int((triggered & (y == 1)).sum()) >= int(poisoned.sum())  # every rewritten row: trigger + target
    assert torch.equal(x[:, 4:], x0[:, 4:])                           # only the trigger features change


# -- attack success rate on a tiny model -----------------------------------------------------------
class TinyModel(nn.Module):
    """logit_0 = 10 (x0 + x1) - 15, logit_1 = 0: predicts 0 exactly when x0 + x1 > 1.5."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 2)
        with torch.no_grad():
            self.linear.weight.copy_(torch.tensor([[10.0, 10.0, 0.0], [0.0, 0.0, 0.0]]))
            self.linear.bias.copy_(torch.tensor([-15.0, 0.0]))

    def forward(self, x):
        return self.linear(x)


def test_attack_success_rate_by_hand():
    x = torch.tensor([[0.0, 0.9, 0.0], [0.0, 0.1, 0.0], [0.0, 0.7, 0.0], [0.0, 0.2, 0.0],
                      [0.9, 0.9, 0.0], [0.0, 0.0, 0.0]])
    y = torch.tensor([1, 1, 1, 1, 0, 0])
    plan = AttackPlan(kind="backdoor", malicious=[0], target_label=0, trigger_size=1, trigger_value=1.0)
    # non-target rows: the first four; the trigger sets x0 = 1, so they become 0 iff x1 > 0.5: rows 1 and 3
    rate, successes, targets = attack_success_rate(TinyModel(), x, y, plan, return_counts=True)
    assert (rate, successes, targets) == (0.5, 2, 4)
    # clean: rows 1-4 predicted 1 (correct), row 5 (0.9 + 0.9 > 1.5) predicted 0 (correct), row 6 predicted 1
    assert clean_accuracy(TinyModel(), x, y) == pytest.approx(5 / 6)
    config_attack = AttackConfig(kind="backdoor", num_malicious=1, trigger_size=1)  # target 0 by default
    assert attack_success_rate(TinyModel(), x, y, config_attack, trigger_value=0.0) == 0.0
    with pytest.raises(ValueError, match="backdoor"):
        attack_success_rate(TinyModel(), x, y, AttackPlan(kind="sign_flip"))


# -- the in-process engine --------------------------------------------------------------------------
class Capture(BaseObserver):
    """Observer that keeps each round's transient models."""

    name = "capture"

    def __init__(self) -> None:
        self.rounds = []

    def on_round_end(self, record):
        self.rounds.append((record.round, record.client_ids.copy(), record.global_params_before, record.client_params,
                            dict(record.client_metrics), dict(record.server_metrics)))
        return None


def test_sign_flip_in_the_engine_sends_theta_minus_the_update(tmp_path):
    from fltrust.experiment import run_experiment

    honest, attacked = Capture(), Capture()
    run_experiment(config(training={"rounds": 1}), out_dir=tmp_path / "a", observers=[honest])
    rec = run_experiment(config(training={"rounds": 1}, attack={"kind": "sign_flip", "malicious_clients": [0, 3]}),
                         out_dir=tmp_path / "b", observers=[attacked])
    _, ids, theta, honest_params, _, _ = honest.rounds[1]
    _, ids_b, theta_b, sent, metrics, server = attacked.rounds[1]
    assert ids.tolist() == ids_b.tolist() and all(np.array_equal(a, b) for a, b in zip(theta, theta_b))
    for k, cid in enumerate(ids.tolist()):
        expected = [2 * t - w for t, w in zip(theta, honest_params[k])] if cid in (0, 3) else honest_params[k]
        assert all(np.allclose(a, b, atol=1e-6) for a, b in zip(sent[k], expected)), cid
    assert metrics["malicious"].tolist() == [float(c in (0, 3)) for c in ids.tolist()]
    assert server["num_malicious"] == sum(c in (0, 3) for c in ids.tolist())
    block = rec.summary["attack"]
    assert block["kind"] == "sign_flip" and block["malicious_clients"] == [0, 3] and block["update_factor"] == -1.0
    assert block["attack_success_rate"] is None and 0 <= block["clean_test_accuracy"] <= 1


def test_backdoor_run_reports_asr(tmp_path):
    from fltrust.experiment import run_experiment

    cfg = config(attack={"kind": "backdoor", "num_malicious": 3, "poison_fraction": 1.0, "trigger_size": 8},
                 training={"rounds": 2, "local_epochs": 2})
    block = run_experiment(cfg, out_dir=tmp_path).summary["attack"]
    assert block["kind"] == "backdoor" and len(block["malicious_clients"]) == 3 and block["target_label"] == 0
    assert block["asr_targets"] > 0 and block["attack_success_rate"] == block["asr_successes"] / block["asr_targets"]
    assert block["clean_aux_accuracy"] is not None


def test_defence_comparison_feeds_attack_outcome(tmp_path):
    from fltrust.trust.measures.poisoning import attack_outcome

    cfg = config(attack={"kind": "scale", "malicious_clients": [1], "scale": 50.0}, training={"rounds": 2})
    numbers = defence_comparison(cfg, ["krum", "trimmedmean"], out_dir=tmp_path)
    assert set(numbers["defended"]) == {"krum", "trimmedmean"}
    assert numbers["defended"]["krum"]["num_malicious_nodes"] == 1  # ceil(5 * 1 / 6), capped by 5 >= 2f + 3
    for name, kwargs in numbers["outcomes"].items():
        outcome = attack_outcome(**kwargs)  # attack_success_rate None (no backdoor) -> NaN
        assert outcome.defence == name and 0 <= outcome.clean_accuracy <= 1
        assert math.isnan(outcome.recovery) or 0 <= outcome.recovery <= 1
        assert math.isnan(outcome.attack_success_rate)
    # scaled updates (s = 50) wreck plain FedAvg; Krum never picks the outlier
    assert numbers["undefended"]["test_accuracy"] < numbers["defended"]["krum"]["test_accuracy"]

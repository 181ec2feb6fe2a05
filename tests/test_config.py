"""ExperimentConfig: loading, overrides, validation messages that name the field."""

import pytest
import yaml

from fltrust.config import ConfigError, ExperimentConfig, load_config, parse_overrides


def test_defaults_are_valid_and_round_trip(tmp_path):
    cfg = ExperimentConfig()
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg.to_dict()))
    assert load_config(path) == cfg


def test_unknown_key_is_an_error_naming_it():
    with pytest.raises(ConfigError, match=r"training\.epochs"):
        ExperimentConfig.from_dict({"training": {"epochs": 3}})


def test_unknown_section_is_an_error():
    with pytest.raises(ConfigError, match="unknown key"):
        ExperimentConfig.from_dict({"trainig": {}})


def test_bad_choice_lists_allowed_values():
    with pytest.raises(ConfigError, match=r"strategy\.name='fedsgd'.*fedavg"):
        ExperimentConfig.from_dict({"strategy": {"name": "fedsgd"}})


def test_type_errors_name_the_field():
    with pytest.raises(ConfigError, match=r"training\.rounds='ten' must be an integer"):
        ExperimentConfig.from_dict({"training": {"rounds": "ten"}})
    with pytest.raises(ConfigError, match=r"partition\.alpha"):
        ExperimentConfig.from_dict({"partition": {"alpha": -1.0}})


def test_clients_per_round_follows_flower_rounding():
    cfg = ExperimentConfig.from_dict({"partition": {"num_clients": 205}, "strategy": {"fraction_fit": 0.025}})
    assert cfg.clients_per_round() == 5  # int(5.125)


def test_too_many_clients_per_round():
    with pytest.raises(ConfigError, match="exceeds partition.num_clients"):
        ExperimentConfig.from_dict({"partition": {"num_clients": 3}, "strategy": {"clients_per_round": 5}})


def test_overrides_parse_yaml_values(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("training: {rounds: 5}\n")
    cfg = load_config(path, parse_overrides(["training.rounds=2", "data.name=synthetic_cifar10", "metrics.fairness.enabled=true"]))
    assert cfg.training.rounds == 2 and cfg.data.name == "synthetic_cifar10" and cfg.metrics.fairness.enabled


def test_override_without_equals():
    with pytest.raises(ConfigError, match="section.key=value"):
        parse_overrides(["training.rounds"])


def test_run_id_depends_on_config_seed_and_repeat_not_device():
    a = ExperimentConfig()
    assert a.run_id() == a.with_overrides({"run.device": "auto"}).run_id()
    assert a.run_id() != a.with_overrides({"run.seed": 1}).run_id()
    assert a.run_id() != a.with_overrides({"training.rounds": 9}).run_id()
    assert a.with_overrides({"run.repeat": 2}).effective_seed() == 2


def test_missing_file():
    with pytest.raises(ConfigError, match="does not exist"):
        load_config("/nonexistent.yaml")


def test_unsupported_privacy_combination():
    with pytest.raises(ConfigError, match="fedprox"):
        ExperimentConfig.from_dict({"privacy": {"mode": "local"}, "strategy": {"name": "fedprox"}})

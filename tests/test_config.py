"""ExperimentConfig: loading, overrides, validation messages that name the field."""

import json
import math

import pytest
import yaml

from fltrust.config import ConfigError, ExperimentConfig, PrivacyConfig, load_config, parse_overrides


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
    cfg = load_config(path, parse_overrides(["training.rounds=2", "data.name=synthetic_cifar10", "model.name=cifar_cnn",
                                         "metrics.fairness.enabled=true"]))
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


def test_unsupported_privacy_combination_is_refused_before_the_data_loads():
    from fltrust.experiment import check_experiment

    cfg = ExperimentConfig.from_dict({"privacy": {"mode": "local"}, "strategy": {"name": "fedprox"}})
    with pytest.raises(ConfigError, match="privacy.mode='local' is not supported with strategy.name='fedprox'"):
        check_experiment(cfg)


@pytest.mark.parametrize("section, key, value", [
    ("privacy", "target_epsilon", math.nan),
    ("partition", "alpha", math.inf),
    ("training", "learning_rate", -math.inf),
    ("strategy", "fraction_fit", math.nan),  # float | None
    ("training", "grad_clip", math.inf),
    ("metrics.fairness", "notion_weights", [0.25, math.nan, 0.25, 0.25]),  # list[float]
])
def test_non_finite_floats_are_rejected_in_every_float_field(section, key, value):
    data: dict = {}
    node = data
    for part in section.split("."):
        node = node.setdefault(part, {})
    node[key] = value
    with pytest.raises(ConfigError, match=rf"{section}\.{key}.*must be a finite number"):
        ExperimentConfig.from_dict(data)


def test_yaml_nan_and_directly_built_nan_are_rejected(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("privacy: {target_epsilon: .nan}\n")
    with pytest.raises(ConfigError, match=r"privacy\.target_epsilon=nan must be a finite number"):
        load_config(path)
    with pytest.raises(ConfigError, match=r"privacy\.target_epsilon=nan"):
        ExperimentConfig(privacy=PrivacyConfig(target_epsilon=math.nan))


def test_exponent_without_decimal_point_is_a_float(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("training: {learning_rate: 1e-3}\nprivacy: {delta: 1e-5}\n")  # YAML 1.1 reads strings
    cfg = load_config(path)
    assert cfg.training.learning_rate == 0.001 and cfg.privacy.delta == 1e-5
    with pytest.raises(ConfigError, match=r"training\.learning_rate='fast' must be a number"):
        ExperimentConfig.from_dict({"training": {"learning_rate": "fast"}})
    with pytest.raises(ConfigError, match=r"training\.rounds='3' must be an integer"):
        ExperimentConfig.from_dict({"training": {"rounds": "3"}})  # only floats get the YAML 1.1 leniency


def test_yaml_syntax_error_names_file_line_and_column(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("training:\n  rounds: 1\n   local_epochs: 2\n")
    with pytest.raises(ConfigError, match=rf"^{path}:3:\d+: invalid YAML: mapping values are not allowed"):
        load_config(path)


def test_malformed_override_value_names_the_override():
    with pytest.raises(ConfigError, match=r"--set 'training.rounds=\[1': the value '\[1' is not valid YAML"):
        parse_overrides(["training.rounds=[1"])


@pytest.mark.parametrize("model, dataset, fitting", [
    ("cifar_cnn", "synthetic_nsl_kdd", ["nbaiot_mlp_100_80_70_50", "nbaiot_mlp_50_50", "nsl_kdd_mlp"]),
    ("nsl_kdd_mlp", "cifar10", ["cifar_cnn"]),
    ("cifar_cnn", "femnist", ["convnet2", "femnist_cnn"]),
    ("femnist_cnn", "n_baiot", ["nbaiot_mlp_100_80_70_50", "nbaiot_mlp_50_50", "nsl_kdd_mlp"]),
])
def test_model_must_fit_the_dataset(model, dataset, fitting):
    from fltrust.experiment import check_experiment

    cfg = ExperimentConfig.from_dict({"data": {"name": dataset}, "model": {"name": model}})  # each part is valid
    with pytest.raises(ConfigError) as info:
        check_experiment(cfg)
    assert f"model.name={model!r} does not fit data.name={dataset!r}" in str(info.value)
    assert str(info.value).endswith(f"choose one of {fitting}")


def test_model_probe_keeps_the_global_random_state():
    import torch

    from fltrust.experiment import check_experiment
    from fltrust.models import model_fits

    model_fits.cache_clear()
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    check_experiment(ExperimentConfig.from_dict({"data": {"name": "synthetic_femnist"}, "model": {"name": "convnet2"}}))
    assert torch.equal(torch.rand(3), expected)


def test_tiny_config_merges_sections_key_by_key():
    cfg = ExperimentConfig.tiny(strategy={"name": "ditto"}, metrics={"fairness": {"enabled": True}})
    assert (cfg.strategy.name, cfg.strategy.clients_per_round) == ("ditto", 3)
    assert cfg.metrics.fairness.enabled and not cfg.metrics.trust.enabled
    assert (cfg.data.name, cfg.partition.num_clients, cfg.training.rounds) == ("synthetic_nsl_kdd", 6, 3)


def test_config_hash_of_a_committed_paper_result_is_pinned():
    # Run ids of committed results embed this hash: a refactor that changes it orphans them.
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    cfg = ExperimentConfig.from_yaml(repo / "papers_repro/fairness_analytics/configs/fedavg_nslkdd_100c_iid.yaml")
    result = json.loads((repo / "papers_repro/fairness_analytics/results/fedavg_nslkdd_100c_iid.json").read_text())

    assert cfg.config_hash() == "6c465e01a4"
    assert result["run_ids"][0] == f"fedavg_nslkdd_100c_iid-{cfg.config_hash()}-s0-r0"


# -- hardening: duplicate keys, bounded values, short error lines -----------------------------

def test_config_loader_rejects_duplicate_keys_at_any_depth_and_keeps_merge_keys():
    from fltrust.config import ConfigLoader

    for text, key, lines in [("a: 1\nb: 2\na: 3\n", "a", (1, 3)), ("s:\n  k: 1\n  k: 2\n", "k", (2, 3)),
                             ("s: {k: 1, k: 2}\n", "k", (1, 1))]:
        with pytest.raises(yaml.YAMLError) as error:
            yaml.load(text, Loader=ConfigLoader)
        assert error.value.problem == f"duplicate key '{key}' (lines {lines[0]} and {lines[1]}): keep one of them"
    # a merge key brings defaults that the mapping may override, as YAML intends
    merged = yaml.load("base: &b {rounds: 1, batch_size: 8}\ntraining:\n  <<: *b\n  rounds: 3\n", Loader=ConfigLoader)
    assert merged["training"] == {"rounds": 3, "batch_size": 8}


def test_show_bounds_any_value():
    from fltrust.config import show
    from fltrust.settings import SHOW_MAX_CHARS

    nested: list = ["lol"] * 9
    for _ in range(12):  # 9^13 strings if it were expanded
        nested = [nested] * 9

    assert show("fedavg") == "'fedavg'" and show(1e-3) == "0.001" and show(None) == "None"
    assert len(show(nested)) <= SHOW_MAX_CHARS and len(show("x" * 10**6)) <= SHOW_MAX_CHARS


def test_declared_values_must_be_short_scalars():
    with pytest.raises(ConfigError, match=r"metrics\.trust\.declared\.encryption=\['he'\] must be a number or a word"):
        ExperimentConfig.from_dict({"metrics": {"trust": {"declared": {"encryption": ["he"]}}}})
    with pytest.raises(ConfigError, match=r"declared\.anonymisation='kkkk.*at most 64 characters"):
        ExperimentConfig.from_dict({"metrics": {"trust": {"declared": {"anonymisation": "k" * 65}}}})
    cfg = ExperimentConfig.from_dict({"metrics": {"trust": {"declared": {"testing_coverage": 0.8, "encryption": "he"}}}})
    assert cfg.metrics.trust.declared == {"testing_coverage": 0.8, "encryption": "he"}


@pytest.mark.parametrize("address, ok", [(None, True), ("auto", True), ("10.0.0.5:6379", True),
                                         ("ray://head.example:10001", True), ("[::1]:6379", True),
                                         ("local", False), ("10.0.0.5", False), ("h:0", False), ("h:65536", False),
                                         ("http://h:80", False), ("h:80/x", False)])
def test_ray_address_format(address, ok):
    data = {"flower": {"ray_address": address}}
    if ok:
        assert ExperimentConfig.from_dict(data).flower.ray_address == address
    else:
        with pytest.raises(ConfigError, match=r"flower\.ray_address=.* is not a Ray address"):
            ExperimentConfig.from_dict(data)


def test_every_committed_config_and_generated_condition_passes_the_new_bounds():
    # run.name's character set, the file, thread and size bounds must not reject what the kit ships
    from pathlib import Path

    from fltrust.repro.fairness.run import condition_configs
    from fltrust.repro.fairness.conditions import all_conditions, condition_name
    from fltrust.repro.trust.experiments import EXPERIMENTS, experiment_config

    repo = Path(__file__).resolve().parents[1]
    paths = sorted((repo / "papers_repro").glob("*/configs/*.yaml")) + sorted((repo / "fltrust" / "configs").rglob("*.yaml"))
    assert len(paths) >= 30
    names = [load_config(path).run.name for path in paths]
    names += [cfg.run.name for c in all_conditions() for cfg in condition_configs(condition_name(*c), repeats=1)]
    names += [experiment_config(name).run.name for name in EXPERIMENTS]
    assert all(1 <= len(name) <= 100 for name in names)


@pytest.mark.parametrize("privacy", [
    {"target_epsilon": 1e-300}, {"nbafl_constant": 1e300}, {"nbafl_w_clip": 1e200},
])
def test_nbafl_settings_whose_noise_no_model_can_hold_are_rejected(privacy):
    # before: the run started and "training diverged at round 1: the aggregated model has NaN/inf parameters"
    with pytest.raises(ConfigError, match=r"privacy\.target_epsilon=.* with privacy\.nbafl_w_clip=.* and "
                                          r"privacy\.nbafl_constant=.*: NbAFL's upload noise std .* would exceed 3\.4e\+38"):
        PrivacyConfig(mode="nbafl", **privacy)
    PrivacyConfig(mode="none", **privacy)  # unused outside NbAFL
    PrivacyConfig(mode="nbafl", target_epsilon=1e-9)  # large noise, but representable: the run reports it

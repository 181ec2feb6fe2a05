"""fltrust.settings: the one settings type of each paper's metrics, light, and in step with the modules."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fltrust.settings import FAIRNESS_MODE_DEFAULTS, TRUST_MODE_DEFAULTS, FairnessSettings, SettingsError, TrustSettings


def test_the_allowed_names_are_those_of_the_modules_that_compute_them():
    from fltrust import settings
    from fltrust.metrics.shapley import AUTO_EXACT_PLAYERS, SAMPLER_PERMUTATIONS, SHAPLEY_METHODS
    from fltrust.trust.measures.explainability import FEATURE_IMPORTANCE_METHODS
    from fltrust.trust.measures.statistics import CLASS_IMBALANCE_METHODS, ENTROPY_METHODS

    assert settings.SHAPLEY_METHODS == SHAPLEY_METHODS
    assert (settings.AUTO_EXACT_PLAYERS, settings.SAMPLER_PERMUTATIONS) == (AUTO_EXACT_PLAYERS, SAMPLER_PERMUTATIONS)
    assert settings.ENTROPY_METHODS == ENTROPY_METHODS
    assert settings.CLASS_IMBALANCE_METHODS == CLASS_IMBALANCE_METHODS
    assert settings.FEATURE_IMPORTANCE_METHODS == FEATURE_IMPORTANCE_METHODS


def test_the_settings_import_nothing_heavy():
    """The config builds the settings when it is loaded: no torch, numpy or scipy for that."""
    code = "import sys, fltrust.settings; print(*(m in sys.modules for m in ('torch', 'numpy', 'scipy')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "False"]


def test_none_switches_take_the_mode_defaults():
    corrected = FairnessSettings(mode="corrected", reward="instantaneous")
    assert corrected.reward == "instantaneous"
    assert {k: getattr(corrected, k) for k in FAIRNESS_MODE_DEFAULTS["corrected"] if k != "reward"} == {
        k: v for k, v in FAIRNESS_MODE_DEFAULTS["corrected"].items() if k != "reward"}
    fixed = TrustSettings(mode="fixed", cap_fi=False)
    assert fixed.switches == {**TRUST_MODE_DEFAULTS["fixed"], "cap_fi": False}


@pytest.mark.parametrize(("build", "message"), [
    (lambda: TrustSettings(mode="strict"), r"^TrustSettings\.mode='strict' is not allowed"),
    (lambda: TrustSettings(entropy_method="gini"), r"^TrustSettings\.entropy_method='gini'"),
    (lambda: TrustSettings(clever_samples=-1), r"^TrustSettings\.clever_samples=-1 must be >= 0$"),
    (lambda: TrustSettings(clever_norm=3), r"^TrustSettings\.clever_norm=3 is not allowed"),
    (lambda: TrustSettings(score_every_round="yes"), r"^TrustSettings\.score_every_round='yes'"),
    (lambda: TrustSettings(declared=[("testing_coverage", 0.5)]), r"^TrustSettings\.declared=\[.*must be a mapping$"),
    (lambda: FairnessSettings(exact_max_players=0), r"^FairnessSettings\.exact_max_players=0 must be > 0$"),
])
def test_bad_values_name_the_setting(build, message):
    with pytest.raises(SettingsError, match=message) as info:
        build()
    assert "\n" not in str(info.value)


def test_the_config_reports_trust_settings_errors_under_its_keys():
    from fltrust.config import ConfigError, ExperimentConfig, TrustConfig, trust_settings

    with pytest.raises(ConfigError, match=r"^metrics\.trust\.clever_norm=3 is not allowed"):
        ExperimentConfig.from_dict({"metrics": {"trust": {"clever_norm": 3}}})
    with pytest.raises(ConfigError, match=r"^metrics\.trust\.declared\.testing_coverage=2 must be"):
        ExperimentConfig.from_dict({"metrics": {"trust": {"declared": {"testing_coverage": 2}}}})
    settings = trust_settings(TrustConfig(mode="paper", shap_samples=0, metrics_file=None))
    assert settings.mode == "paper" and settings.shap_samples == 0 and settings.cap_cvs is False


def test_config_hashes_are_unchanged():
    """The settings changed no YAML key: a default and a non-default config keep their hashes."""
    from fltrust.config import ExperimentConfig

    assert ExperimentConfig().config_hash() == "44136fa355"
    cfg = ExperimentConfig.from_dict({"metrics": {"fairness": {"enabled": True, "mode": "corrected"},
                                                  "trust": {"enabled": True, "mode": "fixed"}}})
    assert cfg.config_hash() == PINNED_CORRECTED_FIXED
    weighted = ExperimentConfig.from_dict({"metrics": {"fairness": {"notion_weights": [1, 0, 0, 0]}}})
    assert weighted.config_hash() == PINNED_F_J_ONLY
    assert ExperimentConfig.from_dict({"metrics": {"fairness": {"notion_weights": {"f_j": 1, "f_g": 0, "f_r": 0,
                                                                                   "f_o": 0}}}}).config_hash() == PINNED_F_J_ONLY


PINNED_CORRECTED_FIXED = "1420b0d073"  # computed on main before the settings moved
PINNED_F_J_ONLY = "8ac8d62325"  # computed on main while notion_weights was a 4-list


def test_the_config_sections_default_to_the_settings_defaults():
    """A ``metrics.fairness`` / ``metrics.trust`` key is a settings field with the same default."""
    from dataclasses import fields

    from fltrust.config import FairnessConfig, TrustConfig, fairness_settings, trust_settings

    for config, settings in ((FairnessConfig, FairnessSettings), (TrustConfig, TrustSettings)):
        keys = {f.name for f in fields(config)} - {"enabled"}
        assert keys <= {f.name for f in fields(settings)}, keys - {f.name for f in fields(settings)}
    assert fairness_settings(FairnessConfig()) == FairnessSettings()
    assert trust_settings(TrustConfig()) == TrustSettings()


def test_each_yaml_key_is_a_field_of_the_options_the_settings_and_the_section_share():
    """The sections derive from the options (plus ``enabled``); the mode-level switches stay off the YAML."""
    from dataclasses import fields

    from fltrust.config import ConfigError, ExperimentConfig, FairnessConfig, TrustConfig
    from fltrust.settings import FairnessOptions, TrustOptions

    for config, options, settings, switches in (
        (FairnessConfig, FairnessOptions, FairnessSettings, {"jain_zero_guard"}),
        (TrustConfig, TrustOptions, TrustSettings, set(TRUST_MODE_DEFAULTS["fixed"]) | {"score_every_round",
                                                                                         "model_metrics_every_round"}),
    ):
        assert issubclass(config, options) and issubclass(settings, options) and not issubclass(config, settings)
        assert [f.name for f in fields(config)] == [f.name for f in fields(options)] + ["enabled"]
        assert {f.name for f in fields(settings)} - {f.name for f in fields(options)} == switches
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['metrics\.trust\.cap_fi'\] in metrics\.trust"):
        ExperimentConfig.from_dict({"metrics": {"trust": {"cap_fi": True}}})
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['metrics\.fairness\.jain_zero_guard'\]"):
        ExperimentConfig.from_dict({"metrics": {"fairness": {"jain_zero_guard": "authors"}}})


def test_the_fairness_section_keeps_yaml_lists_and_the_settings_make_them_tuples():
    """sensitive_attributes: a list in the YAML, a tuple in the settings. notion_weights: the paper's four
    as a list (the form every older config and run id hashed) or a mapping; the settings hold the
    weights that differ from the notions' registered defaults."""
    from fltrust.config import ExperimentConfig, fairness_settings

    cfg = ExperimentConfig.from_dict({"metrics": {"fairness": {"notion_weights": [1, 1, 0, 0],
                                                               "sensitive_attributes": [2, 3]}}})
    section = cfg.metrics.fairness
    assert (section.notion_weights, section.sensitive_attributes) == ([1.0, 1.0, 0.0, 0.0], [2, 3])
    assert type(section.notion_weights) is list and type(section.sensitive_attributes) is list
    settings = fairness_settings(section)
    assert settings.notion_weights == {"f_j": 1.0, "f_g": 1.0, "f_r": 0.0, "f_o": 0.0}  # F_T normalises them
    assert settings.sensitive_attributes == (2, 3)
    as_mapping = ExperimentConfig.from_dict({"metrics": {"fairness": {"notion_weights": {"f_r": 0, "f_o": 0.0,
                                                                                         "f_g": 1, "f_j": 1},
                                                                      "sensitive_attributes": [2, 3]}}})
    assert as_mapping.metrics.fairness.notion_weights == [1.0, 1.0, 0.0, 0.0]
    assert as_mapping.config_hash() == cfg.config_hash()
    partial = ExperimentConfig.from_dict({"metrics": {"fairness": {"notion_weights": {"f_o": 0}}}})
    assert partial.metrics.fairness.notion_weights == [0.25, 0.25, 0.25, 0.0]  # the others keep their default
    assert fairness_settings(partial.metrics.fairness).notion_weights == {"f_o": 0.0}

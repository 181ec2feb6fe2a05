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


PINNED_CORRECTED_FIXED = "1420b0d073"  # computed on main before the settings moved


def test_the_config_sections_default_to_the_settings_defaults():
    """A ``metrics.fairness`` / ``metrics.trust`` key is a settings field with the same default."""
    from dataclasses import fields

    from fltrust.config import FairnessConfig, TrustConfig, fairness_settings, trust_settings

    for config, settings in ((FairnessConfig, FairnessSettings), (TrustConfig, TrustSettings)):
        keys = {f.name for f in fields(config)} - {"enabled"}
        assert keys <= {f.name for f in fields(settings)}, keys - {f.name for f in fields(settings)}
    assert fairness_settings(FairnessConfig()) == FairnessSettings()
    assert trust_settings(TrustConfig()) == TrustSettings()

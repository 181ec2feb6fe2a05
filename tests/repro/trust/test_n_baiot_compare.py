"""Stand-in vs real N-BaIoT: distances by hand, the real-row z-scoring, and the calibrated stand-in."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fltrust.config import ConfigError, DataConfig
from fltrust.data import DatasetError, load_dataset, n_baiot
from fltrust.repro.trust import n_baiot_compare as nc
from fltrust.data.base import ArraySplit, DatasetBundle
from fltrust.data.n_baiot_calibration import REAL_PARTIAL_CLASS_STATS, REAL_PARTIAL_ROWS
from fltrust.data.synthetic import synthetic_n_baiot

F = n_baiot.FEATURE_NAMES


def real_frame(benign: np.ndarray, attack: np.ndarray) -> pd.DataFrame:
    """A real-rows frame whose every feature is ``benign`` then ``attack`` (one value per row)."""
    values = np.concatenate([benign, attack]).astype(np.float64)
    features = pd.DataFrame(np.repeat(values[:, None], len(F), axis=1), columns=list(F))
    meta = pd.DataFrame({"device": "Danmini_Doorbell",
                         "traffic": ["benign"] * len(benign) + ["gafgyt.udp"] * len(attack),
                         "label": [0] * len(benign) + [1] * len(attack), "file": "real_partial/x.csv"})
    return pd.concat([meta, features], axis=1)


def bundle(x_column: np.ndarray, y: np.ndarray) -> DatasetBundle:
    """A stand-in bundle whose every feature is ``x_column``."""
    x = np.repeat(np.asarray(x_column, dtype=np.float32)[:, None], len(F), axis=1)
    split = ArraySplit(x, np.asarray(y))
    return DatasetBundle("synthetic_n_baiot", split, split, 2, (len(F),), synthetic=True)


def test_ks_statistic_and_smd_by_hand():
    a, b = np.array([0.0, 1.0, 2.0, 3.0]), np.array([2.0, 3.0])

    # F_a(1) = 0.5, F_b(1) = 0 is the largest gap; identical samples 0; disjoint supports 1
    assert nc.ks_statistic(a, b) == 0.5
    assert nc.ks_statistic(a, a[::-1]) == 0.0
    assert nc.ks_statistic(a, a + 10) == 1.0
    # means 1.5 and 2.5, variances 1.25 and 0.25: (1.5 - 2.5) / sqrt(0.75)
    assert nc.smd(a, b) == pytest.approx(-1 / np.sqrt(0.75))
    assert nc.smd(np.ones(3), np.ones(2)) == 0.0 and nc.smd(np.ones(3), np.zeros(2)) == np.inf


def test_real_rows_are_z_scored_as_the_stand_ins_class_mix():
    real = real_frame(np.array([0.0, 2.0]), np.array([10.0, 10.0, 12.0, 12.0]))

    z = nc.standardise_real(real, benign_share=0.2)

    # m_b = 1, s_b = 1, m_a = 11, s_a = 1: mu = 0.2 * 1 + 0.8 * 11 = 9,
    # sigma^2 = 0.2 * (1 + 8^2) + 0.8 * (1 + 2^2) = 17
    np.testing.assert_allclose(z[:, 0], (np.array([0, 2, 10, 10, 12, 12]) - 9) / np.sqrt(17))
    np.testing.assert_allclose(z[:, -1], z[:, 0])
    with pytest.raises(DatasetError, match="benign_share=1"):
        nc.standardise_real(real, benign_share=1)


def test_stats_and_distances_against_a_hand_made_stand_in():
    real = real_frame(np.array([0.0, 2.0]), np.array([10.0, 10.0, 12.0, 12.0]))
    standin = bundle([-1.0, 0.0, 1.0, 2.0], [0, 0, 1, 1])

    stats = nc.standin_vs_real(real, {"s": standin}, features=["MI_dir_L5_mean"])
    dist = nc.distance_summary(real, {"s": standin}, features=["MI_dir_L5_mean"])

    assert stats["source"].tolist() == ["real", "real", "s", "s"]
    row = stats[(stats["source"] == "s") & (stats["class"] == "attack")].iloc[0]
    assert (row["n"], row["mean"], row["std"], row["q50"]) == (2, 1.5, 0.5, 1.5)
    assert row["q05"] == pytest.approx(1.05) and row["q95"] == pytest.approx(1.95)
    real_benign = (np.array([0.0, 2.0]) - 9) / np.sqrt(17)
    benign = dist[dist["class"] == "benign"].iloc[0]
    assert benign["smd"] == pytest.approx(nc.smd(np.array([-1.0, 0.0]), real_benign))
    assert benign["std_ratio"] == pytest.approx(0.5 / (1 / np.sqrt(17)))
    assert benign["ks"] == 1.0  # the stand-in's benign values all lie above the real ones
    overview = nc.distance_overview(dist)
    assert overview[["source", "class", "features"]].values.tolist() == [["s", "benign", 1], ["s", "attack", 1]]


def test_class_separation_by_hand():
    real = real_frame(np.array([0.0, 2.0]), np.array([10.0, 10.0, 12.0, 12.0]))

    sep = nc.class_separation(real, {}, features=["HH_L5_magnitude"])

    # standardising both classes by the same sigma leaves the SMD unchanged: (11 - 1) / sqrt((1 + 1) / 2)
    assert sep["source"].tolist() == ["real"]
    assert sep["smd"].iloc[0] == pytest.approx(10.0) and sep["ks"].iloc[0] == 1.0


def test_unknown_feature_and_reserved_name_are_refused():
    real = real_frame(np.array([0.0, 2.0]), np.array([10.0, 12.0]))
    with pytest.raises(DatasetError, match=r"unknown N-BaIoT features \['packets'\]"):
        nc.standin_vs_real(real, {}, features=["packets"])
    with pytest.raises(DatasetError, match="may not be called 'real'"):
        nc.standin_vs_real(real, {"real": bundle([0.0, 1.0], [0, 1])})


def test_calibrated_stand_in_keeps_labels_devices_and_attacks():
    plain = synthetic_n_baiot(600, seed=4)
    calibrated = synthetic_n_baiot(600, seed=4, calibration="real_partial")

    for a, b in ((plain.train, calibrated.train), (plain.test, calibrated.test)):
        np.testing.assert_array_equal(a.y, b.y)
        np.testing.assert_array_equal(a.groups, b.groups)
        np.testing.assert_array_equal(a.extras["attack"], b.extras["attack"])
    assert not np.allclose(plain.train.x, calibrated.train.x)
    assert calibrated.source["calibration"] == "real_partial" and "calibration" not in plain.source


def test_calibrated_stand_in_has_the_real_class_mean_and_std():
    bundle_ = synthetic_n_baiot(800, seed=1, calibration="real_partial", balance=True)
    x, y = bundle_.train.x.astype(np.float64), bundle_.train.y

    table = np.array([REAL_PARTIAL_CLASS_STATS[f] for f in F])  # benign mean, std, attack mean, std
    benign, attack = x[y == 0], x[y == 1]
    # the pooled z-score divides both classes by one sigma: the class std ratio and the mean gap in benign
    # std units are those of the raw table
    usable = table[:, 1] > 0
    np.testing.assert_allclose((attack.std(0) / benign.std(0))[usable], (table[:, 3] / table[:, 1])[usable], rtol=1e-3)
    np.testing.assert_allclose(((attack.mean(0) - benign.mean(0)) / benign.std(0))[usable],
                               ((table[:, 2] - table[:, 0]) / table[:, 1])[usable], rtol=1e-3, atol=1e-3)


def test_calibration_switch_in_the_config():
    cfg = DataConfig(name="synthetic_n_baiot", synthetic_samples=200, standin_calibration="real_partial")
    bundle_ = load_dataset(cfg, seed=0)
    assert bundle_.source["calibration"] == "real_partial"
    np.testing.assert_array_equal(bundle_.train.x, synthetic_n_baiot(200, seed=0, calibration="real_partial").train.x)

    with pytest.raises(ConfigError, match=r"data.standin_calibration='real' is not allowed"):
        DataConfig(name="synthetic_n_baiot", standin_calibration="real")
    with pytest.raises(DatasetError, match="only applies to synthetic N-BaIoT"):
        load_dataset(DataConfig(name="synthetic_nsl_kdd", standin_calibration="real_partial"))
    with pytest.raises(DatasetError, match="calibration='x' is not known"):
        synthetic_n_baiot(50, calibration="x")


def test_markdown_names_the_sources_and_the_distances():
    real = real_frame(np.array([0.0, 2.0, 1.0]), np.array([10.0, 10.0, 12.0, 12.0]))
    standins = {"s": bundle([-1.0, 0.0, 1.0, 2.0], [0, 0, 1, 1])}
    features = ["MI_dir_L5_mean"]

    text = nc.comparison_markdown(real, nc.standin_vs_real(real, standins, features),
                                  nc.distance_summary(real, standins, features),
                                  nc.class_separation(real, standins, features),
                                  standin_notes={"s": "hand-made"}, command="make it")

    assert text.startswith("# N-BaIoT: synthetic stand-in vs real rows\n\nGenerated by `make it`")
    assert "7 rows (3 benign, 4 attack)" in text and "- s: hand-made" in text
    assert "| s | benign | 1 | " in text  # the distance overview row
    # class separation: real (11 - 1) / sqrt((2/3 + 1) / 2) = 10.95, stand-in (1.5 - -0.5) / sqrt((0.25 + 0.25) / 2) = 4
    assert "| `MI_dir_L5_mean` | 10.95 / 1.00 | 4.00 / 1.00 |" in text


@pytest.mark.realdata
def test_calibration_table_is_the_real_rows_statistics(data_root, require_real):
    folder = data_root / "n_baiot"
    require_real(folder / "real_partial" / "3.gafgyt.tcp.zip")
    real = n_baiot.load_n_baiot_real_partial(folder)

    stats = nc.class_statistics(real)

    assert REAL_PARTIAL_ROWS == {"benign": 3050, "attack": 414_240}
    table = np.array([REAL_PARTIAL_CLASS_STATS[f] for f in F])
    np.testing.assert_allclose(table, stats[["benign_mean", "benign_std", "attack_mean", "attack_std"]].to_numpy(),
                               rtol=1e-6, atol=1e-12)
    assert list(REAL_PARTIAL_CLASS_STATS) == list(F)

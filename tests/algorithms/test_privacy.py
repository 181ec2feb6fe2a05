"""Differential-privacy bookkeeping (fltrust.algorithms.privacy): clipping, noise scales, accounting, seeding.

NbAFL's formulas and its broadcast are checked in ``test_nbafl.py``; the FedAvg-level clipping in
``test_aggregation.py``. Here: the pieces those rely on, each against values computed by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from torch import nn

from fltrust.algorithms.aggregation import clip_update
from fltrust.algorithms.privacy import (
    CentralNoise,
    LocalDPSGD,
    NbAFL,
    NbAFLMechanism,
    NoPrivacy,
    PrivacyMechanism,
    PrivacyRun,
    ServerSideDP,
    build_privacy,
    calibrate_noise,
    epsilon_from_history,
    merge_history,
    privacy_mechanism,
    server_dp_aggregate,
)
from fltrust.algorithms.strategies import ClientResult
from fltrust.config import ConfigError, PrivacyConfig
from fltrust.registry import PRIVACY_MECHANISMS

# Opacus's RDP orders (RDPAccountant.DEFAULT_ALPHAS): 1.1, 1.2, ..., 10.9, then 12, ..., 63
ALPHAS = np.array([1 + x / 10 for x in range(1, 100)] + list(range(12, 64)), dtype=float)


# -- clipping ---------------------------------------------------------------------------------
def test_clip_update_leaves_a_short_update_alone():
    # norm sqrt(0.3^2 + 0.4^2) = 0.5 <= 1: factor 1
    clipped, norm = clip_update([np.array([0.3]), np.array([[0.4]])], 1.0)
    assert norm == pytest.approx(0.5)
    assert clipped[0].tolist() == [0.3] and clipped[1].tolist() == [[0.4]]


def test_clip_update_scales_the_norm_over_all_arrays():
    # norm sqrt(1 + 4 + 4 + 16) = 5 over three arrays; clip 2: factor 0.4
    clipped, norm = clip_update([np.array([1.0, 2.0]), np.array([2.0]), np.array([[4.0]])], 2.0)
    assert norm == pytest.approx(5.0)
    np.testing.assert_allclose(np.concatenate([c.ravel() for c in clipped]), [0.4, 0.8, 0.8, 1.6])
    assert math.sqrt(sum(float(np.sum(c**2)) for c in clipped)) == pytest.approx(2.0)


def test_clip_update_of_a_zero_update_is_zero():
    clipped, norm = clip_update([np.zeros(3)], 1.0)
    assert norm == 0.0 and clipped[0].tolist() == [0.0, 0.0, 0.0]


# -- server-side DP ---------------------------------------------------------------------------
def test_server_noise_std_is_multiplier_times_clip_over_clients():
    # Prepare: 4 clients sending the global model back (zero updates), a large tensor and an int buffer
    theta = [np.zeros((1000, 1000), dtype=np.float32), np.array(5, dtype=np.int64)]
    uploads = [[t.copy() for t in theta] for _ in range(4)]

    # Execute: sigma = z * C / m = 2 * 0.5 / 4 = 0.25
    new, info = server_dp_aggregate(theta, uploads, clipping_norm=0.5, noise_multiplier=2.0,
                                    rng=np.random.default_rng(0))

    # Assert: 1e6 draws -- the sample std lies within 0.1 % of 0.25
    assert info["noise_std"] == 0.25
    assert new[0].dtype == np.float32 and new[0].std() == pytest.approx(0.25, rel=0.01)
    assert abs(float(new[0].mean())) < 1e-3
    assert new[1].dtype == np.int64 and int(new[1]) == 5  # integer buffers are not perturbed
    assert info["update_norms"] == [0.0] * 4


def test_server_dp_mean_of_clipped_updates_around_the_global_model():
    # theta = (1, 1); updates (3, 4) -> norm 5, clipped to 1: (0.6, 0.8); (0, -0.5) -> norm 0.5, kept.
    # mean update (0.3, 0.15) -> new model (1.3, 1.15) without noise
    theta = [np.array([1.0, 1.0])]
    uploads = [[np.array([4.0, 5.0])], [np.array([1.0, 0.5])]]
    new, info = server_dp_aggregate(theta, uploads, clipping_norm=1.0, noise_multiplier=0.0,
                                    rng=np.random.default_rng(0))
    np.testing.assert_allclose(new[0], [1.3, 1.15])
    assert info["update_norms"] == pytest.approx([5.0, 0.5])


def test_server_dp_noise_follows_the_generator_seed():
    theta = [np.zeros(50)]
    uploads = [[np.full(50, 0.01)], [np.full(50, -0.01)]]

    def run(seed):
        return server_dp_aggregate(theta, uploads, clipping_norm=1.0, noise_multiplier=1.0,
                                   rng=np.random.default_rng(seed))[0][0]

    np.testing.assert_array_equal(run(3), run(3))
    assert not np.array_equal(run(3), run(4))


# -- NbAFL noise: seeding (formulas in test_nbafl.py) ------------------------------------------------
def test_nbafl_noise_follows_the_generator_seed_and_scales_with_the_client_size():
    nb = NbAFL(mu=0.0, w_clip=1.0, constant=30.0, epsilon=10.0, rounds=5, num_clients=4, clients_per_round=2,
               min_samples=100)
    params, trainable = [np.zeros(20, np.float32)], [True]

    a = nb.perturb_upload(params, trainable, 100, np.random.default_rng(1))
    b = nb.perturb_upload(params, trainable, 100, np.random.default_rng(1))
    c = nb.perturb_upload(params, trainable, 100, np.random.default_rng(2))
    # half the samples, twice the noise, same draws: sigma_U = 1 * 5 * 30 / (50 * 10) = 0.3 = 2 * 0.15
    d = nb.perturb_upload(params, trainable, 50, np.random.default_rng(1))

    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], c[0])
    assert nb.upload_std(50) == pytest.approx(0.3)
    np.testing.assert_allclose(d[0], 2 * a[0], rtol=1e-6)


# -- accounting -----------------------------------------------------------------------------------
def gaussian_epsilon(sigma: float, steps: int, delta: float) -> float:
    """(eps, delta) of ``steps`` full-batch Gaussian mechanisms by hand: RDP T alpha / (2 sigma^2)
    (Mironov 2017, Prop. 7), converted with eps = rdp + log((alpha - 1)/alpha) - (log delta +
    log alpha)/(alpha - 1) (Balle et al. 2020, Thm. 21), minimised over Opacus's orders."""
    rdp = steps * ALPHAS / (2 * sigma**2)
    return float(np.min(rdp + np.log((ALPHAS - 1) / ALPHAS) - (np.log(delta) + np.log(ALPHAS)) / (ALPHAS - 1)))


def test_epsilon_of_full_batch_gaussian_steps_by_hand():
    # sigma 2, 10 steps at rate 1, delta 1e-5: RDP 1.25 alpha; the minimum is at alpha = 3.9:
    # 4.875 + log(2.9/3.9) - (log 1e-5 + log 3.9)/2.9 = 4.875 - 0.296266 + 3.500672 = 8.079406
    assert gaussian_epsilon(2.0, 10, 1e-5) == pytest.approx(8.079406, abs=1e-6)
    assert epsilon_from_history([[2.0, 1.0, 10]], 1e-5) == pytest.approx(8.079406, abs=1e-6)
    # two entries of 5 steps each are the same mechanism as one of 10
    assert epsilon_from_history([[2.0, 1.0, 5], [2.0, 1.0, 5]], 1e-5) == pytest.approx(8.079406, abs=1e-6)


def test_epsilon_grows_with_steps_and_shrinks_with_subsampling():
    full = epsilon_from_history([[1.0, 1.0, 10]], 1e-5)
    assert epsilon_from_history([], 1e-5) == 0.0
    assert epsilon_from_history([[1.0, 1.0, 20]], 1e-5) > full
    assert epsilon_from_history([[1.0, 0.1, 10]], 1e-5) < full


@pytest.mark.filterwarnings("ignore:Optimal order is the largest alpha")  # Opacus, while it searches
def test_calibrated_noise_meets_the_target():
    # the inverse of the hand value above: epsilon 8.079406 after 10 full-batch steps needs sigma ~ 2
    sigma = calibrate_noise(8.079406, 1e-5, 1.0, 10)
    assert sigma == pytest.approx(2.0, rel=0.01)
    assert epsilon_from_history([[sigma, 1.0, 10]], 1e-5) <= 8.079406 + 1e-9
    # a sampling rate above 1 (batch larger than the client) counts as 1; 0 steps count as 1
    assert calibrate_noise(8.079406, 1e-5, 3.0, 10) == sigma
    assert calibrate_noise(5.0, 1e-5, 1.0, 0) == calibrate_noise(5.0, 1e-5, 1.0, 1)


def test_merge_history_adds_steps_of_the_same_mechanism_only():
    history = [[1.0, 0.5, 2]]
    merged = merge_history(history, [[1.0, 0.5, 3], [2.0, 0.5, 1], [2.0, 0.5, 4], [1.0, 0.5, 1]])
    # 2 + 3 steps of (1.0, 0.5) merge; then (2.0, 0.5) 1 + 4; a later (1.0, 0.5) is a new entry
    assert merged == [[1.0, 0.5, 5], [2.0, 0.5, 5], [1.0, 0.5, 1]]
    assert history == [[1.0, 0.5, 2]]  # the input is not modified


# -- the mechanisms ---------------------------------------------------------------------------------
RUN = PrivacyRun(rounds=5, local_epochs=2, batch_size=10, num_clients=10, clients_per_round=4,
                 client_sizes=(40, 100), seed=7)


def test_the_registry_holds_one_mechanism_per_mode():
    assert {mode: cls.__name__ for mode, cls in PRIVACY_MECHANISMS.items()} == {
        "none": "NoPrivacy", "local": "LocalDPSGD", "server": "ServerSideDP", "nbafl": "NbAFLMechanism"}
    assert PRIVACY_MECHANISMS.names() == ("none", "local", "server", "nbafl")
    assert [cls.differential_privacy for cls in PRIVACY_MECHANISMS.values()] == [False, True, True, True]
    with pytest.raises(ConfigError, match=r"privacy.mode='dp' is not registered; registered: \['local', 'nbafl'"):
        privacy_mechanism("dp")


def test_describe_names_the_mechanism_and_its_settings():
    model = nn.Linear(2, 2)
    assert build_privacy(PrivacyConfig(), RUN, model).describe() == "no differential privacy"
    assert build_privacy(PrivacyConfig(mode="local", target_epsilon=5.0, max_grad_norm=0.7), RUN, model).describe() == (
        "local DP-SGD (Opacus, RDP accountant), target epsilon 5.0, delta 1e-05, max grad norm 0.7")
    server = PrivacyConfig(mode="server", target_epsilon=8.0, clipping_norm=0.5, noise_multiplier=1.0)
    assert build_privacy(server, RUN, model).describe() == (
        "server-side fixed clipping (norm 0.5) + Gaussian noise, target epsilon 8.0, delta 1e-05")
    nb = PrivacyConfig(mode="nbafl", target_epsilon=20.0, nbafl_w_clip=0.1, nbafl_mu=0.01, nbafl_constant=1.0)
    assert build_privacy(nb, RUN, model).describe() == (
        "NbAFL as in FederatedScope (weights clipped to 0.1, proximal mu 0.01, Gaussian noise with constant 1.0), "
        "epsilon 20.0")


def test_local_dp_calibrates_for_a_client_in_every_round_and_reports_the_largest_epsilon():
    mech = build_privacy(PrivacyConfig(mode="local", target_epsilon=3.0), RUN, nn.Linear(2, 2))
    # rate = batch 10 / smallest client 40 = 0.25; steps = ceil(1 / 0.25) * 2 epochs * 5 rounds = 40
    assert mech.dp.noise_multiplier == calibrate_noise(3.0, 1e-5, 0.25, 40)
    assert mech.epsilon(0) == 0.0 and mech.sequential_reason() == "local DP-SGD (Opacus) trains one client at a time"
    mech.add_accounting(3, [[1.2, 0.25, 4]])
    mech.add_accounting(3, [[1.2, 0.25, 4]])
    mech.add_accounting(5, [[1.2, 0.25, 4]])
    assert mech.accounting(3) == [[1.2, 0.25, 8]] and mech.accounting(9) == []
    assert mech.epsilon(2) == epsilon_from_history([[1.2, 0.25, 8]], 1e-5)  # the busier client's
    state = mech.state_dict()
    mech.load_state_dict({})
    assert mech.epsilon(2) == 0.0
    mech.load_state_dict(state)
    assert mech.accounting(5) == [[1.2, 0.25, 4]]


def test_server_dp_aggregates_with_its_seeded_noise_and_accounts_over_the_rounds():
    mech = build_privacy(PrivacyConfig(mode="server", clipping_norm=1.0, noise_multiplier=0.5), RUN, nn.Linear(2, 2))
    assert mech.central_noise == CentralNoise(clipping_norm=1.0, noise_multiplier=0.5)
    assert mech.sequential_reason() is None  # the clients may train side by side
    theta = [np.zeros(3)]
    results = [ClientResult(i, [np.full(3, v)], 10, 1) for i, v in enumerate([0.2, 4.0])]
    expected, _ = server_dp_aggregate(theta, [r.params for r in results], clipping_norm=1.0, noise_multiplier=0.5,
                                      rng=np.random.default_rng([7, 2, 13]))
    np.testing.assert_array_equal(mech.aggregate(None, theta, results, 0.0, 2)[0], expected[0])
    # sampling rate m / C = 4 / 10 over the rounds done
    assert mech.epsilon(3) == epsilon_from_history([[0.5, 0.4, 3]], 1e-5)


def test_no_privacy_hands_everything_to_the_strategy():
    mech = NoPrivacy()
    params = [np.ones(2)]
    assert mech.broadcast(params, 1) is params and mech.epsilon(4) is None and mech.central_noise is None

    class Strategy:
        def aggregate(self, global_params, results, server_loss):
            return [np.full(2, server_loss)]

    assert mech.aggregate(Strategy(), params, [], 0.25, 1)[0].tolist() == [0.25, 0.25]


class Traits:
    """A strategy class's traits as the checks read them."""

    def __init__(self, name, proximal=False, mean=True):
        self.name, self.local_proximal_term, self._mean = name, proximal, mean

    def aggregates_by_mean(self):
        return self._mean


def test_each_mechanism_checks_its_strategy_and_engine():
    fedprox, krum, fedavg = Traits("fedprox", proximal=True), Traits("krum", mean=False), Traits("fedavg")
    with pytest.raises(ConfigError, match="privacy.mode='local' is not supported with strategy.name='fedprox'"):
        LocalDPSGD.check(PrivacyConfig(mode="local"), strategy=fedprox, engine="inprocess")
    with pytest.raises(ConfigError, match="it cannot wrap strategy.name='krum'"):
        ServerSideDP.check(PrivacyConfig(mode="server"), strategy=krum, engine="inprocess")
    with pytest.raises(ConfigError, match="hides the individual updates that privacy.mode='server' clips"):
        ServerSideDP.check(PrivacyConfig(mode="server", secure_aggregation="secagg+"), strategy=fedavg, engine="flower")
    with pytest.raises(ConfigError, match="use strategy.name=fedavg instead of fedprox"):
        NbAFLMechanism.check(PrivacyConfig(mode="nbafl"), strategy=fedprox, engine="inprocess")
    with pytest.raises(ConfigError, match="runs in the in-process engine only"):
        NbAFLMechanism.check(PrivacyConfig(mode="nbafl"), strategy=fedavg, engine="flower")
    for cls in (NoPrivacy, LocalDPSGD, ServerSideDP):
        cls.check(PrivacyConfig(mode=cls.name), strategy=fedavg, engine="flower")

    class Mine(PrivacyMechanism):  # a new mechanism runs in-process unless it says otherwise
        name = "mine"

    with pytest.raises(ConfigError, match=r"privacy.mode='mine' runs on run.engine \['inprocess'\] only"):
        Mine.check(PrivacyConfig(), strategy=fedavg, engine="flower")

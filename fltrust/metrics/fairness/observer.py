"""The fairness observer: FedSV and every registered notion after every round of any FL engine.

:class:`FairnessObserver` reads plain :class:`fltrust.core.records.RoundRecord` objects (never an
engine), computes the round's federated Shapley values (:func:`fltrust.metrics.shapley.federated_shapley`),
keeps the cumulative FedSV and rewards, and reports :func:`fltrust.metrics.fairness.notions.round_fairness`
(the paper's four notions, any notion registered in :mod:`fltrust.metrics.fairness.registry`, F_T)
with every per-client piece.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from fltrust.core.observers import BaseObserver
from fltrust.core.records import RoundRecord, RunInfo, RunSummary
from fltrust.metrics.fairness.notions import _attributes, _per_client, round_fairness, weights_record
from fltrust.metrics.fairness.registry import resolve_weights
from fltrust.metrics.jain import MetricInputError
from fltrust.metrics.shapley import federated_shapley
from fltrust.names import LossScaling
from fltrust.settings import FairnessSettings

__all__ = ["FairnessObserver"]

_STATE = ("cumulative_shapley", "cumulative_rewards")
"""The observer's state across rounds (length C each): what a resumed run restores."""


class FairnessObserver(BaseObserver):
    """Computes the Federated Fairness Analytics notions after every round of any FL engine.

    Per round k >= 1 it evaluates the round's coalition models on the auxiliary set (one
    :func:`fltrust.core.evaluation.evaluate_many` call), updates the cumulative FedSV ``s``
    (length C, never reset; non-participants keep their value), and returns every registered
    notion (f_j, f_g, f_r, f_o and any other in :data:`~fltrust.metrics.fairness.registry.NOTIONS`)
    and F_T with every per-client piece and the full vector ``s``, so that figures can be
    redrawn without rerunning. Round 0 (initial model, no clients) returns ``None``.

    Reads from each :class:`~fltrust.core.records.RoundRecord`: ``client_ids``,
    ``client_params``, ``client_metrics["accuracy"]`` (x), ``["reward_accuracy"]`` (r),
    the coalition weight key (``fedavg`` weighting), ``client_confusion`` and
    ``server_metrics["aux_loss_before"]`` = l(theta_k; D), the reference loss at callback time
    (spec 1, consequence ii; docs/references.md#fairness-1).

    Parameters
    ----------
    settings : FairnessSettings
        Resolved switches, the attribute list A (``settings.sensitive_attributes``; ``None`` =
        every label of the model's classes, read from the first round's confusion matrices) and
        the aux chunk size.
    model : nn.Module
        Architecture template of the clients' parameter sets.
    x_aux, y_aux : torch.Tensor
        The server's auxiliary set D (on the evaluation device).
    batch_size : int
        Evaluation batch size.
    loss_scaling : str, default "mean"
        ``"mean"`` or ``"per_batch_sum"`` (the authors', spec 6.4; docs/references.md#fairness-6-4), as the run's
        evaluation.
    num_clients : int or None
        Number of registered clients C; ``None`` = ``RunInfo.num_clients`` at the run's start.
    coalition_weight_key : str, default "num_samples"
        ``client_metrics`` key of the FedAvg coalition weights (``"num_batches"`` when the run
        aggregates by batches, as the authors did).
    seed : int, default 0
        Monte Carlo seed; round k uses ``[seed, k]``.
    sensitive_attributes : sequence of int or None
        Replaces ``settings.sensitive_attributes`` when given (code written before the settings
        held the list passes it here).
    aux_batch_size : int or None
        Replaces ``settings.aux_batch_size`` when given: aux samples per forward pass of the
        coalition evaluation (speed/memory only). ``batch_size`` still groups the
        ``per_batch_sum`` loss.

    Examples
    --------
    The experiment builds it from its config (:func:`fltrust.experiment.fairness_observer`); on
    its own it needs only the settings, a model and the aux set:

    >>> import torch
    >>> observer = FairnessObserver(FairnessSettings(mode="corrected"), torch.nn.Linear(3, 2),
    ...                             torch.zeros(4, 3), torch.tensor([0, 1, 0, 1]), batch_size=32)
    >>> observer.settings.reward
    'cumulative'
    """

    name = "fairness"

    def __init__(
        self,
        settings: FairnessSettings,
        model: nn.Module,
        x_aux: torch.Tensor,
        y_aux: torch.Tensor,
        *,
        batch_size: int,
        loss_scaling: LossScaling = "mean",
        num_clients: int | None = None,
        coalition_weight_key: str = "num_samples",
        seed: int = 0,
        sensitive_attributes: Sequence[int] | None = None,
        aux_batch_size: int | None = None,
    ) -> None:
        if num_clients is not None and num_clients < 1:
            raise MetricInputError(f"num_clients={num_clients} must be >= 1")
        if len(x_aux) != len(y_aux) or len(y_aux) == 0:
            raise MetricInputError(
                f"the auxiliary set needs as many labels as samples and at least one sample; "
                f"got x_aux {len(x_aux)} and y_aux {len(y_aux)}"
            )
        resolve_weights(settings.notion_weights, where="FairnessSettings.notion_weights")  # unknown names: now
        self.settings = settings
        self.model = model
        self.x_aux, self.y_aux = x_aux, y_aux
        self.batch_size = int(batch_size)
        self.loss_scaling = loss_scaling
        attributes = settings.sensitive_attributes if sensitive_attributes is None else sensitive_attributes
        self.sensitive_attributes = None if attributes is None else _attributes(attributes)
        self.coalition_weight_key = coalition_weight_key
        self.seed = int(seed)
        self.aux_batch_size = settings.aux_batch_size if aux_batch_size is None else aux_batch_size
        self.num_clients = 0
        if num_clients is not None:
            self._size(int(num_clients))

    def _size(self, num_clients: int) -> None:
        self.num_clients = num_clients
        self.cumulative_shapley = np.zeros(num_clients)
        self.cumulative_rewards = np.zeros(num_clients)

    # -- observer hooks --------------------------------------------------------------------
    def on_run_start(self, info: RunInfo) -> None:
        """Take the number of clients from ``info`` (or check it against the constructor's).

        Parameters
        ----------
        info : RunInfo
            The run's description; ``info.num_clients`` is C, the length of the cumulative vectors.
        """
        super().on_run_start(info)
        if self.num_clients == 0:
            self._size(int(info.num_clients))
        if info.num_clients != self.num_clients:
            raise MetricInputError(
                f"FairnessObserver was built for num_clients={self.num_clients} but the run has {info.num_clients}"
            )

    def _client_metric(self, record: RoundRecord, key: str, length: int) -> np.ndarray:
        if key not in record.client_metrics:
            raise MetricInputError(
                f"round {record.round}: record.client_metrics has no {key!r} (keys: {sorted(record.client_metrics)}); "
                "the engine must report it for the fairness metrics"
            )
        return _per_client(f"client_metrics[{key!r}]", record.client_metrics[key], length)

    def on_round_end(self, record: RoundRecord) -> dict[str, Any] | None:
        """Compute the fairness of round ``record.round`` and add its FedSV to the cumulative ones.

        Parameters
        ----------
        record : RoundRecord
            The round: its participants, their metrics and models, and ``aux_loss_before``.

        Returns
        -------
        dict or None
            ``round``, the notions and F_T (with their per-client details), and the round's
            ``client_ids``, ``phi`` (this round's FedSV), ``s`` (the participants' cumulative FedSV),
            ``performance``, ``rewards``, ``shapley_method``, ``num_coalitions``, ``ref_loss`` and
            ``cumulative_shapley`` (all C clients), plus the sampler's ``shapley_*`` fields on
            sampled rounds. ``None`` for round 0 or a round without clients.
        """
        ids = np.asarray(record.client_ids, dtype=np.int64)
        if record.round == 0 or ids.size == 0:
            return None
        if ids.ndim != 1 or np.any(ids < 0) or np.any(ids >= self.num_clients) or np.unique(ids).size != ids.size:
            raise MetricInputError(
                f"round {record.round}: client_ids {ids.tolist()} must be distinct ids in [0, {self.num_clients})"
            )
        m = ids.size
        performance = self._client_metric(record, "accuracy", m)
        rewards = self._client_metric(record, "reward_accuracy", m)
        if "aux_loss_before" not in record.server_metrics:
            raise MetricInputError(
                f"round {record.round}: record.server_metrics has no 'aux_loss_before' (the loss of the received "
                "global model on the auxiliary set, the FedSV reference loss); on Flower pass "
                "evaluate_fn=fltrust.flower.aux_evaluate_fn(...) to start(), or use fltrust.flower.instrument"
            )
        if record.client_confusion is None:
            raise MetricInputError(f"round {record.round}: record.client_confusion is None; f_g needs it")
        if self.sensitive_attributes is None:  # every label of the model's classes
            self.sensitive_attributes = list(range(np.asarray(record.client_confusion).shape[-1]))
        weights = None
        if self.settings.coalition_weighting == "fedavg":
            weights = self._client_metric(record, self.coalition_weight_key, m)
        method = self.settings.shapley
        if method == "exact" and m > self.settings.exact_max_players:
            warnings.warn(
                f"FedSV of {m} participants: more than metrics.fairness.exact_max_players="
                f"{self.settings.exact_max_players}, so shapley='exact' runs 'monte_carlo' "
                f"({self.settings.shapley_permutations} permutations, up to "
                f"{1 + self.settings.shapley_permutations * (m - 1):,} coalition models per round); "
                "set metrics.fairness.shapley: auto for the faster 'permutation' estimator",
                stacklevel=2,
            )
            method = "monte_carlo"
        ref_loss = float(record.server_metrics["aux_loss_before"])

        fedsv = federated_shapley(
            self.model,
            ids,
            record.client_params,
            self.x_aux,
            self.y_aux,
            ref_loss=ref_loss,
            include_empty=bool(self.settings.shapley_include_empty),  # resolved: never None
            weights=weights,
            method=method,
            num_permutations=(
                self.settings.shapley_permutations if method == "monte_carlo"
                else self.settings.shapley_sampler_permutations
            ),
            seed=[self.seed, int(record.round)],
            batch_size=self.batch_size,
            loss_scaling=self.loss_scaling,
            chunk_size=self.aux_batch_size,
            exact_max_players=self.settings.exact_max_players,
            auto_exact_players=self.settings.shapley_auto_exact_players,
            truncation=self.settings.shapley_truncation,
            target_error=self.settings.shapley_target_error,
            max_coalitions=self.settings.shapley_max_coalitions,
        )
        shapley = self.cumulative_shapley.copy()
        shapley[ids] += fedsv.phi
        summed_rewards = self.cumulative_rewards.copy()
        summed_rewards[ids] += rewards
        reward_values = rewards if self.settings.reward == "instantaneous" else summed_rewards[ids]
        result = round_fairness(
            performance,
            reward_values,
            shapley[ids],
            record.client_confusion,
            self.sensitive_attributes,
            self.settings,
            client_ids=ids,
        )
        self.cumulative_shapley, self.cumulative_rewards = shapley, summed_rewards

        notions = result.to_dict()
        out: dict[str, Any] = {
            "client_ids": ids.tolist(),
            "phi": fedsv.phi.tolist(),
            "s": shapley[ids].tolist(),
            "performance": performance.tolist(),
            "rewards": np.asarray(reward_values, dtype=float).tolist(),
            "shapley_method": fedsv.method,
            "num_coalitions": len(fedsv.utilities),
            "ref_loss": ref_loss,
            "cumulative_shapley": shapley.tolist(),
        }
        if fedsv.num_permutations is not None:  # sampled rounds only: exact rounds keep their keys
            out["shapley_permutations"] = fedsv.num_permutations
        if fedsv.stderr is not None:
            out.update(shapley_stderr=fedsv.stderr.tolist(), shapley_truncated=fedsv.num_truncated)
        if fedsv.stopped is not None:  # sampled until a target error: what it reached and why it stopped
            out.update(shapley_target_error=fedsv.target_error, shapley_error_ratio=fedsv.error_ratio,
                       shapley_stopped=fedsv.stopped, shapley_max_coalitions=self.settings.shapley_max_coalitions)
        clash = sorted(set(notions) & ({"round"} | set(out)))
        if clash:
            raise MetricInputError(f"round {record.round}: fairness notion fields {clash} clash with the observer's "
                                   "own keys; rename the notion or its details")
        return {"round": int(record.round), **notions, **out}

    def on_run_end(self, summary: RunSummary) -> dict[str, Any]:
        """Return the resolved settings (with the weights F_T used), the attribute list and the final cumulative FedSV.

        Parameters
        ----------
        summary : RunSummary
            The run's summary (not read: the observer's own state is the result).

        Returns
        -------
        dict
            ``settings``, ``sensitive_attributes`` (every label of the model's classes when none was set;
            ``None`` if no round ran), ``cumulative_shapley`` and ``cumulative_rewards`` (length C each).
        """
        settings = self.settings.to_dict()
        settings["notion_weights"] = weights_record(resolve_weights(self.settings.notion_weights))
        return {
            "settings": settings,
            "sensitive_attributes": None if self.sensitive_attributes is None else list(self.sensitive_attributes),
            **self.state_dict(),
        }

    # -- resume ----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Return the cumulative FedSV and cumulative rewards, the state a resumed run needs.

        Returns
        -------
        dict
            ``cumulative_shapley`` and ``cumulative_rewards``: lists of length C.
        """
        return {key: getattr(self, key).tolist() for key in _STATE}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`.

        Parameters
        ----------
        state : dict
            What :meth:`state_dict` returned: ``cumulative_shapley`` and ``cumulative_rewards``, each of length C.

        Raises
        ------
        MetricInputError
            A key is missing or a vector does not have C entries.
        """
        for key in _STATE:
            if key not in state:
                raise MetricInputError(f"fairness observer state has no {key!r}; was it saved by state_dict()?")
            values = np.asarray(state[key], dtype=float)
            if values.shape != (self.num_clients,):
                raise MetricInputError(
                    f"fairness observer state {key!r} has shape {values.shape}; expected ({self.num_clients},)"
                )
            setattr(self, key, values.copy())

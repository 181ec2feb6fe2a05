"""The simulated client both engines train: one client's data, seeds, privacy and local training.

:class:`SimulatedClient` is the :class:`~fltrust.algorithms.strategies.ClientHandle` a strategy works
with, bound to one client of an :class:`~fltrust.engines.base.EngineBase`'s federation in one round.
The in-process engine builds one per sampled client; a Flower ClientApp builds one for the client
it simulates, so both engines train a client with the same data, seeds and DP.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fltrust.core.records import Params
from fltrust.engines.base import EngineBase
from fltrust.engines.training import num_batches


class SimulatedClient:
    """ClientHandle bound to one client's data (see :class:`fltrust.algorithms.strategies.ClientHandle`).

    Parameters
    ----------
    engine : EngineBase
        The experiment's set-up: federation, trainer, seed and privacy mechanism (whose
        :meth:`~fltrust.algorithms.privacy.PrivacyMechanism.train` wraps the client's private training).
    cid : int
        The client id (its index in the federation).
    round_ : int
        The round number; with the run seed and ``cid`` it seeds the client's random streams.

    Attributes
    ----------
    x, y, x_val, y_val : torch.Tensor
        The client's training and validation data, on the engine's device.
    trainer : LocalTrainer
        The engine's trainer.
    num_samples, num_batches : int
        The client's training rows and batches per epoch.
    """

    def __init__(self, engine: EngineBase, cid: int, round_: int) -> None:
        self.engine, self.client_id, self.round = engine, cid, round_
        self.x, self.y, self.x_val, self.y_val = engine.fed.client_tensors(cid)
        self.trainer = engine.trainer
        self.num_samples = len(self.y)
        self.num_batches = num_batches(self.num_samples, engine.training.batch_size)

    def seed(self, offset: int = 0) -> int:
        """The seed of the client's random stream ``offset`` this round (run seed, round, client id, offset).

        Parameters
        ----------
        offset : int
            Selects the stream (default 0).

        Returns
        -------
        int
            A seed in [0, 2**31).
        """
        return int(np.random.default_rng([self.engine.seed, self.round, self.client_id, offset]).integers(2**31))

    def train(self, params: Params, *, seed_offset: int = 0, private: bool = True, **kwargs: Any) -> tuple[Params, float]:
        """Train on the client's data, through the run's privacy mechanism when ``private``.

        Parameters and return value as :meth:`fltrust.algorithms.strategies.ClientHandle.train`.

        Parameters
        ----------
        params : Params
            The model training starts from (not modified).
        seed_offset : int
            Selects the random stream among the client's streams of this round (default 0).
        private : bool
            Whether the run's client-side privacy applies (default True:
            :meth:`fltrust.algorithms.privacy.PrivacyMechanism.train`).
        **kwargs
            :meth:`fltrust.engines.training.LocalTrainer.train` keywords (``epochs`` required).

        Returns
        -------
        tuple of (Params, float)
            The trained model and its last-epoch mean training loss.
        """
        if private:
            return self.engine.privacy.train(self, params, seed_offset=seed_offset, **kwargs)
        return self.fit(params, seed_offset=seed_offset, **kwargs)

    def fit(self, params: Params, *, seed_offset: int = 0, **kwargs: Any) -> tuple[Params, float]:
        """Plain local training on the client's data with its stream ``seed_offset`` (no privacy).

        Parameters
        ----------
        params : Params
            The model training starts from (not modified).
        seed_offset : int
            Selects the random stream (default 0).
        **kwargs
            :meth:`fltrust.engines.training.LocalTrainer.train` keywords (``epochs`` required).

        Returns
        -------
        tuple of (Params, float)
            The trained model and its last-epoch mean training loss.
        """
        return self.trainer.train(params, self.x, self.y, seed=self.seed(seed_offset), **kwargs)

    def train_loss_of(self, params: Params) -> float:
        """Loss of ``params`` on the client's training data (q-FFL's F_n(theta)).

        Parameters
        ----------
        params : Params
            The model to evaluate.

        Returns
        -------
        float
            The mean loss over the client's training rows.
        """
        return self.trainer.evaluate(params, self.x, self.y).loss

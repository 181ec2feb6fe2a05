"""The FactSheet fields measured on the model itself: CLEVER and the SHAP feature-importance CV.

The trust observer (:class:`fltrust.trust.observer.TrustObserver`) measures them on the final
global model at run end, or every round when ``TrustSettings.model_metrics_every_round``
(:class:`ModelFields`). The samples are a seeded random draw from the test split (the prototype
took the first batch of a shuffled test loader); no clip values are used for CLEVER.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch

from fltrust.settings import TrustSettings
from fltrust.trust.factsheet import set_field
from fltrust.trust.measures.explainability import feature_importance_cv
from fltrust.trust.measures.robustness import clever_score

__all__ = ["MODEL_FIELDS", "ModelFields"]

log = logging.getLogger("fltrust")

MODEL_FIELDS = ("performance/test_clever", "performance/test_feature_importance_cv")
"""FactSheet fields measured on the model itself (at run end, or every round when
``TrustSettings.model_metrics_every_round``)."""


class _Once(logging.Filter):
    """Let a log line that starts with ``prefix`` through once (SHAP's explainer fallback)."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix, self.seen = prefix, False

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(self.prefix):
            return True
        seen, self.seen = self.seen, True
        return not seen



class ModelFields:
    """Measures :data:`MODEL_FIELDS` of a model on a seeded sample of the test split.

    Parameters
    ----------
    settings : TrustSettings
        The mode, its statistic switches and the CLEVER / SHAP settings.
    x_test : torch.Tensor
        Test inputs (on the evaluation device).
    seed : int
        Seed of the sample draw (an experiment passes its run seed).

    Examples
    --------
    >>> fields = ModelFields(TrustSettings(mode="fixed"), torch.zeros(4, 3), seed=0)
    >>> sorted(fields.sample_index().tolist())
    [0, 1, 2, 3]
    """

    def __init__(self, settings: TrustSettings, x_test: torch.Tensor, seed: int = 0) -> None:
        self.settings = settings
        self.x_test = x_test
        self.seed = int(seed)
        self._shap_once = _Once("SHAP: DeepExplainer cannot take this model")
        self._clever_warned = False

    def sample_index(self) -> np.ndarray:
        """Return the test rows in the seeded draw order.

        CLEVER takes the first ``clever_samples``, SHAP the first ``shap_background + shap_samples``.

        Returns
        -------
        numpy.ndarray
            A permutation of the test-row indices, the same for every call (seed ``[seed, 7]``).
        """
        rng = np.random.default_rng([self.seed, 7])
        return rng.permutation(len(self.x_test))

    def fill(self, fs: dict[str, Any], model: torch.nn.Module, num_classes: int) -> None:
        """Set CLEVER and the SHAP feature-importance CV of ``model`` in ``fs`` (:data:`MODEL_FIELDS`).

        Parameters
        ----------
        fs : dict
            FactSheet (modified in place).
        model : torch.nn.Module
            The model measured (in eval mode).
        num_classes : int
            Classes of the task (CLEVER's ``nb_classes``).
        """
        trust = self.settings
        sw = trust.switches
        order = self.sample_index()
        if trust.clever_samples > 0:
            index = torch.as_tensor(order[: trust.clever_samples], device=self.x_test.device)
            clever = clever_score(
                model, self.x_test[index], nb_classes=num_classes,
                nb_batches=trust.clever_nb_batches, batch_size=trust.clever_batch_size,
                radius=trust.clever_radius, norm=trust.clever_norm, pool_factor=trust.clever_pool_factor,
                seed=self.seed,
            )
            set_field(fs, "performance/test_clever", clever)
            if trust.mode == "prototype" and clever > 1 and not self._clever_warned:
                self._clever_warned = True
                log.warning("trust: CLEVER %.3f is above 1; the prototype scores it raw, so certified robustness "
                            "exceeds 1 (bug B6); TrustSettings(mode='fixed') scores min(CLEVER / radius, 1)", clever)
        if trust.shap_samples > 0:
            n = min(len(order), trust.shap_background + trust.shap_samples)
            if n - trust.shap_background < 1:
                log.warning("trust: the test split has %d samples, too few for %d SHAP background samples plus one",
                            len(order), trust.shap_background)
            else:
                index = torch.as_tensor(order[:n], device=self.x_test.device)
                log.addFilter(self._shap_once)
                try:
                    set_field(fs, "performance/test_feature_importance_cv", feature_importance_cv(
                        model, self.x_test[index], method=sw["feature_importance_method"],
                        n_background=trust.shap_background, seed=self.seed, cap=sw["cap_fi"],
                        nsamples=trust.shap_nsamples,
                    ))
                finally:
                    log.removeFilter(self._shap_once)

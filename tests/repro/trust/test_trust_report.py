"""fltrust.repro.trust.report: the library side of the trust summary notebook."""

from __future__ import annotations

import math


def test_ablation_frame_one_row_per_run_with_its_robustness_pillar() -> None:
    from fltrust.repro.trust.report import ablation_frame

    ablation = {"runs": [
        {"run": "clean", "strategy": "fedavg", "test_accuracy": 0.9, "recovery": None, "retention": None,
         "trust_score": 0.7, "pillars": {"robustness": 0.6}},
        {"run": "krum", "strategy": "krum", "test_accuracy": 0.8, "recovery": 0.5, "retention": 0.89,
         "trust_score": 0.65, "pillars": {}},
    ]}
    frame = ablation_frame(ablation)
    assert list(frame["run"]) == ["clean", "krum"]
    assert frame.loc[0, "robustness"] == 0.6 and math.isnan(frame.loc[1, "robustness"])
    assert frame.loc[1, "retention"] == 0.89
    assert ablation_frame(None).empty and list(ablation_frame(None).columns) == list(frame.columns)

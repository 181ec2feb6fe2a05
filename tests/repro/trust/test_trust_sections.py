"""fltrust.repro.trust.sections: the RESULTS.md sections beyond paper vs ours (DP noise, extended mode, ablation)."""

from __future__ import annotations

import math

from fltrust.repro.trust import report, sections


def test_ablation_frame_one_row_per_run_with_its_robustness_pillar() -> None:
    ablation = {"runs": [
        {"run": "clean", "strategy": "fedavg", "test_accuracy": 0.9, "recovery": None, "retention": None,
         "trust_score": 0.7, "pillars": {"robustness": 0.6}},
        {"run": "krum", "strategy": "krum", "test_accuracy": 0.8, "recovery": 0.5, "retention": 0.89,
         "trust_score": 0.65, "pillars": {}},
    ]}
    frame = sections.ablation_frame(ablation)
    assert list(frame["run"]) == ["clean", "krum"]
    assert frame.loc[0, "robustness"] == 0.6 and math.isnan(frame.loc[1, "robustness"])
    assert frame.loc[1, "retention"] == 0.89
    assert sections.ablation_frame(None).empty and list(sections.ablation_frame(None).columns) == list(frame.columns)


def test_the_report_re_exports_the_sections() -> None:
    # the summary notebook imports them from fltrust.repro.trust.report
    names = ["ablation_frame", "ablation_markdown", "dp_markdown", "dp_noise_frame", "extended_frame",
             "extended_markdown", "load_ablation"]
    assert [n for n in names if n not in report.__all__ or getattr(report, n) is not getattr(sections, n)] == []


def test_no_sections_without_their_results() -> None:
    # no NbAFL trace, no extended score, no ablation: no DP section, the extended placeholder, no ablation
    result = {"experiment": "exp1", "modes": {"paper": {}}, "settings": {}}
    assert sections.dp_section([result]) is None and sections.dp_markdown([result]) == []
    assert sections.extended_section([result]) == {"table": None, "collapsed": "", "in_run": "", "companion": ""}
    assert "No experiment has an extended-mode score yet" in "\n".join(sections.extended_markdown([result]))
    assert sections.ablation_sections(None) == [] and sections.ablation_markdown(None) == []


def _extended_result(name: str, measured_in: str | None) -> dict:
    run = {"run_id": f"{name}-run", "final_aux_accuracy": 0.5, "provenance": {"measured": 3}}
    if measured_in is not None:
        run["measured_in"] = measured_in
    return {"experiment": name, "synthetic": False, "quick": False, "extended_run": run,
            "modes": {"extended": {"trust_score": 0.6, "pillars": {}, "metrics": {}}}}


def test_the_extended_section_says_where_each_factsheet_was_measured() -> None:
    # Prepare: a result from before the observer rode along (no measured_in), one measured in the run
    old, new = _extended_result("exp1", None), _extended_result("exp2", "run")

    # Execute
    only_old = "\n".join(sections.extended_markdown([old]))
    only_new = "\n".join(sections.extended_markdown([new]))
    both = sections.extended_section([old, new])

    # Assert: the wording follows the results (the committed companion-run sentence is unchanged)
    assert "so each experiment was run once more with `metrics.trust.mode: extended`" in only_old
    assert "riding" not in only_old and "measured them in the run itself" not in only_old
    assert "measured them in the run itself (`extended_run.measured_in: run`" in only_new
    assert "companion" not in only_new
    assert (both["in_run"], both["companion"]) == ("exp2", "exp1")
    assert "for exp2" in "\n".join(sections.extended_markdown([old, new]))

"""The committed results and the text written about them agree: both RESULTS.md files regenerate
byte-identical from the result JSON, README's Table 3 counts are the results', and every per-repeat
number of misses.yaml is the data's."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from fltrust.repro.fairness import report as fairness_report
from fltrust.repro.fairness import run as fairness_run
from fltrust.repro.trust import report as trust_report
from fltrust.repro.trust.experiments import PAPER_DIR as TRUST_DIR
from fltrust.runs.provenance import git_head

REPO = Path(__file__).resolve().parents[2]


def _needs_git_when_recorded(results) -> None:
    """RESULTS.md compares recorded commits with HEAD: without git that column reads 'unknown'."""
    recorded = any((r.get("provenance") or {}).get("runs") for r in results)
    if recorded and git_head(REPO) is None:
        pytest.skip("the committed results record commits and this copy has no git history to compare them with")


def _first_difference(mine: str, committed: str) -> str:
    for number, (a, b) in enumerate(zip(mine.splitlines(), committed.splitlines()), start=1):
        if a != b:
            return f"line {number}:\n  regenerated: {a[:300]}\n  committed:   {b[:300]}"
    return f"lengths differ: {len(mine.splitlines())} vs {len(committed.splitlines())} lines"


@pytest.mark.realdata
def test_fairness_results_md_regenerates_from_the_committed_results(tmp_path, require_real):
    # Prepare: the file sets the authors' 72 runs beside ours, so they must be under the data root
    from fltrust.repro.fairness.authors import load_authors_runs

    authors = load_authors_runs()
    if authors.missing or not authors.found:
        require_real(authors.folder / (authors.missing[0] if authors.missing else ""))
    results = fairness_report.load_results(fairness_run.RESULTS_DIR)
    _needs_git_when_recorded(results)

    # Execute: what the summary notebook runs, into a temporary file
    reported = fairness_run.load_reported()
    table = fairness_report.summary_table(results, reported)
    path = fairness_report.write_results_md(table, results, tmp_path / "RESULTS.md", quick=False, reported=reported,
                                            authors=authors)

    # Assert
    committed = (fairness_run.PAPER_DIR / "RESULTS.md").read_text()
    mine = path.read_text()
    assert mine == committed, ("papers_repro/fairness_analytics/RESULTS.md is not what its results give; regenerate "
                               "it (notebooks/fairness/summary.ipynb, or fltrust repro fairness): "
                               + _first_difference(mine, committed))


def test_trust_results_md_regenerates_from_the_committed_results(tmp_path):
    results_dir = TRUST_DIR / "results"
    results = trust_report.load_results(results_dir)
    _needs_git_when_recorded(results)
    path = trust_report.write_results_md(results, tmp_path / "RESULTS.md", quick=False,
                                         reported=trust_report.load_reported(),
                                         ablation=trust_report.load_ablation(results_dir))

    committed = (TRUST_DIR / "RESULTS.md").read_text()
    mine = path.read_text()
    assert mine == committed, ("papers_repro/federatedtrust/RESULTS.md is not what its results give; regenerate it "
                               "(notebooks/federatedtrust/summary.ipynb, or fltrust repro trust): "
                               + _first_difference(mine, committed))


README_COUNTS = re.compile(r"\*\*(\d+) of (\d+) within \|Δ F_T\| ≤ 0\.05 of Table 3, (\d+) of (\d+) within 0\.10\*\*")


def test_readme_table3_counts_are_the_committed_results():
    # Prepare: README's sentence, and the faithful comparison of the committed results
    match = README_COUNTS.search((REPO / "README.md").read_text())
    assert match, "README.md has no '**N of 24 within |Δ F_T| ≤ 0.05 of Table 3, M of 24 within 0.10**' sentence"
    strict, total, within, total_again = (int(g) for g in match.groups())
    results = fairness_report.load_results(fairness_run.RESULTS_DIR)
    table = fairness_report.summary_table(results, fairness_run.load_reported())
    faithful = table[(table["mode"] == "faithful") & table["within_tolerance"].notna()]

    # Assert: the counts of RESULTS.md's faithful Table 3, out of every condition
    computed = (int(faithful["within_strict"].astype(bool).sum()), int(faithful["within_tolerance"].astype(bool).sum()))
    assert total == total_again == 24
    assert (strict, within) == computed, f"README.md says {strict} / {within} of 24; the results give {computed}"


def test_every_per_repeat_number_of_misses_yaml_is_the_data():
    problems = fairness_report.misses_number_problems()
    assert problems == [], "\n".join(problems)


def test_a_wrong_per_repeat_number_is_named_with_both_values():
    # Prepare: a committed entry with one typed value changed, and one unlisted quote in its text
    misses = copy.deepcopy(fairness_report.load_misses())
    entry = misses["qfedavg_cifar10_10c_niid"]
    entry["per_repeat"]["F_T"] = "0.608 / 0.700 / 0.459"
    entry["evidence"] += " Another draw gave 0.1 / 0.2 / 0.3."

    # Execute
    problems = fairness_report.misses_number_problems(misses)

    # Assert
    assert ("misses.yaml qfedavg_cifar10_10c_niid: F_T repeat 1: typed 0.700, the data give 0.657 (0.657289)"
            in problems)
    assert any("quotes 0.1 / 0.2 / 0.3" in p for p in problems)
    assert any("quotes 0.608 / 0.657 / 0.459" in p for p in problems)  # the text's own quote, no longer listed

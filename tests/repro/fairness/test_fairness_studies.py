"""The studies that measure a miss: their runs, resumption, cost estimates and RESULTS.md section.

The runs are a tiny partition-draw study of ``fedavg_cifar10_10c_niid`` on the synthetic CIFAR-10
stand-in (10 clients, 2 rounds, pooled and redrawn as the real condition); the report tests file
its entries under the run ids of the committed studies' first runs.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import pytest

from fltrust.repro.fairness.conditions import quick_overrides
from fltrust.repro.fairness.report import misses_number_problems, studies_markdown
from fltrust.repro.fairness.run import RESULTS_DIR, Variant, condition_configs, write_result
from fltrust.repro.fairness.studies import (
    STUDIES,
    aux_cost_factor,
    distribution,
    draw_study,
    estimate,
    planned_run_id,
    read_study,
    run_minutes,
    run_study,
    run_values,
    study_by_label,
    study_path,
)
from fltrust.repro.results import ResultsError

TINY = {
    **{k: v for k, v in quick_overrides("cifar10_10c").items() if k != "training.rounds"},
    "data.synthetic_samples": 800,  # + 200 test rows: a pool of 1,000
    "data.pooled_train_samples": 700,
    "data.max_train_samples": None,
    "data.max_test_samples": None,
    "run.torch_threads": 1,
    "run.progress": False,
}
"""A seconds-long version of the CIFAR-10 10C non-iid condition on the synthetic stand-in."""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A draw study with 2 draws and a shared draw of 2 repeats (3 runs), run once for the module."""
    root = tmp_path_factory.mktemp("studies")
    study = draw_study("fedavg_cifar10_10c_niid", draws=2, shared_repeats=2, rounds=2, label="tiny-draws",
                       overrides={**TINY, "data.root": str(root / "no-data")})
    log: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the synthetic stand-in's warning
        data = run_study(study, out_dir=root, device="cpu", log=log.append)
    return study, root, data, log


def test_a_study_file_holds_one_condition_result_per_run(tiny):
    study, root, data, log = tiny
    stored = read_study(study_path(study, root))

    assert [v.describe()["overrides"]["partition.seed"] for v in study.variants] == [0, 1, 0]
    assert [v.repeat for v in study.variants] == [0, 0, 1]
    assert stored["label"] == "tiny-draws" and stored["kind"] == "draws" and len(stored["runs"]) == 3
    for variant, (run_id, entry) in zip(study.variants, stored["runs"].items()):
        assert run_id.replace("-synthetic", "") == planned_run_id(variant)
        assert entry["variant"] == variant.describe()
        assert entry["run_ids"] == [run_id] and entry["per_round"]["round"] == [1, 2]
        assert len(entry["per_client"]["repeats"]) == 1
    assert len(log) == 3 and all("F_T" in line for line in log)


def test_one_partition_seed_shares_the_clients_data_and_the_run_seed_the_sampling(tiny):
    _, _, data, _ = tiny
    draw0, draw1, shared1 = data["runs"].values()

    # the shared draw: the same client sizes in both repeats, other clients sampled
    assert draw0["scale_per_repeat"] == shared1["scale_per_repeat"]
    assert draw0["per_client"]["repeats"][0]["client_ids"] != shared1["per_client"]["repeats"][0]["client_ids"]
    # another draw, the same run seed: other client sizes, the same clients sampled
    assert draw0["scale_per_repeat"] != draw1["scale_per_repeat"]
    assert draw0["per_client"]["repeats"][0]["client_ids"] == draw1["per_client"]["repeats"][0]["client_ids"]


def test_a_finished_run_is_skipped_and_a_missing_one_redone(tiny, monkeypatch):
    # Prepare: the file without its second run; a run would fail unless it is the one missing
    study, root, data, _ = tiny
    path = study_path(study, root)
    kept = dict(data)
    missing = list(data["runs"])[1]
    kept["runs"] = {k: v for k, v in data["runs"].items() if k != missing}
    write_result(path, kept)
    original = Variant.run
    ran = []

    def only_the_missing(self, out_dir, *, device="auto"):
        ran.append(planned_run_id(self))
        return original(self, out_dir, device=device)  # its run folder is complete: reloaded, not trained

    monkeypatch.setattr(Variant, "run", only_the_missing)
    log: list[str] = []

    # Execute
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = run_study(study, out_dir=root, device="cpu", log=log.append)

    # Assert: one run redone, the others skipped, the file whole again
    assert ran == [missing.replace("-synthetic", "")]
    assert sum("skipped" in line for line in log) == 2
    assert set(again["runs"]) == set(data["runs"])
    assert again["runs"][missing]["table3"] == data["runs"][missing]["table3"]


def test_read_study_names_the_bad_field(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"label": "x", "kind": "guesses", "purpose": "p", "runs": {}}))
    with pytest.raises(ResultsError, match="kind"):
        read_study(path)
    assert read_study(tmp_path / "absent.json") is None


def test_distribution_and_the_reference_percentile_by_hand():
    d = distribution([0.569, 0.642, 0.586, 0.600, None], reference=0.6)

    assert d.n == 4 and d.min == 0.569 and d.max == 0.642
    assert d.median == pytest.approx((0.586 + 0.600) / 2)
    assert d.q1 == pytest.approx(0.569 + 0.75 * (0.586 - 0.569))  # numpy linear: position 0.75
    assert d.mean == pytest.approx(2.397 / 4)
    assert d.below == 2 and d.percentile == pytest.approx(62.5)  # 2 below, 1 equal (counted half), of 4
    assert distribution([0.5, 0.6], reference=0.49).percentile == 0.0
    assert math.isnan(distribution([0.5]).std)


def _made_up_result(condition, seconds=(600.0, 900.0)):
    return {"condition": condition, "mode": "faithful", "quick": False, "rounds": 30, "seconds_per_run": list(seconds),
            "scale": {"train_per_client": {"median": 135, "min": 1, "max": 148}, "aux_samples": 500,
                      "source_test_samples": 4883}}


def test_the_aux_cost_factor_counts_sample_passes_by_hand():
    fedavg = Variant("fedavg_femnist_205c_niid", {"partition.aux_max_samples": 4654})
    ditto = Variant("ditto_femnist_205c_niid", {"partition.aux_max_samples": 4654})
    # 5 participants x 5 epochs x 135 samples x 3 passes; 32 evaluations (31 coalitions + global) of D
    train = 5 * 5 * 135 * 3
    assert aux_cost_factor(fedavg, _made_up_result(fedavg.condition)) == pytest.approx(
        (train + 32 * 4654) / (train + 32 * 500))
    ditto_train = 5 * (5 + 10) * 135 * 3  # plus Ditto's 10 personal epochs
    assert aux_cost_factor(ditto, _made_up_result(ditto.condition)) == pytest.approx(
        (ditto_train + 32 * 4654) / (ditto_train + 32 * 500))
    # a cap above the test split gives the whole split
    whole = Variant("fedavg_femnist_205c_niid", {"partition.aux_max_samples": 10_000})
    assert aux_cost_factor(whole, _made_up_result(whole.condition)) == pytest.approx(
        (train + 32 * 4883) / (train + 32 * 500))


def test_run_minutes_and_the_estimate_of_the_runs_left():
    results = {"qfedavg_femnist_205c_iid": _made_up_result("qfedavg_femnist_205c_iid")}
    study = study_by_label("qfedavg_femnist_205c_iid-repeats")

    assert run_minutes(study.variants[0], results) == pytest.approx(12.5)  # mean of 600 and 900 s
    assert run_minutes(Variant("qfedavg_femnist_205c_iid", rounds=15), results) == pytest.approx(6.25)
    assert run_minutes(Variant("fedavg_nslkdd_100c_iid"), results) is None

    done = {"runs": {planned_run_id(study.variants[0]): {}}}
    cost = estimate(study, list(results.values()), done)
    assert (cost.runs, cost.runs_left, cost.minutes_left) == (3, 2, pytest.approx(25.0))
    assert cost.text() == "2 runs x 12 min"  # 12.5 rounds to even
    # before: a finished study printed "left 0 runs x unknown min"
    assert dataclasses.replace(cost, runs_left=0, minutes_per_run=None).text() == "nothing"
    two_done = {"runs": {planned_run_id(v): {} for v in study.variants[:2]}}
    assert estimate(study, list(results.values()), two_done).text() == "1 run x 12 min"
    assert estimate(study, [], None).minutes_left is None


def test_the_committed_studies_are_the_planned_measurements_in_queue_order():
    labels = [s.label for s in STUDIES]
    assert labels == ["qfedavg_femnist_205c_iid-repeats", "fedavg_cifar10_10c_niid-draws",
                      "ditto_cifar10_10c_niid-draws", "femnist_205c_niid-aux4654"]

    # more repeats: the Table 3 config itself (the committed runs' config hash), seeds 3-5
    repeats = study_by_label("qfedavg_femnist_205c_iid-repeats")
    committed = json.loads((RESULTS_DIR / "qfedavg_femnist_205c_iid.json").read_text())
    expected = [c.run_id() for c in condition_configs("qfedavg_femnist_205c_iid", repeats=6)]
    assert [planned_run_id(v) for v in repeats.variants] == expected[3:]
    assert sorted(committed["run_ids"]) == expected[:3]

    # draws: seed 0 with partition.seed 0-9, and partition.seed 0 shared by seeds 0-2 (12 distinct runs)
    for label in ("fedavg_cifar10_10c_niid-draws", "ditto_cifar10_10c_niid-draws"):
        study = study_by_label(label)
        draws, shared = study.groups["draws"], study.groups["shared"]
        assert [(v.overrides, v.repeat) for v in draws] == [({"partition.seed": d}, 0) for d in range(10)]
        assert [(v.overrides, v.repeat) for v in shared] == [({"partition.seed": 0}, r) for r in range(3)]
        assert len(study.variants) == 12 and len({planned_run_id(v) for v in study.variants}) == 12

    # aux size: the paper's 4,654, every repeat of one seed before the next
    aux = study_by_label("femnist_205c_niid-aux4654")
    assert [v.repeat for v in aux.variants] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert all(v.config().partition.aux_max_samples == 4654 for v in aux.variants)
    with pytest.raises(KeyError, match="known"):
        study_by_label("nope")


def _as_committed_draws(tiny_data):
    """The tiny study's three runs filed under the committed FedAvg draws study's run ids
    (draws 0 and 1, and the shared draw's repeat 1)."""
    study = study_by_label("fedavg_cifar10_10c_niid-draws")
    draw0, draw1, shared1 = tiny_data["runs"].values()
    targets = [study.groups["draws"][0], study.groups["draws"][1], study.groups["shared"][1]]
    runs = {planned_run_id(v): entry for v, entry in zip(targets, (draw0, draw1, shared1))}
    return {"label": study.label, "kind": "draws", "purpose": study.purpose, "runs": runs}


def test_the_studies_section_says_not_run_yet_with_estimate_and_command():
    results = [_made_up_result("qfedavg_femnist_205c_iid")]
    text = "\n".join(studies_markdown(results, {}))

    assert ("Runs done: 0 of 3; not run yet (estimate: 3 runs x 12 min on this CPU, 0.6 h; command: "
            "`python papers_repro/fairness_analytics/experiments/run.py --only qfedavg_femnist_205c_iid-repeats`)"
            in text)
    assert "not run yet (estimate: 12 runs x unknown min on this CPU; command:" in text  # no timed result
    assert "| runs |" not in text  # no numbers without runs


def test_the_draws_section_shows_each_draw_and_where_the_paper_falls(tiny):
    files = {"fedavg_cifar10_10c_niid-draws": _as_committed_draws(tiny[2])}
    draw0, draw1, shared1 = (run_values(e) for e in tiny[2]["runs"].values())

    text = "\n".join(studies_markdown([], files))

    section = text[text.index("### Partition draws: fedavg_cifar10_10c_niid"):text.index("### Partition draws: ditto")]
    assert "Runs done: 3 of 12; 9 of 12 runs not yet run" in section
    assert f"| 0 | {draw0['F_T']:.3f} | {draw0['f_j']:.3f} |" in section
    assert f"| 1 | {draw1['F_T']:.3f} |" in section
    low, high = sorted([draw0["F_T"], draw1["F_T"]])
    below = sum(v < 0.49 for v in (low, high))
    assert f"| 2 | {low:.3f} |" in section and f"| {high:.3f} | {(low + high) / 2:.3f} |" in section
    assert f"| 0.49 | {below} of 2 | {100 * below / 2:.0f} |" in section
    assert f"seeds 0, 1, 2: F_T {draw0['F_T']:.3f} / {shared1['F_T']:.3f} / –" in section


def test_misses_yaml_quotes_of_a_study_group_are_checked_against_its_runs(tiny):
    files = {"fedavg_cifar10_10c_niid-draws": _as_committed_draws(tiny[2])}
    draw0, _, shared1 = (run_values(e) for e in tiny[2]["runs"].values())
    entry = {"notion": "f_j", "cause": "data source", "explanation": "e", "experiment": {"name": "n"},
             "per_repeat": {"fedavg_cifar10_10c_niid-draws:shared/F_T": f"{draw0['F_T']:.3f} / {shared1['F_T']:.3f} / -"}}

    assert misses_number_problems({"fedavg_cifar10_10c_niid": entry}, [], files) == []

    entry["per_repeat"]["fedavg_cifar10_10c_niid-draws:shared/F_T"] = "0.999 / - / -"
    problems = misses_number_problems({"fedavg_cifar10_10c_niid": entry}, [], files)
    assert problems == [f"misses.yaml fedavg_cifar10_10c_niid: fedavg_cifar10_10c_niid-draws:shared/F_T repeat 0: "
                        f"typed 0.999, the data give {draw0['F_T']:.3f} ({draw0['F_T']:.6g})"]

    entry["per_repeat"] = {"nope:draws/F_T": "- / - / -"}
    assert "no study nope" in misses_number_problems({"fedavg_cifar10_10c_niid": entry}, [], files)[0]


def test_a_study_under_way_is_quoted_by_the_runs_done_so_far(tiny):
    # per_repeat types "-" for the runs not yet done; the text quotes the runs done so far
    study = study_by_label("fedavg_cifar10_10c_niid-draws")
    entries = list(tiny[2]["runs"].values())
    runs = {planned_run_id(v): e for v, e in zip(study.groups["draws"][:3], entries)}  # draws 0-2 of 10 done
    files = {study.label: {"label": study.label, "kind": "draws", "purpose": study.purpose, "runs": runs}}
    f_t = [f"{run_values(e)['F_T']:.3f}" for e in entries]
    done = " / ".join(f_t)
    entry = {"notion": "f_j", "cause": "data source", "explanation": f"The draws so far give {done}.",
             "experiment": {"name": "n"},
             "per_repeat": {"fedavg_cifar10_10c_niid-draws:draws/F_T": done + " / -" * 7}}

    assert misses_number_problems({"fedavg_cifar10_10c_niid": entry}, [], files) == []

    entry["per_repeat"]["fedavg_cifar10_10c_niid-draws:draws/F_T"] = " / ".join(f_t[:2]) + " / -" * 8
    assert misses_number_problems({"fedavg_cifar10_10c_niid": entry}, [], files) == [
        f"misses.yaml fedavg_cifar10_10c_niid: its text quotes {done}, which is neither under per_repeat "
        "(checked against the data) nor under history (an earlier result)"]

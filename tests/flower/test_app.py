"""Both papers' metrics on anyone's Flower app, with the documented calls only.

The app is the README's Flower code block, written into ``tmp_path`` as ``app.py``: its own ``Net``,
its own DataLoaders of tiny synthetic tensors, Flower's FedAvg, and the three fltrust calls. The
fast tests run it on the in-process :class:`conftest.LocalGrid`; the ``slow`` one on Flower's
Simulation Runtime (Ray, one CPU per ClientApp, everything on 127.0.0.1).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp.strategy import FedAvg

from flower_testing import LocalGrid

REPO = Path(__file__).resolve().parents[2]
MARKER = "<!-- flower-app:"


def readme_app() -> str:
    """The README's Flower app: the first ```python block after the marker comment."""
    text = (REPO / "README.md").read_text()
    after = text[text.index(MARKER):]
    return re.search(r"```python\n(.*?)```", after, re.S).group(1)


def load_app(tmp_path: Path, source: str | None = None):
    path = tmp_path / "app.py"
    path.write_text(source or readme_app())
    spec = importlib.util.spec_from_file_location(f"app_{abs(hash(str(tmp_path)))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_local(app, num_nodes: int = 4) -> LocalGrid:
    grid = LocalGrid(app.client, num_nodes)
    app.server(grid=grid, context=Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config={}))
    return grid


def run_folders(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "runs").iterdir())


def test_the_readme_app_uses_the_documented_calls_only():
    source = readme_app()
    assert re.findall(r"^\s*(?:from|import) (\S+)", source, re.M) == [
        "torch", "torch.nn.functional", "flwr.app", "flwr.clientapp", "flwr.serverapp", "flwr.serverapp.strategy",
        "torch", "torch.utils.data", "fltrust.flower", "flwr.simulation"]
    used = set(re.findall(r"\bft\.(\w+)", source))
    import fltrust.flower as ft

    assert used == {"client_report", "instrument"} and used <= set(ft.__all__)
    marked = [line for line in source.splitlines() if line.rstrip().endswith("# fltrust") or "# fltrust (" in line]
    assert len(marked) == 6  # the README states it
    assert "cifar" not in source.lower() and "nsl_kdd" not in source  # no fltrust dataset or model names


def test_the_readme_app_records_both_papers_metrics(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    app = load_app(tmp_path)

    grid = run_local(app)

    [folder] = run_folders(tmp_path)
    assert re.fullmatch(r"quickstart-\d{8}-\d{6}-[0-9a-f]{8}", folder.name)
    printed = capsys.readouterr().out
    from fltrust.runs import audit_run, load_run

    record = load_run(folder)
    assert [r.round for r in record.rounds] == [0, 1, 2, 3]
    for r in record.rounds[1:]:
        fairness, trust = r.observations["fairness"], r.observations["trust"]
        assert len(r.client_ids) == 2  # FedAvg(fraction_train=0.5) of 4 SuperNodes
        assert len(fairness["phi"]) == 2 and fairness["shapley_method"] == "exact"
        if fairness["F_T"] is None:
            # the corrected f_j and f_r leave out a participant whose cumulative FedSV is <= 0 (FedAvg
            # samples 2 of 4 at random: in about 4 rounds of 10 one is, now and then both), and one
            # participant or none is no distribution: f_j, f_r and F_T are undefined, NaN in Flower's metrics
            assert fairness["f_j"] is None and fairness["f_r"] is None and fairness["num_dropped_gains"] in (1, 2)
            assert min(fairness["s"]) <= 0
            shown = "nan"
        else:
            assert 0 <= fairness["F_T"] <= 1
            shown = fairness["F_T"]
        assert 0 < trust["trust_score"] <= 1 and set(trust["pillars"]) >= {"robustness", "fairness"}
        assert f"round {r.round}: F_T {shown}, trust score {trust['trust_score']}" in printed
    fs = json.loads((folder / "factsheet.json").read_text())
    n_params = sum(p.numel() for p in app.Net().parameters())
    assert fs["project"]["overview"] == f"quickstart: Net ({n_params:,} trainable parameters) trained with FedAvg on blobs"
    assert fs["data"]["provenance"] == "blobs: 3 classes of 8x8 Gaussian images, 64 per client"
    assert fs["configuration"]["training_model"] == "CNN" and fs["configuration"]["trainable_param_count"] == n_params
    assert fs["configuration"]["optimization_algorithm"] == "FedAvg" and fs["configuration"]["learning_rate"] == 0.1
    assert fs["participants"]["client_num"] == 4 and fs["participants"]["sample_client_rate"] == 0.5
    assert fs["configuration"]["total_round_num"] == 3
    config = record.config["app"]
    assert config["model"] == "Net" and config["strategy_params"]["fraction_train"] == 0.5
    summary = record.summary
    assert summary["status"] == "complete" and 0 < summary["observers"]["trust"]["trust_score"] <= 1
    assert audit_run(folder).ok
    assert {m.metadata.message_type for m in grid.sent} == {"train"}  # no discovery handler, no query round


EXTENDED_PILLARS = ("robustness", "privacy", "fairness", "explainability", "accountability",
                    "architectural_soundness", "sustainability")


def test_the_readme_app_in_extended_trust_mode_scores_every_pillar(tmp_path, monkeypatch, capsys):
    """The README app with trust=ft.TrustSettings(mode="extended"), on ft.run_local: the 36-metric taxonomy
    and sustainability are scored; what stays on the clients (their rows, a sensitive attribute) is missing."""
    monkeypatch.chdir(tmp_path)
    source = readme_app().replace(
        'dataset_description="3 classes of 8x8 Gaussian images, 64 per client")',
        'dataset_description="3 classes of 8x8 Gaussian images, 64 per client", '
        'trust=ft.TrustSettings(mode="extended", evasion_samples=32))')
    assert 'mode="extended"' in source
    app = load_app(tmp_path, source)

    app.ft.run_local(app.server, app.client, 4)

    [folder] = run_folders(tmp_path)
    from fltrust.runs import audit_run, load_run
    from fltrust.trust.factsheet import load_factsheet
    from fltrust.trust.report import TrustReport

    record = load_run(folder)
    assert record.summary["status"] == "complete" and audit_run(folder).ok
    report = TrustReport.from_json((folder / "trust_report.json").read_text())
    assert report.mode == "extended" and report.definitions == "extended"
    assert tuple(p.name for p in report.pillars) == EXTENDED_PILLARS
    assert all(p.applicable and math.isfinite(p.score) and 0 <= p.score <= 1 for p in report.pillars)
    assert 0 < report.trust_score <= 1
    print("\n".join(f"{p.name}: {p.score:.4f}" for p in report.pillars) + f"\ntrust: {report.trust_score:.4f}",
          file=sys.stderr)  # the pillar table
    status = {m.path: m.status for m in report.metrics()}
    assert set(status.values()) <= {"measured", "declared", "missing", "n/a"}
    # measured from the app's own models and records
    for path in ("robustness/client_reliability/client_reputation", "robustness/client_reliability/data_quality",
                 "robustness/resilience_to_attacks/empirical_robustness", "accountability/monitoring/algorithmic_auditing",
                 "architectural_soundness/model_management/model_co_versioning",
                 "architectural_soundness/client_management/client_registry"):
        assert status[path] == "measured", path
    assert report.metric("algorithmic_auditing").score == 1.0  # the run recorder's hash chain verifies
    assert report.metric("model_co_versioning").score == 1.0
    # the clients' rows and a sensitive attribute never reach the server
    assert status["privacy/information_loss/information_leakage"] == "missing"
    assert status["fairness/group_fairness/discrimination_index"] == "missing"
    fs = load_factsheet(folder / "factsheet.json")
    assert fs["robustness"]["byzantine_robust"] is False  # FedAvg
    assert "strategy.name = 'FedAvg'" in fs["provenance"]["robustness/resilience_to_attacks/poisoning_defence"]["method"]
    assert fs["participants"]["avg_dataset_size"] > 0 and (folder / "trust_dashboard.png").is_file()
    assert record.summary["observers"]["trust"]["trust_score"] == pytest.approx(report.trust_score)


def test_client_reports_stay_out_of_flowers_aggregation(tmp_path, monkeypatch):
    """fltrust's per-client keys never reach the app's strategy; the label counts reach fltrust."""
    monkeypatch.chdir(tmp_path)
    app = load_app(tmp_path)
    seen: list[set[str]] = []
    aggregate = FedAvg.aggregate_train

    def spy(self, server_round, replies):
        replies = list(replies)
        seen.extend(set(m.content.keys()) for m in replies)
        return aggregate(self, server_round, replies)

    monkeypatch.setattr(FedAvg, "aggregate_train", spy)
    captured = {}
    start = app.ft.InstrumentedStrategy.start

    def keep(self, *args, **kwargs):  # (a wrapper of instrument itself would move out_dir to this file's folder)
        captured["strategy"] = self
        return start(self, *args, **kwargs)

    monkeypatch.setattr(app.ft.InstrumentedStrategy, "start", keep)
    run_local(app)

    assert seen and all(keys == {"arrays", "metrics"} for keys in seen)
    info = captured["strategy"].info
    trained = sorted({int(c) for r in captured["strategy"].records[1:] for c in r.client_ids})
    for pid in range(4):  # each client's own training labels, counted on the client
        expected = np.bincount(app.load_data(pid).dataset.tensors[1].numpy(), minlength=3) if pid in trained else np.zeros(3)
        assert np.array_equal(info.client_class_counts[pid], expected)


def test_reruns_never_overwrite_and_the_run_holds_its_lock(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = readme_app().replace("num_rounds=3", "num_rounds=1")
    app = load_app(tmp_path, source)
    holders = []
    start = app.ft.InstrumentedStrategy.start

    def watch(self, *args, evaluate_fn=None, **kwargs):
        def evaluate(rnd, arrays):
            holders.append(json.loads((self.run_folder / ".holder.json").read_text())["pid"])
            return None

        return start(self, *args, evaluate_fn=evaluate, **kwargs)

    monkeypatch.setattr(app.ft.InstrumentedStrategy, "start", watch)
    run_local(app)
    run_local(app)

    first, second = run_folders(tmp_path)
    assert first != second and all((f / "summary.json").is_file() for f in (first, second))
    assert holders == [os.getpid()] * 4  # rounds 0 and 1 of both runs, under the lock
    assert not (first / ".holder.json").exists()  # released at the end


def _tiny():
    x, y = torch.randn(8, 3), torch.tensor([0, 1] * 4)
    return torch.nn.Linear(3, 2), (x, y)


@pytest.mark.parametrize(("change", "message"), [
    ({"aux": None}, r"^fltrust\.flower\.instrument: aux= is required for FedSV \(the server's auxiliary set D\): "
                    r"pass a DataLoader or \(x, y\) tensors$"),
    ({"test": None}, r"^fltrust\.flower\.instrument: test= is required for FederatedTrust"),
    ({"out_dir": None}, r"^fltrust\.flower\.instrument: out_dir= is required"),
    ({"name": "my run"}, r"^fltrust\.flower\.instrument: name= is required: letters, digits"),
    ({"dataset_name": None}, r"^fltrust\.flower\.instrument: dataset_name= is required"),
    ({"trust": "fixed"}, r"^fltrust\.flower\.instrument: trust= must be TrustSettings\(\.\.\.\) or None"),
    ({"aux": (torch.randn(8, 5), torch.zeros(8))}, r"^fltrust\.flower\.instrument: model= cannot evaluate the aux"),
    ({"aux": [{"a": torch.zeros(2, 3), "b": torch.zeros(2, 3)}]}, r"aux=: cannot tell inputs from labels.*batch_keys="),
    # before: the NaN reached FedSV and the run was reported as diverged
    ({"aux": (torch.tensor([[0.0, 1, 2]] * 3 + [[0.0, float("nan"), 2]]), torch.tensor([0, 1, 0, 1]))},
     r"^fltrust\.flower\.instrument: aux= holds NaN/inf in its inputs at row 3 \(of 4\); training would be blamed"),
    ({"test": (torch.randn(4, 3), torch.tensor([0.0, float("inf"), 1.0, 0.0]))},
     r"^fltrust\.flower\.instrument: test= holds label -?\d+ at row 1, outside the model's classes 0\.\.1"),
])
def test_missing_facts_are_one_error_naming_the_argument(tmp_path, change, message):
    import fltrust.flower as ft

    model, data = _tiny()
    facts = {**dict(model=model, aux=data, test=data, out_dir=tmp_path, name="t", dataset_name="d"), **change}
    with pytest.raises(ValueError, match=message) as info:
        ft.instrument(FedAvg(), **facts)
    assert "\n" not in str(info.value)


def test_a_legacy_strategy_is_pointed_to_its_wrapper(tmp_path):
    from flwr.server.strategy import FedAvg as LegacyFedAvg

    import fltrust.flower as ft

    model, data = _tiny()
    with pytest.raises(ValueError, match="ObservedLegacyStrategy"):
        ft.instrument(LegacyFedAvg(), model=model, aux=data, test=data, out_dir=tmp_path, name="t", dataset_name="d")


def test_a_skewed_aux_set_is_a_warning(tmp_path, caplog):
    import fltrust.flower as ft

    model, (x, _) = _tiny()
    ft.instrument(FedAvg(), model=model, aux=(x, torch.zeros(8, dtype=torch.long)), test=(x, torch.zeros(8)),
                  out_dir=tmp_path, name="t", dataset_name="d")
    assert "aux set (8 samples) is skewed: labels [1] absent" in caplog.text


def test_a_client_without_fltrusts_report_is_named(tmp_path, caplog):
    """Its reply is rejected for the round (tests/flower/test_validation.py), with the fix in the log."""
    import fltrust.flower as ft

    model, data = _tiny()
    client = ClientApp()

    @client.train()
    def train(msg, context):
        content = RecordDict({"arrays": msg.content["arrays"], "metrics": MetricRecord({"num-examples": 1})})
        return Message(content, reply_to=msg)

    strategy = ft.instrument(FedAvg(fraction_evaluate=0.0), model=model, aux=data, test=data, out_dir=tmp_path,
                             name="t", dataset_name="d")
    strategy.start(grid=LocalGrid(client, 2), initial_arrays=ArrayRecord(model.state_dict()), num_rounds=1)
    assert re.search(r"round 1: rejected the report of node 1000: fltrust: the reply carries no fltrust report: "
                     r"in the ClientApp call report = fltrust\.flower\.client_report\(", caplog.text)
    assert (strategy.run_folder / "summary.json").is_file()


def test_client_report_reads_dict_batches_and_tensors():
    import fltrust.flower as ft

    model = torch.nn.Linear(3, 2)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, 0, 0], [0, 1.0, 0]]))
        model.bias.zero_()
    x = torch.tensor([[1.0, 0, 0], [0, 1.0, 0], [1.0, 0, 0], [0, 0, 1.0]])  # predicted 0, 1, 0, 0
    y = torch.tensor([0, 1, 1, 0])
    loader = [{"img": x[:2], "label": y[:2]}, {"img": x[2:], "label": y[2:]}]
    report = ft.client_report(model, (x, torch.tensor([1, 1, 0, 1])), loader)
    assert report.reward_result.accuracy == 0.75
    content = report.attach(RecordDict({"arrays": ArrayRecord(model.state_dict()),
                                        "metrics": MetricRecord({"train_loss": 0.5})}))
    values = dict(content["fltrust"])
    assert values["label_counts"] == [1, 3] and values["num-examples"] == 4 and "num-batches" not in values
    assert values["confusion"] == [2, 0, 1, 1] and values["train_loss"] == 0.5 and "partition-id" not in values
    assert set(content.keys()) == {"arrays", "metrics", "fltrust"}


def test_every_public_name_is_documented():
    import fltrust.flower as ft

    for name in ft.__all__:
        value = getattr(ft, name)
        if callable(value):
            assert (value.__doc__ or "").strip(), name
    for cls in (ft.RoundSink, ft.ObserverSink, ft.InstrumentedStrategy, ft.ClientReport):
        for attr in ("record_round", "start", "attach", "finish", "reward"):
            method = getattr(cls, attr, None)
            if method is not None:
                assert (method.__doc__ or "").strip(), f"{cls.__name__}.{attr}"


@pytest.mark.slow
def test_the_readme_app_on_the_simulation_runtime(tmp_path):
    """The same app on Flower's Simulation Runtime (Ray): 2 CPUs, 1 per ClientApp, loopback only."""
    (tmp_path / "app.py").write_text(readme_app())
    script = f"""
import os, sys
sys.path.insert(0, {str(tmp_path)!r})
os.chdir({str(tmp_path)!r})
import ray
from fltrust.engines.flower.simulation import LOOPBACK, ray_on_loopback
with ray_on_loopback():
    ray.init(_node_ip_address=LOOPBACK, num_cpus=2, include_dashboard=False, logging_level="WARNING",
             runtime_env={{"env_vars": {{"PYTHONPATH": os.pathsep.join([{str(tmp_path)!r}, *sys.path])}}}})
assert ray.util.get_node_ip_address() == LOOPBACK
from flwr.simulation import run_simulation
import app
run_simulation(server_app=app.server, client_app=app.client, num_supernodes=4,
               backend_config={{"client_resources": {{"num_cpus": 1}}}})
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path)]), "FLWR_TELEMETRY_ENABLED": "0"}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    [folder] = run_folders(tmp_path)
    assert "round 3: F_T" in done.stdout and f"run folder: {folder}" in done.stdout
    from fltrust.runs import load_run

    record = load_run(folder)
    for r in record.rounds[1:]:  # F_T None: one participant or none left in the corrected f_j (the fast test above)
        fairness = r.observations["fairness"]
        assert (0 <= fairness["F_T"] <= 1) if fairness["F_T"] is not None else fairness["num_dropped_gains"] in (1, 2)
        assert r.observations["trust"]["trust_score"] > 0
    assert json.loads((folder / "factsheet.json").read_text())["project"]["overview"].startswith("quickstart: Net (")
    cli = subprocess.run([sys.executable, "-m", "fltrust", "audit", str(folder)], env=env, capture_output=True,
                         text=True, timeout=120)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert not math.isnan(record.summary["observers"]["trust"]["trust_score"])


EXAMPLE = REPO / "examples" / "flower_app"


def test_the_example_app_imports_nothing_of_fltrust_but_fltrust_flower():
    import ast

    for path in (EXAMPLE / "fltrust_flower_app").glob("*.py"):
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        roots = {name.split(".")[0] for name in names}
        assert roots <= {"__future__", "logging", "flwr", "torch", "fltrust", "fltrust_flower_app"}, (path, roots)
        assert {n for n in names if n.startswith("fltrust.")} <= {"fltrust.flower"}, path


def test_the_example_app_on_the_local_grid(tmp_path, monkeypatch):
    import tomllib

    monkeypatch.syspath_prepend(str(EXAMPLE))
    for name in [m for m in sys.modules if m.startswith("fltrust_flower_app")]:
        monkeypatch.delitem(sys.modules, name)
    from fltrust_flower_app import client_app, server_app

    run_config = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]
    run_config.update({"num-server-rounds": 2, "synthetic-samples": 600, "out-dir": str(tmp_path / "runs"),
                       "partition": "dirichlet", "min-nodes": 4})
    grid = LocalGrid(client_app.app, 4, run_config)
    server_app.app(grid=grid, context=Context(run_id=1, node_id=0, node_config={}, state=RecordDict(),
                                              run_config=run_config))

    [folder] = run_folders(tmp_path)
    from fltrust.runs import audit_run, load_run

    record = load_run(folder)
    assert [r.round for r in record.rounds] == [0, 1, 2] and audit_run(folder).ok
    for r in record.rounds[1:]:
        fair = r.observations["fairness"]
        assert fair["shapley_method"] == "exact"  # 2 participants: "auto" is exact
        if fair["F_T"] is None:
            # Flower's FedAvg samples 2 of the 4 nodes at random, and a corrected notion can be
            # undefined (fairness spec 9, docs/references.md#fairness-9): f_j and f_r leave out a participant whose
            # cumulative FedSV is <= 0 (with 1 of 2 left, undefined); f_g needs a client whose validation rows hold
            # two label groups (a Dirichlet client can hold one)
            assert any(fair[k] is None for k in ("f_j", "f_g", "f_r"))
            assert fair["f_j"] is not None or fair["num_dropped_gains"] >= 1
            assert fair["f_g"] is not None or all(v == {} for v in fair["group_values"])
        else:
            assert 0 <= fair["F_T"] <= 1
    settings = record.summary["observers"]["fairness"]["settings"]
    assert (settings["mode"], settings["shapley"], settings["shapley_target_error"]) == ("corrected", "auto", 0.05)
    fs = json.loads((folder / "factsheet.json").read_text())
    assert fs["configuration"]["training_model"] == "MLPClassifier"
    assert fs["configuration"]["local_update_steps"] == 1 and fs["participants"]["client_num"] == 4


def test_training_labels_are_read_without_loading_the_inputs():
    """A Hugging Face dataset (Flower's FederatedDataset partitions) gives its label column; nothing is iterated."""
    from torch.utils.data import DataLoader

    from fltrust.flower.tensors import read_labels

    class HFLike:  # the part of datasets.Dataset that is used: column_names, with_transform(None)[column]
        column_names = ["img", "label"]

        def __len__(self):
            return 5

        def __getitem__(self, key):
            if key == "label":
                return [2, 0, 2, 1, 2]
            raise AssertionError("the inputs were loaded")

        def with_transform(self, transform):
            assert transform is None
            return self

    assert read_labels(DataLoader(HFLike(), batch_size=2), None, "train").tolist() == [2, 0, 2, 1, 2]
    assert read_labels(DataLoader(HFLike(), batch_size=2), ("img", "label"), "train").tolist() == [2, 0, 2, 1, 2]


# -- defaults for a user's own app ---------------------------------------------------------------
def test_an_app_gets_the_corrected_notions_and_a_fedsv_that_fits_the_round(tmp_path):
    import fltrust.flower as ft

    model, data = _tiny()
    strategy = ft.instrument(FedAvg(), model=model, aux=data, test=data, out_dir=tmp_path, name="t", dataset_name="d")
    assert strategy.fairness == ft.FairnessSettings.for_app()
    assert (strategy.fairness.mode, strategy.fairness.shapley) == ("corrected", "auto")
    assert (strategy.fairness.shapley_target_error, strategy.fairness.shapley_max_coalitions) == (0.05, 300)
    assert strategy.fairness.nonpositive_policy == "exclude" and strategy.fairness.shapley_auto_exact_players == 6
    faithful = ft.FairnessSettings.for_app(mode="faithful")
    assert (faithful.mode, faithful.nonpositive_policy, faithful.shapley) == ("faithful", "raw", "auto")


def test_the_run_config_states_the_local_epochs(tmp_path, monkeypatch):
    """Flower's quickstart passes ``local-epochs`` in the run config, the learning rate in train_config."""
    monkeypatch.chdir(tmp_path)
    source = readme_app().replace("num_rounds=3", "num_rounds=1")
    app = load_app(tmp_path, source)
    grid = LocalGrid(app.client, 4)
    app.server(grid=grid, context=Context(run_id=1, node_id=0, node_config={}, state=RecordDict(),
                                          run_config={"local-epochs": 2, "lr": 0.5}))
    [folder] = run_folders(tmp_path)
    configuration = json.loads((folder / "factsheet.json").read_text())["configuration"]
    assert configuration["local_update_steps"] == 2 and configuration["learning_rate"] == 0.1  # train_config first


def test_a_relative_out_dir_is_taken_in_the_apps_folder(tmp_path, monkeypatch):
    elsewhere = tmp_path / "superlink"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # a runtime's working directory is not the app's
    app = load_app(tmp_path, readme_app().replace("num_rounds=3", "num_rounds=1"))
    run_local(app)
    assert len(run_folders(tmp_path)) == 1 and not (elsewhere / "runs").exists()


def test_a_relative_out_dir_in_flowers_installed_app_is_an_error(tmp_path, monkeypatch):
    """Under ``flwr run`` the ServerApp is Flower's installed copy ($FLWR_HOME/apps/...)."""
    monkeypatch.setenv("FLWR_HOME", str(tmp_path / "flwr"))
    installed = tmp_path / "flwr" / "apps" / "me.app.1.0.0.abcdef12"
    installed.mkdir(parents=True)
    app = load_app(installed, readme_app())
    with pytest.raises(ValueError, match=r"^fltrust\.flower\.instrument: out_dir= 'runs' is relative, and this "
                                         r"ServerApp runs from Flower's installed copy of the app .*pass an absolute"):
        run_local(app)


def test_exact_fedsv_states_its_cost_before_round_1_computes_it(tmp_path, caplog, monkeypatch):
    from fltrust.metrics.fairness import FairnessObserver

    monkeypatch.chdir(tmp_path)
    app = load_app(tmp_path, readme_app().replace("num_rounds=3", "num_rounds=1").replace(
        "context=context,", "context=context, fairness=ft.FairnessSettings(mode=\"corrected\", shapley=\"exact\"),"))
    seen = []
    round_end = FairnessObserver.on_round_end

    def watch(self, record):
        seen.append((record.round, "coalition models" in caplog.text))
        return round_end(self, record)

    monkeypatch.setattr(FairnessObserver, "on_round_end", watch)
    caplog.set_level(logging.INFO, logger="fltrust")
    grid = LocalGrid(app.client, 14)  # FedAvg(fraction_train=0.5): 7 train each round
    app.server(grid=grid, context=Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config={}))

    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "coalition models" in r.getMessage()]
    assert len(warned) == 1 and seen == [(0, False), (1, True)]  # said before round 1's FedSV ran
    assert re.fullmatch(r"fltrust: round 1: FedSV of 7 participants, exact: 127 coalition models x \d+\.\d{3} s per "
                        r"aux-set evaluation = about [\d,]+ s per round; FairnessSettings\.for_app\(\) "
                        r"\(shapley='auto'\) samples above 6 participants \(README, Flower section\)", warned[0])


def test_faithful_values_below_one_over_m_are_explained_once(tmp_path, caplog):
    import fltrust.flower as ft
    from fltrust.core.records import RoundRecord

    model, data = _tiny()
    record = RoundRecord(round=3, client_ids=np.arange(4),
                         observations={"fairness": {"s": [0.2, -0.1, 0.3, 0.0], "f_j": 0.12, "f_r": 0.4}})
    for mode, warnings in (("faithful", 1), ("corrected", 0)):
        caplog.clear()
        strategy = ft.instrument(FedAvg(), model=model, aux=data, test=data, out_dir=tmp_path, name="t",
                                 dataset_name="d", fairness=ft.FairnessSettings.for_app(mode=mode))
        strategy._warn_signed_fedsv(record)
        strategy._warn_signed_fedsv(record)
        lines = [r.getMessage() for r in caplog.records if "uses them signed" in r.getMessage()]
        assert len(lines) == warnings
    assert lines == [] and len(caplog.records) == 0
    caplog.clear()
    strategy = ft.instrument(FedAvg(), model=model, aux=data, test=data, out_dir=tmp_path, name="t", dataset_name="d",
                             fairness=ft.FairnessSettings.for_app(mode="faithful"))
    strategy._warn_signed_fedsv(record)
    assert caplog.records[0].getMessage().startswith(
        "fltrust: round 3: f_j = 0.120 below 1/m = 0.250, the least Jain's index of 4 non-negative values, because 2 "
        "of the 4 participants' cumulative FedSV are <= 0 and mode='faithful' uses them signed, as the authors' code "
        "does: these numbers reproduce the authors' computation, not a fairness judgement of your app")

"""fltrust.experiment: one process per run folder, divergence, honest skipping, engine-neutral layering."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fltrust.config import ExperimentConfig
from fltrust.experiment import run_experiment, run_id_for
from fltrust.runs import RunFolder, RunFolderError

REPO = Path(__file__).resolve().parents[1]


def tiny(**sections) -> ExperimentConfig:
    base = {"data": {"synthetic_samples": 300}, "partition": {"num_clients": 4, "aux_max_samples": 60},
            "strategy": {"clients_per_round": 2}, "training": {"rounds": 2}, "run": {"name": "t"}}
    for key, value in sections.items():
        base.setdefault(key, {}).update(value)
    return ExperimentConfig.tiny(**base)


def test_a_held_run_folder_gives_one_line_naming_the_holder(tmp_path):
    cfg = tiny()
    folder = tmp_path / cfg.run_id()
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from fltrust.runs import RunFolder, locked\n"
         "with locked(RunFolder(Path(sys.argv[1]))):\n    print('held', flush=True); time.sleep(60)\n",
         str(folder)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunFolderError) as info:
            run_experiment(cfg, out_dir=tmp_path)
        message = str(info.value)
        assert f"pid {holder.pid}" in message and "\n" not in message
        assert not (folder / "summary.json").exists()
    finally:
        holder.kill()
        holder.wait(timeout=10)
    # the OS released the lock with the process: the run now goes through
    assert run_experiment(cfg, out_dir=tmp_path).status == "complete"
    assert not (folder / ".holder.json").exists()


def test_a_diverging_run_is_stopped_and_recorded_as_diverged(tmp_path, capsys):
    cfg = tiny(training={"optimizer": "sgd", "learning_rate": 1.0e6, "rounds": 3},
               metrics={"fairness": {"enabled": True}})
    record = run_experiment(cfg, out_dir=tmp_path)
    assert record.status == "diverged"
    k = record.summary["diverged_round"]
    assert 1 <= k <= 3
    assert "DIVERGED" in capsys.readouterr().out
    # no metric was computed from the broken model, and the finite rounds are kept
    assert [r.round for r in record.rounds] == list(range(k + 1))
    assert "fairness" not in record.rounds[-1].observations
    assert "observers" not in record.summary
    text = record.describe()  # printing a record with missing values never crashes
    assert "DIVERGED" in text and "n/a" in text
    # the record is not complete, so it is never skipped as if it were
    assert not RunFolder(record.path).is_complete(cfg.training.rounds)


def test_a_record_with_missing_rounds_is_not_complete(tmp_path, capsys):
    cfg = tiny()
    record = run_experiment(cfg, out_dir=tmp_path)
    folder = RunFolder(record.path)
    assert folder.is_complete(2)
    lines = folder.rounds.read_text().splitlines()
    folder.rounds.write_text("\n".join(lines[:-1]) + "\n")  # a round lost
    assert not folder.is_complete(2)
    again = run_experiment(cfg, out_dir=tmp_path)
    assert "rerunning" in capsys.readouterr().out
    assert [r.round for r in again.rounds] == [0, 1, 2]


def test_a_complete_run_is_skipped_with_a_visible_line(tmp_path, capsys):
    cfg = tiny()
    first = run_experiment(cfg, out_dir=tmp_path)
    capsys.readouterr()
    second = run_experiment(cfg, out_dir=tmp_path)
    out = capsys.readouterr().out
    assert out.startswith(f"skipped {first.run_id}: already complete in {first.path}")
    assert second.summary == first.summary


def test_a_record_made_from_other_data_is_rerun(tmp_path, capsys):
    cfg = tiny()
    record = run_experiment(cfg, out_dir=tmp_path)
    dataset = json.loads((record.path / "dataset.json").read_text())
    assert dataset["fingerprint"] == record.summary["data_fingerprint"]
    dataset["fingerprint"] = "0123456789ab"  # as if the files had changed since
    (record.path / "dataset.json").write_text(json.dumps(dataset))
    capsys.readouterr()
    run_experiment(cfg, out_dir=tmp_path)
    assert "made from other data" in capsys.readouterr().out


def test_synthetic_fallback_gets_its_own_run_id(tmp_path):
    cfg = ExperimentConfig.from_dict({
        "data": {"name": "nsl_kdd", "root": str(tmp_path / "empty"), "allow_synthetic_fallback": True,
                 "synthetic_samples": 300},
        "partition": {"num_clients": 4, "aux_max_samples": 60},
        "strategy": {"clients_per_round": 2}, "training": {"rounds": 1},
        "run": {"name": "fb", "progress": False, "device": "cpu"}})
    with pytest.warns(UserWarning, match="SYNTHETIC"):
        record = run_experiment(cfg, out_dir=tmp_path / "runs")
    assert record.summary["synthetic"] and "-synthetic-" in record.run_id
    assert record.run_id != cfg.run_id()


def test_interrupted_writes_leave_no_temporary_files_after_the_next_run(tmp_path):
    cfg = tiny()
    folder = tmp_path / cfg.run_id()
    folder.mkdir(parents=True)
    (folder / ".rounds.jsonl.x1.tmp").write_text("half")
    run_experiment(cfg, out_dir=tmp_path)
    assert not list(folder.glob(".*.tmp"))


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


@pytest.mark.parametrize("package", ["metrics", "trust"])
def test_metrics_never_import_an_engine(package):
    # nor the reproduction layer, which sits on top of them (the Table 3 protocol lives there)
    for path in (REPO / "fltrust" / package).rglob("*.py"):
        above = ("fltrust.algorithms", "fltrust.engines", "fltrust.flower", "fltrust.experiment", "fltrust.repro")
        bad = {m for m in _imports(path) if m.startswith(above)}
        assert not bad, f"{path} imports {bad}"
        # the run folders and the model zoo are not theirs either: hashes and parameter counts live in core
        bad = {m for m in _imports(path) if m in ("fltrust.runs", "fltrust.models") or m.startswith("fltrust.runs.")}
        assert not bad, f"{path} imports {bad}"


def test_the_plots_never_import_the_reproduction():
    """fltrust.viz draws plain tables; the reproduction's figures (fltrust.repro.fairness.figures) use
    it, never the reverse (lazy imports included)."""
    paths = list((REPO / "fltrust" / "viz").rglob("*.py"))
    assert paths
    for path in paths:
        bad = {m for m in _imports(path) if m.startswith("fltrust.repro")}
        assert not bad, f"{path} imports {bad}"


COMPOSITION_ROOTS = {REPO / "fltrust" / "flower" / "app.py"}
"""Modules that, like fltrust/experiment.py for fltrust's experiments, put the observers and a run
together: fltrust.flower.instrument builds both papers' observers for a user's Flower app. The
engines themselves never import a metric."""


@pytest.mark.parametrize("package", ["algorithms", "engines", "flower"])
def test_engines_never_import_a_metric(package):
    for path in (REPO / "fltrust" / package).rglob("*.py"):
        if path in COMPOSITION_ROOTS:
            continue
        bad = {m for m in _imports(path) if m.startswith(("fltrust.metrics", "fltrust.trust", "fltrust.experiment"))}
        assert not bad, f"{path} imports {bad}"


def test_the_flower_engine_does_not_load_the_app_integration():
    """fltrust.engines.flower.engine (run.engine: flower) never imports the composition root."""
    for path in [*(REPO / "fltrust" / "flower").rglob("*.py"), *(REPO / "fltrust" / "engines").rglob("*.py")]:
        if path.relative_to(REPO).as_posix() not in ("fltrust/flower/__init__.py", "fltrust/flower/app.py"):
            assert "fltrust.flower.app" not in _imports(path), path


def test_the_engines_are_siblings():
    """The in-process and the Flower engine share fltrust.engines.base and fltrust.engines.client; neither
    imports the other's module, and no engine module imports a private name of another module."""
    inprocess = _imports(REPO / "fltrust" / "engines" / "inprocess.py")
    assert not {m for m in inprocess if m.startswith(("fltrust.flower", "fltrust.engines.flower"))}
    engine_modules = [*(REPO / "fltrust" / "engines").rglob("*.py"), *(REPO / "fltrust" / "flower").rglob("*.py")]
    for path in engine_modules:
        if path.parent.name == "flower":
            assert "fltrust.engines.inprocess" not in _imports(path), path
        private = [f"{node.module}.{alias.name}" for node in ast.walk(ast.parse(path.read_text()))
                   if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fltrust")
                   for alias in node.names if alias.name.startswith("_")]
        assert not private, f"{path} imports private names {private}"


def _module_graph() -> dict[str, set[str]]:
    """fltrust module -> fltrust modules it imports (lazy imports included, TYPE_CHECKING blocks not)."""
    modules = {}
    for path in (REPO / "fltrust").rglob("*.py"):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path

    def resolve(name: str) -> str:
        while name and name not in modules:
            name = name.rsplit(".", 1)[0] if "." in name else ""
        return name

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text())
        typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                       and getattr(node.test, "id", None) == "TYPE_CHECKING" for n in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fltrust"):
                subs = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in modules]
                targets = subs if len(subs) == len(node.names) else [node.module, *subs]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("fltrust")]
            else:
                continue
            graph[module].update(t for t in map(resolve, targets) if t and t != module)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(component)

    for node in list(graph):
        if node not in index:
            visit(node)
    return out


def test_there_are_no_import_cycles():
    graph = _module_graph()
    assert _cycles(graph) == []
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        for target in targets:
            a, b = ".".join(module.split(".")[:2]), ".".join(target.split(".")[:2])
            if a != b:
                packages.setdefault(a, set()).add(b)
    assert _cycles(packages) == []


def test_core_imports_nothing_else_of_fltrust():
    for path in (REPO / "fltrust" / "core").rglob("*.py"):
        bad = {m for m in _imports(path) if m.startswith("fltrust.") and not m.startswith("fltrust.core")}
        assert not bad, f"{path} imports {bad}"


def test_run_id_for_real_data_is_the_config_run_id():
    cfg = tiny()

    class Bundle:
        synthetic = False

    assert run_id_for(cfg, Bundle()) == cfg.run_id()

"""The demo's dataset-family part falls back to synthetic data and says so."""

from fltrust.demo import FAMILIES, demo_config_path, run_demo
from fltrust.config import load_config


def test_demo_configs_are_valid():
    for family in FAMILIES:
        cfg = load_config(demo_config_path(family))
        assert cfg.data.allow_synthetic_fallback


def test_demo_without_data_uses_synthetic_stand_ins(tmp_path, capsys, monkeypatch):
    # tiny synthetic sizes keep this fast; an empty data root forces the fallback
    from fltrust import demo

    original = demo.load_config

    def small(path, overrides=None):
        overrides = dict(overrides or {})
        overrides.update({"data.synthetic_samples": 300, "data.max_train_samples": None, "training.rounds": 1,
                          "run.progress": False, "partition.aux_max_samples": 100})
        return original(path, overrides)

    monkeypatch.setattr(demo, "load_config", small)
    code = run_demo(out_dir=tmp_path, data_dir=str(tmp_path / "no-data"), papers=False)
    out = capsys.readouterr().out
    assert code == 0
    for family in FAMILIES:
        assert f"== {family} ==" in out
    assert out.count("used the SYNTHETIC stand-in") == len(FAMILIES)
    assert out.count("[SYNTHETIC DATA]") == len(FAMILIES)
    # the closing summary names the command that fetches each missing dataset
    for family in FAMILIES:
        assert f"python -m fltrust data fetch {family}" in out
    # real and synthetic results can never share a folder: the stand-in is in the run id
    assert all("-synthetic-" in p.name for p in tmp_path.iterdir() if p.is_dir() and p.name.startswith("demo-"))

"""Command line: ``fltrust run | demo | data info | data fetch | repro fairness | repro trust``.

Examples
--------
::

    fltrust run papers_repro/fairness_analytics/configs/fedavg_nslkdd_iid.yaml --set training.rounds=3
    fltrust data info
    fltrust demo
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from fltrust.config import ConfigError, load_config, parse_overrides


def _cmd_run(args: argparse.Namespace) -> int:
    from fltrust.fl.engine import run_experiment

    overrides = parse_overrides(args.set or [])
    if args.data_dir:
        overrides["data.root"] = args.data_dir
    cfg = load_config(args.config, overrides)
    record = run_experiment(cfg, out_dir=args.out, device=args.device, force=args.force)
    _print_run(record)
    return 0


def _print_run(record) -> None:
    s = record.summary
    synthetic = " [SYNTHETIC DATA]" if s.get("synthetic") else ""
    print(f"run {record.run_id}{synthetic}")
    print(f"  rounds: {len(record.rounds) - 1}   wall time: {s.get('wall_time_s', float('nan')):.1f} s "
          f"({s.get('seconds_per_round', float('nan')):.2f} s/round on {s.get('device')})")
    print(f"  final aux accuracy: {s.get('final_aux_accuracy', float('nan')):.4f}   "
          f"aux loss: {s.get('final_aux_loss', float('nan')):.4f}")
    if s.get("epsilon") is not None:
        print(f"  epsilon spent: {s['epsilon']:.3f}")
    for name, values in (s.get("observers") or {}).items():
        short = {k: v for k, v in values.items() if isinstance(v, (int, float))}
        if short:
            print(f"  {name}: " + ", ".join(f"{k}={v:.4f}" for k, v in short.items()))
    print(f"  record: {record.path}")


def _cmd_demo(args: argparse.Namespace) -> int:
    from fltrust.demo import run_demo

    return run_demo(out_dir=Path(args.out), data_dir=args.data_dir, device=args.device)


def _cmd_data_info(args: argparse.Namespace) -> int:
    from fltrust.data import data_root, dataset_info

    root = data_root(args.data_dir)
    rows = dataset_info(root)
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    print(f"data root: {root}")
    for row in rows:
        print(json.dumps(row, indent=2, default=str))
    return 0


def _cmd_data_fetch(args: argparse.Namespace) -> int:
    from fltrust.data import data_root, fetch_dataset

    path = fetch_dataset(args.name, data_root(args.data_dir))
    print(f"{args.name}: ready in {path}")
    return 0


def _cmd_repro(args: argparse.Namespace) -> int:
    from fltrust.repro.batch import run_fairness_batch, run_trust_batch

    common = dict(quick=args.quick, device=args.device, out_dir=args.out, data_dir=args.data_dir)
    if args.paper == "fairness":
        failures = run_fairness_batch(conditions=args.conditions, repeats=args.repeats, mode=args.mode, **common)
    else:
        failures = run_trust_batch(experiments=args.conditions, mode=args.mode, **common)
    return 1 if failures else 0


def build_parser() -> argparse.ArgumentParser:
    # --data-dir and -v are accepted before or after the sub-command
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", default=argparse.SUPPRESS, help="data root (default: $FLTRUST_DATA, else ./data)")
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log progress details")
    parser = argparse.ArgumentParser(prog="fltrust", description=__doc__.split("\n")[0], parents=[common])
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", parents=[common], help="run one configured FL experiment")
    run.add_argument("config", help="experiment YAML")
    run.add_argument("--set", action="append", metavar="KEY=VALUE", help="override, e.g. training.rounds=3")
    run.add_argument("--out", default=None, help="folder for run folders (default: run.out_dir)")
    run.add_argument("--device", choices=["cpu", "cuda", "auto"], default=None)
    run.add_argument("--force", action="store_true", help="rerun even if a complete record exists")
    run.set_defaults(func=_cmd_run)

    demo = sub.add_parser("demo", parents=[common], help="quick run of every dataset family (synthetic stand-ins when data is missing)")
    demo.add_argument("--out", default="runs/demo")
    demo.add_argument("--device", choices=["cpu", "cuda", "auto"], default="cpu")
    demo.set_defaults(func=_cmd_demo)

    data = sub.add_parser("data", parents=[common], help="dataset information and download")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    info = data_sub.add_parser("info", parents=[common], help="where each dataset was found, files, sizes, checksums, samples")
    info.add_argument("--json", action="store_true")
    info.set_defaults(func=_cmd_data_info)
    fetch = data_sub.add_parser("fetch", parents=[common], help="download a dataset from its public source")
    fetch.add_argument("name", choices=["cifar10", "femnist", "nsl_kdd", "n_baiot"])
    fetch.set_defaults(func=_cmd_data_fetch)

    repro = sub.add_parser("repro", parents=[common], help="reproduce a paper (batch of papermill notebooks)")
    repro.add_argument("paper", choices=["fairness", "trust"])
    repro.add_argument("--quick", action="store_true", help="small CPU-sized version")
    repro.add_argument("--conditions", default="*", help="glob over condition/experiment names")
    repro.add_argument("--repeats", type=int, default=None, help="repeats per condition (fairness)")
    repro.add_argument("--mode", default=None, help="fairness: faithful|corrected; trust: prototype|paper")
    repro.add_argument("--device", choices=["cpu", "cuda", "auto"], default="cpu")
    repro.add_argument("--out", default=None, help="folder for run folders and executed notebooks")
    repro.set_defaults(func=_cmd_repro)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.data_dir = getattr(args, "data_dir", None)
    args.verbose = getattr(args, "verbose", False)
    level = logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(message)s")
    for handler in logging.getLogger().handlers:
        handler.setLevel(level)  # a run raises the fltrust logger to INFO for its log file only
    if args.data_dir:
        os.environ["FLTRUST_DATA"] = str(Path(args.data_dir).resolve())
    try:
        return int(args.func(args) or 0)
    except (ConfigError, FileNotFoundError, ValueError, RuntimeError) as exc:
        print(f"fltrust: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

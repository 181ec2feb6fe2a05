"""Benchmark: how long a FederatedTrust experiment notebook spends outside its run.

Usage::

    python benchmarks/trust_overhead.py [--quick] [--experiments exp1 exp4 exp5] [--out DIR]

For each experiment, in one warm process (ART, SHAP and the engine imported before the first),
the experiment notebook's library calls are timed: :func:`fltrust.repro.trust.run.run_trust_experiment`
with every scoring mode (prototype, paper, fixed, extended), then
:func:`~fltrust.repro.trust.run.experiment_result`. ``run`` is the run's own ``wall_time_s``
(``summary.json``: the rounds with their observers, from the engine's start to the last round);
``overhead`` is the call less the run: the FactSheet modes' scoring and replays, CLEVER, SHAP, the
extended end-of-run measures, the reports and figures, building the engine (data, model, the DP
noise calibration) and a companion run where the extended mode needs one (its own column; none
since the extended observer runs in the run itself). The
target: overhead <= run for every experiment at the CPU scale ``fltrust repro trust`` runs (each
experiment's ``CpuScale``); ``--quick`` is the demo's 2-round smoke scale. Experiments 2 and 3
take 20-40 minutes each at the CPU scale, so the default list is experiments 1, 4 and 5.

The runs are written under ``--out`` (default: a temporary folder, removed afterwards), so nothing
is resumed. The machine's load average is printed: compare the rows of one run. Speed targets live
here, never in tests.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

MODES = ("prototype", "paper", "fixed", "extended")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="the demo's smoke scale instead of the CPU scale")
    parser.add_argument("--experiments", nargs="+", default=["exp1", "exp4", "exp5"], help="default: exp1 exp4 exp5")
    parser.add_argument("--out", default=None, help="keep the runs in this folder (default: a temporary one)")
    args = parser.parse_args()

    import art  # noqa: F401  (warm imports: a notebook kernel has paid them before its first cell)
    import shap  # noqa: F401

    from fltrust.repro.trust.run import experiment_result, run_trust_experiment

    out = args.out or tempfile.mkdtemp(prefix="trust-overhead-")
    load_before = os.getloadavg()[0]
    rows = []
    try:
        for name in args.experiments:
            start = time.perf_counter()
            run = run_trust_experiment(name, modes=MODES, quick=args.quick, device="cpu", out_dir=out)
            result = experiment_result(run)
            call = time.perf_counter() - start
            extended = result.get("extended_run") or {}
            own = extended.get("run_id") in (None, result["run_id"])
            companion = 0.0 if own else float(extended.get("run_wall_time_s") or 0.0)
            run_s = float(result["run_wall_time_s"])
            rows.append((name, call, run_s, companion, call - run_s))
    finally:
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)
    scale = "quick (smoke)" if args.quick else "CPU scale (fltrust repro trust)"
    print(f"{'exp':<6} {'call (s)':>9} {'run (s)':>8} {'companion (s)':>14} {'overhead (s)':>13} {'overhead <= run':>16}")
    for name, call, run_s, companion, overhead in rows:
        print(f"{name:<6} {call:>9.1f} {run_s:>8.1f} {companion:>14.1f} {overhead:>13.1f} "
              f"{'yes' if overhead <= run_s else 'no':>16}")
    print(f"\n{scale}; every scoring mode; one warm process; load average {load_before:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after (1 min), {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()

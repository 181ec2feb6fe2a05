"""Benchmark: federated Shapley values (FedSV) per round -- exact vs sampled -- time and error.

Usage::

    python benchmarks/fedsv.py [--models cifar_cnn nsl_kdd_mlp] [--players 5 10 20 50] [--threads 2]
                               [--aux 2000] [--seeds 20]

One synthetic federated round per (model, players): the round's global model theta_k is the
registered model (``cifar_cnn``: the CIFAR LeNet, 62,006 parameters; ``nsl_kdd_mlp``: 45,141)
trained for 30 Adam steps on a synthetic task of the real input shape (CIFAR: 3x32x32 images
around 10 smooth class prototypes; NSL-KDD: 122 features, 2 classes); client n returns
``theta_k + s_n * d + e_n``, with ``d`` 10 further training steps, ``s_n`` uniform in
[0.3, 1.3] (in [-1.0, -0.3] for one client in five: a client that pulls the wrong way) and
``e_n`` Gaussian noise of a client-specific scale (0.2 to 1.0 times the mean ``|d|``). The aux
set D is ``--aux`` samples of the same task. FedSV as the observer computes it in the default
(faithful) mode: U(T) = l(theta_k; D) - l(mean of T's models; D), without the empty coalition.

Methods (:func:`fltrust.metrics.shapley.federated_shapley`): ``exact`` (all 2^m - 1
coalitions, up to 10 players), ``monte_carlo`` (plain permutation sampling, every prefix, P = 10;
up to 10 players, for its error) and ``permutation`` (guided permutation sampling with the
mean-game control variate; P = 10, the default, and P = 20 up to 20 players). ``auto`` is
``exact`` up to 6 players and ``permutation`` (P = 10) above. Rows ``tol=...``: the same
estimator with truncation (a walk stops once ``|U(S) - U(prefix)| <= tol |U(S)|``), re-run on
the exact run's coalition utilities, so they show models and errors but no time.

``--real``: instead, one real federated round of the CIFAR LeNet on CIFAR-10
(``$FLTRUST_DATA/cifar10``, the npz's natural Dirichlet(0.3) clients): 10 clients with 300 to 600
training images each, 3 FedAvg warm-up rounds (1 local epoch, SGD lr 0.05, batch 32), then the
measured round from the warm model; aux set D: ``--aux`` test images. FedSV as
``fltrust.flower.instrument`` computes it by default (``FairnessSettings.for_app()``: corrected,
FedAvg-weighted coalition models, with the empty coalition; ``--mode faithful``: the authors'
unweighted means without it, as the synthetic rows): ``exact``, the app default (``auto`` with its
target error and coalition budget), and ``permutation`` with a fixed P.

Columns: coalition models evaluated, wall seconds for the round's FedSV (coalition averaging,
stacked evaluation on D, the estimator), CPU seconds / threads (on idle cores about the wall
time; on a loaded machine both grow, so compare the rows of one run: a method's share of the
exact row's time carries over), and errors in % of the value range
``max(phi) - min(phi)`` of the exact values: ``err`` of the timed run (seed 0), ``worst`` over
``--seeds`` seeds (re-sampled on the exact run's coalition utilities, no new evaluations), and
``2SE``, twice the largest reported standard error (in % of the estimated range where no exact
values exist). Speed targets live here, never in tests: 10 players <= 3 s per round on 2 CPU
cores with the largest error <= 5 % of the value range.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch
from torch import nn

from fltrust.core.evaluation import evaluate_many, get_params, set_params
from fltrust.metrics.shapley import (
    federated_shapley,
    monte_carlo_shapley,
    permutation_shapley,
)
from fltrust.models import build_model

TASKS = {"cifar_cnn": ((3, 32, 32), 10), "nsl_kdd_mlp": ((122,), 2)}
METHODS = [("exact", None), ("monte_carlo", 10), ("permutation", 10), ("permutation", 20)]
EXACT_UP_TO = 10
TRUNCATIONS = (0.01, 0.05)


def synthetic_task(name: str, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` labelled samples of the model's input shape around fixed class prototypes."""
    shape, classes = TASKS[name]
    prototypes = torch.randn(classes, *shape, generator=torch.Generator().manual_seed(123))
    if len(shape) == 3:
        prototypes = nn.functional.avg_pool2d(prototypes, 5, 1, 2)  # smooth "images"
    else:
        prototypes = prototypes * 0.12
    generator = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=generator)
    return prototypes[y] + torch.randn(n, *shape, generator=generator), y


def _train(model: nn.Module, x: torch.Tensor, y: torch.Tensor, steps: int, seed: int, binary: bool) -> None:
    """``steps`` Adam steps (lr 1e-3, batch 32) on ``(x, y)``."""
    loss_fn = nn.BCEWithLogitsLoss() if binary else nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        batch = torch.randint(0, len(y), (32,), generator=generator)
        out = model(x[batch])
        loss = loss_fn(out.squeeze(-1), y[batch].float()) if binary else loss_fn(out, y[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def make_round(name: str, num_clients: int, aux: int, seed: int = 0):
    """theta_k, the clients' models and the aux set of one synthetic round (see the module docstring)."""
    shape, classes = TASKS[name]
    torch.manual_seed(seed)
    model = build_model(name, shape, classes)
    x_train, y_train = synthetic_task(name, 4096, seed + 1)
    _train(model, x_train, y_train, 30, seed, binary=classes == 2)
    base = get_params(model)
    further = build_model(name, shape, classes)
    set_params(further, base)
    _train(further, x_train, y_train, 10, seed + 1, binary=classes == 2)
    direction = [t - b for t, b in zip(get_params(further), base)]
    scale = [float(np.abs(d).mean()) for d in direction]
    rng = np.random.default_rng(seed + 2)
    params = []
    for _ in range(num_clients):
        step = rng.uniform(-1.0, -0.3) if rng.random() < 0.2 else rng.uniform(0.3, 1.3)
        noise = rng.uniform(0.2, 1.0)
        params.append([
            (b + step * d + noise * s * rng.standard_normal(b.shape)).astype(b.dtype)
            if np.issubdtype(b.dtype, np.floating) else b
            for b, d, s in zip(base, direction, scale)
        ])
    x_aux, y_aux = synthetic_task(name, aux, seed + 3)
    ref_loss = float(evaluate_many(model, [base], x_aux, y_aux)[0][0])
    return model, params, x_aux, y_aux, ref_loss


def _percent(value: float, scale: float) -> str:
    return f"{100 * value / scale:5.1f}" if scale > 0 and np.isfinite(value) else "    -"


def bench(name: str, players: list[int], aux: int, seeds: int, threads: int) -> list[str]:
    rows = []
    for m in players:
        model, params, x, y, ref = make_round(name, m, aux)
        ids = list(range(m))
        exact_phi, exact_utilities = None, None
        for method, budget in METHODS:
            if method in ("exact", "monte_carlo") and m > EXACT_UP_TO:
                continue  # exact: 2^m - 1 models; monte_carlo is here for its error against exact
            if budget == 20 and m > 20:
                continue  # over 1,000 models at 50 players: minutes on a CPU
            wall, cpu = time.perf_counter(), time.process_time()
            result = federated_shapley(
                model, ids, params, x, y, ref_loss=ref, include_empty=False, method=method,
                num_permutations=budget, seed=0, exact_max_players=EXACT_UP_TO,
            )
            wall, cpu = time.perf_counter() - wall, (time.process_time() - cpu) / threads
            err = worst = two_se = float("nan")
            if method == "exact":
                exact_phi, exact_utilities = result.phi, result.utilities
            value_range = float(np.ptp(exact_phi)) if exact_phi is not None else float(np.ptp(result.phi))
            if exact_phi is not None and method != "exact":
                err = float(np.abs(result.phi - exact_phi).max())
                errors = []
                for seed in range(seeds):
                    if method == "monte_carlo":
                        phi = monte_carlo_shapley(ids, exact_utilities, num_permutations=budget, seed=seed,
                                                  include_empty=False)
                    else:
                        phi = permutation_shapley(ids, exact_utilities, num_permutations=budget, seed=seed,
                                                  include_empty=False).phi
                    errors.append(float(np.abs(phi - exact_phi).max()))
                worst = max(errors)
            if result.stderr is not None:
                two_se = 2 * float(np.nanmax(result.stderr))
            label = method if budget is None else f"{method} P={budget}"
            if method == "exact" and m <= 6:
                label += " (=auto)"
            if method == "permutation" and budget == 10 and m > 6:
                label += " (=auto)"
            rows.append(
                f"| {name:11s} | {m:3d} | {label:26s} | {len(result.utilities):6d} | {wall:7.2f} | {cpu:7.2f} "
                f"| {_percent(err, value_range)} | {_percent(worst, value_range)} | {_percent(two_se, value_range)} |"
            )
            print(rows[-1], flush=True)
        if exact_utilities is None:
            continue
        value_range = float(np.ptp(exact_phi))
        for tol in TRUNCATIONS:  # on the exact run's utilities: no new evaluations, no timing
            runs = [permutation_shapley(ids, exact_utilities, num_permutations=10, seed=seed, include_empty=False,
                                        truncation=tol) for seed in range(seeds)]
            errors = [float(np.abs(run.phi - exact_phi).max()) for run in runs]
            rows.append(
                f"| {name:11s} | {m:3d} | {f'permutation P=10 tol={tol}':26s} | {len(runs[0].utilities):6d} |       - "
                f"|       - | {_percent(errors[0], value_range)} | {_percent(max(errors), value_range)} "
                f"| {_percent(2 * float(np.nanmax(runs[0].stderr)), value_range)} |"
            )
            print(rows[-1], flush=True)
    return rows


REAL_CLIENTS, REAL_WARMUP_ROUNDS, REAL_MIN_ROWS, REAL_MAX_ROWS = 10, 3, 300, 600


def _sgd_epoch(model: nn.Module, x: torch.Tensor, y: torch.Tensor, seed: int) -> None:
    """One local epoch: SGD lr 0.05, batch 32, shuffled by ``seed``."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    for start in range(0, len(y), 32):
        batch = order[start:start + 32]
        loss = nn.functional.cross_entropy(model(x[batch]), y[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def real_round(aux: int, seed: int = 0):
    """theta_k, the 10 clients' trained models, their sample counts and the aux set of one real CIFAR-10 round."""
    from pathlib import Path

    from fltrust.data.cifar10 import load_cifar10
    from fltrust.metrics.shapley import average_params

    bundle = load_cifar10(Path(os.environ.get("FLTRUST_DATA", "data")) / "cifar10")
    train, test = bundle.train, bundle.test
    sizes = np.bincount(train.groups)
    chosen = [int(g) for g in np.flatnonzero(sizes >= REAL_MIN_ROWS)[:REAL_CLIENTS]]
    clients = []
    for g in chosen:
        rows = np.flatnonzero(train.groups == g)[:REAL_MAX_ROWS]
        clients.append((torch.from_numpy(train.x[rows]), torch.from_numpy(train.y[rows])))
    rows = np.random.default_rng(seed).permutation(len(test.y))[:aux]
    x_aux, y_aux = torch.from_numpy(test.x[rows]), torch.from_numpy(test.y[rows])
    torch.manual_seed(seed)
    model = build_model("cifar_cnn", bundle.input_shape, bundle.num_classes)
    weights = [len(y) for _, y in clients]

    def one_round(global_params, rnd):
        trained = []
        for n, (x, y) in enumerate(clients):
            set_params(model, global_params)
            _sgd_epoch(model, x, y, seed=1000 * rnd + n)
            trained.append(get_params(model))
        return trained

    params = get_params(model)
    for rnd in range(REAL_WARMUP_ROUNDS):
        params = average_params(one_round(params, rnd), weights)
    client_params = one_round(params, REAL_WARMUP_ROUNDS)
    ref_loss = float(evaluate_many(model, [params], x_aux, y_aux)[0][0])
    return model, client_params, weights, x_aux, y_aux, ref_loss, chosen


def bench_real(aux: int, seeds: int, threads: int, mode: str) -> None:
    """The real CIFAR-10 round's table (module docstring); ``mode`` "corrected" (the app default) or "faithful"."""
    from fltrust.settings import FairnessSettings

    app = FairnessSettings.for_app(mode=mode)
    started = time.perf_counter()
    model, params, weights, x, y, ref, chosen = real_round(aux)
    print(f"real round: CIFAR-10 natural clients {chosen}, {[int(w) for w in weights]} training images, "
          f"{REAL_WARMUP_ROUNDS} warm-up rounds; aux {len(y)} test images; prepared in "
          f"{time.perf_counter() - started:.0f} s; FedSV mode {mode} (include_empty "
          f"{app.shapley_include_empty}, {app.coalition_weighting} coalition models)")
    ids = list(range(len(params)))
    common = dict(ref_loss=ref, include_empty=app.shapley_include_empty, seed=0, exact_max_players=EXACT_UP_TO,
                  weights=weights if app.coalition_weighting == "fedavg" else None)
    rows = [("exact", {"method": "exact"}),
            (f"auto, target {app.shapley_target_error:g}, budget {app.shapley_max_coalitions} (app)",
             {"method": "auto", "target_error": app.shapley_target_error, "max_coalitions": app.shapley_max_coalitions}),
            ("permutation P=10 (fixed)", {"method": "permutation", "num_permutations": 10}),
            ("permutation P=30 (fixed)", {"method": "permutation", "num_permutations": 30})]
    print("| method                                  | models |  wall s | err % | worst | SE % | stopped |")
    print("|-----------------------------------------|--------|---------|-------|-------|------|---------|")
    exact = None
    for label, options in rows:
        wall = time.perf_counter()
        result = federated_shapley(model, ids, params, x, y, **common, **options)
        wall = time.perf_counter() - wall
        if exact is None:
            exact = result
        value_range = float(np.ptp(exact.phi))
        err = worst = se = float("nan")
        if result is not exact:
            err = float(np.abs(result.phi - exact.phi).max())
            budget = {k: v for k, v in options.items() if k in ("num_permutations", "target_error", "max_coalitions")}
            worst = max(float(np.abs(permutation_shapley(ids, exact.utilities, seed=s, include_empty=app.shapley_include_empty,
                                                        **budget).phi - exact.phi).max()) for s in range(seeds))
            se = float(np.nanmax(result.stderr))
        print(f"| {label:39s} | {len(result.utilities):6d} | {wall:7.2f} | {_percent(err, value_range)} "
              f"| {_percent(worst, value_range)} | {_percent(se, value_range):>4s} | {result.stopped or '-':7s} |",
              flush=True)
    print(f"exact phi {np.round(exact.phi, 4).tolist()}; value range {np.ptp(exact.phi):.4f}; "
          f"one aux evaluation {_one_evaluation(model, params[0], x, y):.3f} s; torch threads {threads}")


def _one_evaluation(model: nn.Module, params, x: torch.Tensor, y: torch.Tensor) -> float:
    started = time.perf_counter()
    evaluate_many(model, [params], x, y)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["nsl_kdd_mlp", "cifar_cnn"], choices=sorted(TASKS))
    parser.add_argument("--players", nargs="+", type=int, default=[5, 10, 20, 50])
    parser.add_argument("--aux", type=int, default=2000, help="aux-set samples (default 2000, as the CIFAR conditions)")
    parser.add_argument("--seeds", type=int, default=20, help="seeds for the worst-case error (default 20)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--real", action="store_true",
                        help="one real CIFAR-10 round of the CIFAR LeNet, 10 clients, as an app's FedSV computes it")
    parser.add_argument("--mode", choices=["corrected", "faithful"], default="corrected",
                        help="--real: FedSV as FairnessSettings.for_app(mode=...) computes it (default corrected)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch threads {args.threads}, aux set {args.aux} samples, load average {os.getloadavg()}")
    if args.real:
        bench_real(args.aux, args.seeds, args.threads, args.mode)
        print(f"load average {os.getloadavg()}")
        return
    print("| model       |   m | method                     | models |  wall s | cpu s/t | err % | worst | 2SE % |")
    print("|-------------|-----|----------------------------|--------|---------|---------|-------|-------|-------|")
    for name in args.models:
        bench(name, args.players, args.aux, args.seeds, args.threads)
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()

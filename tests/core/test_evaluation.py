"""Batched evaluation (fltrust.core.evaluation / fltrust.core.stacked) against per-model evaluate."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from fltrust.core.evaluation import evaluate, evaluate_datasets, evaluate_many, evaluate_stacked, get_params, set_params
from fltrust.core.stacked import ProgramNet, VmapNet, _MaxPool2x2, stacked_net
from fltrust.models import build_model

FAMILIES = [("nsl_kdd_mlp", (12,), 2), ("cifar_cnn", (3, 32, 32), 10), ("femnist_cnn", (1, 28, 28), 62),
            ("convnet2", (1, 28, 28), 62), ("nbaiot_mlp_50_50", (20,), 2)]


def models_and_data(name, shape, classes, k=3, seed=0):
    """A template and k parameter sets (the template's, perturbed; BatchNorm statistics drawn)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = build_model(name, shape, classes)
    names = list(model.state_dict())
    base = get_params(model)
    sets = []
    for _ in range(k):
        params = []
        for key, p in zip(names, base):
            if key.endswith("running_var"):
                params.append(rng.uniform(0.5, 2.0, p.shape).astype(p.dtype))
            elif key.endswith("running_mean"):
                params.append(rng.uniform(-0.5, 0.5, p.shape).astype(p.dtype))
            elif np.issubdtype(p.dtype, np.floating):
                params.append((p + rng.normal(0, 0.05, p.shape)).astype(p.dtype))
            else:
                params.append(p.copy())
        sets.append(params)
    sizes = [11, 0, 6][:k] if k == 3 else [9] * k
    xs = [torch.randn(n, *shape) for n in sizes]
    ys = [torch.randint(0, classes, (n,)) for n in sizes]
    return model, sets, xs, ys


@pytest.mark.parametrize("name, shape, classes", FAMILIES, ids=[f[0] for f in FAMILIES])
@pytest.mark.parametrize("scaling", ["mean", "per_batch_sum"])
def test_evaluate_stacked_and_datasets_equal_evaluate(name, shape, classes, scaling):
    model, sets, xs, ys = models_and_data(name, shape, classes)
    stacked = evaluate_stacked(model, sets, xs, ys, num_classes=classes, batch_size=4, loss_scaling=scaling,
                               chunk_size=5)
    for params, x, y, got in zip(sets, xs, ys, stacked):
        set_params(model, params)
        ref = evaluate(model, x, y, num_classes=classes, batch_size=4, loss_scaling=scaling)
        assert got.num_samples == ref.num_samples
        np.testing.assert_array_equal(got.confusion, ref.confusion)
        if ref.num_samples:
            assert got.loss == pytest.approx(ref.loss, rel=1e-5) and got.accuracy == ref.accuracy
        else:
            assert np.isnan(got.loss) and np.isnan(got.accuracy)
    set_params(model, sets[0])
    shared = evaluate_datasets(model, xs, ys, num_classes=classes, batch_size=4, loss_scaling=scaling, chunk_size=5)
    for x, y, got in zip(xs, ys, shared):
        ref = evaluate(model, x, y, num_classes=classes, batch_size=4, loss_scaling=scaling)
        np.testing.assert_array_equal(got.confusion, ref.confusion)
        if ref.num_samples:
            assert got.loss == pytest.approx(ref.loss, rel=1e-5)


@pytest.mark.parametrize("name, shape, classes", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_evaluate_many_equals_one_model_at_a_time(name, shape, classes):
    model, sets, _, _ = models_and_data(name, shape, classes, k=3)
    x = torch.randn(13, *shape)
    y = torch.randint(0, classes, (13,))
    chunk = 5 if name in ("nsl_kdd_mlp", "cifar_cnn") else None
    losses, accs = evaluate_many(model, sets, x, y, batch_size=8, loss_scaling="per_batch_sum", chunk_size=chunk)
    for params, loss, acc in zip(sets, losses, accs):
        set_params(model, params)
        ref = evaluate(model, x, y, num_classes=classes, batch_size=8, loss_scaling="per_batch_sum")
        assert loss == pytest.approx(ref.loss, rel=1e-5) and acc == pytest.approx(ref.accuracy)


def test_per_batch_sum_depends_on_the_batch_size_not_on_the_chunk():
    model, sets, _, _ = models_and_data("nsl_kdd_mlp", (12,), 2, k=2)
    x, y = torch.randn(50, 12), torch.randint(0, 2, (50,))
    a, _ = evaluate_many(model, sets, x, y, batch_size=8, loss_scaling="per_batch_sum", chunk_size=5)
    b, _ = evaluate_many(model, sets, x, y, batch_size=8, loss_scaling="per_batch_sum", chunk_size=50)
    c, _ = evaluate_many(model, sets, x, y, batch_size=16, loss_scaling="per_batch_sum", chunk_size=50)
    np.testing.assert_allclose(a, b, rtol=1e-6)
    assert not np.allclose(a, c, rtol=1e-3)  # about mean / batch size


@pytest.mark.parametrize("name, shape, classes", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_program_replay_supports_the_papers_models(name, shape, classes):
    net = stacked_net(build_model(name, shape, classes))
    assert isinstance(net, ProgramNet)
    assert net.trainable == (name != "convnet2")


def test_program_and_vmap_agree_in_training_mode_outputs():
    model, sets, _, _ = models_and_data("cifar_cnn", (3, 32, 32), 10, k=3)
    params = [torch.as_tensor(np.stack([s[i] for s in sets])) for i in range(len(sets[0]))]
    x = torch.randn(3, 5, 3, 32, 32)
    for mode in ("loop", "grouped"):
        out = ProgramNet(model, conv_mode=mode)(params, x, train=True)
        ref = VmapNet(model)(params, x, train=True)
        torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)


def test_fast_max_pool_equals_max_pool2d_with_ties():
    torch.manual_seed(0)
    x = torch.randn(4, 3, 8, 8).relu()  # many ties at zero
    x[0, 0, :2, :2] = 1.5  # a positive tie
    x.requires_grad_(True)
    g = torch.randn(4, 3, 4, 4)
    ref = F.max_pool2d(x, 2, 2)
    (ref_grad,) = torch.autograd.grad(ref, x, g)
    out = _MaxPool2x2.apply(x)
    (grad,) = torch.autograd.grad(out, x, g)
    assert torch.equal(out, ref) and torch.equal(grad, ref_grad)


def test_auto_chunk_size_is_measured_per_architecture_not_per_instance(monkeypatch):
    """The cache must not key on id(model): a freed model's id can be reused by another architecture."""
    from fltrust.core import evaluation

    monkeypatch.setattr(evaluation, "_CHUNK_CACHE", {})
    x = torch.randn(64, 1, 28, 28)
    first, second = build_model("femnist_cnn", (1, 28, 28), 62), build_model("femnist_cnn", (1, 28, 28), 62)
    other = build_model("convnet2", (1, 28, 28), 62)
    sizes = [evaluation.auto_chunk_size(m, x, 31, budget_bytes=2**22) for m in (first, second, other)]
    assert sizes[0] == sizes[1]
    assert len(evaluation._CHUNK_CACHE) == 2  # two architectures, three instances

"""Model architectures: parameter counts from the specs and output shapes."""

import pytest
import torch

from fltrust.core.params import count_parameters
from fltrust.models import build_model


@pytest.mark.parametrize(
    "name, shape, classes, params, tensors",
    [
        ("cifar_cnn", (3, 32, 32), 10, 62_006, 10),  # fairness spec 6.1 (docs/references.md#fairness-6-1)
        ("femnist_cnn", (1, 28, 28), 62, 1_741_862, 8),  # fairness spec 6.2 (docs/references.md#fairness-6-2)
        ("nsl_kdd_mlp", (122,), 2, 45_141, 8),  # fairness spec 6.3 (one logit; docs/references.md#fairness-6-3)
        ("convnet2", (1, 28, 28), 62, 6_603_902, 12),  # trust spec 7.1 (docs/references.md#trust-7-1)
        ("nbaiot_mlp_50_50", (115,), 2, 8_452, 6),  # trust spec 7.1, exp 4
        ("nbaiot_mlp_100_80_70_50", (115,), 2, 29_002, 10),  # exp 5
    ],
)
def test_parameter_counts(name, shape, classes, params, tensors):
    model = build_model(name, shape, classes)
    assert count_parameters(model) == (params, tensors)
    out = model.eval()(torch.zeros(3, *shape))
    assert out.shape[0] == 3


def test_unknown_model_names_the_choices():
    with pytest.raises(ValueError, match="cifar_cnn"):
        build_model("resnet", (3, 32, 32), 10)

"""The papers' model architectures.

===========================  =========================================================  ==========
name                         architecture (source)                                      parameters
===========================  =========================================================  ==========
``cifar_cnn``                Flower-tutorial LeNet: conv3-6 5x5, pool, conv6-16 5x5,    62,006
                             pool, FC 400-120-84-10 (fairness spec 6.1)
``femnist_cnn``              conv1-40 5x5 same, LeakyReLU, pool, conv40-160 5x5 same,   1,741,862
                             LeakyReLU, pool, FC 7840-200, Dropout 0.4, FC 62
                             (fairness spec 6.2)
``nsl_kdd_mlp``              122-122-122-122-1 ReLU MLP, one logit (fairness spec 6.3)  45,141
``convnet2``                 FederatedScope ConvNet2: conv1-32 5x5 pad 2 + BN + ReLU +  6,603,902
                             pool, conv32-64 + BN + ReLU + pool, dropout 0.5,
                             FC 3136-2048, ReLU, dropout, FC 62 (trust spec 7.1)
``nbaiot_mlp_50_50``         115-50-50-2 ReLU MLP (trust spec 7.1, experiment 4)        8,452
``nbaiot_mlp_100_80_70_50``  115-100-80-70-50-2 (experiment 5)                          29,002
===========================  =========================================================  ==========

The sources: docs/references.md#fairness-6-1, #fairness-6-2, #fairness-6-3, #trust-7-1.

Binary models with a single output emit one logit; the loss is BCE-with-logits and the
prediction is ``logit > 0`` (the same as rounding the sigmoid at 0.5, as the authors did).
All other models emit class logits and use cross-entropy.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torch import nn

from fltrust.names import ModelName


class CifarCNN(nn.Module):
    """Flower-tutorial LeNet for 3x32x32 inputs (fairness spec 6.1)."""

    def __init__(self, num_classes: int = 10, in_channels: int = 3) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


class FemnistCNN(nn.Module):
    """The fairness paper's FEMNIST CNN for 1x28x28 inputs (fairness spec 6.2)."""

    def __init__(self, num_classes: int = 62) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 40, 5, padding="same"),
            nn.LeakyReLU(0.01),
            nn.MaxPool2d(2),
            nn.Conv2d(40, 160, 5, padding="same"),
            nn.LeakyReLU(0.01),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(160 * 7 * 7, 200),
            nn.LeakyReLU(0.01),
            nn.Dropout(0.4),
            nn.Linear(200, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x.reshape(-1, 1, 28, 28)))


class ConvNet2(nn.Module):
    """FederatedScope ConvNet2 (trust spec 7.1): 12 parameter tensors, 6,603,902 parameters."""

    def __init__(self, num_classes: int = 62, in_channels: int = 1, hidden: int = 2048, dropout: float = 0.5) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 32, 5, padding=2)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.bn2 = nn.BatchNorm2d(64)
        self.fc1 = nn.Linear(64 * 7 * 7, hidden)
        self.fc2 = nn.Linear(hidden, num_classes)
        # activations and pooling as modules, one per use: SHAP's DeepExplainer rescales gradients
        # only at the modules it hooks and keeps each module's last input, so a functional ReLU or a
        # module applied twice breaks it (parameter-free: the state_dict is unchanged)
        self.relu1, self.relu2, self.relu3 = nn.ReLU(), nn.ReLU(), nn.ReLU()
        self.pool1, self.pool2 = nn.MaxPool2d(2), nn.MaxPool2d(2)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.reshape(-1, self.conv1.in_channels, 28, 28)
        x = self.pool1(self.relu1(self.bn1(self.conv1(x))))
        x = self.pool2(self.relu2(self.bn2(self.conv2(x))))
        x = self.dropout(torch.flatten(x, 1))
        x = self.dropout(self.relu3(self.fc1(x)))
        return self.fc2(x)


class MLP(nn.Module):
    """Fully connected ReLU network: ``in_features``, each width of ``hidden``, then ``out_features``."""

    def __init__(self, in_features: int, hidden: tuple[int, ...], out_features: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = in_features
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, out_features))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.flatten(1))


def _nsl_kdd_mlp(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    return MLP(input_shape[-1], (122, 122, 122), 1 if num_classes == 2 else num_classes)


MODELS: dict[ModelName, Callable[[tuple[int, ...], int], nn.Module]] = {
    "cifar_cnn": lambda shape, k: CifarCNN(k, in_channels=shape[0]),
    "femnist_cnn": lambda shape, k: FemnistCNN(k),
    "nsl_kdd_mlp": _nsl_kdd_mlp,
    "convnet2": lambda shape, k: ConvNet2(k, in_channels=shape[0]),
    "nbaiot_mlp_50_50": lambda shape, k: MLP(shape[-1], (50, 50), k),
    "nbaiot_mlp_100_80_70_50": lambda shape, k: MLP(shape[-1], (100, 80, 70, 50), k),
}
"""Model registry: name (:data:`fltrust.names.MODEL_NAMES`) -> factory(input_shape, num_classes)."""


def build_model(name: str, input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """Build a registered model.

    Raises
    ------
    ValueError
        If ``name`` is not registered (the message lists the registered names).
    """
    if name not in MODELS:
        raise ValueError(f"model.name={name!r} is not a known model; choose one of {sorted(MODELS)}")
    return MODELS[name](tuple(input_shape), num_classes)


@functools.cache
def model_fits(model: str, input_shape: tuple[int, ...], num_classes: int) -> bool:
    """Whether registered ``model`` runs on inputs of ``input_shape`` (one forward pass of zeros).

    The probe builds the model on the CPU inside ``torch.random.fork_rng`` so that the global
    random state (and hence every seeded run) is unchanged; results are cached per process.

    Parameters
    ----------
    model : str
        A key of :data:`MODELS`.
    input_shape : tuple of int
        One sample's shape.
    num_classes : int
        The dataset's classes.

    Returns
    -------
    bool
        True when one forward pass gives a ``(1, outputs)`` tensor.

    Examples
    --------
    >>> model_fits("nsl_kdd_mlp", (122,), 2), model_fits("cifar_cnn", (122,), 2)
    (True, False)
    """
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            net = MODELS[model](tuple(input_shape), num_classes).eval()  # type: ignore[index]
            out = net(torch.zeros((1, *input_shape)))
    except Exception:  # noqa: BLE001 - any failure means "does not fit"
        return False
    return out.ndim == 2 and out.shape[0] == 1

"""The notion table (fltrust.metrics.fairness.registry): registering, the per-round input record, F_T weights.

Values are checked on the worked 5-client round of ``data.py`` (x = [0.8, 0.6, 0.9, 0.5, 1.0],
r = [0.4, 0.4, 0.6, 0.3, 0.5], s = [0.4, 0.2, 0.3, -0.1, 0.5]; the faithful notions are
f_j = 5/51, f_g = 0.6, f_r = 9/95, f_o = 0.76, see ``test_fairness_notions.py``).
"""

import math

import numpy as np
import pytest

from fltrust.metrics.fairness import (
    FAIRNESS_KEYS,
    NOTIONS,
    FairnessObserver,
    FairnessSettings,
    MetricInputError,
    NotionInput,
    register_notion,
    resolve_weights,
    round_fairness,
    unregister_notion,
)
from fltrust.metrics.fairness.registry import NOTION_LABELS, NOTION_SYMBOLS

from .data import CONFUSION, CONTRIBUTION, PERFORMANCE, REWARDS

PAPER = {"f_j": 5 / 51, "f_g": 0.6, "f_r": 9 / 95, "f_o": 0.76}


@pytest.fixture
def registered():
    """Names registered by a test; unregistered afterwards."""
    names: list[str] = []
    yield names
    for name in names:
        if name in NOTIONS:
            unregister_notion(name)


def _round(settings=None, **kwargs):
    return round_fairness(PERFORMANCE, REWARDS, CONTRIBUTION, CONFUSION, [1], settings, **kwargs)


def test_the_paper_notions_are_the_table_in_the_papers_order():
    assert list(NOTIONS)[:4] == ["f_j", "f_g", "f_r", "f_o"]
    assert [NOTIONS[k].default_weight for k in PAPER] == [0.25] * 4
    assert [NOTIONS[k].symbol for k in PAPER] == ["$f_j$", "$f_g$", "$f_r$", "$f_o$"]
    assert "Eq. 7" in NOTIONS["f_j"].equation and "Eq. 11" in NOTIONS["f_o"].equation
    assert tuple(FAIRNESS_KEYS) == ("f_j", "f_g", "f_r", "f_o", "F_T")
    assert NOTION_LABELS["F_T"] == "general $F_T$" and NOTION_SYMBOLS["f_g"] == "$f_g$"
    with pytest.raises(TypeError):
        NOTIONS["f_x"] = NOTIONS["f_j"]  # read-only


def test_a_registered_notion_gets_the_rounds_input_record_and_is_reported(registered):
    seen: list[NotionInput] = []

    @register_notion("spread", label="accuracy range", equation="max_n x_n - min_n x_n")
    def spread(inputs: NotionInput) -> float:
        seen.append(inputs)
        return float(inputs.performance.max() - inputs.performance.min())

    registered.append("spread")
    settings = FairnessSettings(mode="corrected")
    result = _round(settings, client_ids=[3, 1, 4, 0, 2])

    [inputs] = seen
    np.testing.assert_array_equal(inputs.performance, PERFORMANCE)
    np.testing.assert_array_equal(inputs.rewards, REWARDS)
    np.testing.assert_array_equal(inputs.contribution, CONTRIBUTION)
    np.testing.assert_array_equal(inputs.confusion, CONFUSION)
    np.testing.assert_array_equal(inputs.client_ids, [3, 1, 4, 0, 2])
    assert inputs.sensitive_attributes == (1,) and inputs.settings is settings
    assert result["spread"] == pytest.approx(1.0 - 0.5)
    assert list(result.to_dict())[:6] == ["f_j", "f_g", "f_r", "f_o", "spread", "F_T"]
    assert result.weights["spread"] == 0.0  # default weight 0: reported, not in F_T
    assert result.F_T == pytest.approx((25 / 26 + 0.875 + 0.9 + 0.76) / 4)
    assert "spread" in FAIRNESS_KEYS and NOTION_LABELS["spread"] == "accuracy range"
    assert NOTION_SYMBOLS["spread"] == "spread"


def test_f_t_weighs_a_notion_by_its_default_weight_or_the_settings(registered):
    register_notion("one", lambda inputs: 1.0, label="one", equation="1", default_weight=0.5)
    registered.append("one")
    paper_sum = sum(PAPER.values())

    # default: (0.25 * (f_j + f_g + f_r + f_o) + 0.5 * 1) / 1.5
    assert _round()["F_T"] == pytest.approx((0.25 * paper_sum + 0.5) / 1.5)
    # settings: f_o out, "one" at 1: (0.25 * (f_j + f_g + f_r) + 1) / 1.75
    settings = FairnessSettings(notion_weights={"f_o": 0, "one": 1})
    assert _round(settings)["F_T"] == pytest.approx((0.25 * (paper_sum - 0.76) + 1) / 1.75)
    assert resolve_weights(settings.notion_weights) == {"f_j": 0.25, "f_g": 0.25, "f_r": 0.25, "f_o": 0.0, "one": 1.0}
    with pytest.raises(MetricInputError, match="gives every notion weight 0"):
        resolve_weights(dict.fromkeys(NOTIONS, 0))


def test_details_are_stored_after_the_paper_fields_and_may_not_clash(registered):
    class Worst:
        def __init__(self, x):
            self.value, self.client = float(x.min()), int(x.argmin())

    register_notion("worst", lambda inputs: Worst(inputs.performance), label="worst", equation="min_n x_n",
                    details=lambda w: {"worst_client": w.client})
    registered.append("worst")
    out = _round().to_dict()

    assert out["worst"] == 0.5 and out["worst_client"] == 3
    assert list(out)[-1] == "worst_client" and list(out)[-2] == "group_values"
    register_notion("worst", lambda inputs: Worst(inputs.performance), label="worst", equation="min_n x_n",
                    details=lambda w: {"gains": []}, replace=True)
    with pytest.raises(MetricInputError, match=r"fairness notion 'worst' writes the field 'gains', which 'f_j' already"):
        _round()


def test_a_notion_clashing_with_the_observers_keys_is_named(registered):
    import torch

    register_notion("mine", lambda inputs: 0.0, label="mine", equation="0", details=lambda _: {"phi": 1})
    registered.append("mine")
    from .test_fairness_observer import _record

    observer = FairnessObserver(FairnessSettings(), torch.nn.Linear(2, 2), torch.zeros(4, 2), torch.tensor([0, 1, 0, 1]),
                                batch_size=4, num_clients=7, sensitive_attributes=[1])
    with pytest.raises(MetricInputError, match=r"round 1: fairness notion fields \['phi'\] clash with the observer"):
        observer.on_round_end(_record(1))


@pytest.mark.parametrize(("call", "message"), [
    (lambda: register_notion("F_T", lambda i: 0.0, label="x", equation="x"), "not 'F_T'"),
    (lambda: register_notion("2x", lambda i: 0.0, label="x", equation="x"), "must be a letter"),
    (lambda: register_notion("a b", lambda i: 0.0, label="x", equation="x"), "must be a letter"),
    (lambda: register_notion("f_j", lambda i: 0.0, label="x", equation="x"),
     r"notion 'f_j' is already registered by fltrust\.metrics\.fairness\.notions\."),
    (lambda: register_notion("neg", lambda i: 0.0, label="x", equation="x", default_weight=-1), "finite number >= 0"),
    (lambda: register_notion("nan", lambda i: 0.0, label="x", equation="x", default_weight=math.nan), "finite"),
    (lambda: register_notion("bad", 3, label="x", equation="x"), "is not callable"),
    (lambda: unregister_notion("nobody"), r"no fairness notion 'nobody' is registered; registered: \['f_j'"),
])
def test_registration_errors_name_the_notion(call, message):
    with pytest.raises(MetricInputError, match=message):
        call()
    assert list(NOTIONS) == ["f_j", "f_g", "f_r", "f_o"]


def test_a_notion_returning_no_number_is_named(registered):
    register_notion("text", lambda inputs: "high", label="text", equation="x")
    registered.append("text")
    with pytest.raises(MetricInputError, match=r"fairness notion 'text' returned str; its function must return a float"):
        _round()


def test_the_observer_rejects_weights_of_unknown_notions_at_construction():
    import torch

    with pytest.raises(MetricInputError, match=r"^FairnessSettings\.notion_weights names \['f_x'\], which is not"):
        FairnessObserver(FairnessSettings(notion_weights={"f_x": 1}), torch.nn.Linear(2, 2), torch.zeros(4, 2),
                         torch.tensor([0, 1, 0, 1]), batch_size=4)


def _constant_notion(value: float):
    def constant(inputs):
        return value
    return constant  # one module-qualified name for every call, as a notebook cell that reruns defines it


def test_a_rerun_definition_replaces_itself_and_another_function_needs_replace(registered):
    registered.append("constant")
    register_notion("constant", _constant_notion(0.1), label="first", equation="x")
    register_notion("constant", _constant_notion(0.2), label="again", equation="x")
    assert NOTIONS["constant"].label == "again" and NOTIONS["constant"].function(None) == 0.2
    with pytest.raises(MetricInputError, match="'constant' is already registered by .*_constant_notion.<locals>.constant"):
        register_notion("constant", lambda inputs: 0.3, label="other", equation="x")
    register_notion("constant", lambda inputs: 0.3, label="other", equation="x", replace=True)
    assert NOTIONS["constant"].label == "other"

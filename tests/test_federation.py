"""fltrust.federation: the authors' NSL-KDD one-hot layouts (docs/references.md#fairness-6-7), by hand."""

import numpy as np
import pytest

from fltrust.data import nsl_kdd
from fltrust.federation import onehot_layouts, sample_clients

TCP, UDP, ICMP = 38, 39, 40  # global positions of the protocol columns
FIRST_SERVICE, FIRST_FLAG = 41, 111


def _split(protocols, services, flags):
    raw = {"protocol_type": np.array(protocols), "service": np.array(services), "flag": np.array(flags),
           "attack": np.array(["normal"] * len(protocols))}
    return nsl_kdd.build_split(raw, np.zeros((len(protocols), 38)))


def test_per_split_encodes_a_clients_train_and_validation_rows_differently():
    # one client: train rows 0 (tcp, http, SF) and 1 (udp, IRC, S0); validation row 2 (icmp, aol, REJ)
    train = _split(["tcp", "udp", "icmp"], ["http", "IRC", "aol"], ["SF", "S0", "REJ"])
    test = _split(["udp"], ["http"], ["SF"])
    (tr,), (va,), aux = onehot_layouts("per_split", train, test, [np.array([0, 1])], [np.array([2])], np.array([0]))
    x_train, x_val = train.x[[0, 1]][:, tr], train.x[[2]][:, va]
    # train layout: present protocols sorted (tcp, udp) at 38, 39, then present services sorted
    # with upper case first (IRC, http) at 40, 41, then present flags (S0, SF) at 42, 43
    assert x_train[0, 38] == 1 and x_train[0, 41] == 1 and x_train[0, 43] == 1  # tcp, http, SF
    assert x_train[1, 39] == 1 and x_train[1, 40] == 1 and x_train[1, 42] == 1  # udp, IRC, S0
    # validation layout: its own present categories first: icmp at 38, aol at 39, REJ at 40
    assert x_val[0, 38] == 1 and x_val[0, 39] == 1 and x_val[0, 40] == 1
    assert x_val[0].sum() == x_train[0].sum() == 3
    # column 38 means tcp for the training rows and icmp for the validation row: the authors' bug
    assert tr[38] == TCP and va[38] == ICMP
    # the auxiliary set is encoded on its own too: udp first
    assert aux[38] == UDP


def test_per_partition_shares_one_layout_between_train_and_validation():
    train = _split(["tcp", "udp", "icmp"], ["http", "IRC", "aol"], ["SF", "S0", "REJ"])
    test = _split(["udp"], ["http"], ["SF"])
    (tr,), (va,), _ = onehot_layouts("per_partition", train, test, [np.array([0, 1])], [np.array([2])], np.array([0]))
    np.testing.assert_array_equal(tr, va)
    assert tr[38:41].tolist() == [ICMP, TCP, UDP]  # icmp, tcp, udp sorted
    with pytest.raises(ValueError, match="per_split"):
        onehot_layouts("global", train, test, [np.array([0])], [np.array([1])], np.array([0]))


def test_client_sampling_is_seeded_and_sorted():
    a = sample_clients(0, 3, 100, 5)
    assert a.tolist() == sorted(a.tolist()) and len(set(a.tolist())) == 5
    np.testing.assert_array_equal(a, sample_clients(0, 3, 100, 5))
    assert not np.array_equal(a, sample_clients(0, 4, 100, 5))


def test_aux_from_the_client_pool_holds_client_rows():
    import torch

    from fltrust.config import ExperimentConfig
    from fltrust.federation import prepare_federation

    cfg = ExperimentConfig.tiny(partition={"aux_source": "client_pool", "aux_max_samples": 40})
    fed = prepare_federation(cfg, torch.device("cpu"))
    pool = torch.cat(fed.train_index + fed.val_index)
    rows = {tuple(r.tolist()) for r in fed.x_train[pool]}
    assert len(fed.y_aux) == 40 and fed.partition["aux_source"] == "client_pool"
    assert all(tuple(r.tolist()) in rows for r in fed.x_aux)


def test_a_shared_partition_seed_gives_repeats_the_same_client_data():
    # Prepare: synthetic data pooled and redrawn (as CIFAR-10 and FEMNIST iid), a Dirichlet partition
    import torch

    from fltrust.config import ExperimentConfig
    from fltrust.federation import prepare_federation

    def federation(repeat: int, partition_seed: int | None):
        cfg = ExperimentConfig.tiny(data={"pooled_train_samples": 500},
                                    partition={"scheme": "dirichlet", "alpha": 0.5, "seed": partition_seed},
                                    run={"repeat": repeat})
        return prepare_federation(cfg, torch.device("cpu"))

    def client_rows(fed):
        return [fed.x_train[i].sum().item() for i in fed.train_index] + [fed.x_aux.sum().item()]

    # Execute
    shared = [federation(r, 7) for r in (0, 1)]
    own = [federation(r, None) for r in (0, 1)]
    seed_zero = federation(0, 0)

    # Assert: one partition seed -> the same pool, partition and aux set; no partition seed -> each repeat its own
    assert shared[0].bundle.source["pooled"]["seed"] == shared[1].bundle.source["pooled"]["seed"] == 7
    assert client_rows(shared[0]) == client_rows(shared[1])
    assert client_rows(own[0]) != client_rows(own[1])
    assert client_rows(seed_zero) == client_rows(own[0])  # partition.seed 0 = repeat 0's own draw

"""numpy's BLAS as fltrust reads and limits it (fltrust/blas.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info

from fltrust.blas import blas_threads_as_torch, numpy_blas


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_numpy_blas_names_the_library_threadpoolctl_sees():
    libs = [lib for lib in threadpool_info() if lib["user_api"] == "blas"]
    assert libs, "numpy loads a BLAS"
    assert numpy_blas().split()[0] == libs[0]["internal_api"]


@pytest.mark.parametrize("threads", [1, 2])
def test_blas_threads_follow_torch_inside_the_context_only(threads):
    before, torch_before = _blas_threads(), torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with blas_threads_as_torch():
            assert set(_blas_threads()) == {threads}
            a = np.ones((64, 64), dtype=np.float32)
            assert float((a @ a)[0, 0]) == 64.0
        assert _blas_threads() == before
    finally:
        torch.set_num_threads(torch_before)

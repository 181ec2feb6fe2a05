"""numpy's BLAS on this machine, which the stacked MLP training multiplies its matrices with.

The hand-written steps of stacked ReLU-MLP training multiply batches of small matrices, such as
``(5, 32, 122) @ (5, 122, 122)``. On one core of an AMD EPYC (Zen 5) that product took 54 µs in
``torch.bmm`` (MKL, which takes its AVX2 code path on AMD processors), 46 µs in numpy's OpenBLAS
with its Haswell (AVX2) kernels and 23 µs with its SkylakeX (AVX-512) kernels. So
:class:`fltrust.engines.vectorized.VectorTrainer` multiplies with numpy when numpy's BLAS is OpenBLAS
(``mlp_gemm="auto"``), and with torch otherwise (an MKL build of numpy, for instance).

OpenBLAS chooses its kernels once, when it loads: from the CPU, unless the environment variable
``OPENBLAS_CORETYPE`` names a kernel set. On the Zen 5 machine above it chose SkylakeX by itself;
that machine's environment pinned ``OPENBLAS_CORETYPE=Haswell``, which keeps the AVX2 kernels.
fltrust leaves that choice to the machine: ``benchmarks/peers.py`` prints which kernels ran.
Different kernels change results in the last bits (float32 rounding), not in meaning.
"""

from __future__ import annotations

import contextlib
import functools


@functools.cache
def numpy_blas() -> str:
    """numpy's BLAS library and kernel set, e.g. ``"openblas SkylakeX"`` or ``"mkl"``.

    Read once per process with threadpoolctl (a scikit-learn dependency): OpenBLAS does not change
    its kernels after it has loaded.

    Returns
    -------
    str
        ``"<library> <kernels>"``, ``"<library>"`` when the library does not say, or
        ``"unknown"`` when threadpoolctl finds no BLAS.

    Examples
    --------
    >>> numpy_blas().split()[0] in ("openblas", "mkl", "blis", "flexiblas", "unknown")
    True
    """
    import numpy  # noqa: F401  (loads the BLAS threadpoolctl inspects)
    from threadpoolctl import threadpool_info

    for lib in threadpool_info():
        if lib.get("user_api") == "blas":
            return f"{lib.get('internal_api', '?')} {lib.get('architecture') or ''}".strip()
    return "unknown"


@functools.cache
def _controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def blas_threads_as_torch() -> contextlib.AbstractContextManager:
    """A context in which numpy's BLAS uses ``torch.get_num_threads()`` threads.

    OpenBLAS starts as many threads as there are cores for a large product, whatever
    ``run.torch_threads`` says; inside this context numpy's products use torch's thread count, so
    that a run (or a batch of ``--jobs`` runs) keeps to its cores. Entering it costs about 10 µs.
    """
    import torch

    return _controller().limit(limits=torch.get_num_threads(), user_api="blas")

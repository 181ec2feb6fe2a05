"""fltrust.engines.flower.simulation: the Ctrl-C that stops Flower's runtime in order."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from fltrust.engines.flower.simulation import sigint_stops


@pytest.fixture(autouse=True)
def python_sigint_handler():
    """Python's own SIGINT handler, as in a terminal: a test process started in the background
    (or under nohup) inherits SIGINT ignored, where sigint_stops rightly changes nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_first_ctrl_c_sets_stop_and_a_second_one_interrupts_at_once():
    # before: the first Ctrl-C raised KeyboardInterrupt in the main thread, Flower stopped Ray under
    # a worker thread still in a Ray call, and Ray ended the process with exit 1 (CI, test_cli_errors)
    stop = threading.Event()
    with sigint_stops(stop) as ctrl_c:
        os.kill(os.getpid(), signal.SIGINT)
        assert stop.is_set() and ctrl_c.interrupted
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_handler_is_restored_and_nothing_is_set_without_a_ctrl_c():
    stop = threading.Event()
    with sigint_stops(stop) as ctrl_c:
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    assert not stop.is_set() and not ctrl_c.interrupted
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_outside_the_main_thread_or_under_another_handler_nothing_changes():
    seen = []

    def in_thread():
        with sigint_stops(threading.Event()):
            seen.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join()
    assert seen == [signal.default_int_handler]

    def kernel_handler(signum, frame):  # a Jupyter kernel's, say
        pass

    for other in (kernel_handler, signal.SIG_IGN):  # SIG_IGN: started in the background, or under nohup
        signal.signal(signal.SIGINT, other)
        with sigint_stops(threading.Event()):
            assert signal.getsignal(signal.SIGINT) is other

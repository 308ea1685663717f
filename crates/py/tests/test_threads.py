"""Two Python threads running one session at once get the results each
would alone (the GIL is released while a model runs)."""

import threading

import numpy as np

import tessera
from conftest import FIXTURES, assert_close


def test_two_threads_share_one_session():
    d = FIXTURES / "resnet_basic_block"
    session = tessera.InferenceSession(d / "model.onnx")
    rng = np.random.default_rng(1)
    feeds = [{"x": rng.standard_normal((1, 4, 8, 8), dtype=np.float32)} for _ in range(2)]
    alone = [session.run(None, f)[0] for f in feeds]
    results = [[] for _ in feeds]
    errors = []

    def work(k):
        try:
            for _ in range(50):
                results[k].append(session.run(None, feeds[k])[0])
        except Exception as e:  # reported below, with the thread's feed
            errors.append((k, e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(2):
        assert len(results[k]) == 50
        for r in results[k]:
            assert_close(r, alone[k])


def test_a_function_releases_the_gil_while_it_runs():
    # A reduction long enough (tens of milliseconds) that a thread holding
    # the GIL through it would stop the ticking thread for all of it.
    long = tessera.compile("def s(float(N,M) A) -> (S) { S(i) +=! exp(A(i,j)) * exp(A(i,j)) }", threads=1)
    a = np.ones((2048, 4096), np.float32)
    long(a)
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(1)

    t = threading.Thread(target=tick)
    t.start()
    try:
        inside = []
        for _ in range(5):
            before = len(ticks)
            long(a)
            inside.append(len(ticks) - before)
    finally:
        done.set()
        t.join()
    # The ticking thread ran while the main thread was inside tessera (a
    # call that kept the GIL would leave it at most a switch or two).
    assert max(inside) > 1000, inside

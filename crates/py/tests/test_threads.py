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


def test_a_function_releases_the_gil_while_it_runs(mm_source):
    mm = tessera.compile(mm_source)
    a = np.ones((256, 256), np.float32)
    mm(a, a)
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(1)

    t = threading.Thread(target=tick)
    t.start()
    try:
        for _ in range(20):
            mm(a, a)
    finally:
        done.set()
        t.join()
    # The ticking thread ran while the main thread was inside tessera.
    assert len(ticks) > 0

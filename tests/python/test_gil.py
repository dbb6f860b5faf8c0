"""Every kernel runs without the GIL, so two Python threads rotate two arrays in parallel.

Not timed: with a switch interval of 1000 s a thread that holds the GIL keeps it until it
releases it itself. The worker thread runs one posemb call and then records that it finished; the
main thread, waiting for the GIL, gets it back before that record exists only if the call released
the GIL while it ran (numpy in-place inputs: posemb's release is the only one on the way), and then
runs its own call while the worker's is still going. A call that holds the GIL can never be seen
unfinished (test_method_detects_a_held_gil); a call that releases it is seen so unless the worker
takes the GIL back before the main thread wakes up (CPython does not hand the GIL over), so each
call gets up to 50 tries and one overlap proves the release.
"""
import sys
import threading

import numpy as np
import pytest

import posemb

SPEC = posemb.default_rope_spec(64, 10000.0)


def big(shape=(4, 512, 8, 64)):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def fope():
    return posemb.make_fope(posemb.FopeConfig(head_dim=64, n_heads=8, train_length=512))


CALLS = {
    "apply_rope_": lambda x: posemb.apply_rope_(x, 0, SPEC),
    "apply_rope": lambda x: posemb.apply_rope(x, 0, SPEC),
    "apply_rope_ table": lambda x, t=posemb.RopeTable(SPEC, 0, 512): posemb.apply_rope_(x, 0, t),
    "apply_mrope_": lambda x, s=posemb.MropeSpec(SPEC, (8, 12, 12)): posemb.apply_mrope_(x, 0, s),
    "apply_vision_rope_": lambda x, r=posemb.qwen2_vl_vision_rope(64),
                                 p=posemb.vision_patch_positions(posemb.qwen2_vl_vision_rope(64), 1, 32, 64):
        posemb.apply_vision_rope_(x.reshape(1, 2048, 8, 64), p, r),
    "apply_xpos_": lambda x, s=posemb.XposSpec(SPEC): posemb.apply_xpos_(x, 0, s, "query"),
    "apply_fope_": lambda x, f=fope(): posemb.apply_fope_(x, 0, f),
    "attention_scores": lambda x: posemb.attention_scores(x[:1], 0, x[:1], 0, rope=SPEC),
    "add_position_embeddings_": lambda x: posemb.add_position_embeddings_(
        x.reshape(4, 512, 512), 0, posemb.sinusoidal_table(512, 512)),
    "permute_pairing_": lambda x: posemb.permute_pairing_(x.reshape(-1, 512), 8, "interleaved", "rotate_half"),
    "RopeTable": lambda x: posemb.RopeTable(SPEC, 0, 1 << 18),
    "alibi_bias": lambda x: posemb.alibi_bias(posemb.alibi_slopes(8), np.arange(512), np.arange(512)),
    "sinusoidal_table": lambda x: posemb.sinusoidal_table(1 << 14, 256),
}


@pytest.fixture
def long_switch_interval():
    saved = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    yield
    sys.setswitchinterval(saved)


def finished_before_main_resumed(call):
    """True if the worker's call ran to its end before the main thread got the GIL back."""
    x = big()
    finished = []

    def worker():
        call(x)
        finished.append(True)

    thread = threading.Thread(target=worker)
    thread.start()  # waits for the worker to start; the GIL returns when the worker releases it
    seen = bool(finished)
    call(big())  # the main thread's own call, in parallel with the worker's
    thread.join()
    assert finished == [True]
    return seen


@pytest.mark.parametrize("name", CALLS)
def test_kernel_releases_gil(long_switch_interval, name):
    assert any(not finished_before_main_resumed(CALLS[name]) for _ in range(50))


def test_method_detects_a_held_gil(long_switch_interval):
    # The same check on a call that never releases the GIL: the worker finishes first.
    def pure_python(x):
        total = 0
        for i in range(200000):
            total += i
        return total

    assert all(finished_before_main_resumed(pure_python) for _ in range(5))

"""Zero copy on the caller's memory for PyTorch CPU tensors of every dtype (contiguous, and the
strided cases in place refuses and out of place reads), and any object that speaks DLPack."""
import numpy as np
import pytest
import torch

import posemb

SPEC = posemb.default_rope_spec(64, 10000.0)
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


class Producer:
    """A test-only DLPack producer: forwards the protocol to the array it wraps."""

    def __init__(self, array, legacy=False):
        self.array, self.legacy, self.calls = array, legacy, []

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        if self.legacy:
            if kwargs:
                raise TypeError("__dlpack__() got an unexpected keyword argument")
            return self.array.__dlpack__()
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def tensor(dtype, shape=(2, 5, 3, 64)):
    return torch.randn(shape, generator=torch.Generator().manual_seed(1)).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_in_place_writes_the_callers_storage(dtype):
    base = tensor(dtype, (2, 7, 3, 64))
    t = base.narrow(0, 1, 1)  # [1, 7, 3, 64], contiguous, at an offset into base's storage
    pointer, before = t.data_ptr(), t.clone()
    assert posemb.apply_rope_(t, 3, SPEC) is t and t.data_ptr() == pointer
    expected = posemb.apply_rope(before.double(), 3, SPEC)
    assert (base[1:2].double() - expected).abs().max().item() <= {torch.bfloat16: 0.1, torch.float16: 0.02}.get(dtype, 1e-5)
    assert torch.equal(base[0], tensor(dtype, (2, 7, 3, 64))[0])  # the other row untouched


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_strided_out_of_place_and_in_place_refusal(dtype):
    t = tensor(dtype, (2, 10, 3, 64))[:, ::2]
    assert not t.is_contiguous()
    y = posemb.apply_rope(t, 0, SPEC)
    assert isinstance(y, torch.Tensor) and y.dtype == dtype and y.is_contiguous()
    assert torch.equal(y, posemb.apply_rope(t.contiguous(), 0, SPEC))
    with pytest.raises(posemb.Error, match="non-contiguous"):
        posemb.apply_rope_(t, 0, SPEC)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("legacy", [False, True])
def test_dlpack_producer_in_place_zero_copy(dtype, legacy):
    x = np.random.default_rng(2).standard_normal((1, 4, 2, 64)).astype(dtype)
    before = x.copy()
    producer = Producer(x, legacy)
    assert posemb.apply_rope_(producer, 5, SPEC) is producer
    assert np.array_equal(x, posemb.apply_rope(before, 5, SPEC))  # the producer's memory written
    assert producer.calls[0] == {"max_version": (1, 0), "copy": False}


def test_dlpack_producer_bfloat16_in_place_and_out_of_place():
    t = tensor(torch.bfloat16, (1, 4, 2, 64))
    expected = posemb.apply_rope(t, 5, SPEC)
    posemb.apply_rope_(Producer(t), 5, SPEC)
    assert torch.equal(t, expected)
    with pytest.raises(posemb.Error, match=r"x\.dtype = bfloat16: .*\(in place\) bfloat16"):
        posemb.apply_rope(Producer(t), 5, SPEC)


def test_dlpack_producer_out_of_place_is_numpy_and_strided():
    x = np.random.default_rng(3).standard_normal((1, 8, 2, 64)).astype(np.float32)
    y = posemb.apply_rope(Producer(x[:, ::2]), 1, SPEC)
    assert isinstance(y, np.ndarray) and np.array_equal(y, posemb.apply_rope(x[:, ::2], 1, SPEC))
    with pytest.raises(posemb.Error, match="non-contiguous"):
        posemb.apply_rope_(Producer(x[:, ::2]), 1, SPEC)


def test_dlpack_positions_and_read_only():
    x = np.zeros((1, 4, 2, 64), np.float32)
    x[..., 0] = 1.0
    positions = Producer(np.arange(10, 14))
    assert np.array_equal(posemb.apply_rope(x, positions, SPEC), posemb.apply_rope(x, 10, SPEC))
    frozen = x.copy()
    frozen.flags.writeable = False
    # numpy 2 exports it flagged read-only (DLPack 1.0) and posemb refuses it; numpy 1.26 has no
    # way to flag it and refuses to export it, which posemb reports as the producer's error.
    with pytest.raises(posemb.Error, match=r"read-only|__dlpack__ raised BufferError"):
        posemb.apply_rope_(Producer(frozen), 0, SPEC)
    with pytest.raises(posemb.Error, match=r"__dlpack__ raised"):
        posemb.apply_rope_(Producer(frozen, legacy=True), 0, SPEC)  # numpy refuses to export it
    with pytest.raises(posemb.Error, match=r"x\.dtype = int32"):
        posemb.apply_rope_(Producer(np.zeros((1, 4, 2, 64), np.int32)), 0, SPEC)

# Type stubs of the posemb package (the extension posemb._posemb). tests/python/test_api.py checks
# that they name exactly what the module holds, with the bindings' parameter names.
from os import PathLike
from typing import Any, List, Literal, Optional, Sequence, Tuple, TypeVar, Union, overload

import numpy as np
import numpy.typing as npt

__version__: str

# A numpy array, a CPU torch tensor or any object with __dlpack__ (float32, float64, float16;
# torch also bfloat16, DLPack in place).
Array = Any
ArrayT = TypeVar("ArrayT")
# An int offset (token s at offset + s), or int64 / float64 positions [seq] or [batch, seq].
PositionsLike = Union[int, Array, Sequence[int], Sequence[float]]
RopeSource = Union["RopeSpec", "RopeTable", "HfFloat32Rope"]
# Angle modes (the CLI's --angles): "exact" builds a RopeSpec, "hf-float32" an HfFloat32Rope.
ExactAngles = Literal["exact"]
HfFloat32Angles = Literal["hf-float32"]

class Error(ValueError): ...

class RopeSpec:
    inv_freq: npt.NDArray[np.float64]
    attention_scale: float
    pairing: str
    rotary_dim: int
    rotary_offset: int
    head_dim: int
    def __init__(self, inv_freq: npt.ArrayLike, head_dim: int, attention_scale: float = ...,
                 pairing: str = ..., rotary_offset: int = ...) -> None: ...

class HfFloat32Rope:
    inv_freq: npt.NDArray[np.float32]
    attention_scale: float
    pairing: str
    rotary_dim: int
    rotary_offset: int
    head_dim: int
    def __init__(self, inv_freq: npt.ArrayLike, head_dim: int, attention_scale: float = ...,
                 pairing: str = ..., rotary_offset: int = ...) -> None: ...

class RopeTable:
    spec: RopeSpec
    dtype: str
    first_position: int
    count: int
    cos: npt.NDArray[Any]
    sin: npt.NDArray[Any]
    def __init__(self, spec: RopeSpec, first_position: int, count: int, dtype: str = ...) -> None: ...

class MropeSpec:
    rope: RopeSpec
    sections: List[int]
    layout: str
    axes: List[int]
    def __init__(self, rope: RopeSpec, sections: Sequence[int], layout: str = ...) -> None: ...

class VisionRope:
    spec: MropeSpec
    head_dim: int
    spatial_merge_size: int
    order: str

class XposSpec:
    rope: RopeSpec
    gamma: float
    scale_base: float
    centre: int
    def __init__(self, rope: RopeSpec, gamma: float = ..., scale_base: float = ..., centre: int = ...) -> None: ...

class FopeConfig:
    head_dim: int
    n_heads: int
    n_kv_heads: int
    theta: float
    train_length: int
    floor_ratio: float
    drop_clipped: bool
    d_out: int
    sigma: float
    seed: int
    padding_sin: float
    num_inv_freq: int
    def __init__(self, *, head_dim: int, n_heads: int, n_kv_heads: int = ..., theta: float = ...,
                 train_length: int, floor_ratio: float = ..., drop_clipped: bool = ..., d_out: int = ...,
                 sigma: float = ..., seed: int = ..., padding_sin: float = ...,
                 num_inv_freq: int = ...) -> None: ...

class Fope:
    head_dim: int
    n_heads: int
    n_kv_heads: int
    d_in: int
    d_out: int
    inv_freq: npt.NDArray[np.float64]
    sin_coef: npt.NDArray[np.float32]
    cos_coef: npt.NDArray[np.float32]

class QueryTemperature:
    floor_scale: float
    attn_scale: float
    position_offset: int
    form: Literal["floor_log", "power"]
    def factor(self, position: float) -> float: ...

class LayerAttention:
    softmax_scale: Optional[float]
    sliding_window: Optional[int]
    attention_chunk_size: Optional[int]
    query_temperature: Optional[QueryTemperature]
    logit_softcap: Optional[float]
    attention_sinks: bool
    bias_placement: str
    def __init__(self, *, softmax_scale: Optional[float] = ..., sliding_window: Optional[int] = ...,
                 attention_chunk_size: Optional[int] = ..., logit_softcap: Optional[float] = ...,
                 attention_sinks: bool = ..., bias_placement: str = ...) -> None: ...

class RopeScheme:
    rope_type: str
    theta: float
    head_dim: int
    rotary_dim: int
    pairing: str
    mrope_section: Optional[List[int]]
    mrope_layout: Optional[str]
    @overload
    def spec(self, seq_len: Optional[int] = ..., angles: ExactAngles = ...) -> RopeSpec: ...
    @overload
    def spec(self, seq_len: Optional[int] = ..., *, angles: HfFloat32Angles) -> HfFloat32Rope: ...
    def mrope_spec(self, seq_len: Optional[int] = ...) -> MropeSpec: ...

class IndexerRope:
    head_dim: int
    rotary_offset: int
    rope: RopeScheme
    key_block: int
    @overload
    def spec(self, seq_len: Optional[int] = ..., angles: ExactAngles = ...) -> RopeSpec: ...
    @overload
    def spec(self, seq_len: Optional[int] = ..., *, angles: HfFloat32Angles) -> HfFloat32Rope: ...

class T5Buckets:
    num_buckets: int
    max_distance: int
    bidirectional: bool
    def __init__(self, num_buckets: int = ..., max_distance: int = ..., bidirectional: bool = ...) -> None: ...

class T5BiasTable:
    buckets: T5Buckets
    heads: int
    table: npt.NDArray[np.float32]
    def __init__(self, buckets: T5Buckets, table: npt.ArrayLike) -> None: ...

class LayerPositions:
    index: int
    layer_type: str
    kind: str
    head_dim: int
    rotary_offset: int
    rope: Optional[RopeScheme]
    attention: LayerAttention
    stack: str
    relative_bias: Optional[T5Buckets]
    relative_bias_table_layer: int
    indexer: Optional[IndexerRope]
    softmax_attention: bool
    @overload
    def rope_spec(self, seq_len: Optional[int] = ..., angles: ExactAngles = ...) -> RopeSpec: ...
    @overload
    def rope_spec(self, seq_len: Optional[int] = ..., *, angles: HfFloat32Angles) -> HfFloat32Rope: ...
    def mrope_spec(self, seq_len: Optional[int] = ...) -> MropeSpec: ...

class MropeIndexRules:
    family: str
    spatial_merge_size: int
    tokens_per_second: float
    resume: str
    def __init__(self, family: str, spatial_merge_size: int = ..., tokens_per_second: float = ...,
                 resume: str = ...) -> None: ...

class ModelPositions:
    model_type: str
    n_heads: int
    n_kv_heads: int
    max_position_embeddings: Optional[int]
    layers: List[LayerPositions]
    fope: Optional[FopeConfig]
    mrope_index_rules: Optional[MropeIndexRules]
    vision: Optional[VisionRope]
    unused_keys: List[str]
    unused_keys_transformers_ignores: List[str]
    warnings: List[str]
    kind: str
    def layers_alike(self) -> bool: ...
    def rope_scheme(self) -> RopeScheme: ...
    @overload
    def rope_spec(self, seq_len: Optional[int] = ..., angles: ExactAngles = ...) -> RopeSpec: ...
    @overload
    def rope_spec(self, seq_len: Optional[int] = ..., *, angles: HfFloat32Angles) -> HfFloat32Rope: ...
    def xpos_spec(self, seq_len: Optional[int] = ...) -> XposSpec: ...

def load_model(path: Union[str, PathLike[str]], pairing: Optional[str] = ..., strict: bool = ...) -> ModelPositions: ...

# ---- spec builders (angles="hf-float32": transformers' float32 arithmetic, an HfFloat32Rope)
@overload
def default_rope_spec(head_dim: int, base: float = ..., pairing: str = ..., rotary_dim: Optional[int] = ...,
                      angles: ExactAngles = ...) -> RopeSpec: ...
@overload
def default_rope_spec(head_dim: int, base: float = ..., pairing: str = ..., rotary_dim: Optional[int] = ...,
                      *, angles: HfFloat32Angles) -> HfFloat32Rope: ...
@overload
def linear_rope_spec(head_dim: int, base: float, factor: float, pairing: str = ...,
                     rotary_dim: Optional[int] = ...,
                     angles: ExactAngles = ...) -> RopeSpec: ...
@overload
def linear_rope_spec(head_dim: int, base: float, factor: float, pairing: str = ...,
                     rotary_dim: Optional[int] = ...,
                     *, angles: HfFloat32Angles) -> HfFloat32Rope: ...
def ntk_rope_spec(head_dim: int, base: float, factor: float, pairing: str = ...,
                  rotary_dim: Optional[int] = ...) -> RopeSpec: ...
@overload
def dynamic_ntk_rope_spec(head_dim: int, base: float, factor: float, max_position_embeddings: int, seq_len: int,
                          pairing: str = ..., rotary_dim: Optional[int] = ...,
                          angles: ExactAngles = ...) -> RopeSpec: ...
@overload
def dynamic_ntk_rope_spec(head_dim: int, base: float, factor: float, max_position_embeddings: int, seq_len: int,
                          pairing: str = ..., rotary_dim: Optional[int] = ...,
                          *, angles: HfFloat32Angles) -> HfFloat32Rope: ...
@overload
def yarn_rope_spec(head_dim: int, base: float, factor: float, original_max_position_embeddings: int,
                   beta_fast: float = ..., beta_slow: float = ..., truncate: bool = ...,
                   attention_factor: Optional[float] = ..., mscale: Optional[float] = ...,
                   mscale_all_dim: Optional[float] = ..., pairing: str = ...,
                   rotary_dim: Optional[int] = ...,
                   angles: ExactAngles = ...) -> RopeSpec: ...
@overload
def yarn_rope_spec(head_dim: int, base: float, factor: float, original_max_position_embeddings: int,
                   beta_fast: float = ..., beta_slow: float = ..., truncate: bool = ...,
                   attention_factor: Optional[float] = ..., mscale: Optional[float] = ...,
                   mscale_all_dim: Optional[float] = ..., pairing: str = ...,
                   rotary_dim: Optional[int] = ...,
                   *, angles: HfFloat32Angles) -> HfFloat32Rope: ...
@overload
def llama3_rope_spec(head_dim: int, base: float, factor: float = ..., low_freq_factor: float = ...,
                     high_freq_factor: float = ..., original_max_position_embeddings: int = ...,
                     pairing: str = ..., rotary_dim: Optional[int] = ...,
                     angles: ExactAngles = ...) -> RopeSpec: ...
@overload
def llama3_rope_spec(head_dim: int, base: float, factor: float = ..., low_freq_factor: float = ...,
                     high_freq_factor: float = ..., original_max_position_embeddings: int = ...,
                     pairing: str = ..., rotary_dim: Optional[int] = ...,
                     *, angles: HfFloat32Angles) -> HfFloat32Rope: ...
@overload
def longrope_rope_spec(head_dim: int, base: float, short_factor: Sequence[float], long_factor: Sequence[float],
                       original_max_position_embeddings: int, factor: float = ...,
                       attention_factor: Optional[float] = ..., seq_len: Optional[int] = ...,
                       pairing: str = ..., rotary_dim: Optional[int] = ...,
                       angles: ExactAngles = ...) -> RopeSpec: ...
@overload
def longrope_rope_spec(head_dim: int, base: float, short_factor: Sequence[float], long_factor: Sequence[float],
                       original_max_position_embeddings: int, factor: float = ...,
                       attention_factor: Optional[float] = ..., seq_len: Optional[int] = ...,
                       pairing: str = ..., rotary_dim: Optional[int] = ...,
                       *, angles: HfFloat32Angles) -> HfFloat32Rope: ...
def proportional_rope_spec(head_dim: int, base: float, partial_rotary_factor: float = ..., factor: float = ...,
                           pairing: str = ...) -> RopeSpec: ...
def hf_float32_rope(scheme: Union[RopeScheme, LayerPositions, ModelPositions],
                    seq_len: Optional[int] = ...) -> HfFloat32Rope: ...
def rope_cos_sin(spec: RopeSpec, position: int) -> Tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
def hf_float32_cos_sin(rope: HfFloat32Rope, first_position: int, count: int,
                       dtype: str = ...) -> Tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]: ...

# ---- rotations: name_ in place (returns x), name out of place (a new array or tensor of x's kind)
def apply_rope_(x: ArrayT, positions: PositionsLike, source: RopeSource, layout: str = ...,
                inverse: bool = ..., threads: int = ..., transpose: bool = ...) -> ArrayT: ...
def apply_rope(x: ArrayT, positions: PositionsLike, source: RopeSource, layout: str = ...,
               inverse: bool = ..., threads: int = ..., transpose: bool = ...) -> ArrayT: ...
def apply_mrope_(x: ArrayT, positions: PositionsLike, spec: MropeSpec, layout: str = ...,
                 inverse: bool = ..., threads: int = ..., transpose: bool = ...) -> ArrayT: ...
def apply_mrope(x: ArrayT, positions: PositionsLike, spec: MropeSpec, layout: str = ...,
                inverse: bool = ..., threads: int = ..., transpose: bool = ...) -> ArrayT: ...
# ---- KV cache: keys rotated and values converted into a caller's cache in one pass (in place)
def append_rotated(keys: Array, values: Array, positions: PositionsLike,
                   source: Union["RopeSpec", "HfFloat32Rope", "MropeSpec", "XposSpec"],
                   slots: Array, k_cache: Array, v_cache: Array, layout: str = ...,
                   block_size: Optional[int] = ..., cache_dtype: Optional[str] = ...,
                   k_scale: float = ..., v_scale: float = ..., threads: int = ...) -> None: ...
def qwen2_vl_vision_rope(head_dim: int, spatial_merge_size: int = ..., theta: float = ...) -> VisionRope: ...
def pixtral_vision_rope(head_dim: int, theta: float = ...) -> VisionRope: ...
def vision_patch_positions(rope: VisionRope, t: int, h: int, w: int) -> npt.NDArray[np.int64]: ...
def apply_vision_rope_(x: ArrayT, positions: PositionsLike, rope: VisionRope, layout: str = ...,
                       inverse: bool = ..., threads: int = ..., transpose: bool = ...) -> ArrayT: ...
def apply_vision_rope(x: ArrayT, positions: PositionsLike, rope: VisionRope, layout: str = ...,
                      inverse: bool = ..., threads: int = ..., transpose: bool = ...) -> ArrayT: ...
def apply_xpos_(x: ArrayT, positions: PositionsLike, spec: XposSpec, role: str, layout: str = ...,
                inverse: bool = ..., threads: int = ..., transpose: bool = ...) -> ArrayT: ...
def apply_xpos(x: ArrayT, positions: PositionsLike, spec: XposSpec, role: str, layout: str = ...,
               inverse: bool = ..., threads: int = ..., transpose: bool = ...) -> ArrayT: ...
def xpos_cos_sin(spec: XposSpec, role: str, first_position: int, count: int, dtype: str = ...,
                 inverse: bool = ...) -> Tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
def make_fope(config: FopeConfig) -> Fope: ...
def fope_with_coefficients(config: FopeConfig, sin_coef: npt.ArrayLike, cos_coef: npt.ArrayLike) -> Fope: ...
def apply_fope_(x: ArrayT, positions: PositionsLike, fope: Fope, layout: str = ...,
                inverse: bool = ..., threads: int = ..., transpose: bool = ...) -> ArrayT: ...
def apply_fope(x: ArrayT, positions: PositionsLike, fope: Fope, layout: str = ...,
               inverse: bool = ..., threads: int = ..., transpose: bool = ...) -> ArrayT: ...

# ---- positions and weights
def mrope_index(rules: Union[ModelPositions, MropeIndexRules], segments: str, resume: Optional[str] = ...) -> Tuple[npt.NDArray[np.int64], int]: ...
def fope_checkpoint_coefficients(path: str, block: int = ...) -> tuple[np.ndarray, np.ndarray]: ...
def packed_positions(cu_seqlens: Sequence[int], offsets: Sequence[int] = ...,
                     tokens: Optional[int] = ...) -> npt.NDArray[np.int64]: ...
def context_parallel_positions(seq_len: int, rank: int, ranks: int, first_position: int = ...) -> npt.NDArray[np.int64]: ...
def permute_pairing_(w: ArrayT, n_heads: int, from_pairing: str, to_pairing: str,
                     rotary_dim: Optional[int] = ...) -> ArrayT: ...
def permute_pairing(w: ArrayT, n_heads: int, from_pairing: str, to_pairing: str,
                    rotary_dim: Optional[int] = ...) -> ArrayT: ...

# ---- additive schemes and scores
def alibi_slopes(n_heads: int, max_bias: float = ..., head_begin: Optional[int] = ...,
                 head_end: Optional[int] = ..., round_to: Optional[str] = ...) -> npt.NDArray[np.float64]: ...
def alibi_bias(slopes: npt.ArrayLike, q_positions: npt.ArrayLike, k_positions: npt.ArrayLike, form: str = ...,
               dtype: str = ...) -> npt.NDArray[Any]: ...
def alibi_bias_row(slopes: npt.ArrayLike, q_position: int, k_positions: npt.ArrayLike, form: str = ...,
                   dtype: str = ...) -> npt.NDArray[Any]: ...
def t5_relative_position_bucket(rel: int, num_buckets: int = ..., max_distance: int = ...,
                                bidirectional: bool = ...) -> int: ...
def t5_bucket_matrix(buckets: T5Buckets, q_positions: npt.ArrayLike, k_positions: npt.ArrayLike) -> npt.NDArray[np.int64]: ...
def t5_bias(table: T5BiasTable, q_positions: npt.ArrayLike, k_positions: npt.ArrayLike) -> npt.NDArray[np.float32]: ...
def t5_bias_row(table: T5BiasTable, q_position: int, k_positions: npt.ArrayLike) -> npt.NDArray[np.float32]: ...
def sinusoidal_table(max_len: int, d: int, base: float = ..., layout: str = ..., dtype: str = ...) -> npt.NDArray[Any]: ...
def sinusoidal_embedding(position: int, d: int, base: float = ..., layout: str = ...) -> npt.NDArray[np.float64]: ...
def learned_position_table(max_len: int, d: int, seed: int, init_std: float = ...,
                           dtype: str = ...) -> npt.NDArray[Any]: ...
def add_position_embeddings_(x: ArrayT, positions: PositionsLike, table: Array) -> ArrayT: ...
def add_position_embeddings(x: ArrayT, positions: PositionsLike, table: Array) -> ArrayT: ...

# ---- gradients (the training ops in posemb._ops and the modules in posemb.nn use them)
def fope_coefficient_gradients(x: Array, grad: Array, positions: PositionsLike, fope: Fope,
                               layout: str = ...) -> Tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
def position_table_gradient(grad: Array, positions: PositionsLike, max_len: int) -> npt.NDArray[np.float64]: ...
def t5_table_gradient(grad: Array, buckets: T5Buckets, q_positions: npt.ArrayLike,
                      k_positions: npt.ArrayLike) -> npt.NDArray[np.float64]: ...
def attention_scores(q: ArrayT, q_positions: PositionsLike, k: ArrayT, k_positions: PositionsLike, *,
                     rope: Optional[RopeSpec] = ..., alibi_slopes: Optional[npt.ArrayLike] = ...,
                     relative_bias: Optional[T5BiasTable] = ..., sink_logits: Optional[npt.ArrayLike] = ...,
                     attention: Optional[LayerAttention] = ...,
                     causal: bool = ..., softmax: bool = ..., layout: str = ...) -> ArrayT: ...

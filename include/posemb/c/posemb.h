/* posemb's C API: positional embeddings for engines that cannot include C++ (Rust, Go, any
 * language with a C FFI). C99 and C11; no C++ in this header. Link posemb::c (shared,
 * libposemb_c.so) or posemb::c_static (libposemb_c.a, which also needs the C++ runtime).
 *
 * Handles are opaque: a model's positions (posemb_model, from a config.json or a GGUF file), a
 * RoPE source (posemb_rope: a layer's, or explicit parameters), a cos/sin table
 * (posemb_rope_table) and an M-RoPE source (posemb_mrope). Every handle is immutable after it is
 * made: one handle may be used from many threads at once; free it once, from any thread, when
 * no call is using it.
 *
 * Errors: every function that can fail returns a posemb_status; POSEMB_OK (0) is success and
 * nothing else is. On failure posemb_last_error() returns the message, posemb's own (the C++
 * library's posemb::Error text, "posemb: <parameter> = <value>: expected ..."), in a buffer of
 * the calling thread valid until that thread's next posemb_ call. No C++ exception, abort or
 * exit crosses this boundary. Every pointer and size is checked (NULL, zero, overflow of a
 * buffer's element count), and the message names the parameter. Out-parameters are written
 * only on success.
 *
 * Activations: dense row-major buffers, [batch, seq, heads, head_dim] (POSEMB_LAYOUT_BSHD) or
 * [batch, heads, seq, head_dim] (POSEMB_LAYOUT_BHSD), of float32, float16 or bfloat16 (the 16-bit
 * types as uint16_t bit patterns, IEEE binary16 and bfloat16). Angles are formed in double; only
 * the rotated values are rounded to the storage type.
 *
 * Stability (POSEMB_C_ABI_MAJOR / MINOR, posemb_abi_version()):
 *   - A minor version only adds: new functions, new enumerators (before an enum's INT32 range
 *     sentinel, see below), new status codes. Existing functions, their signatures, struct
 *     layouts and enumerator values never change within a major version; a binary built
 *     against ABI x.y runs with any x.z, z >= y.
 *   - Message texts are for people and may change in any version; test the status code.
 *   - A major version may change anything; the shared library's soname carries it
 *     (libposemb_c.so.<major>).
 *
 * Example (rotate a query buffer for layer L at per-token positions P):
 *   posemb_model* model = NULL;
 *   posemb_rope* rope = NULL;
 *   if (posemb_model_load_config("config.json", 0, 0, &model) != POSEMB_OK ||
 *       posemb_model_layer_rope(model, L, &rope) != POSEMB_OK) {
 *     fprintf(stderr, "%s\n", posemb_last_error());
 *   }
 *   posemb_shape shape = {POSEMB_LAYOUT_BSHD, 1, 4, 32, 128};   // q: [1, 4, 32, 128]
 *   posemb_positions at = {0, P, 1};                             // P: int64_t[4]
 *   posemb_rope_rotate_inplace(rope, POSEMB_F32, q, &shape, &at, POSEMB_FORWARD);
 *   posemb_rope_free(rope);
 *   posemb_model_free(model);
 */
#ifndef POSEMB_C_POSEMB_H
#define POSEMB_C_POSEMB_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32) && defined(POSEMB_C_BUILDING)
#define POSEMB_C_API __declspec(dllexport)
#elif defined(__GNUC__) && defined(POSEMB_C_BUILDING)
#define POSEMB_C_API __attribute__((visibility("default")))
#else
#define POSEMB_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define POSEMB_C_ABI_MAJOR 1
#define POSEMB_C_ABI_MINOR 4

/* Each enum holds a last enumerator of INT32_MIN that is not a value: it makes every int32 a
 * defined value of the enum in C++ as in C, so that an out-of-range argument is refused with a
 * message, never undefined behaviour. */
#define POSEMB_ENUM_INT32_MIN_ (-2147483647 - 1)

/* ---- status, errors, version ---- */

typedef enum posemb_status {
  POSEMB_OK = 0,
  POSEMB_ERROR_INVALID_ARGUMENT = 1, /* bad input: posemb::Error, or a C argument check */
  POSEMB_ERROR_OUT_OF_MEMORY = 2,    /* an allocation failed */
  POSEMB_ERROR_INTERNAL = 3,         /* any other failure inside posemb (a bug: report it) */
  POSEMB_STATUS_INT32_RANGE_ = POSEMB_ENUM_INT32_MIN_ /* not a value (see above) */
} posemb_status;

/* (POSEMB_C_ABI_MAJOR << 16) | POSEMB_C_ABI_MINOR of the library actually loaded. */
POSEMB_C_API uint32_t posemb_abi_version(void);
/* The posemb library version, "major.minor.patch" (static storage). */
POSEMB_C_API const char* posemb_version_string(void);
/* The calling thread's message of its last failed call ("" if none); never NULL. */
POSEMB_C_API const char* posemb_last_error(void);

/* ---- enums ---- */

typedef enum posemb_dtype {
  POSEMB_F32 = 0,
  POSEMB_F16 = 1,
  POSEMB_BF16 = 2,
  POSEMB_DTYPE_INT32_RANGE_ = POSEMB_ENUM_INT32_MIN_ /* not a value (see above) */
} posemb_dtype;

typedef enum posemb_layout {
  POSEMB_LAYOUT_BSHD = 0,                             /* [batch, seq, heads, head_dim] */
  POSEMB_LAYOUT_BHSD = 1,                             /* [batch, heads, seq, head_dim] */
  POSEMB_LAYOUT_INT32_RANGE_ = POSEMB_ENUM_INT32_MIN_ /* not a value (see above) */
} posemb_layout;

typedef enum posemb_rotation {
  POSEMB_FORWARD = 0,                                   /* R(p) */
  POSEMB_INVERSE = 1,                                   /* R(p)^T = R(-p) */
  POSEMB_TRANSPOSE = 2,                                 /* ABI 1.3: m R(p)^T, the backward */
  POSEMB_ROTATION_INT32_RANGE_ = POSEMB_ENUM_INT32_MIN_ /* not a value (see above) */
} posemb_rotation;

/* Which features of a head form rotary pair i (rotary_dim r):
 *   INTERLEAVED (GPT-J, Meta checkpoints, ggml "normal"): (2i, 2i + 1)
 *   ROTATE_HALF (GPT-NeoX, HuggingFace LLaMA, ggml "neox"): (i, i + r/2) */
typedef enum posemb_pairing {
  POSEMB_PAIRING_INTERLEAVED = 0,
  POSEMB_PAIRING_ROTATE_HALF = 1,
  POSEMB_PAIRING_INT32_RANGE_ = POSEMB_ENUM_INT32_MIN_ /* not a value (see above) */
} posemb_pairing;

/* What a layer does with positions (the C++ posemb::PositionKind, same order). */
typedef enum posemb_position_kind {
  POSEMB_KIND_ROPE = 0,
  POSEMB_KIND_FOPE = 1,
  POSEMB_KIND_ALIBI = 2,
  POSEMB_KIND_LEARNED = 3,
  POSEMB_KIND_SINUSOIDAL = 4,
  POSEMB_KIND_RELATIVE_BIAS = 5,
  POSEMB_KIND_NONE = 6,
  POSEMB_KIND_INT32_RANGE_ = POSEMB_ENUM_INT32_MIN_ /* not a value (see above) */
} posemb_position_kind;

typedef enum posemb_mrope_layout {
  POSEMB_MROPE_CHUNKED = 0,                                 /* Qwen2-VL: [tttt hhh www] */
  POSEMB_MROPE_INTERLEAVED = 1,                             /* Qwen3-VL: [thw thw ... tt] */
  POSEMB_MROPE_LAYOUT_INT32_RANGE_ = POSEMB_ENUM_INT32_MIN_ /* not a value (see above) */
} posemb_mrope_layout;

typedef enum posemb_alibi_form {
  POSEMB_ALIBI_CAUSAL = 0,                                /* -slope (q - k), -inf where k > q */
  POSEMB_ALIBI_SYMMETRIC = 1,                             /* -slope |q - k| */
  POSEMB_ALIBI_FORM_INT32_RANGE_ = POSEMB_ENUM_INT32_MIN_ /* not a value (see above) */
} posemb_alibi_form;

/* ---- plain structs ---- */

/* A dense activation buffer's layout and dimensions (each >= 1). */
typedef struct posemb_shape {
  posemb_layout layout;
  int64_t batch, seq, heads, head_dim;
} posemb_shape;

/* Positions of the tokens: with ids == NULL, token s of every batch row is at offset + s; else
 * ids is [rows, seq] row-major (rows 1: the same positions for every batch row, or batch) and
 * offset must be 0. */
typedef struct posemb_positions {
  int64_t offset;
  const int64_t* ids;
  int64_t rows;
} posemb_positions;

/* A RoPE source's numbers (inv_freq apart: posemb_rope_inv_freq). */
typedef struct posemb_rope_info {
  int32_t head_dim;      /* width of the heads it rotates */
  int32_t rotary_dim;    /* features rotated per head (even; rotary_dim / 2 pairs) */
  int32_t rotary_offset; /* first rotated feature */
  posemb_pairing pairing;
  double attention_scale; /* multiplies cos and sin */
} posemb_rope_info;

/* A layer's attention settings; each has_* says whether the value beside it is set. */
typedef struct posemb_layer_attention {
  int32_t softmax_attention; /* 0 for linear attention, mamba and conv layers */
  int32_t has_softmax_scale;
  double softmax_scale;
  int32_t has_sliding_window;
  int64_t sliding_window; /* key j visible from query i iff 0 <= i - j < window */
  int32_t has_attention_chunk_size;
  int64_t attention_chunk_size;
  /* q at p times log1p(floor((p + offset) / floor)) attn + 1, or by the form
   * posemb_model_layer_query_temperature_form gives (ABI 1.2) */
  int32_t has_query_temperature;
  double query_temperature_floor_scale;
  double query_temperature_attn_scale;
  int64_t query_temperature_position_offset;
  int32_t has_logit_softcap;
  double logit_softcap;
  int32_t attention_sinks;
  int32_t alibi_bias_before_scale; /* the ALiBi bias is added before the softmax scale */
} posemb_layer_attention;

/* T5 relative-position buckets (T5Config relative_attention_num_buckets / max_distance). */
typedef struct posemb_t5_buckets {
  int32_t num_buckets;
  int32_t max_distance;
  int32_t bidirectional; /* 1 in the encoder, 0 (causal) in the decoder */
} posemb_t5_buckets;

/* ---- a model's positions ---- */

typedef struct posemb_model posemb_model;

/* Loads a HuggingFace config.json (path) or a GGUF file. seq_len: 0 for none, else the
 * sequence length (>= 1) dynamic NTK and LongRoPE depend on (for GGUF, llama.cpp's context per
 * sequence). strict: nonzero refuses a config with keys the reader does not use, as the tool's
 * --strict. */
POSEMB_C_API posemb_status posemb_model_load_config(const char* path, int64_t seq_len,
                                                    int32_t strict, posemb_model** out);
POSEMB_C_API posemb_status posemb_model_load_gguf(const char* path, int64_t seq_len, int32_t strict,
                                                  posemb_model** out);
/* The same from config.json text (size bytes, not necessarily NUL-terminated). */
POSEMB_C_API posemb_status posemb_model_parse_config(const char* json, size_t size, int64_t seq_len,
                                                     int32_t strict, posemb_model** out);
POSEMB_C_API void posemb_model_free(posemb_model* model); /* NULL: nothing */

POSEMB_C_API posemb_status posemb_model_layer_count(const posemb_model* model, int64_t* out);
/* Query heads and key/value heads (0 when the file gives none). */
POSEMB_C_API posemb_status posemb_model_heads(const posemb_model* model, int32_t* n_heads,
                                              int32_t* n_kv_heads);
POSEMB_C_API posemb_status posemb_model_layer_kind(const posemb_model* model, int64_t layer,
                                                   posemb_position_kind* out);
POSEMB_C_API posemb_status posemb_model_layer_head_dim(const posemb_model* model, int64_t layer,
                                                       int32_t* out);
/* The layer's HF rope type ("default", "yarn", ...); "" when the layer has no RoPE. The string
 * lives as long as the model. */
POSEMB_C_API posemb_status posemb_model_layer_rope_type(const posemb_model* model, int64_t layer,
                                                        const char** out);
POSEMB_C_API posemb_status posemb_model_layer_attention(const posemb_model* model, int64_t layer,
                                                        posemb_layer_attention* out);
/* How a layer's query temperature grows with the position p (ABI 1.2). */
typedef enum posemb_temperature_form {
  POSEMB_TEMPERATURE_FLOOR_LOG = 0, /* log1p(floor((p + offset) / floor)) attn + 1 (Llama 4) */
  POSEMB_TEMPERATURE_POWER = 1,     /* (1 + (p + offset) / floor) ^ attn (Beam) */
  POSEMB_TEMPERATURE_FORM_INT32_RANGE_ = POSEMB_ENUM_INT32_MIN_ /* not a value (see above) */
} posemb_temperature_form;

/* The form of the layer's query temperature (ABI 1.2); POSEMB_TEMPERATURE_FLOOR_LOG when the
 * layer has none (posemb_layer_attention.has_query_temperature). */
POSEMB_C_API posemb_status posemb_model_layer_query_temperature_form(const posemb_model* model,
                                                                     int64_t layer,
                                                                     posemb_temperature_form* out);
/* T5 buckets of a relative-bias layer: *has = 0 when the layer has none. */
POSEMB_C_API posemb_status posemb_model_layer_t5_buckets(const posemb_model* model, int64_t layer,
                                                         int32_t* has, posemb_t5_buckets* out);

/* ---- RoPE sources ---- */

typedef struct posemb_rope posemb_rope;

/* The RoPE of a layer (kind POSEMB_KIND_ROPE) at the model's seq_len, over the layer's whole
 * head: posemb_rope_get_info's head_dim is the layer's, and features [rotary_offset,
 * rotary_offset + rotary_dim) rotate (MLA: the trailing qk_rope_head_dim); free with
 * posemb_rope_free. Independent of the model afterwards. */
POSEMB_C_API posemb_status posemb_model_layer_rope(const posemb_model* model, int64_t layer,
                                                   posemb_rope** out);
/* Explicit parameters: inv_freq [n_inv_freq] (rotary_dim = 2 n_inv_freq), radians per position. */
POSEMB_C_API posemb_status posemb_rope_create(const double* inv_freq, size_t n_inv_freq,
                                              double attention_scale, posemb_pairing pairing,
                                              int32_t head_dim, int32_t rotary_offset,
                                              posemb_rope** out);
/* Plain RoPE: inv_freq[i] = base^(-2i / rotary_dim), attention_scale 1. */
POSEMB_C_API posemb_status posemb_rope_create_default(int32_t head_dim, int32_t rotary_dim,
                                                      double base, posemb_pairing pairing,
                                                      posemb_rope** out);
POSEMB_C_API void posemb_rope_free(posemb_rope* rope);
POSEMB_C_API posemb_status posemb_rope_get_info(const posemb_rope* rope, posemb_rope_info* out);
/* Copies the rotary_dim / 2 inverse frequencies into out [capacity]; *count = rotary_dim / 2. */
POSEMB_C_API posemb_status posemb_rope_inv_freq(const posemb_rope* rope, double* out,
                                                size_t capacity, size_t* count);

/* x: [shape] of dtype, rotated in place; nothing is allocated for offset positions. */
POSEMB_C_API posemb_status posemb_rope_rotate_inplace(const posemb_rope* rope, posemb_dtype dtype,
                                                      void* x, const posemb_shape* shape,
                                                      const posemb_positions* positions,
                                                      posemb_rotation rotation);
/* x: [x_shape] into out: [out_shape] (a layout of its own; batch, heads and head_dim as x's;
 * out_shape->seq >= out_seq_offset + x_shape->seq: x's tokens go to out's tokens out_seq_offset
 * ..., a KV-cache slot). out must not overlap x. */
POSEMB_C_API posemb_status posemb_rope_rotate(const posemb_rope* rope, posemb_dtype dtype,
                                              const void* x, const posemb_shape* x_shape, void* out,
                                              const posemb_shape* out_shape, int64_t out_seq_offset,
                                              const posemb_positions* positions,
                                              posemb_rotation rotation);

/* ---- cos/sin tables ---- */

typedef struct posemb_rope_table posemb_rope_table;

/* cos and sin (float32, times attention_scale) of positions [first_position, first_position +
 * count); serves float32, float16 and bfloat16 tensors. */
POSEMB_C_API posemb_status posemb_rope_table_create(const posemb_rope* rope, int64_t first_position,
                                                    int64_t count, posemb_rope_table** out);
POSEMB_C_API void posemb_rope_table_free(posemb_rope_table* table);
/* Pointers to cos and sin, each [count, rotary_dim / 2] row-major, valid while the table lives. */
POSEMB_C_API posemb_status posemb_rope_table_data(const posemb_rope_table* table, const float** cos,
                                                  const float** sin, int64_t* rows, int64_t* cols);
POSEMB_C_API posemb_status posemb_rope_table_rotate_inplace(const posemb_rope_table* table,
                                                            posemb_dtype dtype, void* x,
                                                            const posemb_shape* shape,
                                                            const posemb_positions* positions,
                                                            posemb_rotation rotation);
POSEMB_C_API posemb_status posemb_rope_table_rotate(
    const posemb_rope_table* table, posemb_dtype dtype, const void* x, const posemb_shape* x_shape,
    void* out, const posemb_shape* out_shape, int64_t out_seq_offset,
    const posemb_positions* positions, posemb_rotation rotation);

/* ---- M-RoPE ---- */

typedef struct posemb_mrope posemb_mrope;

/* sections [3]: pairs per axis (t, h, w), summing to rotary_dim / 2 (HF's mrope_section). */
POSEMB_C_API posemb_status posemb_mrope_create(const posemb_rope* rope, const int32_t* sections,
                                               posemb_mrope_layout layout, posemb_mrope** out);
POSEMB_C_API void posemb_mrope_free(posemb_mrope* mrope);
/* position_ids: [3, rows, seq] row-major, rows 1 or batch (HF's position_ids of Qwen2-VL). */
POSEMB_C_API posemb_status posemb_mrope_rotate_inplace(const posemb_mrope* mrope,
                                                       posemb_dtype dtype, void* x,
                                                       const posemb_shape* shape,
                                                       const int64_t* position_ids, int64_t rows,
                                                       posemb_rotation rotation);
POSEMB_C_API posemb_status posemb_mrope_rotate(const posemb_mrope* mrope, posemb_dtype dtype,
                                               const void* x, const posemb_shape* x_shape,
                                               void* out, const posemb_shape* out_shape,
                                               int64_t out_seq_offset, const int64_t* position_ids,
                                               int64_t rows, posemb_rotation rotation);

/* ---- rotating into a KV cache ---- */

/* A cache buffer's storage type (the C++ posemb::CacheDtype, same order):
 *   F32, F16, BF16  float32, IEEE binary16, bfloat16 (round to nearest even)
 *   FP8_E4M3        float8_e4m3fn of clamp(x / scale, -448, 448), nearest even (vLLM's writer)
 *   Q8_0            llama.cpp's block_q8_0: per 32 values a float16 d, then 32 int8 (34 bytes) */
typedef enum posemb_cache_dtype {
  POSEMB_CACHE_F32 = 0,
  POSEMB_CACHE_F16 = 1,
  POSEMB_CACHE_BF16 = 2,
  POSEMB_CACHE_FP8_E4M3 = 3,
  POSEMB_CACHE_Q8_0 = 4,
  POSEMB_CACHE_DTYPE_INT32_RANGE_ = POSEMB_ENUM_INT32_MIN_ /* not a value (see above) */
} posemb_cache_dtype;

/* A cache's layout, each buffer's last axis a head vector (q8_0: its bytes):
 *   BHSD   [batch, kv_heads, max_seq, head_dim]      slot = sequence index in row b
 *   BSHD   [batch, max_seq, kv_heads, head_dim]      slot = sequence index in row b
 *   PAGED  [num_blocks, block_size, kv_heads, head_dim]
 *          slot = block * block_size + offset (vLLM's slot_mapping) */
typedef enum posemb_cache_layout {
  POSEMB_CACHE_BHSD = 0,
  POSEMB_CACHE_BSHD = 1,
  POSEMB_CACHE_PAGED = 2,
  POSEMB_CACHE_LAYOUT_INT32_RANGE_ = POSEMB_ENUM_INT32_MIN_ /* not a value (see above) */
} posemb_cache_layout;

/* One cache buffer (the keys' or the values'): the caller's memory of `bytes` bytes, at least
 * what the geometry needs. scale: FP8_E4M3 only (finite, > 0), the stored value is x / scale. */
typedef struct posemb_cache_buffer {
  void* data;
  size_t bytes;
  posemb_cache_dtype dtype;
  float scale;
} posemb_cache_buffer;

/* A KV cache over the caller's buffers. slots: BHSD, BSHD: max_seq (the batch is the keys');
 * PAGED: num_blocks * block_size. block_size: PAGED only (> 0, dividing slots); 0 otherwise. */
typedef struct posemb_kv_cache {
  posemb_cache_layout layout;
  int64_t slots;
  int64_t block_size;
  posemb_cache_buffer keys, values;
} posemb_kv_cache;

/* The shape of a step's projected keys [batch, seq, kv_heads, head_dim] and values [batch, seq,
 * kv_heads, v_head_dim], both float32, row-major (BSHD). */
typedef struct posemb_kv_shape {
  int64_t batch, seq, kv_heads, head_dim, v_head_dim;
} posemb_kv_shape;

/* Rotates the keys by `rope` (or by `table`) at `positions` and writes them and the values
 * (converted, not rotated) into the cache in one pass: token (b, s) goes to slot slots[b * seq +
 * s] (int64, [batch, seq]; negative: the token is skipped); nothing else of the cache is
 * written. Bit for bit posemb::append_rotated (C++, posemb/kv/append.hpp), which equals rotating,
 * converting and storing. threads: >= 1, the most threads the call uses. Refused, nothing
 * written: a slot at or past the slot space or used twice, a block size that does not divide
 * slots, head_dim not the rope's, a q8_0 head_dim not a multiple of 32, an fp8 scale not finite
 * and > 0, a buffer smaller than the geometry, buffers that overlap (keys, values, either cache
 * buffer, slots). */
POSEMB_C_API posemb_status
posemb_rope_append_rotated(const posemb_rope* rope, const float* keys, const float* values,
                           const posemb_kv_shape* shape, const posemb_positions* positions,
                           const int64_t* slots, const posemb_kv_cache* cache, int32_t threads);
POSEMB_C_API posemb_status posemb_rope_table_append_rotated(
    const posemb_rope_table* table, const float* keys, const float* values,
    const posemb_kv_shape* shape, const posemb_positions* positions, const int64_t* slots,
    const posemb_kv_cache* cache, int32_t threads);

/* ---- attention biases ---- */

/* ALiBi slopes of n_heads heads (max_bias B: 8 for BLOOM/MPT) into out [capacity >= n_heads]. */
POSEMB_C_API posemb_status posemb_alibi_slopes(int32_t n_heads, double max_bias, double* out,
                                               size_t capacity);
/* bias [heads, q_len, k_len] (float32) of slopes [heads] at q_positions [q_len], k_positions
 * [k_len]; capacity: elements of out. */
POSEMB_C_API posemb_status posemb_alibi_bias(const double* slopes, size_t heads,
                                             const int64_t* q_positions, size_t q_len,
                                             const int64_t* k_positions, size_t k_len,
                                             posemb_alibi_form form, float* out, size_t capacity);
/* T5 bucket ids [q_len, k_len]. */
POSEMB_C_API posemb_status posemb_t5_buckets_of(const posemb_t5_buckets* buckets,
                                                const int64_t* q_positions, size_t q_len,
                                                const int64_t* k_positions, size_t k_len,
                                                int64_t* out, size_t capacity);
/* T5 bias [heads, q_len, k_len] from the learned table [num_buckets, heads] (float32). */
POSEMB_C_API posemb_status posemb_t5_bias(const posemb_t5_buckets* buckets, const float* table,
                                          size_t heads, const int64_t* q_positions, size_t q_len,
                                          const int64_t* k_positions, size_t k_len, float* out,
                                          size_t capacity);

/* ---- FoPE and the gradients of training (ABI 1.4) ---- */

/* FoPE's settings (the C++ posemb::FopeConfig; rotary/fope.hpp): frequencies theta^(-2k /
 * head_dim) below the clip floor 2 pi / train_length * floor_ratio set to 0 (dropped when
 * drop_clipped), or, with num_inv_freq > 0, the first num_inv_freq frequencies kept (vLLM's
 * num_inv_freq); D_out mixed slots (0: the default), the other slots padded with cos 1, sin
 * padding_sin. Coefficient heads: n_kv_heads (0: n_heads). */
typedef struct posemb_fope_config {
  int32_t head_dim, n_heads, n_kv_heads;
  double theta;
  int64_t train_length;
  double floor_ratio;
  int32_t drop_clipped;
  int32_t d_out;
  double padding_sin;
  int32_t num_inv_freq;
} posemb_fope_config;

typedef struct posemb_fope posemb_fope;

/* The FoPE settings of a layer of kind POSEMB_KIND_FOPE (config.json's "fope" block, or a
 * family's FoPE keys: Intern-S1-Pro's fope_sep_head, num_inv_freq). */
POSEMB_C_API posemb_status posemb_model_layer_fope_config(const posemb_model* model, int64_t layer,
                                                          posemb_fope_config* out);
/* D_in (the frequencies kept) and D_out (config->d_out, or its default) of a config. */
POSEMB_C_API posemb_status posemb_fope_dims(const posemb_fope_config* config, int32_t* d_in,
                                            int32_t* d_out);
/* FoPE with a checkpoint's coefficients sin_coef, cos_coef: each [n_kv_heads, D_in, D_out]
 * float32 (count elements; D_out = count / (n_kv_heads D_in) when config->d_out is 0), copied. */
POSEMB_C_API posemb_status posemb_fope_create(const posemb_fope_config* config,
                                              const float* sin_coef, const float* cos_coef,
                                              size_t count, posemb_fope** out);
POSEMB_C_API void posemb_fope_free(posemb_fope* fope); /* NULL: nothing */
/* x: [shape] (heads n_heads for queries, n_kv_heads for keys) rotated in place. With
 * POSEMB_TRANSPOSE, x holds dL/dy and becomes dL/dx, the gradient with respect to the input. */
POSEMB_C_API posemb_status posemb_fope_rotate_inplace(const posemb_fope* fope, posemb_dtype dtype,
                                                      void* x, const posemb_shape* shape,
                                                      const posemb_positions* positions,
                                                      posemb_rotation rotation);
/* dL/dA_sin and dL/dA_cos, each [n_kv_heads, D_in, D_out] (capacity: elements of each), of the
 * forward y = fope(x) at positions, from its input x and grad = dL/dy (both [shape] of dtype):
 * summed over tokens and the query heads of a group, accumulated in double in a fixed order
 * (C++ posemb::fope_coefficient_gradients). Written, not added: for queries and keys that share
 * the coefficients, add the two calls' results. */
POSEMB_C_API posemb_status posemb_fope_coefficient_gradients(
    const posemb_fope* fope, posemb_dtype dtype, const void* x, const void* grad,
    const posemb_shape* shape, const posemb_positions* positions, double* grad_sin_coef,
    double* grad_cos_coef, size_t capacity);

/* dL/dtable [max_len, d] (capacity: elements of out) of a learned absolute table added to token
 * embeddings y[b, s] = x[b, s] + table[p(b, s)]: grad = dL/dy [batch, seq, d] of dtype, the
 * gradients of the tokens at each position summed in double in token order (C++
 * posemb::position_table_gradient). Every position must lie in [0, max_len). */
POSEMB_C_API posemb_status posemb_position_table_gradient(posemb_dtype dtype, const void* grad,
                                                          int64_t batch, int64_t seq, int64_t d,
                                                          const posemb_positions* positions,
                                                          int64_t max_len, double* out,
                                                          size_t capacity);
/* dL/dtable [num_buckets, heads] (capacity: elements of out) of the T5 bias from grad =
 * dL/dbias [heads, q_len, k_len] (float32), summed per bucket in double (C++
 * posemb::t5_table_gradient). */
POSEMB_C_API posemb_status posemb_t5_table_gradient(const posemb_t5_buckets* buckets,
                                                    const float* grad, size_t heads,
                                                    const int64_t* q_positions, size_t q_len,
                                                    const int64_t* k_positions, size_t k_len,
                                                    double* out, size_t capacity);

#ifdef __cplusplus
}
#endif

#endif /* POSEMB_C_POSEMB_H */

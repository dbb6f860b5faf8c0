/* The cases the C API test (c_api_test.c), the Rust and the Go bindings run, and the C++
 * program that writes the C++ results they must equal bit for bit (reference_dump.cpp). Shared
 * so that every side builds the same inputs: integer formulas, no floating-point arithmetic.
 * C and C++. */
#ifndef POSEMB_TESTS_C_CASES_H
#define POSEMB_TESTS_C_CASES_H

#include <stdint.h>

/* The activation of a rotation case: [2, 3, 2, head_dim] (batch, seq, heads, head_dim). */
#define POSEMB_CASE_BATCH 2
#define POSEMB_CASE_SEQ 3
#define POSEMB_CASE_HEADS 2

/* Element i of an input buffer as its bit pattern: a value of magnitude in [0.5, 1), the sign
 * alternating. dtype 0: float32 bits, 1: float16, 2: bfloat16. */
static inline uint32_t posemb_case_input_bits(int dtype, uint32_t i) {
  const uint32_t mix = i * 2654435761u;
  const uint32_t sign = i & 1u;
  if (dtype == 0) return ((mix >> 9) & 0x7fffffu) | 0x3f000000u | (sign << 31);
  if (dtype == 1) return ((mix >> 20) & 0x3ffu) | 0x3800u | (sign << 15);
  return ((mix >> 24) & 0x7fu) | 0x3f00u | (sign << 15);
}

/* Per-token positions [2, 3] of the rotation variants that use ids, up to millions. */
static const int64_t posemb_case_ids[6] = {0, 5, 131071, 7, 1, 2000000};
static const int64_t posemb_case_long_ids[3] = {0, 999999, 4194304};

/* The rotation variants (the same on every side):
 *   0: RoPE in place, BSHD, offset 1000000, forward
 *   1: RoPE out of place BSHD -> BHSD, out seq 5 from token 2 (a KV-cache slot, out zeroed
 *      first), ids [2, 3], inverse
 *   2: a cos/sin table of positions [0, 64), in place, BHSD, offset 10, forward
 *   3: RoPE in place, BSHD, ids [1, 3] (posemb_case_long_ids), forward */
#define POSEMB_CASE_VARIANTS 4
#define POSEMB_CASE_OUT_SEQ 5
#define POSEMB_CASE_OUT_OFFSET 2
#define POSEMB_CASE_TABLE_COUNT 64

/* M-RoPE: head_dim 128, base 1e6, rotate_half; chunked sections (16, 24, 24) and interleaved
 * (24, 20, 20); position ids [3, 1, 3]. */
static const int32_t posemb_case_mrope_sections[2][3] = {{16, 24, 24}, {24, 20, 20}};
static const int64_t posemb_case_mrope_ids[9] = {0, 1, 2, 0, 4, 9, 0, 3, 100000};

/* ALiBi: slopes of 1 .. 20 heads (max_bias 8); bias of 12 heads, q (0, 5, 9), k 0 .. 9. */
static const int64_t posemb_case_alibi_q[3] = {0, 5, 9};

/* T5: buckets (32, 128, bidirectional 1 and 0), q (0, 3, 200), k 0, 7, ..., 7 * 42; a table
 * [32, 4] of posemb_case_input_bits(0, i) values. */
static const int64_t posemb_case_t5_q[3] = {0, 3, 200};
#define POSEMB_CASE_T5_KEYS 43
#define POSEMB_CASE_T5_HEADS 4

/* KV append (kv_reference.txt): keys [2, 3, 2, 64] of posemb_case_input_bits(0, i), values
 * [2, 3, 2, 32] of posemb_case_input_bits(0, 4096 + i); RoPE head_dim 64, base 10000,
 * rotate_half. Source 0: that RoPE at posemb_case_ids; source 1: its table of positions [0, 64)
 * at offset 5. Caches (every byte 0xA5 first; fp8 scales 0.37 keys, 1.9 values):
 *   layout 0 BHSD, 1 BSHD: max_seq 8, slots posemb_case_kv_slots[0]
 *   layout 2 PAGED: 16 slots in blocks of 4, slots posemb_case_kv_slots[1]
 * every cache dtype (keys and values alike), on 1 and 2 threads. */
#define POSEMB_CASE_KV_DIM 64
#define POSEMB_CASE_KV_VDIM 32
#define POSEMB_CASE_KV_MAX_SEQ 8
#define POSEMB_CASE_KV_PAGED_SLOTS 16
#define POSEMB_CASE_KV_BLOCK 4
static const int64_t posemb_case_kv_slots[2][6] = {{1, 2, -1, 4, 5, 6}, {13, 2, 3, -5, 8, 0}};

/* Gradients (grad_reference.txt, ABI 1.4). FoPE: head_dim 16, 4 query heads over 2 coefficient
 * heads, theta 10000, padding_sin 1; config 0: train_length 512 (D_in 4: the clip floor), d_out
 * 4; config 1: num_inv_freq 3, d_out 0 (the default, 3). A_sin[i] = float32 of
 * posemb_case_input_bits(0, i), A_cos[i] of posemb_case_input_bits(0, 64 + i). x [2, 3, 4, 16]
 * (BSHD) of posemb_case_input_bits(dtype, i), dL/dy of posemb_case_input_bits(dtype, 4096 + i),
 * at posemb_case_ids: the forward of x, the transpose of dL/dy, dL/dA_sin and dL/dA_cos, for
 * float32 and bfloat16. Learned table: dL/dy [2, 3, 8] of posemb_case_input_bits(0, i), max_len
 * 8, at posemb_case_table_ids (case 0) or offset 2 (case 1). T5: the buckets, q and k of the T5
 * bias case, dL/dbias [4, 3, 43] of posemb_case_input_bits(0, i). */
#define POSEMB_CASE_FOPE_DIM 16
#define POSEMB_CASE_FOPE_HEADS 4
#define POSEMB_CASE_FOPE_KV_HEADS 2
#define POSEMB_CASE_TABLE_D 8
#define POSEMB_CASE_TABLE_LEN 8
static const int64_t posemb_case_table_ids[6] = {0, 5, 7, 7, 1, 5};

/* The config of the strict case: a rope block key the reader does not use. */
#define POSEMB_CASE_STRICT_CONFIG                                                         \
  "{\"hidden_size\": 256, \"num_attention_heads\": 4, \"rope_scaling\": {\"rope_type\": " \
  "\"default\", \"banana\": 1}}"

#endif

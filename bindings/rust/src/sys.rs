//! The raw declarations of posemb's C API (include/posemb/c/posemb.h), one to one. Every
//! function here is unsafe to call; the crate's root module wraps them safely.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int};

pub type posemb_status = c_int;
pub const POSEMB_OK: posemb_status = 0;
pub const POSEMB_ERROR_INVALID_ARGUMENT: posemb_status = 1;
pub const POSEMB_ERROR_OUT_OF_MEMORY: posemb_status = 2;
pub const POSEMB_ERROR_INTERNAL: posemb_status = 3;

pub type posemb_dtype = c_int; // 0 f32, 1 f16, 2 bf16
pub type posemb_layout = c_int; // 0 BSHD, 1 BHSD
pub type posemb_rotation = c_int; // 0 forward, 1 inverse, 2 transpose
pub type posemb_pairing = c_int; // 0 interleaved, 1 rotate_half
pub type posemb_position_kind = c_int;
pub type posemb_mrope_layout = c_int; // 0 chunked, 1 interleaved
pub type posemb_alibi_form = c_int; // 0 causal, 1 symmetric

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct posemb_shape {
    pub layout: posemb_layout,
    pub batch: i64,
    pub seq: i64,
    pub heads: i64,
    pub head_dim: i64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct posemb_positions {
    pub offset: i64,
    pub ids: *const i64,
    pub rows: i64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct posemb_rope_info {
    pub head_dim: i32,
    pub rotary_dim: i32,
    pub rotary_offset: i32,
    pub pairing: posemb_pairing,
    pub attention_scale: f64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct posemb_layer_attention {
    pub softmax_attention: i32,
    pub has_softmax_scale: i32,
    pub softmax_scale: f64,
    pub has_sliding_window: i32,
    pub sliding_window: i64,
    pub has_attention_chunk_size: i32,
    pub attention_chunk_size: i64,
    pub has_query_temperature: i32,
    pub query_temperature_floor_scale: f64,
    pub query_temperature_attn_scale: f64,
    pub query_temperature_position_offset: i64,
    pub has_logit_softcap: i32,
    pub logit_softcap: f64,
    pub attention_sinks: i32,
    pub alibi_bias_before_scale: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct posemb_t5_buckets {
    pub num_buckets: i32,
    pub max_distance: i32,
    pub bidirectional: i32,
}

/// FoPE's settings (ABI 1.4).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct posemb_fope_config {
    pub head_dim: i32,
    pub n_heads: i32,
    pub n_kv_heads: i32,
    pub theta: f64,
    pub train_length: i64,
    pub floor_ratio: f64,
    pub drop_clipped: i32,
    pub d_out: i32,
    pub padding_sin: f64,
    pub num_inv_freq: i32,
}

#[repr(C)]
pub struct posemb_fope {
    _opaque: [u8; 0],
}

#[repr(C)]
pub struct posemb_model {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct posemb_rope {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct posemb_rope_table {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct posemb_mrope {
    _opaque: [u8; 0],
}

extern "C" {
    pub fn posemb_abi_version() -> u32;
    pub fn posemb_version_string() -> *const c_char;
    pub fn posemb_last_error() -> *const c_char;

    pub fn posemb_model_load_config(
        path: *const c_char,
        seq_len: i64,
        strict: i32,
        out: *mut *mut posemb_model,
    ) -> posemb_status;
    pub fn posemb_model_load_gguf(
        path: *const c_char,
        seq_len: i64,
        strict: i32,
        out: *mut *mut posemb_model,
    ) -> posemb_status;
    pub fn posemb_model_parse_config(
        json: *const c_char,
        size: usize,
        seq_len: i64,
        strict: i32,
        out: *mut *mut posemb_model,
    ) -> posemb_status;
    pub fn posemb_model_free(model: *mut posemb_model);
    pub fn posemb_model_layer_count(model: *const posemb_model, out: *mut i64) -> posemb_status;
    pub fn posemb_model_heads(
        model: *const posemb_model,
        n_heads: *mut i32,
        n_kv_heads: *mut i32,
    ) -> posemb_status;
    pub fn posemb_model_layer_kind(
        model: *const posemb_model,
        layer: i64,
        out: *mut posemb_position_kind,
    ) -> posemb_status;
    pub fn posemb_model_layer_head_dim(
        model: *const posemb_model,
        layer: i64,
        out: *mut i32,
    ) -> posemb_status;
    pub fn posemb_model_layer_rope_type(
        model: *const posemb_model,
        layer: i64,
        out: *mut *const c_char,
    ) -> posemb_status;
    pub fn posemb_model_layer_attention(
        model: *const posemb_model,
        layer: i64,
        out: *mut posemb_layer_attention,
    ) -> posemb_status;
    pub fn posemb_model_layer_query_temperature_form(
        model: *const posemb_model,
        layer: i64,
        out: *mut i32,
    ) -> posemb_status;
    pub fn posemb_model_layer_t5_buckets(
        model: *const posemb_model,
        layer: i64,
        has: *mut i32,
        out: *mut posemb_t5_buckets,
    ) -> posemb_status;

    pub fn posemb_model_layer_rope(
        model: *const posemb_model,
        layer: i64,
        out: *mut *mut posemb_rope,
    ) -> posemb_status;
    pub fn posemb_rope_create(
        inv_freq: *const f64,
        n_inv_freq: usize,
        attention_scale: f64,
        pairing: posemb_pairing,
        head_dim: i32,
        rotary_offset: i32,
        out: *mut *mut posemb_rope,
    ) -> posemb_status;
    pub fn posemb_rope_create_default(
        head_dim: i32,
        rotary_dim: i32,
        base: f64,
        pairing: posemb_pairing,
        out: *mut *mut posemb_rope,
    ) -> posemb_status;
    pub fn posemb_rope_free(rope: *mut posemb_rope);
    pub fn posemb_rope_get_info(
        rope: *const posemb_rope,
        out: *mut posemb_rope_info,
    ) -> posemb_status;
    pub fn posemb_rope_inv_freq(
        rope: *const posemb_rope,
        out: *mut f64,
        capacity: usize,
        count: *mut usize,
    ) -> posemb_status;
    pub fn posemb_rope_rotate_inplace(
        rope: *const posemb_rope,
        dtype: posemb_dtype,
        x: *mut u8,
        shape: *const posemb_shape,
        positions: *const posemb_positions,
        rotation: posemb_rotation,
    ) -> posemb_status;
    pub fn posemb_rope_rotate(
        rope: *const posemb_rope,
        dtype: posemb_dtype,
        x: *const u8,
        x_shape: *const posemb_shape,
        out: *mut u8,
        out_shape: *const posemb_shape,
        out_seq_offset: i64,
        positions: *const posemb_positions,
        rotation: posemb_rotation,
    ) -> posemb_status;

    pub fn posemb_rope_table_create(
        rope: *const posemb_rope,
        first_position: i64,
        count: i64,
        out: *mut *mut posemb_rope_table,
    ) -> posemb_status;
    pub fn posemb_rope_table_free(table: *mut posemb_rope_table);
    pub fn posemb_rope_table_data(
        table: *const posemb_rope_table,
        cos: *mut *const f32,
        sin: *mut *const f32,
        rows: *mut i64,
        cols: *mut i64,
    ) -> posemb_status;
    pub fn posemb_rope_table_rotate_inplace(
        table: *const posemb_rope_table,
        dtype: posemb_dtype,
        x: *mut u8,
        shape: *const posemb_shape,
        positions: *const posemb_positions,
        rotation: posemb_rotation,
    ) -> posemb_status;
    pub fn posemb_rope_table_rotate(
        table: *const posemb_rope_table,
        dtype: posemb_dtype,
        x: *const u8,
        x_shape: *const posemb_shape,
        out: *mut u8,
        out_shape: *const posemb_shape,
        out_seq_offset: i64,
        positions: *const posemb_positions,
        rotation: posemb_rotation,
    ) -> posemb_status;

    pub fn posemb_mrope_create(
        rope: *const posemb_rope,
        sections: *const i32,
        layout: posemb_mrope_layout,
        out: *mut *mut posemb_mrope,
    ) -> posemb_status;
    pub fn posemb_mrope_free(mrope: *mut posemb_mrope);
    pub fn posemb_mrope_rotate_inplace(
        mrope: *const posemb_mrope,
        dtype: posemb_dtype,
        x: *mut u8,
        shape: *const posemb_shape,
        position_ids: *const i64,
        rows: i64,
        rotation: posemb_rotation,
    ) -> posemb_status;
    pub fn posemb_mrope_rotate(
        mrope: *const posemb_mrope,
        dtype: posemb_dtype,
        x: *const u8,
        x_shape: *const posemb_shape,
        out: *mut u8,
        out_shape: *const posemb_shape,
        out_seq_offset: i64,
        position_ids: *const i64,
        rows: i64,
        rotation: posemb_rotation,
    ) -> posemb_status;

    pub fn posemb_alibi_slopes(
        n_heads: i32,
        max_bias: f64,
        out: *mut f64,
        capacity: usize,
    ) -> posemb_status;
    pub fn posemb_alibi_bias(
        slopes: *const f64,
        heads: usize,
        q_positions: *const i64,
        q_len: usize,
        k_positions: *const i64,
        k_len: usize,
        form: posemb_alibi_form,
        out: *mut f32,
        capacity: usize,
    ) -> posemb_status;
    pub fn posemb_t5_buckets_of(
        buckets: *const posemb_t5_buckets,
        q_positions: *const i64,
        q_len: usize,
        k_positions: *const i64,
        k_len: usize,
        out: *mut i64,
        capacity: usize,
    ) -> posemb_status;
    pub fn posemb_t5_bias(
        buckets: *const posemb_t5_buckets,
        table: *const f32,
        heads: usize,
        q_positions: *const i64,
        q_len: usize,
        k_positions: *const i64,
        k_len: usize,
        out: *mut f32,
        capacity: usize,
    ) -> posemb_status;

    // ABI 1.4: FoPE and the gradients of training.
    pub fn posemb_model_layer_fope_config(
        model: *const posemb_model,
        layer: i64,
        out: *mut posemb_fope_config,
    ) -> posemb_status;
    pub fn posemb_fope_dims(
        config: *const posemb_fope_config,
        d_in: *mut i32,
        d_out: *mut i32,
    ) -> posemb_status;
    pub fn posemb_fope_create(
        config: *const posemb_fope_config,
        sin_coef: *const f32,
        cos_coef: *const f32,
        count: usize,
        out: *mut *mut posemb_fope,
    ) -> posemb_status;
    pub fn posemb_fope_free(fope: *mut posemb_fope);
    pub fn posemb_fope_rotate_inplace(
        fope: *const posemb_fope,
        dtype: posemb_dtype,
        x: *mut u8,
        shape: *const posemb_shape,
        positions: *const posemb_positions,
        rotation: posemb_rotation,
    ) -> posemb_status;
    pub fn posemb_fope_coefficient_gradients(
        fope: *const posemb_fope,
        dtype: posemb_dtype,
        x: *const u8,
        grad: *const u8,
        shape: *const posemb_shape,
        positions: *const posemb_positions,
        grad_sin_coef: *mut f64,
        grad_cos_coef: *mut f64,
        capacity: usize,
    ) -> posemb_status;
    pub fn posemb_position_table_gradient(
        dtype: posemb_dtype,
        grad: *const u8,
        batch: i64,
        seq: i64,
        d: i64,
        positions: *const posemb_positions,
        max_len: i64,
        out: *mut f64,
        capacity: usize,
    ) -> posemb_status;
    pub fn posemb_t5_table_gradient(
        buckets: *const posemb_t5_buckets,
        grad: *const f32,
        heads: usize,
        q_positions: *const i64,
        q_len: usize,
        k_positions: *const i64,
        k_len: usize,
        out: *mut f64,
        capacity: usize,
    ) -> posemb_status;
}

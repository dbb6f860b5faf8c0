//! posemb for Rust: positional embeddings of transformer models (RoPE and its scaled variants,
//! per-layer schemes read from a model's config.json or GGUF file, M-RoPE, ALiBi, T5 buckets),
//! a safe layer over posemb's C API (`sys`, libposemb_c). Slices in, `Result<_, Error>` out; a
//! slice whose length disagrees with its shape is an `Error`, never a read past its end.
//!
//! ```no_run
//! use posemb::RotarySource;                               // rotate_inplace, rotate
//! let model = posemb::Model::load_config("config.json", None, false)?;
//! let rope = model.layer_rope(3)?;                         // layer L = 3
//! let mut q = vec![0.0f32; 4 * 32 * 128];                  // q: [1, 4, 32, 128]
//! let shape = posemb::Shape::bshd(1, 4, 32, 128);
//! let positions = [10, 11, 12, 13];                        // P, one per token
//! rope.rotate_inplace(&mut q, shape, posemb::Positions::Ids { ids: &positions, rows: 1 },
//!                     posemb::Rotation::Forward)?;
//! # Ok::<(), posemb::Error>(())
//! ```
//!
//! Threads: every handle (`Model`, `Rope`, `RopeTable`, `Mrope`) is immutable after it is made
//! and the C API allows one handle to be used by many threads at once and freed from any
//! thread, so all are `Send` and `Sync`. The C API's message of a failed call is thread-local;
//! each wrapper reads it on the calling thread right after the call.

pub mod sys;

use std::ffi::{CStr, CString};
use std::fmt;
use std::ptr::{self, NonNull};

/// What went wrong, with posemb's own message ("posemb: <parameter> = <value>: expected ...").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub status: Status,
    pub message: String,
}

/// The C API's status of a failed call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    InvalidArgument,
    OutOfMemory,
    Internal,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn check(status: sys::posemb_status) -> Result<()> {
    if status == sys::POSEMB_OK {
        return Ok(());
    }
    // SAFETY: posemb_last_error never returns NULL; the text lives until this thread's next call.
    let message = unsafe { CStr::from_ptr(sys::posemb_last_error()) }
        .to_string_lossy()
        .into_owned();
    let status = match status {
        sys::POSEMB_ERROR_INVALID_ARGUMENT => Status::InvalidArgument,
        sys::POSEMB_ERROR_OUT_OF_MEMORY => Status::OutOfMemory,
        _ => Status::Internal,
    };
    Err(Error { status, message })
}

/// An argument error of this wrapper's own checks, in posemb's form.
fn invalid(parameter: &str, value: impl fmt::Display, expected: &str) -> Error {
    Error {
        status: Status::InvalidArgument,
        message: format!("posemb: {parameter} = {value}: {expected}"),
    }
}

/// `(major << 16) | minor` of the C ABI of the library loaded.
pub fn abi_version() -> u32 {
    unsafe { sys::posemb_abi_version() }
}

/// posemb's version, "major.minor.patch".
pub fn version() -> &'static str {
    // SAFETY: a static NUL-terminated string.
    unsafe { CStr::from_ptr(sys::posemb_version_string()) }
        .to_str()
        .unwrap_or("")
}

/// IEEE binary16, as its bits.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct F16(pub u16);

/// bfloat16, as its bits.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BF16(pub u16);

/// A storage type of activations: f32, F16 or BF16.
pub trait Element: Copy + sealed::Sealed {
    const DTYPE: sys::posemb_dtype;
}
impl Element for f32 {
    const DTYPE: sys::posemb_dtype = 0;
}
impl Element for F16 {
    const DTYPE: sys::posemb_dtype = 1;
}
impl Element for BF16 {
    const DTYPE: sys::posemb_dtype = 2;
}
mod sealed {
    /// The C functions a RotarySource is rotated by (not nameable outside the crate).
    pub trait Source {
        type Handle;
        const ROTATE_INPLACE: super::InplaceFn<Self::Handle>;
        const ROTATE: super::RotateFn<Self::Handle>;
        fn handle(&self) -> *const Self::Handle;
    }

    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for super::F16 {}
    impl Sealed for super::BF16 {}
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// [batch, seq, heads, head_dim]
    Bshd = 0,
    /// [batch, heads, seq, head_dim]
    Bhsd = 1,
}

/// A dense activation buffer's layout and dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub layout: Layout,
    pub batch: i64,
    pub seq: i64,
    pub heads: i64,
    pub head_dim: i64,
}

impl Shape {
    pub fn bshd(batch: i64, seq: i64, heads: i64, head_dim: i64) -> Shape {
        Shape {
            layout: Layout::Bshd,
            batch,
            seq,
            heads,
            head_dim,
        }
    }
    pub fn bhsd(batch: i64, heads: i64, seq: i64, head_dim: i64) -> Shape {
        Shape {
            layout: Layout::Bhsd,
            batch,
            seq,
            heads,
            head_dim,
        }
    }
    fn raw(&self) -> sys::posemb_shape {
        sys::posemb_shape {
            layout: self.layout as i32,
            batch: self.batch,
            seq: self.seq,
            heads: self.heads,
            head_dim: self.head_dim,
        }
    }
    /// Throws (returns Err) unless `len` is the element count (the C API checks the dimensions).
    fn require_len(&self, name: &str, len: usize) -> Result<()> {
        let dims = [self.batch, self.seq, self.heads, self.head_dim];
        let count = dims
            .iter()
            .try_fold(1i64, |n, &d| if d >= 1 { n.checked_mul(d) } else { None });
        match count {
            Some(n) if n as u128 == len as u128 => Ok(()),
            Some(n) => Err(invalid(
                &format!("{name}.len()"),
                len,
                &format!("expected batch * seq * heads * head_dim = {n}"),
            )),
            None => Ok(()), // a zero, negative or overflowing dimension: the C API names it
        }
    }
}

/// Token positions: token s of every batch row at `offset + s`, or per token (`ids`:
/// [rows, seq] row-major, rows 1 or batch).
#[derive(Clone, Copy, Debug)]
pub enum Positions<'a> {
    Offset(i64),
    Ids { ids: &'a [i64], rows: i64 },
}

impl Positions<'_> {
    fn raw(&self, seq: i64) -> Result<sys::posemb_positions> {
        match *self {
            Positions::Offset(offset) => Ok(sys::posemb_positions {
                offset,
                ids: ptr::null(),
                rows: 0,
            }),
            Positions::Ids { ids, rows } => {
                if rows.checked_mul(seq).map(|n| n as u128) != Some(ids.len() as u128) {
                    return Err(invalid(
                        "positions.ids.len()",
                        ids.len(),
                        &format!("expected rows * seq = {rows} * {seq}"),
                    ));
                }
                Ok(sys::posemb_positions {
                    offset: 0,
                    ids: ids.as_ptr(),
                    rows,
                })
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rotation {
    /// R(p)
    Forward = 0,
    /// R(p)^T = R(-p)
    Inverse = 1,
    /// m R(p)^T: the backward, dL/dy into dL/dx (ABI 1.3)
    Transpose = 2,
}

/// Which features form rotary pair i: Interleaved (2i, 2i + 1), RotateHalf (i, i + rotary_dim/2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pairing {
    Interleaved = 0,
    RotateHalf = 1,
}

/// What a layer does with positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PositionKind {
    Rope = 0,
    Fope = 1,
    Alibi = 2,
    Learned = 3,
    Sinusoidal = 4,
    RelativeBias = 5,
    None = 6,
}

/// A RoPE source's numbers (inv_freq apart: `Rope::inv_freq`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RopeInfo {
    pub head_dim: i32,
    pub rotary_dim: i32,
    pub rotary_offset: i32,
    pub pairing: Pairing,
    pub attention_scale: f64,
}

/// How a query temperature grows with the position p.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TemperatureForm {
    /// log1p(floor((p + position_offset) / floor_scale)) attn_scale + 1 (Llama 4, Ministral 3)
    FloorLog = 0,
    /// (1 + (p + position_offset) / floor_scale) ^ attn_scale (Beam)
    Power = 1,
}

/// A layer's query temperature: q at p times the factor its form gives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueryTemperature {
    pub floor_scale: f64,
    pub attn_scale: f64,
    pub position_offset: i64,
    pub form: TemperatureForm,
}

/// A layer's attention settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerAttention {
    pub softmax_attention: bool,
    pub softmax_scale: Option<f64>,
    pub sliding_window: Option<i64>,
    pub attention_chunk_size: Option<i64>,
    pub query_temperature: Option<QueryTemperature>,
    pub logit_softcap: Option<f64>,
    pub attention_sinks: bool,
    pub alibi_bias_before_scale: bool,
}

/// T5 relative-position buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct T5Buckets {
    pub num_buckets: i32,
    pub max_distance: i32,
    pub bidirectional: bool,
}

impl T5Buckets {
    fn raw(&self) -> sys::posemb_t5_buckets {
        sys::posemb_t5_buckets {
            num_buckets: self.num_buckets,
            max_distance: self.max_distance,
            bidirectional: self.bidirectional as i32,
        }
    }
}

/// Calls make(&mut out) and wraps the handle it wrote.
fn made<T>(make: impl FnOnce(*mut *mut T) -> sys::posemb_status) -> Result<NonNull<T>> {
    let mut out: *mut T = ptr::null_mut();
    check(make(&mut out))?;
    NonNull::new(out).ok_or_else(|| Error {
        status: Status::Internal,
        message: "posemb: a NULL handle".into(),
    })
}

/// value when the C struct's has_* flag is set.
fn opt<T>(has: i32, value: T) -> Option<T> {
    (has != 0).then_some(value)
}

fn c_path(path: &str) -> Result<CString> {
    CString::new(path).map_err(|_| invalid("path", path, "expected no NUL byte"))
}

fn seq_len_of(seq_len: Option<i64>) -> Result<i64> {
    match seq_len {
        None => Ok(0),
        Some(n) if n >= 1 => Ok(n),
        Some(n) => Err(invalid(
            "seq_len",
            n,
            "expected a length >= 1 (None: no length)",
        )),
    }
}

/// A model's positions, per layer, from a config.json or a GGUF file.
pub struct Model(NonNull<sys::posemb_model>);

// SAFETY: immutable after loading; the C API allows concurrent use and freeing from any thread.
unsafe impl Send for Model {}
unsafe impl Sync for Model {}

impl Drop for Model {
    fn drop(&mut self) {
        unsafe { sys::posemb_model_free(self.0.as_ptr()) }
    }
}

impl Model {
    /// A HuggingFace config.json. seq_len: the length dynamic NTK and LongRoPE depend on;
    /// strict: refuse keys the reader does not use.
    pub fn load_config(path: &str, seq_len: Option<i64>, strict: bool) -> Result<Model> {
        let (p, n) = (c_path(path)?, seq_len_of(seq_len)?);
        made(|out| unsafe { sys::posemb_model_load_config(p.as_ptr(), n, strict as i32, out) })
            .map(Model)
    }

    /// A GGUF file; seq_len is llama.cpp's context per sequence.
    pub fn load_gguf(path: &str, seq_len: Option<i64>, strict: bool) -> Result<Model> {
        let (p, n) = (c_path(path)?, seq_len_of(seq_len)?);
        made(|out| unsafe { sys::posemb_model_load_gguf(p.as_ptr(), n, strict as i32, out) })
            .map(Model)
    }

    /// config.json text.
    pub fn parse_config(json: &str, seq_len: Option<i64>, strict: bool) -> Result<Model> {
        let n = seq_len_of(seq_len)?;
        made(|out| unsafe {
            sys::posemb_model_parse_config(json.as_ptr().cast(), json.len(), n, strict as i32, out)
        })
        .map(Model)
    }

    fn raw(&self) -> *const sys::posemb_model {
        self.0.as_ptr()
    }

    pub fn layer_count(&self) -> usize {
        let mut n = 0i64;
        // A valid handle and out-pointer: cannot fail.
        let _ = check(unsafe { sys::posemb_model_layer_count(self.raw(), &mut n) });
        n as usize
    }

    /// (query heads, key/value heads); 0 when the file gives none.
    pub fn heads(&self) -> (i32, i32) {
        let (mut h, mut kv) = (0, 0);
        let _ = check(unsafe { sys::posemb_model_heads(self.raw(), &mut h, &mut kv) });
        (h, kv)
    }

    pub fn layer_kind(&self, layer: i64) -> Result<PositionKind> {
        let mut kind = 0;
        check(unsafe { sys::posemb_model_layer_kind(self.raw(), layer, &mut kind) })?;
        const KINDS: [PositionKind; 7] = [
            PositionKind::Rope,
            PositionKind::Fope,
            PositionKind::Alibi,
            PositionKind::Learned,
            PositionKind::Sinusoidal,
            PositionKind::RelativeBias,
            PositionKind::None,
        ];
        KINDS
            .get(kind as usize)
            .copied()
            .ok_or_else(|| invalid("kind", kind, "expected a known position kind"))
    }

    pub fn layer_head_dim(&self, layer: i64) -> Result<i32> {
        let mut d = 0;
        check(unsafe { sys::posemb_model_layer_head_dim(self.raw(), layer, &mut d) })?;
        Ok(d)
    }

    /// The layer's HF rope type ("" without RoPE).
    pub fn layer_rope_type(&self, layer: i64) -> Result<&str> {
        let mut s: *const std::os::raw::c_char = ptr::null();
        check(unsafe { sys::posemb_model_layer_rope_type(self.raw(), layer, &mut s) })?;
        // SAFETY: a NUL-terminated string that lives as long as the model (borrowed from self).
        Ok(unsafe { CStr::from_ptr(s) }.to_str().unwrap_or(""))
    }

    pub fn layer_attention(&self, layer: i64) -> Result<LayerAttention> {
        let mut a = sys::posemb_layer_attention::default();
        check(unsafe { sys::posemb_model_layer_attention(self.raw(), layer, &mut a) })?;
        let mut form = 0;
        check(unsafe {
            sys::posemb_model_layer_query_temperature_form(self.raw(), layer, &mut form)
        })?;
        Ok(LayerAttention {
            softmax_attention: a.softmax_attention != 0,
            softmax_scale: opt(a.has_softmax_scale, a.softmax_scale),
            sliding_window: opt(a.has_sliding_window, a.sliding_window),
            attention_chunk_size: opt(a.has_attention_chunk_size, a.attention_chunk_size),
            query_temperature: opt(
                a.has_query_temperature,
                QueryTemperature {
                    floor_scale: a.query_temperature_floor_scale,
                    attn_scale: a.query_temperature_attn_scale,
                    position_offset: a.query_temperature_position_offset,
                    form: if form == 1 {
                        TemperatureForm::Power
                    } else {
                        TemperatureForm::FloorLog
                    },
                },
            ),
            logit_softcap: opt(a.has_logit_softcap, a.logit_softcap),
            attention_sinks: a.attention_sinks != 0,
            alibi_bias_before_scale: a.alibi_bias_before_scale != 0,
        })
    }

    pub fn layer_t5_buckets(&self, layer: i64) -> Result<Option<T5Buckets>> {
        let (mut has, mut b) = (0, sys::posemb_t5_buckets::default());
        check(unsafe { sys::posemb_model_layer_t5_buckets(self.raw(), layer, &mut has, &mut b) })?;
        Ok((has != 0).then(|| T5Buckets {
            num_buckets: b.num_buckets,
            max_distance: b.max_distance,
            bidirectional: b.bidirectional != 0,
        }))
    }

    /// The FoPE settings of a fope layer (ABI 1.4).
    pub fn layer_fope_config(&self, layer: i64) -> Result<FopeConfig> {
        let mut c = sys::posemb_fope_config::default();
        check(unsafe { sys::posemb_model_layer_fope_config(self.raw(), layer, &mut c) })?;
        Ok(FopeConfig::from_raw(&c))
    }

    /// The RoPE of a rope layer at the model's seq_len.
    pub fn layer_rope(&self, layer: i64) -> Result<Rope> {
        made(|out| unsafe { sys::posemb_model_layer_rope(self.raw(), layer, out) }).map(Rope)
    }
}

type InplaceFn<H> = unsafe extern "C" fn(
    *const H,
    sys::posemb_dtype,
    *mut u8,
    *const sys::posemb_shape,
    *const sys::posemb_positions,
    sys::posemb_rotation,
) -> sys::posemb_status;

type RotateFn<H> = unsafe extern "C" fn(
    *const H,
    sys::posemb_dtype,
    *const u8,
    *const sys::posemb_shape,
    *mut u8,
    *const sys::posemb_shape,
    i64,
    *const sys::posemb_positions,
    sys::posemb_rotation,
) -> sys::posemb_status;

/// A source rotated at position values (`Rope`, `RopeTable`): both rotations are this trait's
/// default methods over the source's pair of C functions (`Mrope` reads position ids instead).
pub trait RotarySource: sealed::Source {
    /// x: [shape], rotated in place.
    fn rotate_inplace<T: Element>(
        &self,
        x: &mut [T],
        shape: Shape,
        positions: Positions,
        rotation: Rotation,
    ) -> Result<()> {
        shape.require_len("x", x.len())?;
        let p = positions.raw(shape.seq)?;
        check(unsafe {
            Self::ROTATE_INPLACE(
                self.handle(),
                T::DTYPE,
                x.as_mut_ptr().cast(),
                &shape.raw(),
                &p,
                rotation as i32,
            )
        })
    }

    /// x: [x_shape] into out: [out_shape], x's tokens at out's tokens out_seq_offset.. (a KV-cache slot).
    fn rotate<T: Element>(
        &self,
        x: &[T],
        x_shape: Shape,
        out: &mut [T],
        out_shape: Shape,
        out_seq_offset: i64,
        positions: Positions,
        rotation: Rotation,
    ) -> Result<()> {
        x_shape.require_len("x", x.len())?;
        out_shape.require_len("out", out.len())?;
        let p = positions.raw(x_shape.seq)?;
        let (xs, os) = (x_shape.raw(), out_shape.raw());
        check(unsafe {
            Self::ROTATE(
                self.handle(),
                T::DTYPE,
                x.as_ptr().cast(),
                &xs,
                out.as_mut_ptr().cast(),
                &os,
                out_seq_offset,
                &p,
                rotation as i32,
            )
        })
    }
}

impl sealed::Source for Rope {
    type Handle = sys::posemb_rope;
    const ROTATE_INPLACE: InplaceFn<sys::posemb_rope> = sys::posemb_rope_rotate_inplace;
    const ROTATE: RotateFn<sys::posemb_rope> = sys::posemb_rope_rotate;
    fn handle(&self) -> *const sys::posemb_rope {
        self.raw()
    }
}
impl RotarySource for Rope {}

impl sealed::Source for RopeTable {
    type Handle = sys::posemb_rope_table;
    const ROTATE_INPLACE: InplaceFn<sys::posemb_rope_table> = sys::posemb_rope_table_rotate_inplace;
    const ROTATE: RotateFn<sys::posemb_rope_table> = sys::posemb_rope_table_rotate;
    fn handle(&self) -> *const sys::posemb_rope_table {
        self.0.as_ptr()
    }
}
impl RotarySource for RopeTable {}

/// A RoPE source: a layer's, or explicit parameters.
pub struct Rope(NonNull<sys::posemb_rope>);

// SAFETY: immutable after it is made (see the crate's comment).
unsafe impl Send for Rope {}
unsafe impl Sync for Rope {}

impl Drop for Rope {
    fn drop(&mut self) {
        unsafe { sys::posemb_rope_free(self.0.as_ptr()) }
    }
}

impl Rope {
    /// inv_freq: rotary_dim / 2 radians per position.
    pub fn new(
        inv_freq: &[f64],
        attention_scale: f64,
        pairing: Pairing,
        head_dim: i32,
        rotary_offset: i32,
    ) -> Result<Rope> {
        made(|out| unsafe {
            sys::posemb_rope_create(
                inv_freq.as_ptr(),
                inv_freq.len(),
                attention_scale,
                pairing as i32,
                head_dim,
                rotary_offset,
                out,
            )
        })
        .map(Rope)
    }

    /// Plain RoPE: base^(-2i / rotary_dim), attention_scale 1.
    pub fn default_rope(
        head_dim: i32,
        rotary_dim: i32,
        base: f64,
        pairing: Pairing,
    ) -> Result<Rope> {
        made(|out| unsafe {
            sys::posemb_rope_create_default(head_dim, rotary_dim, base, pairing as i32, out)
        })
        .map(Rope)
    }

    fn raw(&self) -> *const sys::posemb_rope {
        self.0.as_ptr()
    }

    pub fn info(&self) -> RopeInfo {
        let mut i = sys::posemb_rope_info::default();
        let _ = check(unsafe { sys::posemb_rope_get_info(self.raw(), &mut i) });
        RopeInfo {
            head_dim: i.head_dim,
            rotary_dim: i.rotary_dim,
            rotary_offset: i.rotary_offset,
            pairing: if i.pairing == 0 {
                Pairing::Interleaved
            } else {
                Pairing::RotateHalf
            },
            attention_scale: i.attention_scale,
        }
    }

    pub fn inv_freq(&self) -> Vec<f64> {
        let mut v = vec![0.0; (self.info().rotary_dim / 2) as usize];
        let mut n = 0usize;
        let _ = check(unsafe {
            sys::posemb_rope_inv_freq(self.raw(), v.as_mut_ptr(), v.len(), &mut n)
        });
        v
    }
}

/// A cos/sin table of positions [first_position, first_position + count), float32.
pub struct RopeTable(NonNull<sys::posemb_rope_table>);

// SAFETY: immutable after it is made (see the crate's comment).
unsafe impl Send for RopeTable {}
unsafe impl Sync for RopeTable {}

impl Drop for RopeTable {
    fn drop(&mut self) {
        unsafe { sys::posemb_rope_table_free(self.0.as_ptr()) }
    }
}

impl RopeTable {
    pub fn new(rope: &Rope, first_position: i64, count: i64) -> Result<RopeTable> {
        made(|out| unsafe { sys::posemb_rope_table_create(rope.raw(), first_position, count, out) })
            .map(RopeTable)
    }

    /// (cos, sin), each [count, rotary_dim / 2] row-major, and the column count.
    pub fn data(&self) -> (&[f32], &[f32], usize) {
        let (mut c, mut s, mut rows, mut cols) = (ptr::null(), ptr::null(), 0i64, 0i64);
        let _ = check(unsafe {
            sys::posemb_rope_table_data(self.0.as_ptr(), &mut c, &mut s, &mut rows, &mut cols)
        });
        let n = (rows * cols) as usize;
        // SAFETY: two arrays of rows * cols floats that live as long as the table.
        unsafe {
            (
                std::slice::from_raw_parts(c, n),
                std::slice::from_raw_parts(s, n),
                cols as usize,
            )
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MropeLayout {
    Chunked = 0,
    Interleaved = 1,
}

/// M-RoPE: a RoPE source with pairs per axis (t, h, w).
pub struct Mrope(NonNull<sys::posemb_mrope>);

// SAFETY: immutable after it is made (see the crate's comment).
unsafe impl Send for Mrope {}
unsafe impl Sync for Mrope {}

impl Drop for Mrope {
    fn drop(&mut self) {
        unsafe { sys::posemb_mrope_free(self.0.as_ptr()) }
    }
}

impl Mrope {
    pub fn new(rope: &Rope, sections: [i32; 3], layout: MropeLayout) -> Result<Mrope> {
        made(|out| unsafe {
            sys::posemb_mrope_create(rope.raw(), sections.as_ptr(), layout as i32, out)
        })
        .map(Mrope)
    }

    fn require_ids(ids: &[i64], rows: i64, seq: i64) -> Result<()> {
        let n = rows.checked_mul(seq).and_then(|n| n.checked_mul(3));
        if n.map(|n| n as u128) != Some(ids.len() as u128) {
            return Err(invalid(
                "position_ids.len()",
                ids.len(),
                &format!("expected 3 * rows * seq = 3 * {rows} * {seq}"),
            ));
        }
        Ok(())
    }

    /// position_ids: [3, rows, seq] (rows 1 or batch).
    pub fn rotate_inplace<T: Element>(
        &self,
        x: &mut [T],
        shape: Shape,
        position_ids: &[i64],
        rows: i64,
        rotation: Rotation,
    ) -> Result<()> {
        shape.require_len("x", x.len())?;
        Self::require_ids(position_ids, rows, shape.seq)?;
        check(unsafe {
            sys::posemb_mrope_rotate_inplace(
                self.0.as_ptr(),
                T::DTYPE,
                x.as_mut_ptr().cast(),
                &shape.raw(),
                position_ids.as_ptr(),
                rows,
                rotation as i32,
            )
        })
    }

    pub fn rotate<T: Element>(
        &self,
        x: &[T],
        x_shape: Shape,
        out: &mut [T],
        out_shape: Shape,
        out_seq_offset: i64,
        position_ids: &[i64],
        rows: i64,
        rotation: Rotation,
    ) -> Result<()> {
        x_shape.require_len("x", x.len())?;
        out_shape.require_len("out", out.len())?;
        Self::require_ids(position_ids, rows, x_shape.seq)?;
        check(unsafe {
            sys::posemb_mrope_rotate(
                self.0.as_ptr(),
                T::DTYPE,
                x.as_ptr().cast(),
                &x_shape.raw(),
                out.as_mut_ptr().cast(),
                &out_shape.raw(),
                out_seq_offset,
                position_ids.as_ptr(),
                rows,
                rotation as i32,
            )
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlibiForm {
    Causal = 0,
    Symmetric = 1,
}

/// ALiBi slopes of n_heads heads (max_bias 8 for BLOOM and MPT).
pub fn alibi_slopes(n_heads: i32, max_bias: f64) -> Result<Vec<f64>> {
    let mut v = vec![0.0; n_heads.max(1) as usize];
    check(unsafe { sys::posemb_alibi_slopes(n_heads, max_bias, v.as_mut_ptr(), v.len()) })?;
    Ok(v)
}

/// bias [heads, q_len, k_len].
pub fn alibi_bias(
    slopes: &[f64],
    q_positions: &[i64],
    k_positions: &[i64],
    form: AlibiForm,
) -> Result<Vec<f32>> {
    let mut out = vec![0.0f32; slopes.len() * q_positions.len() * k_positions.len()];
    check(unsafe {
        sys::posemb_alibi_bias(
            slopes.as_ptr(),
            slopes.len(),
            q_positions.as_ptr(),
            q_positions.len(),
            k_positions.as_ptr(),
            k_positions.len(),
            form as i32,
            out.as_mut_ptr(),
            out.len(),
        )
    })?;
    Ok(out)
}

/// T5 bucket ids [q_len, k_len].
pub fn t5_buckets(
    buckets: T5Buckets,
    q_positions: &[i64],
    k_positions: &[i64],
) -> Result<Vec<i64>> {
    let mut out = vec![0i64; q_positions.len() * k_positions.len()];
    check(unsafe {
        sys::posemb_t5_buckets_of(
            &buckets.raw(),
            q_positions.as_ptr(),
            q_positions.len(),
            k_positions.as_ptr(),
            k_positions.len(),
            out.as_mut_ptr(),
            out.len(),
        )
    })?;
    Ok(out)
}

/// T5 bias [heads, q_len, k_len] from the learned table [num_buckets, heads].
pub fn t5_bias(
    buckets: T5Buckets,
    table: &[f32],
    heads: usize,
    q_positions: &[i64],
    k_positions: &[i64],
) -> Result<Vec<f32>> {
    if buckets.num_buckets < 1 || table.len() as u128 != buckets.num_buckets as u128 * heads as u128
    {
        return Err(invalid(
            "table.len()",
            table.len(),
            &format!(
                "expected num_buckets * heads = {} * {heads}",
                buckets.num_buckets
            ),
        ));
    }
    let mut out = vec![0.0f32; heads * q_positions.len() * k_positions.len()];
    check(unsafe {
        sys::posemb_t5_bias(
            &buckets.raw(),
            table.as_ptr(),
            heads,
            q_positions.as_ptr(),
            q_positions.len(),
            k_positions.as_ptr(),
            k_positions.len(),
            out.as_mut_ptr(),
            out.len(),
        )
    })?;
    Ok(out)
}

// ---- FoPE and the gradients of training (ABI 1.4)

/// FoPE's settings (posemb_fope_config): frequencies below 2 pi / train_length * floor_ratio
/// clipped (dropped when drop_clipped), or the first num_inv_freq kept when it is > 0; d_out
/// mixed slots (0: the default); n_kv_heads coefficient heads (0: n_heads).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FopeConfig {
    pub head_dim: i32,
    pub n_heads: i32,
    pub n_kv_heads: i32,
    pub theta: f64,
    pub train_length: i64,
    pub floor_ratio: f64,
    pub drop_clipped: bool,
    pub d_out: i32,
    pub padding_sin: f64,
    pub num_inv_freq: i32,
}

impl FopeConfig {
    /// head_dim, n_heads and train_length with the C++ defaults for the rest (theta 1e4, floor
    /// ratio 1, clipped frequencies dropped, padding sin 1).
    pub fn new(head_dim: i32, n_heads: i32, train_length: i64) -> FopeConfig {
        FopeConfig {
            head_dim,
            n_heads,
            n_kv_heads: 0,
            theta: 10000.0,
            train_length,
            floor_ratio: 1.0,
            drop_clipped: true,
            d_out: 0,
            padding_sin: 1.0,
            num_inv_freq: 0,
        }
    }

    fn raw(&self) -> sys::posemb_fope_config {
        sys::posemb_fope_config {
            head_dim: self.head_dim,
            n_heads: self.n_heads,
            n_kv_heads: self.n_kv_heads,
            theta: self.theta,
            train_length: self.train_length,
            floor_ratio: self.floor_ratio,
            drop_clipped: self.drop_clipped as i32,
            d_out: self.d_out,
            padding_sin: self.padding_sin,
            num_inv_freq: self.num_inv_freq,
        }
    }

    fn from_raw(c: &sys::posemb_fope_config) -> FopeConfig {
        FopeConfig {
            head_dim: c.head_dim,
            n_heads: c.n_heads,
            n_kv_heads: c.n_kv_heads,
            theta: c.theta,
            train_length: c.train_length,
            floor_ratio: c.floor_ratio,
            drop_clipped: c.drop_clipped != 0,
            d_out: c.d_out,
            padding_sin: c.padding_sin,
            num_inv_freq: c.num_inv_freq,
        }
    }

    /// (D_in, D_out): the frequencies kept and the mixed slots.
    pub fn dims(&self) -> Result<(i32, i32)> {
        let (mut d_in, mut d_out) = (0, 0);
        check(unsafe { sys::posemb_fope_dims(&self.raw(), &mut d_in, &mut d_out) })?;
        Ok((d_in, d_out))
    }
}

/// FoPE with a checkpoint's coefficients (copied): A_sin, A_cos [n_kv_heads, D_in, D_out]; the
/// handle and the elements of one coefficient array.
pub struct Fope(NonNull<sys::posemb_fope>, usize);

// SAFETY: immutable after it is made (see the crate's comment).
unsafe impl Send for Fope {}
unsafe impl Sync for Fope {}

impl Drop for Fope {
    fn drop(&mut self) {
        unsafe { sys::posemb_fope_free(self.0.as_ptr()) }
    }
}

impl Fope {
    pub fn new(config: &FopeConfig, sin_coef: &[f32], cos_coef: &[f32]) -> Result<Fope> {
        if sin_coef.len() != cos_coef.len() {
            return Err(invalid(
                "cos_coef.len()",
                cos_coef.len(),
                &format!("expected sin_coef.len() = {}", sin_coef.len()),
            ));
        }
        made(|out| unsafe {
            sys::posemb_fope_create(
                &config.raw(),
                sin_coef.as_ptr(),
                cos_coef.as_ptr(),
                sin_coef.len(),
                out,
            )
        })
        .map(|handle| Fope(handle, sin_coef.len()))
    }

    /// x: [shape] (n_heads or n_kv_heads heads) rotated in place; Rotation::Transpose turns
    /// dL/dy into dL/dx.
    pub fn rotate_inplace<T: Element>(
        &self,
        x: &mut [T],
        shape: Shape,
        positions: Positions,
        rotation: Rotation,
    ) -> Result<()> {
        shape.require_len("x", x.len())?;
        let p = positions.raw(shape.seq)?;
        check(unsafe {
            sys::posemb_fope_rotate_inplace(
                self.0.as_ptr(),
                T::DTYPE,
                x.as_mut_ptr().cast(),
                &shape.raw(),
                &p,
                rotation as i32,
            )
        })
    }

    /// (dL/dA_sin, dL/dA_cos), each [n_kv_heads, D_in, D_out] in double, of y = fope(x) from
    /// its input x and grad = dL/dy, both [shape].
    pub fn coefficient_gradients<T: Element>(
        &self,
        x: &[T],
        grad: &[T],
        shape: Shape,
        positions: Positions,
    ) -> Result<(Vec<f64>, Vec<f64>)> {
        shape.require_len("x", x.len())?;
        shape.require_len("grad", grad.len())?;
        let p = positions.raw(shape.seq)?;
        let (mut d_sin, mut d_cos) = (vec![0.0; self.1], vec![0.0; self.1]);
        check(unsafe {
            sys::posemb_fope_coefficient_gradients(
                self.0.as_ptr(),
                T::DTYPE,
                x.as_ptr().cast(),
                grad.as_ptr().cast(),
                &shape.raw(),
                &p,
                d_sin.as_mut_ptr(),
                d_cos.as_mut_ptr(),
                self.1,
            )
        })?;
        Ok((d_sin, d_cos))
    }
}

/// dL/dtable [max_len, d] (double) of a learned table added to token embeddings, from grad =
/// dL/dy [batch, seq, d].
pub fn position_table_gradient<T: Element>(
    grad: &[T],
    batch: i64,
    seq: i64,
    d: i64,
    positions: Positions,
    max_len: i64,
) -> Result<Vec<f64>> {
    let n = [batch, seq, d]
        .iter()
        .try_fold(1i64, |n, &x| if x >= 1 { n.checked_mul(x) } else { None });
    if let Some(n) = n {
        if n as u128 != grad.len() as u128 {
            return Err(invalid(
                "grad.len()",
                grad.len(),
                &format!("expected batch * seq * d = {n}"),
            ));
        }
    }
    let p = positions.raw(seq)?;
    let size = if max_len >= 1 && d >= 1 {
        (max_len as usize).saturating_mul(d as usize)
    } else {
        0
    };
    let mut out = vec![0.0f64; size];
    check(unsafe {
        sys::posemb_position_table_gradient(
            T::DTYPE,
            grad.as_ptr().cast(),
            batch,
            seq,
            d,
            &p,
            max_len,
            out.as_mut_ptr(),
            out.len(),
        )
    })?;
    Ok(out)
}

/// dL/dtable [num_buckets, heads] (double) of the T5 bias, from grad = dL/dbias [heads, q_len,
/// k_len].
pub fn t5_table_gradient(
    buckets: T5Buckets,
    grad: &[f32],
    heads: usize,
    q_positions: &[i64],
    k_positions: &[i64],
) -> Result<Vec<f64>> {
    if grad.len() as u128 != heads as u128 * q_positions.len() as u128 * k_positions.len() as u128 {
        return Err(invalid(
            "grad.len()",
            grad.len(),
            &format!(
                "expected heads * q_len * k_len = {heads} * {} * {}",
                q_positions.len(),
                k_positions.len()
            ),
        ));
    }
    let mut out = vec![0.0f64; buckets.num_buckets.max(0) as usize * heads];
    check(unsafe {
        sys::posemb_t5_table_gradient(
            &buckets.raw(),
            grad.as_ptr(),
            heads,
            q_positions.as_ptr(),
            q_positions.len(),
            k_positions.as_ptr(),
            k_positions.len(),
            out.as_mut_ptr(),
            out.len(),
        )
    })?;
    Ok(out)
}

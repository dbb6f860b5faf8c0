package posemb

/*
#include <stdlib.h>
#include "posemb/c/posemb.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Model holds a model's positions, per layer, from a config.json or a GGUF file.
type Model struct{ p *C.posemb_model }

func newModel(load func(out **C.posemb_model) C.posemb_status) (*Model, error) {
	var p *C.posemb_model
	if err := call(func() C.posemb_status { return load(&p) }); err != nil {
		return nil, err
	}
	m := &Model{p}
	runtime.SetFinalizer(m, (*Model).Close)
	return m, nil
}

func seqLenOf(seqLen int64) (C.int64_t, error) {
	if seqLen < 0 {
		return 0, invalid("seqLen", seqLen, "expected 0 (none) or a length >= 1")
	}
	return C.int64_t(seqLen), nil
}

// LoadConfig reads a HuggingFace config.json. seqLen: 0 for none, else the length dynamic NTK
// and LongRoPE depend on; strict refuses keys the reader does not use.
func LoadConfig(path string, seqLen int64, strict bool) (*Model, error) {
	return loadFile(path, seqLen, strict, func(p *C.char, n C.int64_t, s C.int32_t, out **C.posemb_model) C.posemb_status {
		return C.posemb_model_load_config(p, n, s, out)
	})
}

// LoadGGUF reads a GGUF file; seqLen is llama.cpp's context per sequence (0: the file's).
func LoadGGUF(path string, seqLen int64, strict bool) (*Model, error) {
	return loadFile(path, seqLen, strict, func(p *C.char, n C.int64_t, s C.int32_t, out **C.posemb_model) C.posemb_status {
		return C.posemb_model_load_gguf(p, n, s, out)
	})
}

func loadFile(path string, seqLen int64, strict bool,
	load func(*C.char, C.int64_t, C.int32_t, **C.posemb_model) C.posemb_status) (*Model, error) {
	n, err := seqLenOf(seqLen)
	if err != nil {
		return nil, err
	}
	c := C.CString(path)
	defer C.free(unsafe.Pointer(c))
	return newModel(func(out **C.posemb_model) C.posemb_status { return load(c, n, flag(strict), out) })
}

// ParseConfig reads config.json text.
func ParseConfig(json string, seqLen int64, strict bool) (*Model, error) {
	n, err := seqLenOf(seqLen)
	if err != nil {
		return nil, err
	}
	c := C.CString(json)
	defer C.free(unsafe.Pointer(c))
	return newModel(func(out **C.posemb_model) C.posemb_status {
		return C.posemb_model_parse_config(c, C.size_t(len(json)), n, flag(strict), out)
	})
}

// Close frees the model (once; later calls do nothing).
func (m *Model) Close() {
	if m.p != nil {
		C.posemb_model_free(m.p)
		m.p = nil
	}
}

// UnusedKeys returns the config's keys the reader did not use (key paths, sorted), as
// `posemb inspect` lists them and strict loading refuses them (C ABI 1.4).
func (m *Model) UnusedKeys() []string {
	defer runtime.KeepAlive(m)
	var n C.int64_t
	_ = call(func() C.posemb_status { return C.posemb_model_unused_key_count(m.p, &n) })
	keys := make([]string, 0, int(n))
	for i := C.int64_t(0); i < n; i++ {
		var s *C.char
		_ = call(func() C.posemb_status { return C.posemb_model_unused_key(m.p, i, &s) })
		keys = append(keys, C.GoString(s))
	}
	return keys
}

func (m *Model) LayerCount() int {
	var n C.int64_t
	_ = call(func() C.posemb_status { return C.posemb_model_layer_count(m.p, &n) })
	runtime.KeepAlive(m)
	return int(n)
}

// Heads returns the query heads and the key/value heads (0 when the file gives none).
func (m *Model) Heads() (int32, int32) {
	var h, kv C.int32_t
	_ = call(func() C.posemb_status { return C.posemb_model_heads(m.p, &h, &kv) })
	runtime.KeepAlive(m)
	return int32(h), int32(kv)
}

func (m *Model) LayerKind(layer int64) (PositionKind, error) {
	var k C.posemb_position_kind
	err := call(func() C.posemb_status { return C.posemb_model_layer_kind(m.p, C.int64_t(layer), &k) })
	runtime.KeepAlive(m)
	return PositionKind(k), err
}

func (m *Model) LayerHeadDim(layer int64) (int32, error) {
	var d C.int32_t
	err := call(func() C.posemb_status { return C.posemb_model_layer_head_dim(m.p, C.int64_t(layer), &d) })
	runtime.KeepAlive(m)
	return int32(d), err
}

// LayerRopeType is the layer's HF rope type ("" without RoPE).
func (m *Model) LayerRopeType(layer int64) (string, error) {
	var s *C.char
	err := call(func() C.posemb_status { return C.posemb_model_layer_rope_type(m.p, C.int64_t(layer), &s) })
	if err != nil {
		return "", err
	}
	defer runtime.KeepAlive(m)
	return C.GoString(s), nil
}

func (m *Model) LayerAttention(layer int64) (LayerAttention, error) {
	var a C.posemb_layer_attention
	err := call(func() C.posemb_status { return C.posemb_model_layer_attention(m.p, C.int64_t(layer), &a) })
	var form C.posemb_temperature_form
	if err == nil {
		err = call(func() C.posemb_status {
			return C.posemb_model_layer_query_temperature_form(m.p, C.int64_t(layer), &form)
		})
	}
	runtime.KeepAlive(m)
	return LayerAttention{
		SoftmaxAttention: a.softmax_attention != 0, HasSoftmaxScale: a.has_softmax_scale != 0,
		SoftmaxScale: float64(a.softmax_scale), HasSlidingWindow: a.has_sliding_window != 0,
		SlidingWindow: int64(a.sliding_window), HasAttentionChunkSize: a.has_attention_chunk_size != 0,
		AttentionChunkSize: int64(a.attention_chunk_size), HasQueryTemperature: a.has_query_temperature != 0,
		QueryTemperatureFloorScale:     float64(a.query_temperature_floor_scale),
		QueryTemperatureAttnScale:      float64(a.query_temperature_attn_scale),
		QueryTemperaturePositionOffset: int64(a.query_temperature_position_offset),
		QueryTemperatureForm:           TemperatureForm(form),
		HasLogitSoftcap:                a.has_logit_softcap != 0, LogitSoftcap: float64(a.logit_softcap),
		AttentionSinks: a.attention_sinks != 0, AlibiBiasBeforeScale: a.alibi_bias_before_scale != 0,
	}, err
}

// LayerT5Buckets returns the buckets of a relative-bias layer, and whether it has them.
func (m *Model) LayerT5Buckets(layer int64) (T5Buckets, bool, error) {
	var has C.int32_t
	var b C.posemb_t5_buckets
	err := call(func() C.posemb_status { return C.posemb_model_layer_t5_buckets(m.p, C.int64_t(layer), &has, &b) })
	runtime.KeepAlive(m)
	return T5Buckets{int32(b.num_buckets), int32(b.max_distance), b.bidirectional != 0}, has != 0, err
}

// LayerRope is the RoPE of a rope layer at the model's seqLen.
func (m *Model) LayerRope(layer int64) (*Rope, error) {
	defer runtime.KeepAlive(m)
	return newRope(func(out **C.posemb_rope) C.posemb_status {
		return C.posemb_model_layer_rope(m.p, C.int64_t(layer), out)
	})
}

package posemb

/*
#include "posemb/c/posemb.h"
// The positions struct is built on the C side: cgo forbids passing Go memory that holds a Go
// pointer (ids).
static posemb_status go_rope_rotate_inplace(const posemb_rope* r, const posemb_rope_table* t,
    posemb_dtype d, void* x, posemb_shape s, int64_t offset, const int64_t* ids, int64_t rows,
    posemb_rotation rot) {
  posemb_positions p = {offset, ids, rows};
  return r ? posemb_rope_rotate_inplace(r, d, x, &s, &p, rot)
           : posemb_rope_table_rotate_inplace(t, d, x, &s, &p, rot);
}
static posemb_status go_rope_rotate(const posemb_rope* r, const posemb_rope_table* t,
    posemb_dtype d, const void* x, posemb_shape xs, void* out, posemb_shape os, int64_t off,
    int64_t offset, const int64_t* ids, int64_t rows, posemb_rotation rot) {
  posemb_positions p = {offset, ids, rows};
  return r ? posemb_rope_rotate(r, d, x, &xs, out, &os, off, &p, rot)
           : posemb_rope_table_rotate(t, d, x, &xs, out, &os, off, &p, rot);
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Rope is a RoPE source: a layer's, or explicit parameters.
type Rope struct{ p *C.posemb_rope }

// RopeTable holds cos and sin (float32) of positions [first, first + count).
type RopeTable struct{ p *C.posemb_rope_table }

// Source is a *Rope or a *RopeTable.
type Source interface {
	handles() (*C.posemb_rope, *C.posemb_rope_table)
}

func (r *Rope) handles() (*C.posemb_rope, *C.posemb_rope_table)      { return r.p, nil }
func (t *RopeTable) handles() (*C.posemb_rope, *C.posemb_rope_table) { return nil, t.p }

func newRope(make func(out **C.posemb_rope) C.posemb_status) (*Rope, error) {
	var p *C.posemb_rope
	if err := call(func() C.posemb_status { return make(&p) }); err != nil {
		return nil, err
	}
	r := &Rope{p}
	runtime.SetFinalizer(r, (*Rope).Close)
	return r, nil
}

// NewRope makes a source of explicit parameters: invFreq (rotary_dim / 2 radians per position).
func NewRope(invFreq []float64, attentionScale float64, pairing Pairing, headDim, rotaryOffset int32) (*Rope, error) {
	var ptr *C.double
	if len(invFreq) > 0 {
		ptr = (*C.double)(unsafe.Pointer(&invFreq[0]))
	}
	return newRope(func(out **C.posemb_rope) C.posemb_status {
		return C.posemb_rope_create(ptr, C.size_t(len(invFreq)), C.double(attentionScale),
			C.posemb_pairing(pairing), C.int32_t(headDim), C.int32_t(rotaryOffset), out)
	})
}

// DefaultRope is plain RoPE: base^(-2i / rotaryDim), attention scale 1.
func DefaultRope(headDim, rotaryDim int32, base float64, pairing Pairing) (*Rope, error) {
	return newRope(func(out **C.posemb_rope) C.posemb_status {
		return C.posemb_rope_create_default(C.int32_t(headDim), C.int32_t(rotaryDim), C.double(base),
			C.posemb_pairing(pairing), out)
	})
}

func (r *Rope) Close() {
	if r.p != nil {
		C.posemb_rope_free(r.p)
		r.p = nil
	}
}

func (r *Rope) Info() RopeInfo {
	var i C.posemb_rope_info
	_ = call(func() C.posemb_status { return C.posemb_rope_get_info(r.p, &i) })
	runtime.KeepAlive(r)
	return RopeInfo{int32(i.head_dim), int32(i.rotary_dim), int32(i.rotary_offset), Pairing(i.pairing),
		float64(i.attention_scale)}
}

func (r *Rope) InvFreq() []float64 {
	v := make([]float64, r.Info().RotaryDim/2)
	var n C.size_t
	_ = call(func() C.posemb_status {
		return C.posemb_rope_inv_freq(r.p, (*C.double)(unsafe.Pointer(&v[0])), C.size_t(len(v)), &n)
	})
	runtime.KeepAlive(r)
	return v
}

// NewRopeTable makes the cos/sin table of positions [first, first + count).
func NewRopeTable(r *Rope, first, count int64) (*RopeTable, error) {
	var p *C.posemb_rope_table
	err := call(func() C.posemb_status { return C.posemb_rope_table_create(r.p, C.int64_t(first), C.int64_t(count), &p) })
	runtime.KeepAlive(r)
	if err != nil {
		return nil, err
	}
	t := &RopeTable{p}
	runtime.SetFinalizer(t, (*RopeTable).Close)
	return t, nil
}

func (t *RopeTable) Close() {
	if t.p != nil {
		C.posemb_rope_table_free(t.p)
		t.p = nil
	}
}

// RotateInplace rotates x: [shape] by src at positions.
func RotateInplace[T Element](src Source, x []T, shape Shape, positions Positions, rotation Rotation) error {
	if err := shape.requireLen("x", len(x)); err != nil {
		return err
	}
	ids, err := positions.raw(shape.Seq)
	if err != nil {
		return err
	}
	r, t := src.handles()
	defer runtime.KeepAlive(src)
	return call(func() C.posemb_status {
		return C.go_rope_rotate_inplace(r, t, dtypeOf[T](), unsafe.Pointer(&x[0]), shape.raw(),
			C.int64_t(positions.Offset), ids, C.int64_t(positions.Rows), C.posemb_rotation(rotation))
	})
}

// Rotate rotates x: [xShape] into out: [outShape], x's tokens at out's tokens outSeqOffset..
// (a KV-cache slot).
func Rotate[T Element](src Source, x []T, xShape Shape, out []T, outShape Shape, outSeqOffset int64, positions Positions, rotation Rotation) error {
	if err := xShape.requireLen("x", len(x)); err != nil {
		return err
	}
	if err := outShape.requireLen("out", len(out)); err != nil {
		return err
	}
	ids, err := positions.raw(xShape.Seq)
	if err != nil {
		return err
	}
	r, t := src.handles()
	defer runtime.KeepAlive(src)
	return call(func() C.posemb_status {
		return C.go_rope_rotate(r, t, dtypeOf[T](), unsafe.Pointer(&x[0]), xShape.raw(),
			unsafe.Pointer(&out[0]), outShape.raw(), C.int64_t(outSeqOffset),
			C.int64_t(positions.Offset), ids, C.int64_t(positions.Rows), C.posemb_rotation(rotation))
	})
}

type MropeLayout int

const (
	MropeChunked     MropeLayout = 0
	MropeInterleaved MropeLayout = 1
)

// Mrope is M-RoPE: a RoPE source with pairs per axis (t, h, w).
type Mrope struct{ p *C.posemb_mrope }

func NewMrope(r *Rope, sections [3]int32, layout MropeLayout) (*Mrope, error) {
	var p *C.posemb_mrope
	s := [3]C.int32_t{C.int32_t(sections[0]), C.int32_t(sections[1]), C.int32_t(sections[2])}
	err := call(func() C.posemb_status { return C.posemb_mrope_create(r.p, &s[0], C.posemb_mrope_layout(layout), &p) })
	runtime.KeepAlive(r)
	if err != nil {
		return nil, err
	}
	m := &Mrope{p}
	runtime.SetFinalizer(m, (*Mrope).Close)
	return m, nil
}

func (m *Mrope) Close() {
	if m.p != nil {
		C.posemb_mrope_free(m.p)
		m.p = nil
	}
}

// MropeRotateInplace rotates x: [shape] at positionIDs [3, rows, seq] (rows 1 or batch).
func MropeRotateInplace[T Element](m *Mrope, x []T, shape Shape, positionIDs []int64, rows int64, rotation Rotation) error {
	if err := shape.requireLen("x", len(x)); err != nil {
		return err
	}
	if rows < 1 || int64(len(positionIDs)) != 3*rows*shape.Seq {
		return invalid("len(positionIDs)", len(positionIDs), fmt.Sprintf("expected 3 * rows * seq = 3 * %d * %d", rows, shape.Seq))
	}
	sh := shape.raw()
	defer runtime.KeepAlive(m)
	return call(func() C.posemb_status {
		return C.posemb_mrope_rotate_inplace(m.p, dtypeOf[T](), unsafe.Pointer(&x[0]), &sh,
			(*C.int64_t)(unsafe.Pointer(&positionIDs[0])), C.int64_t(rows), C.posemb_rotation(rotation))
	})
}

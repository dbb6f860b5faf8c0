package posemb

/*
#include "posemb/c/posemb.h"
// The positions struct is built on the C side: cgo forbids passing Go memory that holds a Go
// pointer (ids).
static posemb_status go_fope_rotate_inplace(const posemb_fope* f, posemb_dtype d, void* x,
    posemb_shape s, int64_t offset, const int64_t* ids, int64_t rows, posemb_rotation rot) {
  posemb_positions p = {offset, ids, rows};
  return posemb_fope_rotate_inplace(f, d, x, &s, &p, rot);
}
static posemb_status go_fope_coefficient_gradients(const posemb_fope* f, posemb_dtype d,
    const void* x, const void* g, posemb_shape s, int64_t offset, const int64_t* ids,
    int64_t rows, double* d_sin, double* d_cos, size_t capacity) {
  posemb_positions p = {offset, ids, rows};
  return posemb_fope_coefficient_gradients(f, d, x, g, &s, &p, d_sin, d_cos, capacity);
}
static posemb_status go_position_table_gradient(posemb_dtype d, const void* g, int64_t batch,
    int64_t seq, int64_t dim, int64_t offset, const int64_t* ids, int64_t rows, int64_t max_len,
    double* out, size_t capacity) {
  posemb_positions p = {offset, ids, rows};
  return posemb_position_table_gradient(d, g, batch, seq, dim, &p, max_len, out, capacity);
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// FopeConfig is FoPE's settings (ABI 1.4): frequencies below 2 pi / TrainLength * FloorRatio
// clipped (dropped when DropClipped), or the first NumInvFreq kept when it is > 0; DOut mixed
// slots (0: the default); NKVHeads coefficient heads (0: NHeads).
type FopeConfig struct {
	HeadDim, NHeads, NKVHeads int32
	Theta                     float64
	TrainLength               int64
	FloorRatio                float64
	DropClipped               bool
	DOut                      int32
	PaddingSin                float64
	NumInvFreq                int32
}

// NewFopeConfig has the C++ defaults but for headDim, nHeads and trainLength.
func NewFopeConfig(headDim, nHeads int32, trainLength int64) FopeConfig {
	return FopeConfig{HeadDim: headDim, NHeads: nHeads, Theta: 10000, TrainLength: trainLength,
		FloorRatio: 1, DropClipped: true, PaddingSin: 1}
}

func (c FopeConfig) raw() C.posemb_fope_config {
	return C.posemb_fope_config{head_dim: C.int32_t(c.HeadDim), n_heads: C.int32_t(c.NHeads),
		n_kv_heads: C.int32_t(c.NKVHeads), theta: C.double(c.Theta),
		train_length: C.int64_t(c.TrainLength), floor_ratio: C.double(c.FloorRatio),
		drop_clipped: flag(c.DropClipped), d_out: C.int32_t(c.DOut),
		padding_sin: C.double(c.PaddingSin), num_inv_freq: C.int32_t(c.NumInvFreq)}
}

// Dims are D_in (the frequencies kept) and D_out (the mixed slots).
func (c FopeConfig) Dims() (int32, int32, error) {
	var dIn, dOut C.int32_t
	raw := c.raw()
	err := call(func() C.posemb_status { return C.posemb_fope_dims(&raw, &dIn, &dOut) })
	return int32(dIn), int32(dOut), err
}

// LayerFopeConfig is the FoPE settings of a fope layer.
func (m *Model) LayerFopeConfig(layer int64) (FopeConfig, error) {
	var c C.posemb_fope_config
	defer runtime.KeepAlive(m)
	if err := call(func() C.posemb_status {
		return C.posemb_model_layer_fope_config(m.p, C.int64_t(layer), &c)
	}); err != nil {
		return FopeConfig{}, err
	}
	return FopeConfig{HeadDim: int32(c.head_dim), NHeads: int32(c.n_heads),
		NKVHeads: int32(c.n_kv_heads), Theta: float64(c.theta),
		TrainLength: int64(c.train_length), FloorRatio: float64(c.floor_ratio),
		DropClipped: c.drop_clipped != 0, DOut: int32(c.d_out),
		PaddingSin: float64(c.padding_sin), NumInvFreq: int32(c.num_inv_freq)}, nil
}

// Fope holds a copy of a checkpoint's coefficients A_sin, A_cos [n_kv_heads, D_in, D_out].
type Fope struct {
	p     *C.posemb_fope
	count int
}

// NewFope makes FoPE with the coefficients sinCoef, cosCoef (copied).
func NewFope(config FopeConfig, sinCoef, cosCoef []float32) (*Fope, error) {
	if len(sinCoef) != len(cosCoef) {
		return nil, invalid("len(cosCoef)", len(cosCoef), fmt.Sprintf("expected len(sinCoef) = %d", len(sinCoef)))
	}
	raw := config.raw()
	var p *C.posemb_fope
	if err := call(func() C.posemb_status {
		return C.posemb_fope_create(&raw, float32s(sinCoef), float32s(cosCoef), C.size_t(len(sinCoef)), &p)
	}); err != nil {
		return nil, err
	}
	f := &Fope{p, len(sinCoef)}
	runtime.SetFinalizer(f, (*Fope).Close)
	return f, nil
}

func (f *Fope) Close() {
	if f.p != nil {
		C.posemb_fope_free(f.p)
		f.p = nil
	}
}

// RotateInplace rotates x: [shape] (NHeads or NKVHeads heads); Transpose turns dL/dy into dL/dx.
func (f *Fope) RotateInplace(x []float32, shape Shape, positions Positions, rotation Rotation) error {
	if err := shape.requireLen("x", len(x)); err != nil {
		return err
	}
	ids, err := positions.raw(shape.Seq)
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(f)
	return call(func() C.posemb_status {
		return C.go_fope_rotate_inplace(f.p, C.POSEMB_F32, unsafe.Pointer(&x[0]), shape.raw(),
			C.int64_t(positions.Offset), ids, C.int64_t(positions.Rows), C.posemb_rotation(rotation))
	})
}

// CoefficientGradients are dL/dA_sin and dL/dA_cos, each [n_kv_heads, D_in, D_out] (float64),
// of y = fope(x) from its input x and grad = dL/dy, both [shape].
func (f *Fope) CoefficientGradients(x, grad []float32, shape Shape, positions Positions) ([]float64, []float64, error) {
	if err := shape.requireLen("x", len(x)); err != nil {
		return nil, nil, err
	}
	if err := shape.requireLen("grad", len(grad)); err != nil {
		return nil, nil, err
	}
	ids, err := positions.raw(shape.Seq)
	if err != nil {
		return nil, nil, err
	}
	dSin, dCos := make([]float64, f.count), make([]float64, f.count)
	defer runtime.KeepAlive(f)
	err = call(func() C.posemb_status {
		return C.go_fope_coefficient_gradients(f.p, C.POSEMB_F32, unsafe.Pointer(&x[0]),
			unsafe.Pointer(&grad[0]), shape.raw(), C.int64_t(positions.Offset), ids,
			C.int64_t(positions.Rows), float64s(dSin), float64s(dCos), C.size_t(f.count))
	})
	return dSin, dCos, err
}

func float64s(v []float64) *C.double {
	if len(v) == 0 {
		return nil
	}
	return (*C.double)(unsafe.Pointer(&v[0]))
}

// PositionTableGradient is dL/dtable [maxLen, d] (float64) of a learned table added to token
// embeddings, from grad = dL/dy [batch, seq, d] (float32).
func PositionTableGradient(grad []float32, batch, seq, d int64, positions Positions, maxLen int64) ([]float64, error) {
	if batch < 1 || seq < 1 || d < 1 || int64(len(grad)) != batch*seq*d {
		return nil, invalid("len(grad)", len(grad), fmt.Sprintf("expected batch * seq * d = %d * %d * %d", batch, seq, d))
	}
	ids, err := positions.raw(seq)
	if err != nil {
		return nil, err
	}
	if maxLen < 1 {
		return nil, invalid("maxLen", maxLen, "expected a number >= 1")
	}
	out := make([]float64, maxLen*d)
	err = call(func() C.posemb_status {
		return C.go_position_table_gradient(C.POSEMB_F32, unsafe.Pointer(&grad[0]), C.int64_t(batch),
			C.int64_t(seq), C.int64_t(d), C.int64_t(positions.Offset), ids, C.int64_t(positions.Rows),
			C.int64_t(maxLen), float64s(out), C.size_t(len(out)))
	})
	return out, err
}

// T5TableGradient is dL/dtable [num_buckets, heads] (float64) of the T5 bias, from grad =
// dL/dbias [heads, q_len, k_len].
func T5TableGradient(b T5Buckets, grad []float32, heads int, q, k []int64) ([]float64, error) {
	if len(grad) != heads*len(q)*len(k) {
		return nil, invalid("len(grad)", len(grad), fmt.Sprintf("expected heads * q_len * k_len = %d * %d * %d", heads, len(q), len(k)))
	}
	n := int(b.NumBuckets) * heads
	if n < 0 {
		n = 0
	}
	out := make([]float64, n)
	raw := b.raw()
	err := call(func() C.posemb_status {
		return C.posemb_t5_table_gradient(&raw, float32s(grad), C.size_t(heads), int64s(q), C.size_t(len(q)),
			int64s(k), C.size_t(len(k)), float64s(out), C.size_t(len(out)))
	})
	return out, err
}

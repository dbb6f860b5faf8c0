// Package posemb: positional embeddings of transformer models (RoPE and its scaled variants,
// per-layer schemes read from a model's config.json or GGUF file, M-RoPE, ALiBi, T5 buckets)
// through posemb's C API (libposemb_c). Build with the library's folder in CGO_LDFLAGS:
//
//	CGO_LDFLAGS="-L$BUILD/src/c_api -Wl,-rpath,$BUILD/src/c_api" go test ./...
//
// Slices in, (value, error) out; a slice whose length disagrees with its shape is an *Error.
// Handles are immutable and safe for concurrent use; Close frees one (a finalizer does it
// otherwise). The C API's message is thread-local: each call runs with its goroutine locked to
// its OS thread until the message is read.
package posemb

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#cgo LDFLAGS: -lposemb_c
#include <stdlib.h>
#include "posemb/c/posemb.h"

*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Status of a failed call.
type Status int

const (
	InvalidArgument Status = 1
	OutOfMemory     Status = 2
	Internal        Status = 3
)

// Error carries posemb's own message ("posemb: <parameter> = <value>: expected ...").
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string { return e.Message }

func invalid(parameter string, value interface{}, expected string) error {
	return &Error{InvalidArgument, fmt.Sprintf("posemb: %s = %v: %s", parameter, value, expected)}
}

// call runs f on one OS thread and reads that thread's message when f fails.
func call(f func() C.posemb_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	status := f()
	if status == C.POSEMB_OK {
		return nil
	}
	return &Error{Status(status), C.GoString(C.posemb_last_error())}
}

// ABIVersion is (major << 16) | minor of the C ABI of the library loaded.
func ABIVersion() uint32 { return uint32(C.posemb_abi_version()) }

// Version is posemb's "major.minor.patch".
func Version() string { return C.GoString(C.posemb_version_string()) }

// F16 and BF16 hold the bits of an IEEE binary16 and a bfloat16 value.
type F16 uint16
type BF16 uint16

// Element is a storage type of activations.
type Element interface{ float32 | F16 | BF16 }

func dtypeOf[T Element]() C.posemb_dtype {
	var zero T
	switch any(zero).(type) {
	case float32:
		return C.POSEMB_F32
	case F16:
		return C.POSEMB_F16
	}
	return C.POSEMB_BF16
}

type Layout int

const (
	BSHD Layout = 0 // [batch, seq, heads, head_dim]
	BHSD Layout = 1 // [batch, heads, seq, head_dim]
)

// Shape of a dense activation buffer.
type Shape struct {
	Layout                     Layout
	Batch, Seq, Heads, HeadDim int64
}

func (s Shape) raw() C.posemb_shape {
	return C.posemb_shape{C.posemb_layout(s.Layout), C.int64_t(s.Batch), C.int64_t(s.Seq),
		C.int64_t(s.Heads), C.int64_t(s.HeadDim)}
}

// requireLen fails unless n is the element count (bad dimensions are left to the C API).
func (s Shape) requireLen(name string, n int) error {
	count := int64(1)
	for _, d := range []int64{s.Batch, s.Seq, s.Heads, s.HeadDim} {
		if d < 1 || count > (1<<62)/d {
			return nil
		}
		count *= d
	}
	if count != int64(n) {
		return invalid("len("+name+")", n, fmt.Sprintf("expected batch * seq * heads * head_dim = %d", count))
	}
	return nil
}

// Positions: with Ids nil, token s of every batch row is at Offset + s; else Ids is
// [Rows, seq] row-major (Rows 1 or batch).
type Positions struct {
	Offset int64
	Ids    []int64
	Rows   int64
}

func (p Positions) raw(seq int64) (*C.int64_t, error) {
	if p.Ids == nil {
		return nil, nil
	}
	if p.Rows < 1 || int64(len(p.Ids)) != p.Rows*seq {
		return nil, invalid("len(positions.Ids)", len(p.Ids), fmt.Sprintf("expected rows * seq = %d * %d", p.Rows, seq))
	}
	return (*C.int64_t)(unsafe.Pointer(&p.Ids[0])), nil
}

type Rotation int

const (
	Forward Rotation = 0 // R(p)
	Inverse Rotation = 1 // R(p)^T = R(-p)
	// Transpose is m R(p)^T, the backward: dL/dy into dL/dx (ABI 1.3).
	Transpose Rotation = 2
)

// Pairing: Interleaved pairs (2i, 2i + 1), RotateHalf (i, i + rotary_dim/2).
type Pairing int

const (
	Interleaved Pairing = 0
	RotateHalf  Pairing = 1
)

// PositionKind is what a layer does with positions.
type PositionKind int

const (
	KindRope PositionKind = iota
	KindFope
	KindAlibi
	KindLearned
	KindSinusoidal
	KindRelativeBias
	KindNone
)

// RopeInfo holds a RoPE source's numbers (inverse frequencies apart: Rope.InvFreq).
type RopeInfo struct {
	HeadDim, RotaryDim, RotaryOffset int32
	Pairing                          Pairing
	AttentionScale                   float64
}

// TemperatureForm: how a query temperature grows with the position p.
type TemperatureForm int

const (
	// TemperatureFloorLog: log1p(floor((p + offset) / floor_scale)) attn_scale + 1 (Llama 4).
	TemperatureFloorLog TemperatureForm = 0
	// TemperaturePower: (1 + (p + offset) / floor_scale) ^ attn_scale (Beam).
	TemperaturePower TemperatureForm = 1
)

// LayerAttention: a layer's attention settings; each Has* says whether the value is set.
type LayerAttention struct {
	SoftmaxAttention                                      bool
	HasSoftmaxScale                                       bool
	SoftmaxScale                                          float64
	HasSlidingWindow                                      bool
	SlidingWindow                                         int64
	HasAttentionChunkSize                                 bool
	AttentionChunkSize                                    int64
	HasQueryTemperature                                   bool
	QueryTemperatureFloorScale, QueryTemperatureAttnScale float64
	QueryTemperaturePositionOffset                        int64
	QueryTemperatureForm                                  TemperatureForm
	HasLogitSoftcap                                       bool
	LogitSoftcap                                          float64
	AttentionSinks                                        bool
	AlibiBiasBeforeScale                                  bool
}

// T5Buckets: T5's relative-position buckets.
type T5Buckets struct {
	NumBuckets, MaxDistance int32
	Bidirectional           bool
}

func (b T5Buckets) raw() C.posemb_t5_buckets {
	bidirectional := 0
	if b.Bidirectional {
		bidirectional = 1
	}
	return C.posemb_t5_buckets{C.int32_t(b.NumBuckets), C.int32_t(b.MaxDistance), C.int32_t(bidirectional)}
}

func flag(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

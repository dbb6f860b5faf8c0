package posemb

/*
#include "posemb/c/posemb.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

type AlibiForm int

const (
	AlibiCausal    AlibiForm = 0 // -slope (q - k), -inf where k > q
	AlibiSymmetric AlibiForm = 1 // -slope |q - k|
)

func int64s(v []int64) *C.int64_t {
	if len(v) == 0 {
		return nil
	}
	return (*C.int64_t)(unsafe.Pointer(&v[0]))
}

func float32s(v []float32) *C.float {
	if len(v) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&v[0]))
}

// AlibiSlopes of nHeads heads (maxBias 8 for BLOOM and MPT).
func AlibiSlopes(nHeads int32, maxBias float64) ([]float64, error) {
	n := nHeads
	if n < 1 {
		n = 1
	}
	v := make([]float64, n)
	err := call(func() C.posemb_status {
		return C.posemb_alibi_slopes(C.int32_t(nHeads), C.double(maxBias), (*C.double)(unsafe.Pointer(&v[0])), C.size_t(len(v)))
	})
	return v, err
}

// AlibiBias is the bias [heads, q_len, k_len] (float32).
func AlibiBias(slopes []float64, q, k []int64, form AlibiForm) ([]float32, error) {
	out := make([]float32, len(slopes)*len(q)*len(k))
	var s *C.double
	if len(slopes) > 0 {
		s = (*C.double)(unsafe.Pointer(&slopes[0]))
	}
	err := call(func() C.posemb_status {
		return C.posemb_alibi_bias(s, C.size_t(len(slopes)), int64s(q), C.size_t(len(q)), int64s(k),
			C.size_t(len(k)), C.posemb_alibi_form(form), float32s(out), C.size_t(len(out)))
	})
	return out, err
}

// T5BucketIDs are the bucket ids [q_len, k_len].
func T5BucketIDs(b T5Buckets, q, k []int64) ([]int64, error) {
	out := make([]int64, len(q)*len(k))
	raw := b.raw()
	err := call(func() C.posemb_status {
		return C.posemb_t5_buckets_of(&raw, int64s(q), C.size_t(len(q)), int64s(k), C.size_t(len(k)),
			int64s(out), C.size_t(len(out)))
	})
	return out, err
}

// T5Bias is the bias [heads, q_len, k_len] from the learned table [num_buckets, heads].
func T5Bias(b T5Buckets, table []float32, heads int, q, k []int64) ([]float32, error) {
	if b.NumBuckets < 1 || len(table) != int(b.NumBuckets)*heads {
		return nil, invalid("len(table)", len(table), fmt.Sprintf("expected num_buckets * heads = %d * %d", b.NumBuckets, heads))
	}
	out := make([]float32, heads*len(q)*len(k))
	raw := b.raw()
	err := call(func() C.posemb_status {
		return C.posemb_t5_bias(&raw, float32s(table), C.size_t(heads), int64s(q), C.size_t(len(q)),
			int64s(k), C.size_t(len(k)), float32s(out), C.size_t(len(out)))
	})
	return out, err
}

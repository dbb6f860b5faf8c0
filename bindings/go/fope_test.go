package posemb

// The gradients of ABI 1.4 through this package: the records of tests/c/grad_reference.txt
// (the C++ results, written by tests/c/reference_dump.cpp --grad; POSEMB_C_GRAD_REFERENCE names
// it) formatted from this package's values, then linearity: <w, F x> = <F^T w, x> and the central
// difference of L(A) = <w, F_A x> along D equal to <dL/dA, D>.

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

func caseFloats(start, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(inputBits(0, uint32(start+i)))
	}
	return v
}

func doubles(head string, v []float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d", head, len(v))
	for _, x := range v {
		fmt.Fprintf(&b, " %x", math.Float64bits(x))
	}
	return b.String()
}

func floats(head string, v []float32) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d", head, len(v))
	for _, x := range v {
		fmt.Fprintf(&b, " %x", math.Float32bits(x))
	}
	return b.String()
}

var fopeShape = Shape{Layout: BSHD, Batch: 2, Seq: 3, Heads: 4, HeadDim: 16}

// FoPE config 0 of cases.h: head_dim 16, 4 heads over 2, train_length 512 (D_in 4), d_out 4.
func caseFope(t *testing.T) (FopeConfig, *Fope, int) {
	config := NewFopeConfig(16, 4, 512)
	config.NKVHeads, config.DOut = 2, 4
	dIn, dOut, err := config.Dims()
	if err != nil {
		t.Fatal(err)
	}
	count := int(2 * dIn * dOut)
	f, err := NewFope(config, caseFloats(0, count), caseFloats(64, count))
	if err != nil {
		t.Fatal(err)
	}
	return config, f, count
}

func TestGradientsMatchTheCxxResults(t *testing.T) {
	text, err := os.ReadFile(os.Getenv("POSEMB_C_GRAD_REFERENCE"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(text), "\n")
	find := func(head string) string {
		for _, l := range lines {
			if strings.HasPrefix(l, head+" ") {
				return l
			}
		}
		return ""
	}
	expect := func(got, head string) {
		if got != find(head) {
			t.Errorf("%s: Go %.200s\nC++ %.200s", head, got, find(head))
		}
	}
	_, f, _ := caseFope(t)
	at := Positions{Ids: ids, Rows: 2}
	x, g := caseFloats(0, 384), caseFloats(4096, 384)
	dSin, dCos, err := f.CoefficientGradients(x, g, fopeShape, at)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RotateInplace(x, fopeShape, at, Forward); err != nil {
		t.Fatal(err)
	}
	if err := f.RotateInplace(g, fopeShape, at, Transpose); err != nil {
		t.Fatal(err)
	}
	expect(floats("fope 0 0 rot", x), "fope 0 0 rot")
	expect(floats("fope 0 0 tr", g), "fope 0 0 tr")
	expect(doubles("fope 0 0 dsin", dSin), "fope 0 0 dsin")
	expect(doubles("fope 0 0 dcos", dCos), "fope 0 0 dcos")
	grad := caseFloats(0, 48)
	table, err := PositionTableGradient(grad, 2, 3, 8, Positions{Ids: []int64{0, 5, 7, 7, 1, 5}, Rows: 2}, 8)
	if err != nil {
		t.Fatal(err)
	}
	expect(doubles("tablegrad 0", table), "tablegrad 0")
	table, err = PositionTableGradient(grad, 2, 3, 8, Positions{Offset: 2}, 8)
	if err != nil {
		t.Fatal(err)
	}
	expect(doubles("tablegrad 1", table), "tablegrad 1")
	k := make([]int64, 43)
	for j := range k {
		k[j] = int64(7 * j)
	}
	bias := caseFloats(0, 4*3*43)
	for _, bidirectional := range []bool{true, false} {
		d, err := T5TableGradient(T5Buckets{32, 128, bidirectional}, bias, 4, []int64{0, 3, 200}, k)
		if err != nil {
			t.Fatal(err)
		}
		head := "t5grad 0"
		if bidirectional {
			head = "t5grad 1"
		}
		expect(doubles(head, d), head)
	}
}

func TestFopeGradientsAreTheLinearMapsTransposes(t *testing.T) {
	config, f, count := caseFope(t)
	at := Positions{Ids: ids, Rows: 2}
	x, w := make([]float32, 384), make([]float32, 384)
	for i := range x {
		x[i] = float32(i*37%23-11) / 7
		w[i] = float32(i*53%19-9) / 5
	}
	dot := func(a, b []float32) (sum, size float64) {
		for i := range a {
			sum += float64(a[i]) * float64(b[i])
			size += math.Abs(float64(a[i]) * float64(b[i]))
		}
		return
	}
	loss := func(sin, cos []float32) float64 {
		g, err := NewFope(config, sin, cos)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		y := append([]float32(nil), x...)
		if err := g.RotateInplace(y, fopeShape, at, Forward); err != nil {
			t.Fatal(err)
		}
		l, _ := dot(y, w)
		return l
	}
	sin, cos := caseFloats(0, count), caseFloats(64, count)
	_, dCos, err := f.CoefficientGradients(x, w, fopeShape, at)
	if err != nil {
		t.Fatal(err)
	}
	plus, minus := make([]float32, count), make([]float32, count)
	analytic, scale := 0.0, 0.0
	for i := range plus {
		d := float32(i*7%5-2) / 4
		plus[i], minus[i] = cos[i]+0.5*d, cos[i]-0.5*d
		analytic += dCos[i] * float64(d)
		scale += math.Abs(dCos[i] * float64(d))
	}
	if central := loss(sin, plus) - loss(sin, minus); math.Abs(central-analytic) > 1e-5*scale {
		t.Errorf("A_cos: central difference %g, <dL/dA, D> %g", central, analytic)
	}
	fx, tw := append([]float32(nil), x...), append([]float32(nil), w...)
	if err := f.RotateInplace(fx, fopeShape, at, Forward); err != nil {
		t.Fatal(err)
	}
	if err := f.RotateInplace(tw, fopeShape, at, Transpose); err != nil {
		t.Fatal(err)
	}
	forward, size := dot(fx, w)
	backward, _ := dot(tw, x)
	if math.Abs(forward-backward) > 1e-5*size {
		t.Errorf("<w, F x> = %g, <F^T w, x> = %g", forward, backward)
	}
	_, err = NewFope(config, sin[:count-1], cos[:count-1])
	want := fmt.Sprintf("posemb: count = %d: expected n_kv_heads * D_in * D_out = %d", count-1, count)
	if e, ok := err.(*Error); !ok || e.Status != InvalidArgument || e.Message != want {
		t.Errorf("short coefficients: %v", err)
	}
}

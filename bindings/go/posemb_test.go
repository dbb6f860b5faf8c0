package posemb

// The C API's conformance cases through this package: every record of the C++ results
// (tests/c/reference.txt, written by tests/c/reference_dump.cpp at build time) formatted from
// this package's values and compared as text (hex bit patterns: equal text is equal bits), then
// the error paths. POSEMB_C_REFERENCE names reference.txt, POSEMB_TEST_DATA posemb's tests/data.

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const batch, seq, heads = 2, 3, 2

var ids = []int64{0, 5, 131071, 7, 1, 2000000}
var longIDs = []int64{0, 999999, 4194304}

// tests/c/cases.h's posemb_case_input_bits.
func inputBits(dtype int, i uint32) uint32 {
	mix := i * 2654435761
	sign := i & 1
	switch dtype {
	case 0:
		return ((mix >> 9) & 0x7fffff) | 0x3f000000 | (sign << 31)
	case 1:
		return ((mix >> 20) & 0x3ff) | 0x3800 | (sign << 15)
	}
	return ((mix >> 24) & 0x7f) | 0x3f00 | (sign << 15)
}

func dtypeID[T Element]() int { return int(dtypeOf[T]()) }

func input[T Element](n int) []T {
	x := make([]T, n)
	for i := range x {
		b := inputBits(dtypeID[T](), uint32(i))
		switch p := any(&x[i]).(type) {
		case *float32:
			*p = math.Float32frombits(b)
		case *F16:
			*p = F16(b)
		case *BF16:
			*p = BF16(b)
		}
	}
	return x
}

func values[T Element](head string, v []T) string {
	var s strings.Builder
	fmt.Fprintf(&s, "%s %d", head, len(v))
	for i := range v {
		switch p := any(v[i]).(type) {
		case float32:
			fmt.Fprintf(&s, " %x", math.Float32bits(p))
		case F16:
			fmt.Fprintf(&s, " %x", uint16(p))
		case BF16:
			fmt.Fprintf(&s, " %x", uint16(p))
		}
	}
	return s.String()
}

type lines struct {
	t     *testing.T
	lines []string
	next  int
}

func (l *lines) peek() string {
	if l.next < len(l.lines) {
		return l.lines[l.next]
	}
	return ""
}

func (l *lines) take() string {
	s := l.peek()
	l.next++
	return s
}

func (l *lines) expect(what, got string) {
	want := l.take()
	if want != got {
		l.t.Errorf("%s: Go\n  %.300s\nC++\n  %.300s", what, got, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func rotateVariant[T Element](t *testing.T, rope *Rope, d int64, v int) string {
	x := input[T](int(batch * seq * heads * d))
	bshd := Shape{BSHD, batch, seq, heads, d}
	switch v {
	case 0:
		must(t, RotateInplace(rope, x, bshd, Positions{Offset: 1000000}, Forward))
	case 1:
		out := make([]T, batch*heads*5*d)
		must(t, Rotate(rope, x, bshd, out, Shape{BHSD, batch, 5, heads, d}, 2, Positions{Ids: ids, Rows: batch}, Inverse))
		return values("", out)
	case 2:
		table, err := NewRopeTable(rope, 0, 64)
		must(t, err)
		defer table.Close()
		must(t, RotateInplace(table, x, Shape{BHSD, batch, seq, heads, d}, Positions{Offset: 10}, Forward))
	default:
		must(t, RotateInplace(rope, x, bshd, Positions{Ids: longIDs, Rows: 1}, Forward))
	}
	return values("", x)
}

func checkRope(l *lines, m *Model, layer int64) {
	rope, err := m.LayerRope(layer)
	must(l.t, err)
	defer rope.Close()
	i := rope.Info()
	inv := rope.InvFreq()
	var got strings.Builder
	fmt.Fprintf(&got, "rope %d %d %d %d %d %x %d", layer, i.HeadDim, i.RotaryDim, i.RotaryOffset, i.Pairing,
		math.Float64bits(i.AttentionScale), len(inv))
	for _, f := range inv {
		fmt.Fprintf(&got, " %x", math.Float64bits(f))
	}
	l.expect("rope", got.String())
	for strings.HasPrefix(l.peek(), "rot ") {
		f := strings.SplitN(l.peek(), " ", 5)
		dtype, _ := strconv.Atoi(f[2])
		v, _ := strconv.Atoi(f[3])
		d := int64(i.HeadDim)
		var body string
		switch dtype {
		case 0:
			body = rotateVariant[float32](l.t, rope, d, v)
		case 1:
			body = rotateVariant[F16](l.t, rope, d, v)
		default:
			body = rotateVariant[BF16](l.t, rope, d, v)
		}
		l.expect("rot", fmt.Sprintf("rot %s %d %d%s", f[1], dtype, v, body))
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func checkLayer(l *lines, m *Model, i int64) {
	kind, err := m.LayerKind(i)
	must(l.t, err)
	d, _ := m.LayerHeadDim(i)
	rt, _ := m.LayerRopeType(i)
	if rt == "" {
		rt = "-"
	}
	a, _ := m.LayerAttention(i)
	b, has, _ := m.LayerT5Buckets(i)
	if !has {
		b = T5Buckets{}
	}
	got := fmt.Sprintf("layer %d %d %d %s %d %d %x %d %d %d %d %d %x %x %d %d %x %d %d %d %d %d %d",
		i, kind, d, rt, b2i(a.SoftmaxAttention), b2i(a.HasSoftmaxScale), math.Float64bits(a.SoftmaxScale),
		b2i(a.HasSlidingWindow), a.SlidingWindow, b2i(a.HasAttentionChunkSize), a.AttentionChunkSize,
		b2i(a.HasQueryTemperature), math.Float64bits(a.QueryTemperatureFloorScale),
		math.Float64bits(a.QueryTemperatureAttnScale), a.QueryTemperaturePositionOffset,
		b2i(a.HasLogitSoftcap), math.Float64bits(a.LogitSoftcap), b2i(a.AttentionSinks),
		b2i(a.AlibiBiasBeforeScale), b2i(has), b.NumBuckets, b.MaxDistance, b2i(b.Bidirectional))
	l.expect("layer", got)
	if strings.HasPrefix(l.peek(), "rope ") {
		checkRope(l, m, i)
	}
}

func checkCase(l *lines, data string) {
	f := strings.Split(l.take(), " ")
	format, relative := f[1], f[2]
	seqLen, _ := strconv.ParseInt(f[3], 10, 64)
	path := data + "/" + relative
	var m *Model
	var err error
	if format == "gguf" {
		m, err = LoadGGUF(path, seqLen, false)
	} else {
		m, err = LoadConfig(path, seqLen, false)
	}
	if strings.HasPrefix(l.peek(), "error ") {
		want := strings.TrimPrefix(l.take(), "error ")
		if e, ok := err.(*Error); !ok || e.Status != InvalidArgument || e.Message != want {
			l.t.Errorf("%s: %v, expected %s", relative, err, want)
		}
	} else {
		must(l.t, err)
		h, kv := m.Heads()
		l.expect(relative, fmt.Sprintf("model %d %d %d", m.LayerCount(), h, kv))
		for i := 0; i < m.LayerCount(); i++ {
			checkLayer(l, m, int64(i))
		}
		m.Close()
	}
	if l.take() != "end" {
		l.t.Errorf("%s: records left over", relative)
	}
}

func mropeRun[T Element](t *testing.T, m *Mrope, thw []int64) string {
	x := input[T](batch * seq * heads * 128)
	must(t, MropeRotateInplace(m, x, Shape{BSHD, batch, seq, heads, 128}, thw, 1, Forward))
	return values("", x)
}

func checkMrope(l *lines) {
	sections := [2][3]int32{{16, 24, 24}, {24, 20, 20}}
	thw := []int64{0, 1, 2, 0, 4, 9, 0, 3, 100000}
	for strings.HasPrefix(l.peek(), "mrope ") {
		f := strings.Split(l.peek(), " ")
		layout, _ := strconv.Atoi(f[1])
		dtype, _ := strconv.Atoi(f[2])
		rope, err := DefaultRope(128, 128, 1e6, RotateHalf)
		must(l.t, err)
		m, err := NewMrope(rope, sections[layout], MropeLayout(layout))
		must(l.t, err)
		var body string
		switch dtype {
		case 0:
			body = mropeRun[float32](l.t, m, thw)
		case 1:
			body = mropeRun[F16](l.t, m, thw)
		default:
			body = mropeRun[BF16](l.t, m, thw)
		}
		l.expect("mrope", fmt.Sprintf("mrope %d %d%s", layout, dtype, body))
	}
}

func checkBiases(l *lines) {
	for n := int32(1); n <= 20; n++ {
		s, err := AlibiSlopes(n, 8)
		must(l.t, err)
		var got strings.Builder
		fmt.Fprintf(&got, "slopes %d", n)
		for _, v := range s {
			fmt.Fprintf(&got, " %x", math.Float64bits(v))
		}
		l.expect("slopes", got.String())
	}
	k := make([]int64, 10)
	for j := range k {
		k[j] = int64(j)
	}
	slopes, _ := AlibiSlopes(12, 8)
	for form := 0; form < 2; form++ {
		bias, err := AlibiBias(slopes, []int64{0, 5, 9}, k, AlibiForm(form))
		must(l.t, err)
		l.expect("alibi", values(fmt.Sprintf("alibi %d", form), bias))
	}
	k = make([]int64, 43)
	for j := range k {
		k[j] = int64(7 * j)
	}
	q := []int64{0, 3, 200}
	table := input[float32](32 * 4)
	for _, bidirectional := range []bool{true, false} {
		b := T5Buckets{32, 128, bidirectional}
		got, err := T5BucketIDs(b, q, k)
		must(l.t, err)
		var s strings.Builder
		fmt.Fprintf(&s, "t5buckets %d %d", b2i(bidirectional), len(got))
		for _, id := range got {
			fmt.Fprintf(&s, " %d", id)
		}
		l.expect("t5buckets", s.String())
		bias, err := T5Bias(b, table, 4, q, k)
		must(l.t, err)
		l.expect("t5bias", values(fmt.Sprintf("t5bias %d", b2i(bidirectional)), bias))
	}
}

func expectErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	if e, ok := err.(*Error); !ok || e.Status != InvalidArgument || e.Message != want {
		t.Errorf("%s: %v, expected '%s'", what, err, want)
	}
}

func cxxMessage(l *lines, name string) string {
	line := l.take()
	prefix := "cxxerror " + name + " "
	if !strings.HasPrefix(line, prefix) {
		l.t.Fatalf("expected %s, got %.80s", prefix, line)
	}
	return strings.TrimPrefix(line, prefix)
}

func checkErrors(l *lines, data string) {
	t := l.t
	_, err := DefaultRope(64, 7, 10000, RotateHalf)
	expectErr(t, "odd", err, cxxMessage(l, "odd_rotary_dim"))
	_, err = DefaultRope(64, 128, 10000, RotateHalf)
	expectErr(t, "wide", err, cxxMessage(l, "rotary_dim_above_head_dim"))
	gpt2, err := LoadConfig(data+"/models/gpt2.json", 0, false)
	must(t, err)
	_, err = gpt2.LayerKind(99)
	expectErr(t, "layer 99", err, cxxMessage(l, "layer_out_of_range"))
	_, err = gpt2.LayerRope(0)
	expectErr(t, "learned", err, cxxMessage(l, "rope_of_learned_layer"))
	_, err = LoadConfig(data+"/models/no-such-config.json", 0, false)
	expectErr(t, "missing", err, cxxMessage(l, "missing_file"))
	rope64, _ := DefaultRope(64, 64, 10000, RotateHalf)
	table, _ := NewRopeTable(rope64, 0, 64)
	x := make([]float32, 64)
	err = RotateInplace(table, x, Shape{BSHD, 1, 1, 1, 64}, Positions{Offset: 100}, Forward)
	expectErr(t, "table", err, cxxMessage(l, "table_position"))
	rope128, _ := DefaultRope(128, 128, 10000, RotateHalf)
	_, err = NewMrope(rope128, [3]int32{16, 24, 20}, MropeChunked)
	expectErr(t, "mrope", err, cxxMessage(l, "mrope_sum"))
	_, err = AlibiSlopes(0, 8)
	expectErr(t, "alibi", err, cxxMessage(l, "alibi_heads"))
	err = RotateInplace(rope64, make([]float32, 32), Shape{BSHD, 1, 1, 1, 32}, Positions{}, Forward)
	expectErr(t, "narrow", err, cxxMessage(l, "head_dim_mismatch"))
	// "strict N KEY...": the C++ unused keys of the strict case.
	strict := strings.Split(l.take(), " ")
	keys := strict[2:]
	if strict[1] != fmt.Sprint(len(keys)) {
		t.Errorf("strict record %v: count and keys disagree", strict)
	}
	config := `{"hidden_size": 256, "num_attention_heads": 4, "rope_scaling": {"rope_type": "default", "banana": 1}}`
	_, err = ParseConfig(config, 0, true)
	expectErr(t, "strict", err, "posemb: config.json text: strict: "+keys[0]+" is not used")
	lenient, err := ParseConfig(config, 0, false)
	must(t, err)
	if got := lenient.UnusedKeys(); strings.Join(got, " ") != strings.Join(keys, " ") {
		t.Errorf("UnusedKeys() = %v, want %v", got, keys)
	}

	// This package's own checks: a slice whose length disagrees with its shape.
	err = RotateInplace(rope64, make([]float32, 10), Shape{BSHD, 1, 1, 1, 64}, Positions{}, Forward)
	expectErr(t, "short", err, "posemb: len(x) = 10: expected batch * seq * heads * head_dim = 64")
	err = RotateInplace(rope64, x, Shape{BSHD, 1, 1, 1, 64}, Positions{Ids: []int64{1, 2}, Rows: 1}, Forward)
	expectErr(t, "ids", err, "posemb: len(positions.Ids) = 2: expected rows * seq = 1 * 1")
	err = RotateInplace(rope64, x, Shape{BSHD, 0, 1, 1, 64}, Positions{}, Forward)
	expectErr(t, "batch 0", err, "posemb: shape.batch = 0: expected a number >= 1")
	_, err = LoadConfig("x.json", -1, false)
	expectErr(t, "seqLen", err, "posemb: seqLen = -1: expected 0 (none) or a length >= 1")
}

func TestConformanceCasesMatchTheCxxResults(t *testing.T) {
	reference, data := os.Getenv("POSEMB_C_REFERENCE"), os.Getenv("POSEMB_TEST_DATA")
	if reference == "" || data == "" {
		t.Fatal("set POSEMB_C_REFERENCE (BUILD/tests/c/reference.txt) and POSEMB_TEST_DATA (tests/data)")
	}
	text, err := os.ReadFile(reference)
	must(t, err)
	l := &lines{t: t, lines: strings.Split(strings.TrimRight(string(text), "\n"), "\n")}
	cases := 0
	for strings.HasPrefix(l.peek(), "case ") {
		checkCase(l, data)
		cases++
	}
	checkMrope(l)
	checkBiases(l)
	checkErrors(l, data)
	if l.next != len(l.lines) {
		t.Errorf("%d reference lines not checked", len(l.lines)-l.next)
	}
	total := 0
	for _, line := range l.lines {
		if strings.HasPrefix(line, "case ") {
			total++
		}
	}
	if cases != total || cases == 0 {
		t.Errorf("%d of %d cases run", cases, total)
	}
	t.Logf("%d cases, %d records", cases, len(l.lines))
}

const beamConfig = `{"model_type": "beam", "hidden_size": 256, "num_attention_heads": 2,
	"num_key_value_heads": 2, "head_dim": 128, "num_hidden_layers": 2,
	"layer_types": ["sliding_attention", "full_attention"], "sliding_window": 512,
	"rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
	                    "full_attention": null}}`

// Beam's full layers: no RoPE, q times (1 + (p + 1) / 2048)^0.1 (modeling_beam.py,
// compute_attention_scaling); its sliding layers: RoPE, no temperature.
func TestBeamPowerTemperature(t *testing.T) {
	model, err := ParseConfig(beamConfig, 0, true)
	must(t, err)
	defer model.Close()
	sliding, err := model.LayerAttention(0)
	must(t, err)
	full, err := model.LayerAttention(1)
	must(t, err)
	if sliding.HasQueryTemperature || sliding.QueryTemperatureForm != TemperatureFloorLog {
		t.Errorf("layer 0: %+v", sliding)
	}
	if !full.HasQueryTemperature || full.QueryTemperatureFloorScale != 2048 ||
		full.QueryTemperatureAttnScale != 0.1 || full.QueryTemperaturePositionOffset != 1 ||
		full.QueryTemperatureForm != TemperaturePower {
		t.Errorf("layer 1: %+v", full)
	}
}

func TestVersionAndABI(t *testing.T) {
	if ABIVersion()>>16 != 1 || Version() == "" {
		t.Errorf("ABI %x, version %q", ABIVersion(), Version())
	}
}

func TestConcurrentUse(t *testing.T) {
	rope, err := DefaultRope(64, 64, 10000, RotateHalf)
	must(t, err)
	results := make([]string, 8)
	var wg sync.WaitGroup
	for g := range results {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			x := input[float32](64)
			if err := RotateInplace(rope, x, Shape{BSHD, 1, 1, 1, 64}, Positions{Offset: 12345}, Forward); err != nil {
				t.Error(err)
			}
			if _, err := DefaultRope(64, 7, 1e4, RotateHalf); err == nil {
				t.Error("odd rotary_dim accepted")
			}
			results[g] = values("", x)
		}(g)
	}
	wg.Wait()
	for _, r := range results {
		if r != results[0] {
			t.Error("threads disagree")
		}
	}
}

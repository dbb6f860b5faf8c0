//! The C API's conformance cases through the safe wrapper: every record of the C++ results
//! (tests/c/reference.txt, written by tests/c/reference_dump.cpp at build time) formatted from
//! this crate's values and compared as text (hex bit patterns: equal text is equal bits), then
//! the error paths. POSEMB_C_REFERENCE names reference.txt, POSEMB_TEST_DATA posemb's tests/data.
use posemb::*;
use std::env;

const BATCH: i64 = 2;
const SEQ: i64 = 3;
const HEADS: i64 = 2;
const IDS: [i64; 6] = [0, 5, 131071, 7, 1, 2000000];
const LONG_IDS: [i64; 3] = [0, 999999, 4194304];

// tests/c/cases.h's posemb_case_input_bits.
fn input_bits(dtype: i32, i: u32) -> u32 {
    let mix = i.wrapping_mul(2654435761);
    let sign = i & 1;
    match dtype {
        0 => ((mix >> 9) & 0x7fffff) | 0x3f000000 | (sign << 31),
        1 => ((mix >> 20) & 0x3ff) | 0x3800 | (sign << 15),
        _ => ((mix >> 24) & 0x7f) | 0x3f00 | (sign << 15),
    }
}

trait Bits: Element + Default {
    const ID: i32;
    fn from_bits(bits: u32) -> Self;
    fn bits(&self) -> u32;
}
impl Bits for f32 {
    const ID: i32 = 0;
    fn from_bits(bits: u32) -> Self {
        f32::from_bits(bits)
    }
    fn bits(&self) -> u32 {
        self.to_bits()
    }
}
impl Bits for F16 {
    const ID: i32 = 1;
    fn from_bits(bits: u32) -> Self {
        F16(bits as u16)
    }
    fn bits(&self) -> u32 {
        self.0 as u32
    }
}
impl Bits for BF16 {
    const ID: i32 = 2;
    fn from_bits(bits: u32) -> Self {
        BF16(bits as u16)
    }
    fn bits(&self) -> u32 {
        self.0 as u32
    }
}

fn input<T: Bits>(n: usize) -> Vec<T> {
    (0..n as u32)
        .map(|i| T::from_bits(input_bits(T::ID, i)))
        .collect()
}

fn values<T: Bits>(head: String, v: &[T]) -> String {
    let mut s = format!("{head} {}", v.len());
    for x in v {
        s += &format!(" {:x}", x.bits());
    }
    s
}

struct Lines {
    lines: Vec<String>,
    next: usize,
    failures: Vec<String>,
}

impl Lines {
    fn peek(&self) -> &str {
        self.lines.get(self.next).map(|s| s.as_str()).unwrap_or("")
    }
    fn take(&mut self) -> String {
        self.next += 1;
        self.lines.get(self.next - 1).cloned().unwrap_or_default()
    }
    fn expect(&mut self, what: &str, got: String) {
        let want = self.take();
        if want != got {
            self.failures.push(format!(
                "{what}: Rust\n  {:.300}\nC++\n  {:.300}",
                got, want
            ));
        }
    }
}

fn rotate_variant<T: Bits>(rope: &Rope, head_dim: i64, v: i32) -> String {
    let n = (BATCH * SEQ * HEADS * head_dim) as usize;
    let mut x = input::<T>(n);
    match v {
        0 => {
            rope.rotate_inplace(
                &mut x,
                Shape::bshd(BATCH, SEQ, HEADS, head_dim),
                Positions::Offset(1000000),
                Rotation::Forward,
            )
            .unwrap();
            values(String::new(), &x)
        }
        1 => {
            let mut out = vec![T::default(); (BATCH * HEADS * 5 * head_dim) as usize];
            rope.rotate(
                &x,
                Shape::bshd(BATCH, SEQ, HEADS, head_dim),
                &mut out,
                Shape::bhsd(BATCH, HEADS, 5, head_dim),
                2,
                Positions::Ids {
                    ids: &IDS,
                    rows: BATCH,
                },
                Rotation::Inverse,
            )
            .unwrap();
            values(String::new(), &out)
        }
        2 => {
            let table = RopeTable::new(rope, 0, 64).unwrap();
            table
                .rotate_inplace(
                    &mut x,
                    Shape::bhsd(BATCH, HEADS, SEQ, head_dim),
                    Positions::Offset(10),
                    Rotation::Forward,
                )
                .unwrap();
            values(String::new(), &x)
        }
        _ => {
            rope.rotate_inplace(
                &mut x,
                Shape::bshd(BATCH, SEQ, HEADS, head_dim),
                Positions::Ids {
                    ids: &LONG_IDS,
                    rows: 1,
                },
                Rotation::Forward,
            )
            .unwrap();
            values(String::new(), &x)
        }
    }
}

fn check_rope(lines: &mut Lines, model: &Model, layer: i64) {
    let rope = model.layer_rope(layer).unwrap();
    let i = rope.info();
    let inv = rope.inv_freq();
    let mut got = format!(
        "rope {layer} {} {} {} {} {:x} {}",
        i.head_dim,
        i.rotary_dim,
        i.rotary_offset,
        i.pairing as i32,
        i.attention_scale.to_bits(),
        inv.len()
    );
    for f in &inv {
        got += &format!(" {:x}", f.to_bits());
    }
    lines.expect("rope", got);
    while lines.peek().starts_with("rot ") {
        let f: Vec<i64> = lines
            .peek()
            .split(' ')
            .skip(1)
            .take(3)
            .map(|s| s.parse().unwrap())
            .collect();
        let (dtype, v) = (f[1], f[2] as i32);
        let d = i.head_dim as i64;
        let body = match dtype {
            0 => rotate_variant::<f32>(&rope, d, v),
            1 => rotate_variant::<F16>(&rope, d, v),
            _ => rotate_variant::<BF16>(&rope, d, v),
        };
        lines.expect("rot", format!("rot {} {dtype} {v}{body}", f[0]));
    }
}

fn check_layer(lines: &mut Lines, model: &Model, l: i64) {
    let a = model.layer_attention(l).unwrap();
    let t5 = model.layer_t5_buckets(l).unwrap();
    let rope_type = model.layer_rope_type(l).unwrap();
    let qt = a.query_temperature;
    let got = format!(
        "layer {l} {} {} {} {} {} {:x} {} {} {} {} {} {:x} {:x} {} {} {:x} {} {} {} {} {} {}",
        model.layer_kind(l).unwrap() as i32,
        model.layer_head_dim(l).unwrap(),
        if rope_type.is_empty() { "-" } else { rope_type },
        a.softmax_attention as i32,
        a.softmax_scale.is_some() as i32,
        a.softmax_scale.unwrap_or(0.0).to_bits(),
        a.sliding_window.is_some() as i32,
        a.sliding_window.unwrap_or(0),
        a.attention_chunk_size.is_some() as i32,
        a.attention_chunk_size.unwrap_or(0),
        qt.is_some() as i32,
        qt.map(|t| t.floor_scale).unwrap_or(0.0).to_bits(),
        qt.map(|t| t.attn_scale).unwrap_or(0.0).to_bits(),
        qt.map(|t| t.position_offset).unwrap_or(0),
        a.logit_softcap.is_some() as i32,
        a.logit_softcap.unwrap_or(0.0).to_bits(),
        a.attention_sinks as i32,
        a.alibi_bias_before_scale as i32,
        t5.is_some() as i32,
        t5.map(|b| b.num_buckets).unwrap_or(0),
        t5.map(|b| b.max_distance).unwrap_or(0),
        t5.map(|b| b.bidirectional as i32).unwrap_or(0)
    );
    lines.expect("layer", got);
    if lines.peek().starts_with("rope ") {
        check_rope(lines, model, l);
    }
}

fn check_case(lines: &mut Lines, data: &str) {
    let head = lines.take();
    let f: Vec<&str> = head.split(' ').collect();
    let (format, relative, seq) = (f[1], f[2], f[3].parse::<i64>().unwrap());
    let path = format!("{data}/{relative}");
    let seq_len = if seq > 0 { Some(seq) } else { None };
    let model = if format == "gguf" {
        Model::load_gguf(&path, seq_len, false)
    } else {
        Model::load_config(&path, seq_len, false)
    };
    if lines.peek().starts_with("error ") {
        let want = lines.take()["error ".len()..].to_string();
        match model {
            Err(e) if e.status == Status::InvalidArgument && e.message == want => {}
            other => lines
                .failures
                .push(format!("{relative}: {:?}, expected {want}", other.err())),
        }
    } else {
        let model = model.unwrap_or_else(|e| panic!("{relative}: {e}"));
        let (h, kv) = model.heads();
        lines.expect(relative, format!("model {} {h} {kv}", model.layer_count()));
        for l in 0..model.layer_count() as i64 {
            check_layer(lines, &model, l);
        }
    }
    if lines.take() != "end" {
        lines
            .failures
            .push(format!("{relative}: records left over"));
    }
}

fn check_mrope(lines: &mut Lines) {
    let sections = [[16, 24, 24], [24, 20, 20]];
    let thw: [i64; 9] = [0, 1, 2, 0, 4, 9, 0, 3, 100000];
    while lines.peek().starts_with("mrope ") {
        let f: Vec<usize> = lines
            .peek()
            .split(' ')
            .skip(1)
            .take(2)
            .map(|s| s.parse().unwrap())
            .collect();
        let rope = Rope::default_rope(128, 128, 1e6, Pairing::RotateHalf).unwrap();
        let layout = if f[0] == 0 {
            MropeLayout::Chunked
        } else {
            MropeLayout::Interleaved
        };
        let mrope = Mrope::new(&rope, sections[f[0]], layout).unwrap();
        let shape = Shape::bshd(BATCH, SEQ, HEADS, 128);
        let n = (BATCH * SEQ * HEADS * 128) as usize;
        fn run<T: Bits>(m: &Mrope, s: Shape, n: usize, thw: &[i64]) -> String {
            let mut x = input::<T>(n);
            m.rotate_inplace(&mut x, s, thw, 1, Rotation::Forward)
                .unwrap();
            values(String::new(), &x)
        }
        let body = match f[1] {
            0 => run::<f32>(&mrope, shape, n, &thw),
            1 => run::<F16>(&mrope, shape, n, &thw),
            _ => run::<BF16>(&mrope, shape, n, &thw),
        };
        lines.expect("mrope", format!("mrope {} {}{body}", f[0], f[1]));
    }
}

fn check_biases(lines: &mut Lines) {
    for n in 1..=20 {
        let mut got = format!("slopes {n}");
        for s in alibi_slopes(n, 8.0).unwrap() {
            got += &format!(" {:x}", s.to_bits());
        }
        lines.expect("slopes", got);
    }
    let k: Vec<i64> = (0..10).collect();
    for form in [AlibiForm::Causal, AlibiForm::Symmetric] {
        let bias = alibi_bias(&alibi_slopes(12, 8.0).unwrap(), &[0, 5, 9], &k, form).unwrap();
        lines.expect("alibi", values(format!("alibi {}", form as i32), &bias));
    }
    let k: Vec<i64> = (0..43).map(|j| 7 * j).collect();
    let q = [0, 3, 200];
    let table = input::<f32>(32 * 4);
    for bidirectional in [true, false] {
        let b = T5Buckets {
            num_buckets: 32,
            max_distance: 128,
            bidirectional,
        };
        let ids = t5_buckets(b, &q, &k).unwrap();
        let mut got = format!("t5buckets {} {}", bidirectional as i32, ids.len());
        for id in &ids {
            got += &format!(" {id}");
        }
        lines.expect("t5buckets", got);
        let bias = t5_bias(b, &table, 4, &q, &k).unwrap();
        lines.expect(
            "t5bias",
            values(format!("t5bias {}", bidirectional as i32), &bias),
        );
    }
}

fn cxx_message(lines: &mut Lines, name: &str) -> String {
    let line = lines.take();
    let prefix = format!("cxxerror {name} ");
    assert!(
        line.starts_with(&prefix),
        "expected {prefix}, got {line:.80}"
    );
    line[prefix.len()..].to_string()
}

fn expect_err<T>(lines: &mut Lines, what: &str, got: Result<T>, want: &str) {
    match got {
        Err(e) if e.status == Status::InvalidArgument && e.message == want => {}
        Err(e) => lines
            .failures
            .push(format!("{what}: '{}', expected '{want}'", e.message)),
        Ok(_) => lines
            .failures
            .push(format!("{what}: no error, expected '{want}'")),
    }
}

fn check_errors(lines: &mut Lines, data: &str) {
    let want = cxx_message(lines, "odd_rotary_dim");
    expect_err(
        lines,
        "odd",
        Rope::default_rope(64, 7, 10000.0, Pairing::RotateHalf),
        &want,
    );
    let want = cxx_message(lines, "rotary_dim_above_head_dim");
    expect_err(
        lines,
        "wide",
        Rope::default_rope(64, 128, 10000.0, Pairing::RotateHalf),
        &want,
    );
    let gpt2 = Model::load_config(&format!("{data}/models/gpt2.json"), None, false).unwrap();
    let want = cxx_message(lines, "layer_out_of_range");
    expect_err(lines, "layer 99", gpt2.layer_kind(99), &want);
    let want = cxx_message(lines, "rope_of_learned_layer");
    expect_err(lines, "learned", gpt2.layer_rope(0), &want);
    let want = cxx_message(lines, "missing_file");
    expect_err(
        lines,
        "missing",
        Model::load_config(&format!("{data}/models/no-such-config.json"), None, false),
        &want,
    );
    let rope64 = Rope::default_rope(64, 64, 10000.0, Pairing::RotateHalf).unwrap();
    let table = RopeTable::new(&rope64, 0, 64).unwrap();
    let mut x = vec![0.0f32; 64];
    let want = cxx_message(lines, "table_position");
    expect_err(
        lines,
        "table",
        table.rotate_inplace(
            &mut x,
            Shape::bshd(1, 1, 1, 64),
            Positions::Offset(100),
            Rotation::Forward,
        ),
        &want,
    );
    let rope128 = Rope::default_rope(128, 128, 10000.0, Pairing::RotateHalf).unwrap();
    let want = cxx_message(lines, "mrope_sum");
    expect_err(
        lines,
        "mrope",
        Mrope::new(&rope128, [16, 24, 20], MropeLayout::Chunked),
        &want,
    );
    let want = cxx_message(lines, "alibi_heads");
    expect_err(lines, "alibi", alibi_slopes(0, 8.0), &want);
    let want = cxx_message(lines, "head_dim_mismatch");
    let mut narrow = vec![0.0f32; 32];
    expect_err(
        lines,
        "narrow",
        rope64.rotate_inplace(
            &mut narrow,
            Shape::bshd(1, 1, 1, 32),
            Positions::Offset(0),
            Rotation::Forward,
        ),
        &want,
    );
    // "strict N KEY...": the C++ unused keys of the strict case.
    let strict = lines.take();
    let keys: Vec<String> = strict.split(' ').skip(2).map(String::from).collect();
    assert_eq!(
        strict.split(' ').nth(1),
        Some(keys.len().to_string().as_str())
    );
    let config = r#"{"hidden_size": 256, "num_attention_heads": 4, "rope_scaling": {"rope_type": "default", "banana": 1}}"#;
    expect_err(
        lines,
        "strict",
        Model::parse_config(config, None, true),
        &format!("posemb: config.json text: strict: {} is not used", keys[0]),
    );
    let lenient = Model::parse_config(config, None, false).expect("not strict");
    assert_eq!(lenient.unused_keys(), keys);

    // The wrapper's own checks: a slice whose length disagrees with its shape.
    let mut short = vec![0.0f32; 10];
    expect_err(
        lines,
        "short",
        rope64.rotate_inplace(
            &mut short,
            Shape::bshd(1, 1, 1, 64),
            Positions::Offset(0),
            Rotation::Forward,
        ),
        "posemb: x.len() = 10: expected batch * seq * heads * head_dim = 64",
    );
    expect_err(
        lines,
        "ids",
        rope64.rotate_inplace(
            &mut x,
            Shape::bshd(1, 1, 1, 64),
            Positions::Ids {
                ids: &[1, 2],
                rows: 1,
            },
            Rotation::Forward,
        ),
        "posemb: positions.ids.len() = 2: expected rows * seq = 1 * 1",
    );
    expect_err(
        lines,
        "batch 0",
        rope64.rotate_inplace(
            &mut x,
            Shape::bshd(0, 1, 1, 64),
            Positions::Offset(0),
            Rotation::Forward,
        ),
        "posemb: shape.batch = 0: expected a number >= 1",
    );
    expect_err(
        lines,
        "seq_len",
        Model::load_config("x.json", Some(0), false),
        "posemb: seq_len = 0: expected a length >= 1 (None: no length)",
    );
    expect_err(
        lines,
        "t5 table",
        t5_bias(
            T5Buckets {
                num_buckets: 32,
                max_distance: 128,
                bidirectional: true,
            },
            &[0.0; 3],
            4,
            &[0],
            &[0],
        ),
        "posemb: table.len() = 3: expected num_buckets * heads = 32 * 4",
    );
}

#[test]
fn conformance_cases_match_the_cxx_results() {
    let reference = env::var("POSEMB_C_REFERENCE")
        .expect("set POSEMB_C_REFERENCE to BUILD/tests/c/reference.txt");
    let data = env::var("POSEMB_TEST_DATA").expect("set POSEMB_TEST_DATA to posemb's tests/data");
    let text = std::fs::read_to_string(&reference).unwrap();
    let mut lines = Lines {
        lines: text.lines().map(String::from).collect(),
        next: 0,
        failures: vec![],
    };
    let mut cases = 0;
    while lines.peek().starts_with("case ") {
        check_case(&mut lines, &data);
        cases += 1;
    }
    check_mrope(&mut lines);
    check_biases(&mut lines);
    check_errors(&mut lines, &data);
    assert_eq!(lines.next, lines.lines.len(), "reference lines not checked");
    assert!(
        lines.failures.is_empty(),
        "{} failures:\n{}",
        lines.failures.len(),
        lines.failures.join("\n")
    );
    let total = lines
        .lines
        .iter()
        .filter(|l| l.starts_with("case "))
        .count();
    assert_eq!(cases, total);
    println!("{cases} cases, {} records", lines.lines.len());
}

const BEAM_CONFIG: &str = r#"{"model_type": "beam", "hidden_size": 256, "num_attention_heads": 2,
    "num_key_value_heads": 2, "head_dim": 128, "num_hidden_layers": 2,
    "layer_types": ["sliding_attention", "full_attention"], "sliding_window": 512,
    "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                        "full_attention": null}}"#;

// Beam's full layers: no RoPE, q times (1 + (p + 1) / 2048)^0.1 (modeling_beam.py,
// compute_attention_scaling); its sliding layers: RoPE, no temperature.
#[test]
fn beam_power_temperature() {
    let model = Model::parse_config(BEAM_CONFIG, None, true).unwrap();
    assert_eq!(model.layer_attention(0).unwrap().query_temperature, None);
    let t = model.layer_attention(1).unwrap().query_temperature.unwrap();
    assert_eq!(
        t,
        QueryTemperature {
            floor_scale: 2048.0,
            attn_scale: 0.1,
            position_offset: 1,
            form: TemperatureForm::Power
        }
    );
}

#[test]
fn version_and_abi() {
    assert_eq!(abi_version() >> 16, 1);
    // The crate's version is the library's (include/posemb/version.hpp, the one source).
    assert_eq!(version(), env!("CARGO_PKG_VERSION"));
}

#[test]
fn handles_are_send_and_sync_and_used_from_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Model>();
    send_sync::<Rope>();
    send_sync::<RopeTable>();
    send_sync::<Mrope>();
    let rope =
        std::sync::Arc::new(Rope::default_rope(64, 64, 10000.0, Pairing::RotateHalf).unwrap());
    let results: Vec<Vec<u32>> = (0..4)
        .map(|_| {
            let rope = rope.clone();
            std::thread::spawn(move || {
                let mut x = input::<f32>(64);
                rope.rotate_inplace(
                    &mut x,
                    Shape::bshd(1, 1, 1, 64),
                    Positions::Offset(12345),
                    Rotation::Forward,
                )
                .unwrap();
                // A failure on this thread leaves its own message.
                assert!(Rope::default_rope(64, 7, 1e4, Pairing::RotateHalf).is_err());
                x.iter().map(|v| v.to_bits()).collect()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    assert!(results.windows(2).all(|w| w[0] == w[1]));
}

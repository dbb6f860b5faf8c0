//! The gradients of ABI 1.4 through the safe wrapper: the records of tests/c/grad_reference.txt
//! (the C++ results, written by tests/c/reference_dump.cpp --grad; POSEMB_C_GRAD_REFERENCE names
//! it) formatted from this crate's values, then linearity: <w, F x> = <F^T w, x> and the central
//! difference of L(A) = <w, F_A x> along D equal to <dL/dA, D>.
use posemb::*;
use std::env;

const IDS: [i64; 6] = [0, 5, 131071, 7, 1, 2000000];
const TABLE_IDS: [i64; 6] = [0, 5, 7, 7, 1, 5];

// tests/c/cases.h's posemb_case_input_bits, float32.
fn input(start: u32, n: usize) -> Vec<f32> {
    (start..start + n as u32)
        .map(|i| {
            let mix = i.wrapping_mul(2654435761);
            f32::from_bits(((mix >> 9) & 0x7fffff) | 0x3f000000 | ((i & 1) << 31))
        })
        .collect()
}

fn doubles(head: &str, v: &[f64]) -> String {
    let mut s = format!("{head} {}", v.len());
    for x in v {
        s += &format!(" {:x}", x.to_bits());
    }
    s
}

fn floats(head: &str, v: &[f32]) -> String {
    let mut s = format!("{head} {}", v.len());
    for x in v {
        s += &format!(" {:x}", x.to_bits());
    }
    s
}

// FoPE config 0 of cases.h: head_dim 16, 4 heads over 2, train_length 512 (D_in 4), d_out 4.
fn case_fope() -> (FopeConfig, Fope, usize) {
    let mut config = FopeConfig::new(16, 4, 512);
    config.n_kv_heads = 2;
    config.d_out = 4;
    let (d_in, d_out) = config.dims().unwrap();
    let count = (2 * d_in * d_out) as usize;
    let fope = Fope::new(&config, &input(0, count), &input(64, count)).unwrap();
    (config, fope, count)
}

const SHAPE: Shape = Shape {
    layout: Layout::Bshd,
    batch: 2,
    seq: 3,
    heads: 4,
    head_dim: 16,
};

#[test]
fn gradients_match_the_cxx_results() {
    let path = env::var("POSEMB_C_GRAD_REFERENCE").expect("POSEMB_C_GRAD_REFERENCE");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let find = |head: &str| -> &str {
        lines
            .iter()
            .find(|l| l.starts_with(&format!("{head} ")))
            .copied()
            .unwrap_or("")
    };
    let (_, fope, _) = case_fope();
    let at = Positions::Ids { ids: &IDS, rows: 2 };
    let mut x = input(0, 384);
    let mut g = input(4096, 384);
    let (d_sin, d_cos) = fope.coefficient_gradients(&x, &g, SHAPE, at).unwrap();
    fope.rotate_inplace(&mut x, SHAPE, at, Rotation::Forward)
        .unwrap();
    fope.rotate_inplace(&mut g, SHAPE, at, Rotation::Transpose)
        .unwrap();
    assert_eq!(floats("fope 0 0 rot", &x), find("fope 0 0 rot"));
    assert_eq!(floats("fope 0 0 tr", &g), find("fope 0 0 tr"));
    assert_eq!(doubles("fope 0 0 dsin", &d_sin), find("fope 0 0 dsin"));
    assert_eq!(doubles("fope 0 0 dcos", &d_cos), find("fope 0 0 dcos"));

    let grad = input(0, 48);
    let table = position_table_gradient(
        &grad,
        2,
        3,
        8,
        Positions::Ids {
            ids: &TABLE_IDS,
            rows: 2,
        },
        8,
    )
    .unwrap();
    assert_eq!(doubles("tablegrad 0", &table), find("tablegrad 0"));
    let table = position_table_gradient(&grad, 2, 3, 8, Positions::Offset(2), 8).unwrap();
    assert_eq!(doubles("tablegrad 1", &table), find("tablegrad 1"));
    let k: Vec<i64> = (0..43).map(|j| 7 * j).collect();
    let bias = input(0, 4 * 3 * 43);
    for bidirectional in [true, false] {
        let buckets = T5Buckets {
            num_buckets: 32,
            max_distance: 128,
            bidirectional,
        };
        let d = t5_table_gradient(buckets, &bias, 4, &[0, 3, 200], &k).unwrap();
        let head = format!("t5grad {}", bidirectional as i32);
        assert_eq!(doubles(&head, &d), find(&head));
    }
}

#[test]
fn fope_gradients_are_the_linear_maps_transposes() {
    let (config, fope, count) = case_fope();
    let at = Positions::Ids { ids: &IDS, rows: 2 };
    let x: Vec<f32> = (0..384)
        .map(|i| ((i * 37 % 23) as f32 - 11.0) / 7.0)
        .collect();
    let w: Vec<f32> = (0..384)
        .map(|i| ((i * 53 % 19) as f32 - 9.0) / 5.0)
        .collect();
    let loss = |sin: &[f32], cos: &[f32]| -> f64 {
        let f = Fope::new(&config, sin, cos).unwrap();
        let mut y = x.clone();
        f.rotate_inplace(&mut y, SHAPE, at, Rotation::Forward)
            .unwrap();
        y.iter().zip(&w).map(|(a, b)| *a as f64 * *b as f64).sum()
    };
    let (sin, cos) = (input(0, count), input(64, count));
    let dir: Vec<f32> = (0..count)
        .map(|i| ((i * 7 % 5) as f32 - 2.0) / 4.0)
        .collect();
    let (d_sin, _) = fope.coefficient_gradients(&x, &w, SHAPE, at).unwrap();
    let plus: Vec<f32> = sin.iter().zip(&dir).map(|(a, d)| a + 0.5 * d).collect();
    let minus: Vec<f32> = sin.iter().zip(&dir).map(|(a, d)| a - 0.5 * d).collect();
    let central = loss(&plus, &cos) - loss(&minus, &cos);
    let analytic: f64 = d_sin.iter().zip(&dir).map(|(g, d)| g * *d as f64).sum();
    let scale: f64 = d_sin
        .iter()
        .zip(&dir)
        .map(|(g, d)| (g * *d as f64).abs())
        .sum();
    assert!(
        (central - analytic).abs() <= 1e-5 * scale,
        "{central} vs {analytic}"
    );
    let (mut fx, mut tw) = (x.clone(), w.clone());
    fope.rotate_inplace(&mut fx, SHAPE, at, Rotation::Forward)
        .unwrap();
    fope.rotate_inplace(&mut tw, SHAPE, at, Rotation::Transpose)
        .unwrap();
    let forward: f64 = fx.iter().zip(&w).map(|(a, b)| *a as f64 * *b as f64).sum();
    let backward: f64 = tw.iter().zip(&x).map(|(a, b)| *a as f64 * *b as f64).sum();
    let size: f64 = fx
        .iter()
        .zip(&w)
        .map(|(a, b)| (*a as f64 * *b as f64).abs())
        .sum();
    assert!(
        (forward - backward).abs() <= 1e-5 * size,
        "{forward} vs {backward}"
    );
    let err = Fope::new(&config, &sin[..count - 1], &cos[..count - 1])
        .err()
        .unwrap();
    assert_eq!(err.status, Status::InvalidArgument);
    assert_eq!(
        err.message,
        format!(
            "posemb: count = {}: expected n_kv_heads * D_in * D_out = {count}",
            count - 1
        )
    );
}

"""Every golden case of tests/data through Python equals the posemb tool bit for bit.

hf/ and models/: the frequencies, attention scale and layer fields of `posemb freqs` / `posemb
layers --json` (printed with 17 significant digits, so they parse back to the same doubles), and
`posemb apply` on every hf/ config; fope/: `posemb apply` with the case's coefficients (and with
initialised ones where the reference used the step-eye); multimodal/: every case.json command.
The tool's own tests (tests/cli) compare it with the reference values; here the Python layer must
give the same bits, and the Python results are also checked against the golden values directly.
"""
import glob
import json
import os
import re

import numpy as np
import pytest
import torch

import posemb
from conftest import bits_equal, data_path, tool_json

HF_CASES = sorted(glob.glob(data_path("hf", "*.expected.json")))
MODEL_CASES = sorted(glob.glob(data_path("models", "*.expected.json")))
FOPE_CASES = sorted(glob.glob(data_path("fope", "*", "config.json")))
MULTIMODAL_CASES = sorted(glob.glob(data_path("multimodal", "*", "case.json")))


def config_and_seq(expected):
    """NAME.expected.json -> (NAME.json, None); NAME.seqN.expected.json -> (NAME.json, N)."""
    name = os.path.basename(expected)[: -len(".expected.json")]
    match = re.fullmatch(r"(.*)\.seq([0-9]+)", name)
    config = match.group(1) if match else name
    return os.path.join(os.path.dirname(expected), config + ".json"), (int(match.group(2)) if match else None)


def seq_args(seq_len):
    return [] if seq_len is None else ["--seq-len", seq_len]


def test_cases_found():
    assert len(HF_CASES) >= 20 and len(MODEL_CASES) >= 20
    assert len(FOPE_CASES) == 4 and len(MULTIMODAL_CASES) >= 12


def check_rope_fields(spec, cli):
    assert spec.inv_freq.tolist() == cli["inv_freq"]
    assert spec.attention_scale == cli["attention_scale"]
    assert spec.rotary_dim == cli["rotary_dim"]
    assert spec.pairing == cli["pairing"]


@pytest.mark.parametrize("expected", HF_CASES, ids=os.path.basename)
def test_hf_freqs(tool, expected):
    config, seq_len = config_and_seq(expected)
    cli = tool_json(tool, "freqs", config, *seq_args(seq_len))
    model = posemb.load_model(config)
    spec = model.layers[0].rope_spec(seq_len)
    check_rope_fields(spec, cli)
    assert model.layers[0].rope.rope_type == cli["rope_type"]
    # The golden values (HuggingFace's own functions): relative 1e-6.
    golden = json.load(open(expected))
    np.testing.assert_allclose(spec.inv_freq, golden["inv_freq"], rtol=1e-6, atol=0)
    np.testing.assert_allclose(spec.attention_scale, golden["attention_scale"], rtol=1e-6)


HF_CONFIGS = sorted(c for c in glob.glob(data_path("hf", "*.json")) if not c.endswith(".expected.json"))


@pytest.mark.parametrize("config", HF_CONFIGS, ids=os.path.basename)
def test_hf_apply(tool, tmp_path, config):
    model = posemb.load_model(config)
    # the heads' width: DeepSeek's qk_nope + qk_rope, the rotated qk_rope slice last
    head_dim = model.rope_spec().head_dim
    x = np.random.default_rng(7).standard_normal((2, 6, 3, head_dim)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    tool("apply", config, "--input", tmp_path / "x.npy", "--offset", 5000, "--output", tmp_path / "y.npy")
    # The tool's seq_len: the largest position + 1 (as HuggingFace).
    y = posemb.apply_rope(x, 5000, model.rope_spec(seq_len=5000 + 6))
    assert bits_equal(y, np.load(tmp_path / "y.npy"))


def layer_checks(layer, cli, seq_len):
    assert layer.index == cli["layer"]
    assert layer.kind == cli["positions"]
    assert layer.head_dim == cli["head_dim"]
    if layer.kind == "rope":
        check_rope_fields(layer.rope_spec(seq_len), cli)
        assert layer.rope.rope_type == cli["rope_type"]
        section = cli["mrope_section"]
        assert (list(layer.rope.mrope_section) if layer.rope.mrope_section else None) == section
    else:
        assert layer.rope is None or layer.kind == "fope"
    attention = layer.attention
    assert (attention.softmax_scale if layer.softmax_attention else None) == cli["softmax_scale"]
    assert attention.sliding_window == cli["sliding_window"]
    assert attention.attention_chunk_size == cli["attention_chunk_size"]
    temperature = attention.query_temperature
    assert (None if temperature is None else
            {"floor_scale": temperature.floor_scale, "attn_scale": temperature.attn_scale,
             "position_offset": temperature.position_offset}) == cli["query_temperature"]
    assert attention.logit_softcap == cli["logit_softcap"]
    assert attention.attention_sinks == cli["attention_sinks"]
    if "relative_attention" in cli:
        buckets = layer.relative_bias
        assert {"num_buckets": buckets.num_buckets, "max_distance": buckets.max_distance,
                "bidirectional": buckets.bidirectional,
                "table_layer": layer.relative_bias_table_layer} == cli["relative_attention"]
        assert (layer.stack or None) == cli["stack"]


@pytest.mark.parametrize("expected", MODEL_CASES, ids=os.path.basename)
def test_model_layers(tool, expected):
    config, seq_len = config_and_seq(expected)
    cli = tool_json(tool, "layers", config, "--json", *seq_args(seq_len))
    model = posemb.load_model(config)
    assert len(model.layers) == len(cli)
    for layer, cli_layer in zip(model.layers, cli):
        layer_checks(layer, cli_layer, seq_len)
    golden = json.load(open(expected))["layers"]
    for layer, gold in zip(model.layers, golden):
        assert layer.kind == gold["positions"]
        if layer.kind == "rope":
            np.testing.assert_allclose(layer.rope_spec(seq_len).inv_freq, gold["inv_freq"], rtol=1e-6, atol=0)


def test_t5_layers(tool):
    config = data_path("t5", "t5_small_2heads.json")
    cli = tool_json(tool, "layers", config, "--json")
    model = posemb.load_model(config)
    for layer, cli_layer in zip(model.layers, cli):
        layer_checks(layer, cli_layer, None)


@pytest.mark.parametrize("config", FOPE_CASES, ids=lambda c: os.path.basename(os.path.dirname(c)))
def test_fope_apply(tool, tmp_path, config):
    case = os.path.dirname(config)
    files = {name: os.path.join(case, name + ".npy") for name in ("x", "positions", "sin_coef", "cos_coef", "y")}
    tool("apply", config, "--input", files["x"], "--positions", files["positions"],
         "--fope-sin-coef", files["sin_coef"], "--fope-cos-coef", files["cos_coef"],
         "--output", tmp_path / "y.npy")
    model = posemb.load_model(config)
    assert model.layers[0].kind == "fope"
    fope = posemb.fope_with_coefficients(model.fope, np.load(files["sin_coef"]), np.load(files["cos_coef"]))
    x, positions = np.load(files["x"]), np.load(files["positions"])
    y = posemb.apply_fope(x, positions, fope)
    assert bits_equal(y, np.load(tmp_path / "y.npy"))
    # The reference implementation's output: 1e-5 * max(1, max |y|), as the tool's tests.
    reference = np.load(files["y"])
    assert np.max(np.abs(y - reference)) <= 1e-5 * max(1.0, float(np.max(np.abs(reference))))
    # In place on torch gives the same bits.
    t = torch.from_numpy(x.copy())
    posemb.apply_fope_(t, torch.from_numpy(positions), fope)
    assert bits_equal(t.numpy(), y)


@pytest.mark.parametrize("case", ["c_identity_hd64_h4_N512_S40", "c2_stepeye_hd64_h4_N4096_S48"])
def test_fope_initialised(tool, tmp_path, case):
    config = data_path("fope", case, "config.json")
    x = data_path("fope", case, "x.npy")
    tool("apply", config, "--input", x, "--output", tmp_path / "y.npy")
    fope = posemb.make_fope(posemb.load_model(config).fope)
    assert bits_equal(posemb.apply_fope(np.load(x), 0, fope), np.load(tmp_path / "y.npy"))


def multimodal_args(case_dir, out_dir, args):
    return [a.replace("{case}", case_dir).replace("{out}", str(out_dir)) for a in args]


def arg_value(args, flag, default=None):
    return args[args.index(flag) + 1] if flag in args else default


def run_multimodal_apply(case, case_dir, args):
    model = posemb.load_model(os.path.join(case_dir, "config.json"))
    x = np.load(os.path.join(case_dir, "X.npy"))
    if case["command"] == "apply-vision":
        t, h, w = map(int, case["grid"].split("x"))
        positions = posemb.vision_patch_positions(model.vision, t, h, w)
        return posemb.apply_vision_rope(x, positions, model.vision)
    positions = np.load(os.path.join(case_dir, "P.npy"))
    layout = arg_value(args, "--layout", "bshd")
    seq_len = int(np.ceil(positions.max())) + 1
    if model.rope_scheme().mrope_section is None:
        return posemb.apply_rope(x, positions, model.rope_spec(seq_len), layout=layout)
    return posemb.apply_mrope(x, positions, model.rope_scheme().mrope_spec(seq_len), layout=layout)


@pytest.mark.parametrize("case_json", MULTIMODAL_CASES, ids=lambda c: os.path.basename(os.path.dirname(c)))
def test_multimodal(tool, tmp_path, case_json):
    case_dir = os.path.dirname(case_json)
    case = json.load(open(case_json))
    args = multimodal_args(case_dir, tmp_path, case["args"])
    stdout = tool(*args)
    model = posemb.load_model(os.path.join(case_dir, "config.json"))
    command = case["command"]
    if command in ("apply", "apply-vision"):
        y = run_multimodal_apply(case, case_dir, args)
        assert bits_equal(y, np.load(tmp_path / "Y.npy"))
        expected = np.load(os.path.join(case_dir, "Y.npy"))  # HuggingFace's output
        np.testing.assert_allclose(y, expected, atol=case["atol"], rtol=case["rtol"])
    elif command == "freqs":
        cli = json.loads(stdout)
        spec = model.layers[0].mrope_spec()
        check_rope_fields(spec.rope, cli)
        assert list(spec.sections) == cli["mrope_section"] and spec.layout == cli["mrope_layout"]
        np.testing.assert_allclose(spec.rope.inv_freq, case["expect"]["inv_freq"], rtol=case["rtol"])
    elif command == "mrope-index":
        positions, delta = posemb.mrope_index(model, case["segments"], resume=case.get("resume"))
        assert bits_equal(positions, np.load(tmp_path / "P.npy"))
        assert json.loads(stdout) == {"seq_len": positions.shape[1], "rope_delta": delta} == case["expect"]
        assert bits_equal(positions, np.load(os.path.join(case_dir, "P.npy")))
    else:
        pytest.fail("unknown multimodal command " + command)


def test_xpos_key(tool, tmp_path):
    config = os.path.join(os.path.dirname(data_path()), "cli", "data", "xpos.json")
    x = data_path("fope", "a_hd64_h8_N512_S32", "x.npy")
    tool("apply", config, "--input", x, "--role", "key", "--output", tmp_path / "y.npy")
    xs = np.load(x)
    spec = posemb.load_model(config).xpos_spec(seq_len=xs.shape[1])
    assert bits_equal(posemb.apply_xpos(xs, 0, spec, "key"), np.load(tmp_path / "y.npy"))


def test_alibi_buckets_sinusoidal_bias(tool, tmp_path):
    tool("alibi", "--heads", 6, "--q-len", 3, "--k-len", 5, "--max-bias", 16, "--output", tmp_path / "a.npy")
    bias = posemb.alibi_bias(posemb.alibi_slopes(6, 16.0), np.arange(2, 5), np.arange(5))
    assert bits_equal(bias, np.load(tmp_path / "a.npy"))
    tool("buckets", "--num-buckets", 32, "--max-distance", 128, "--causal", "--q-len", 3, "--k-len", 40,
         "--q-offset", 37, "--output", tmp_path / "b.npy")
    ids = posemb.t5_bucket_matrix(posemb.T5Buckets(32, 128, False), np.arange(37, 40), np.arange(40))
    assert bits_equal(ids, np.load(tmp_path / "b.npy"))
    tool("sinusoidal", "--dim", 8, "--max-len", 50, "--layout", "concat", "--output", tmp_path / "s.npy")
    assert bits_equal(posemb.sinusoidal_table(50, 8, layout="concat"), np.load(tmp_path / "s.npy"))
    config, table = data_path("t5", "t5_small_2heads.json"), data_path("t5", "table_32x2.npy")
    tool("bias", config, "--table", table, "--q-len", 2, "--k-len", 3, "--decoder", "--output", tmp_path / "t.npy")
    model = posemb.load_model(config)
    decoder = next(layer for layer in model.layers if layer.stack == "decoder")
    t5 = posemb.T5BiasTable(decoder.relative_bias, np.load(table))
    assert bits_equal(posemb.t5_bias(t5, np.arange(1, 3), np.arange(3)), np.load(tmp_path / "t.npy"))


def test_version_matches_tool(tool):
    assert tool("--version").split()[-1] == posemb.__version__

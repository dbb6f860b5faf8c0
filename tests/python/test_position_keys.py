"""Never silent: every config key transformers' modeling code reads for positions or attention
(conformance/transformers/position_keys.json, derived from the pinned transformers by
position_keys.py) is reported by posemb's reader when unused, read where it is needed, or listed
as irrelevant to positions with a reason."""
import importlib.util
import json
import os
import re

import pytest

import posemb
from conftest import SOURCE_DIR

HARNESS = os.path.join(SOURCE_DIR, "conformance", "transformers")


def _keys_module():
    spec = importlib.util.spec_from_file_location(
        "position_keys", os.path.join(HARNESS, "position_keys.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


keys = _keys_module()
LISTED = json.load(open(keys.LIST))


def test_every_listed_key_is_reported_read_or_irrelevant():
    reported = set(keys.reported_keys())
    unclassified = [key for key in LISTED["keys"]
                    if key not in reported and key not in keys.READ_WHEN_NEEDED
                    and key not in keys.IRRELEVANT]
    assert unclassified == []


def test_a_key_is_in_one_class_only():
    reported = set(keys.reported_keys())
    assert reported & set(keys.IRRELEVANT) == set()
    assert reported & set(keys.READ_WHEN_NEEDED) == set()
    assert set(keys.READ_WHEN_NEEDED) & set(keys.IRRELEVANT) == set()


def test_read_when_needed_keys_are_read_by_the_reader():
    folder = os.path.join(SOURCE_DIR, "include", "posemb", "model", "config")
    source = "".join(open(os.path.join(folder, name)).read() for name in os.listdir(folder))
    missing = [key for key in keys.READ_WHEN_NEEDED if f'"{key}"' not in source]
    assert missing == []


def test_the_list_is_the_pinned_transformers():
    transformers = pytest.importorskip("transformers")
    if transformers.__version__ != LISTED["transformers"]:
        pytest.skip(f"the list is of transformers {LISTED['transformers']}, "
                    f"not {transformers.__version__}")
    assert keys.derive() == LISTED, f"regenerate it: {LISTED['command']}"


def test_a_listed_key_posemb_does_not_read_is_reported_and_strict_refuses(tmp_path, tool):
    # Falcon's alibi is read; GPT-2's scale_attn_by_inverse_layer_idx on a Llama config is not
    config = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 2,
              "num_hidden_layers": 1, "scale_attn_by_inverse_layer_idx": True}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert "scale_attn_by_inverse_layer_idx" in tool("inspect", path)
    with pytest.raises(AssertionError, match=re.escape("--strict: scale_attn_by_inverse_layer_idx")):
        tool("inspect", "--strict", path)


def test_llama4_temperature_switch_as_a_number_is_said(tmp_path):
    # Llama-4-Scout-17B-16E's config.json writes attn_temperature_tuning: 4; transformers 5.24 /
    # 5.25 refuse to load it (Llama4TextConfig: a bool field), posemb reads it as on and says so
    transformers = pytest.importorskip("transformers")
    source = json.load(open(os.path.join(SOURCE_DIR, "tests", "data", "models",
                                         "llama-4-scout-17b-16e.json")))
    config = {k: v for k, v in source.items() if not k.startswith("_")}
    assert config["text_config"]["attn_temperature_tuning"] == 4
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(Exception, match="attn_temperature_tuning"):
        transformers.AutoConfig.from_pretrained(str(tmp_path))
    model = posemb.load_model(str(tmp_path / "config.json"))
    assert any(w.startswith("text_config.attn_temperature_tuning = 4 is not true or false: "
                            "transformers 5.25 refuses") for w in model.warnings)
    nope = [layer for layer in model.layers if layer.kind == "none"]
    assert nope and all(layer.attention.query_temperature is not None for layer in nope)

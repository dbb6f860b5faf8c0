"""What the config reader did not use and what transformers would warn about, through Python:
ModelPositions.unused_keys (key paths, sorted; the tool's `inspect` lists them and --strict refuses
them), unused_keys_transformers_ignores (rope-block keys the config class tells transformers to
ignore: never refused) and warnings (one sentence each), equal to the C++ reader's.
"""
import os

import posemb
from conftest import SOURCE_DIR, data_path

CLI_DATA = os.path.join(SOURCE_DIR, "tests", "cli", "data")


def test_unused_rope_keys_are_listed():
    model = posemb.load_model(os.path.join(CLI_DATA, "unused_rope_keys.json"))
    assert model.unused_keys == ["rope_scaling.banana", "rope_scaling.beta_fast"]
    assert model.unused_keys_transformers_ignores == []
    assert model.warnings == []


def test_keys_transformers_ignores_are_set_apart():
    # Ministral3Config: ignore_keys_at_rope_validation={"llama_4_scaling_beta", "max_position_embeddings"};
    # posemb uses llama_4_scaling_beta, not max_position_embeddings.
    model = posemb.load_model(os.path.join(CLI_DATA, "ministral3_rope_max_position.json"))
    assert model.model_type == "ministral3"
    assert model.unused_keys == []
    assert model.unused_keys_transformers_ignores == ["text_config.rope_parameters.max_position_embeddings"]


def test_warnings_name_both_keys():
    model = posemb.load_model(data_path("models", "syn-llama3-equal-freq-factors.json"))
    assert model.unused_keys == []
    assert len(model.warnings) == 1
    assert "rope_scaling.high_freq_factor = 1 is not greater than rope_scaling.low_freq_factor = 1" in model.warnings[0]


def test_a_config_used_whole_has_no_notes():
    model = posemb.load_model(data_path("models", "syn-gpt-oss-defaults.json"))
    assert (model.unused_keys, model.unused_keys_transformers_ignores, model.warnings) == ([], [], [])

"""Coverage the other way: every model type of the pinned transformers whose config class carries
positional fields, against posemb's family tables and this harness's cases.

A model type is covered when it has a case (tiny_models.CASES), or when its only positional
field is a learned absolute table length (max_position_embeddings / n_positions, no rope, ALiBi
or relative-bias field): the table is a lookup that the learned-table path (`--weights`, checked
on gpt2, opt, bert, roberta) covers. A vision, video, audio or speech tower or codec (by its
model type's name, TOWER) is out of posemb's scope: posemb's family table describes text towers;
such a row passes with that reason and is counted apart. A type without a case is
run as a sweep case (sweep.py: the config class's defaults, small sizes) when it is in SWEEP, or
has a documented reason in REASONS (a group reason names the group). A sweep case that does not
pass is a documented gap only when GAPS says why; anything else is a `fail` row naming what it
carries, and a gap whose sweep starts to pass is a `fail` too (move it to SWEEP).
"""

from __future__ import annotations

import os
import re

from report import Row

ROPE = re.compile(r"rope|rotary|mrope")
BIAS = re.compile(r"alibi|relative_attention|position_buckets|max_relative_positions")
LEARNED = re.compile(r"max_position_embeddings|n_positions|max_seq_len|max_source_positions|"
                     r"max_target_positions|position_embedding_type|max_2d_position_embeddings")


TOWER = re.compile(r"vision|video|audio|asr|tts|_vit|vit_|_dit$|codec|mimi|diarization|phonon|"
                   r"tokenizer")


def posemb_table(root: str) -> set[str]:
    """The model types of posemb's family tables (include/posemb/model/families.hpp)."""
    text = open(os.path.join(root, "include", "posemb", "model", "families.hpp")).read()
    return set(re.findall(r'^\s+family\("([a-z0-9_\-]+)", "', text, flags=re.M))


def _fields(cls) -> set[str]:
    names = set()
    for klass in cls.__mro__:
        names |= set(getattr(klass, "__annotations__", {}))
    return names


def positional_fields(cls) -> list[str]:
    return sorted(f for f in _fields(cls) if ROPE.search(f) or BIAS.search(f) or LEARNED.search(f))


def rows(root: str, cases: dict, sweeps: dict | None = None) -> tuple[list[Row], dict]:
    """sweeps: model_type -> the sweep case's report rows (run.py runs SWEEP), or None when the
    sweep was not run (its types are then counted as not run)."""
    from transformers import CONFIG_MAPPING

    table = posemb_table(root)
    by_type = {}
    for name, case in cases.items():
        if not name.startswith("sweep/"):
            by_type.setdefault(case.model_type, []).append(name)
    result, counts = [], {"positional types": 0, "with cases": 0, "sweep cases": 0,
                          "learned only": 0, "vision/audio towers": 0, "reasons": 0,
                          "documented gaps": 0, "uncovered": 0}

    def add(model_type, key, status, detail):
        counts[key] += 1
        result.append(Row(f"coverage/{model_type}", "coverage", status, detail=detail))

    for model_type in sorted(CONFIG_MAPPING.keys()):
        try:
            fields = positional_fields(CONFIG_MAPPING[model_type])
        except Exception as error:  # a lazy class that does not import in this environment
            result.append(Row(f"coverage/{model_type}", "coverage", "error", detail=str(error)[:120]))
            continue
        if not fields:
            continue
        counts["positional types"] += 1
        in_table = "in posemb's table" if model_type in table else "not in posemb's table"
        carries = f"carries {', '.join(fields)}; {in_table}"
        if model_type in by_type:
            add(model_type, "with cases", "pass", f"cases {', '.join(by_type[model_type])}; {in_table}")
        elif not any(ROPE.search(f) or BIAS.search(f) for f in fields):
            add(model_type, "learned only", "pass", f"learned absolute positions only "
                f"({', '.join(fields)}): the learned-table path covers it; {in_table}")
        elif TOWER.search(model_type) and not model_type.endswith("_text"):
            add(model_type, "vision/audio towers", "pass", f"a vision / audio tower or codec, "
                f"outside posemb's text families; {carries}")
        elif model_type in REASONS:
            add(model_type, "reasons", "pass", f"{REASONS[model_type]}; {carries}")
        elif model_type in SWEEP:
            add(model_type, *_sweep_row(model_type, sweeps, carries))
        elif model_type in GAPS:
            add(model_type, "documented gaps", "pass", f"gap: {GAPS[model_type]}; {carries}")
        else:
            add(model_type, "uncovered", "fail", f"no case, sweep or reason; {carries}")
    return result, counts


def _sweep_row(model_type, sweeps, carries):
    """(count key, status, detail) of a SWEEP type from its sweep case's rows."""
    if sweeps is None:
        return "uncovered", "fail", f"sweep case not run (--skip-sweep); {carries}"
    bad = [r for r in sweeps.get(model_type, []) if r.status != "pass"]
    if not sweeps.get(model_type):
        return "uncovered", "fail", f"sweep case gave no rows; {carries}"
    what = "; ".join(f"{r.check} {r.status}: {r.detail[:100]}" for r in bad[:2])
    if model_type in GAPS:
        if not bad:
            return "uncovered", "fail", f"documented gap whose sweep now passes: move it; {carries}"
        return "documented gaps", "pass", f"gap: {GAPS[model_type]} (sweep: {what}); {carries}"
    if bad:
        return "uncovered", "fail", f"sweep case sweep/{model_type} does not pass: {what}; {carries}"
    return "sweep cases", "pass", (f"sweep case sweep/{model_type} (config-class defaults) passes "
                                   f"{len(sweeps[model_type])} checks; {carries}")

# Model types the sweep runs (sweep.py): rope decoders and encoders without a hand-written case.
SWEEP = (
    "afmoe apertus apertus1p5_text arcee aria_text axk2 beam bitnet "
    "cwm deepseek_v4 diffllama doge dory dots1 dots3_note_text "
    "embedding_gemma2_text eurobert exaone_moe flex_olmo gemma gemma4_unified_text glm4_moe_lite "
    "gpt_neox_japanese granite_docling_text granitemoe granitemoeshared "
    "gte hrm_text hy_v3 hy_v4 hy_v4_vl_text hyperclovax jais2 jetmoe jina_embeddings_v3 kolibri1 "
    "laguna lara_mini mellum mimo_v2_flash minicpm3 minimax_m2 minimax_m3_vl_text mistral4 "
    "modernbert modernbert-decoder molmo2_text moshi muse_glimmer_text muse_spark_text nanochat "
    "nemotron neomme nomic_bert olmo olmo2 olmo_hybrid olmoe "
    "qwen3_vl_moe_text qwen3_vl_text seed_oss solar_open ultrabert vaultgemma "
    "youtu zaya ergo kolibri1_1 minicpm5_moe"
).split()


def _group(reason: str, types: str) -> dict:
    return {t: reason for t in types.split()}


# Model types with no case and a documented reason (groups share one).
REASONS = {
    **_group("speech / audio model (encoder, codec decoder or talker), outside posemb's text "
             "families", "clvp_encoder csm_depth_decoder_model dia_decoder dia_encoder "
             "kyutai_speech_to_text moonshine moonshine_streaming musicflamingo "
             "nemotron3_5_transcribe_word_timestamp voxtral_realtime_encoder "
             "voxtral_realtime_text wav2vec2-bert wav2vec2-conformer seamless_m4t "
             "qwen2_5_omni_talker qwen3_omni_moe_talker_code_predictor qwen3_omni_moe_talker_text"),
    **_group("vision model or vision tower, outside posemb's text families", "efficientloftr "
             "eomt_dinov3 mlcd sapiens2 deepseek_ocr2_encoder"),
    "timesfm2_5": "time-series model (past_values, no tokens), outside posemb's text families",
    **_group("protein language model, outside posemb's text families",
             "esm esmc evolla EvollaModel"),
    **_group("transformers 5.25.0 ships the config class only (no modeling file of the type): "
             "nothing to run (param2moe new in 5.25.0, the others as in 5.24.0)",
             "exaone internlm3 iquestcoder sarvam_mla sarvam_moe layoutxlm param2moe"),
}

# Positional model types posemb does not describe yet (no case, or a sweep case that does not
# pass): each with why. A gap is a documented absence, not coverage.
GAPS = {
    "ergo": "new in transformers 5.25.0 and not in posemb's family table: Llama's rules, which "
            "an unknown model_type gets, do not give its rotation (the sweep's rope rows fail); "
            "a row needs its rules read from modeling_ergo.py",
    "kolibri1_1": "new in transformers 5.25.0: the config class's validate_architecture refuses "
                  "the sweep's small sizes (StrictDataclassClassValidationError); no case yet",
    **_group("T5-style relative-bias buckets under another model_type: not in posemb's family "
             "table (load_model would give Llama's rules)", "longt5 pix2struct_text_model "
             "pop2piano switch_transformers mpnet"),
    **_group("disentangled attention (content-to-position and position-to-content terms over "
             "log-bucketed relative positions): a positional scheme posemb does not implement",
             "deberta deberta-v2 sew-d"),
    **_group("document-layout model: 1-D and 2-D (bounding-box) relative-bias buckets, a scheme "
             "posemb does not implement", "layoutlmv2 layoutlmv3 udop"),
    "pixtral": "Pixtral's vision tower (2-D axial RoPE over patch rows and columns, posemb's "
               "VisionTower::Pixtral): posemb.load_model refuses the config 5.25.0 saves "
               "(rope_parameters.rope_type \"axial\", which PixtralVisionRotaryEmbedding "
               "requires); the same tower inside a wrapper's vision_config is run by case "
               "mistral3",
    "roformer": "RoFormer's rotary (a sinusoidal table, interleaved pairs, optionally applied to "
                "v, rotary_value): not in posemb's family table",
    **_group("text tower of a multimodal wrapper, built only inside it (AutoModel does not build "
             "the text config alone); its rope is M-RoPE or the wrapper's own, and no case runs "
             "the wrapper yet (the Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Qwen3.5 cases cover posemb's M-RoPE "
             "path; mrope_probe.py says whose get_rope_index gives those rules' ids)",
             "qwen2_vl_text qwen2_5_vl_text glm4v_text glm4v_moe_text glm_image_text "
             "glm_ocr_text qwen2_5_omni_text qwen3_omni_moe_text ernie4_5_vl_moe_text "
             "paddleocr_vl_text hunyuan_vl_text granite4_vision_text deepseek_ocr2_text "
             "emu3_text_model unlimited_ocr_text step3p5 t5_gemma_module t5gemma2_decoder "
             "t5gemma2_text diffusion_gemma_text"),
    **_group("multimodal model whose forward needs image inputs or a VQ config the class "
             "defaults do not give; no case yet", "idefics chameleon muse_glimmer_assistant"),
    **_group("Byte Latent Transformer: the sub-configs are built only inside BltModel and the "
             "class defaults are too large for a sweep; no case yet", "blt blt_global_transformer "
             "blt_local_decoder blt_local_encoder blt_patcher"),
    **_group("the attention calls its own rope function (not apply_rotary_pos_emb), which the "
             "sweep does not wrap; no case yet", "bailing_hybrid glm5_next_text "
             "kimi_linear longcat_flash mistral_large4_text"),
    **_group("the sweep cannot build it from the class defaults (a required sub-config or a "
             "layer_types list of fixed length); no case yet", "dbrx cohere_compass_text "
             "lfm2_moe ministral zamba2"),
    **_group("hybrid or recurrent model whose two small sweep layers have no rope call (the class "
             "defaults put attention deeper); no case yet", "bamba flint lfm3 qwen3_5_text "
             "qwen3_5_moe_text qwen4_exp_text recurrent_gemma"),
    **_group("the class defaults build a model too slow for the CI sweep (10 s to 90 s: "
             "full-size audio / vision towers, large vocabularies or per-layer tables; csm, "
             "phi4_multimodal and cosmos3_edge_text pass when swept by hand); no case yet",
             "axk1 cosmos3_edge_text openai_privacy_filter csm phi4_multimodal"),
    # Sweep cases (SWEEP) that run and do not pass: posemb has no row and Llama's rules, which
    # it gives an unknown model_type, differ from the family's code (the coverage row quotes
    # the failing check).
    "neomme": "not in posemb's family table: NeoMME's windows are per layer (per_layer_config, "
              "short and long windows alternating over the sliding layers, each passed + 1); "
              "the reader reads per_layer_config for every family, but Llama's rules, which an "
              "unknown model_type gets, put no window on any layer (a row needs the window "
              "rule and the + 1)",
    "nanochat": "not in posemb's family table: its rotate_half flips the signs (cat(x2, -x1)), "
                "a rotation by -theta that no posemb pairing gives",
    "deepseek_v4": "not in posemb's family table: its layer_types use names posemb refuses "
                   "(compressed_sparse_attention, heavily_compressed_attention) and its "
                   "rope_parameters are keyed by rope role (main, compress), not by layer type",
    **_group("DeepSeek Sparse Attention (indexed_attention layers) with rules no row gives: "
             "Dots3's interleaved indexer under partial rotary 0.25 of head_dim 256 and a "
             "sliding window; HY V4's text tower with M-RoPE (mrope_section) in MLA and "
             "indexer", "dots3_note_text hy_v4_vl_text"),
    **_group("not in posemb's family table: the family has layers without rope (NoPE) or more "
             "config layers than rope calls, which Llama's rules do not give",
             "hrm_text muse_glimmer_text muse_spark_text"),
    "embedding_gemma2_text": "not in posemb's family table: Gemma 4's per-layer head widths "
                             "(per_layer_config, read) with default RoPE on the full layers "
                             "(theta 1e6, not proportional), a bidirectional window passed as "
                             "sliding_window + 1 (modeling_embedding_gemma2.py, "
                             "EmbeddingGemma2Attention: a radius) and no causal mask: a row "
                             "needs the + 1 window rule posemb has no column for",
    **_group("encoder whose rotary runs outside the attention layers (or in its own attention "
             "without eager_attention_forward): the harness cannot attribute the rope calls to "
             "layers; no case yet", "gte jina_embeddings_v3 nomic_bert gpt_neox_japanese"),
    "mimo_v2_flash": "the sweep's small sizes break its attention (a zero-width head split); no "
                     "case yet",
}

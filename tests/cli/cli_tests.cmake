# End-to-end tests of the posemb tool, included from tools/CMakeLists.txt (which defines
# posemb_cli_test, cli_source, cli_data and cli_out).
set(cases ${cli_source}/data)
set(fope_a ${cli_data}/fope/a_hd64_h8_N512_S32)
set(fope_b ${cli_data}/fope/b_hd16_h2_N64_S128_extrap)
set(fope_c ${cli_data}/fope/c_identity_hd64_h4_N512_S40)
set(fope_c2 ${cli_data}/fope/c2_stepeye_hd64_h4_N4096_S48)

# ---- freqs on every HuggingFace conformance case: NAME.expected.json is `freqs NAME.json`,
# NAME.seqN.expected.json is `freqs NAME.json --seq-len N`; relative 1e-6.
file(GLOB hf_expected ${cli_data}/hf/*.expected.json)
foreach(expected IN LISTS hf_expected)
  get_filename_component(file ${expected} NAME)
  string(REGEX REPLACE "\\.expected\\.json$" "" case ${file})
  set(seq_args)
  if(case MATCHES "^(.*)\\.seq([0-9]+)$")
    set(config ${CMAKE_MATCH_1})
    set(seq_args --seq-len ${CMAKE_MATCH_2})
  else()
    set(config ${case})
  endif()
  posemb_cli_test("freqs ${case}"
    ARGS freqs ${cli_data}/hf/${config}.json ${seq_args}
    STDOUT ${cli_out}/freqs_${case}.json
    CHECK freqs ${cli_out}/freqs_${case}.json ${expected})
endforeach()

# ---- apply on every FoPE conformance case with its coefficients; 1e-5 * max(1, max |y|).
file(GLOB fope_configs ${cli_data}/fope/*/config.json)
foreach(config IN LISTS fope_configs)
  get_filename_component(dir ${config} DIRECTORY)
  get_filename_component(case ${dir} NAME)
  posemb_cli_test("apply fope ${case}"
    ARGS apply ${config} --input ${dir}/x.npy --positions ${dir}/positions.npy
         --fope-sin-coef ${dir}/sin_coef.npy --fope-cos-coef ${dir}/cos_coef.npy
         --output ${cli_out}/fope_${case}.npy
    CHECK close ${cli_out}/fope_${case}.npy ${dir}/y.npy)
endforeach()
# With sigma 0 the coefficients the tool initialises are the step-eye the reference used.
foreach(dir IN ITEMS ${fope_c} ${fope_c2})
  get_filename_component(case ${dir} NAME)
  posemb_cli_test("apply fope ${case} initialised coefficients"
    ARGS apply ${dir}/config.json --input ${dir}/x.npy --output ${cli_out}/fope_init_${case}.npy
    CHECK close ${cli_out}/fope_init_${case}.npy ${dir}/y.npy)
endforeach()

# ---- apply RoPE: against RoFormer's formula evaluated in the checker, and against the library.
set(rope_config ${cli_data}/hf/default_hd64.json)  # theta 10000, head_dim 64, rotate_half
posemb_cli_test("apply rope default vs formula"
  ARGS apply ${rope_config} --input ${fope_a}/x.npy --output ${cli_out}/rope_default.npy
  CHECK rope-formula ${fope_a}/x.npy ${cli_out}/rope_default.npy 10000 64 rotate_half bshd 0)
posemb_cli_test("apply rope bhsd interleaved offset vs formula"
  ARGS apply ${rope_config} --input ${fope_a}/x.npy --layout bhsd --pairing interleaved
       --offset 1000 --output ${cli_out}/rope_bhsd.npy
  CHECK rope-formula ${fope_a}/x.npy ${cli_out}/rope_bhsd.npy 10000 64 interleaved bhsd 1000)
posemb_cli_test("apply rope negative offset vs formula"
  ARGS apply ${rope_config} --input ${fope_a}/x.npy --offset=-7 --output ${cli_out}/rope_negative.npy
  CHECK rope-formula ${fope_a}/x.npy ${cli_out}/rope_negative.npy 10000 64 rotate_half bshd -7)
posemb_cli_test("apply rope positions file vs library"
  ARGS apply ${rope_config} --input ${fope_a}/x.npy --positions ${fope_a}/positions.npy
       --output ${cli_out}/rope_positions.npy
  CHECK rope-library ${rope_config} ${fope_a}/x.npy ${cli_out}/rope_positions.npy bshd 0 config query)
# Each config gets X with its own head_dim: the values of ${fope_a}/x.npy [1, 32, 8, 64] read as
# 16 heads of 32 and 32 heads of 16 (a spec refuses heads of another width).
set(check "${posemb_cli_emulator_words} $<TARGET_FILE:posemb_cli_check>")
add_test(NAME cli.make_head_dim_inputs
  COMMAND ${CMAKE_COMMAND} -E chdir ${cli_out} sh -c
    "${check} reshape ${fope_a}/x.npy x_hd32.npy 1 32 16 32 && ${check} reshape ${fope_a}/x.npy x_hd16.npy 1 32 32 16 && ${check} reshape ${fope_a}/x.npy x_bhsd.npy 1 8 32 64")
set_tests_properties(cli.make_head_dim_inputs PROPERTIES FIXTURES_SETUP posemb_cli_head_dims)
foreach(case_input IN ITEMS yarn_hd64:${fope_a}/x.npy llama3_hd32:${cli_out}/x_hd32.npy
                            partial_half:${fope_a}/x.npy longrope_phi3_style:${cli_out}/x_hd16.npy
                            dynamic_legacy_type:${cli_out}/x_hd32.npy)
  string(REPLACE ":" ";" case_input ${case_input})
  list(GET case_input 0 case)
  list(GET case_input 1 input)
  posemb_cli_test("apply rope ${case} vs library"
    ARGS apply ${cli_data}/hf/${case}.json --input ${input} --offset 5000
         --output ${cli_out}/rope_${case}.npy
    CHECK rope-library ${cli_data}/hf/${case}.json ${input} ${cli_out}/rope_${case}.npy
          bshd 5000 config query)
  set_tests_properties(cli.apply_rope_${case}_vs_library PROPERTIES FIXTURES_REQUIRED posemb_cli_head_dims)
endforeach()
posemb_cli_test("apply xpos key vs library"
  ARGS apply ${cases}/xpos.json --input ${fope_a}/x.npy --role key --output ${cli_out}/xpos_key.npy
  CHECK rope-library ${cases}/xpos.json ${fope_a}/x.npy ${cli_out}/xpos_key.npy bshd 0 config key)
# float64 in, float64 out.
add_test(NAME cli.make_float64_input
  COMMAND posemb_cli_check to-f64 ${fope_a}/x.npy ${cli_out}/x_f64.npy)
set_tests_properties(cli.make_float64_input PROPERTIES FIXTURES_SETUP posemb_cli_f64)
posemb_cli_test("apply rope float64 vs formula"
  ARGS apply ${rope_config} --input ${cli_out}/x_f64.npy --offset 123 --output ${cli_out}/rope_f64.npy
  CHECK rope-formula ${cli_out}/x_f64.npy ${cli_out}/rope_f64.npy 10000 64 rotate_half bshd 123)
set_tests_properties(cli.apply_rope_float64_vs_formula PROPERTIES FIXTURES_REQUIRED posemb_cli_f64)

# ---- alibi and sinusoidal against values written out by hand.
posemb_cli_test("alibi causal 2 heads"
  ARGS alibi --heads 2 --q-len 3 --k-len 3 --output ${cli_out}/alibi_causal.npy
  CHECK values ${cli_out}/alibi_causal.npy ${cases}/alibi_h2_causal.expected.json 0)
posemb_cli_test("alibi symmetric 3 heads q-offset"
  ARGS alibi --heads 3 --q-len 1 --k-len 4 --symmetric --q-offset 2 --output ${cli_out}/alibi_sym.npy
  CHECK values ${cli_out}/alibi_sym.npy ${cases}/alibi_h3_symmetric.expected.json 0)
posemb_cli_test("alibi decode default q-offset"
  ARGS alibi --heads 1 --q-len 1 --k-len 3 --causal --output ${cli_out}/alibi_decode.npy
  CHECK values ${cli_out}/alibi_decode.npy ${cases}/alibi_decode.expected.json 0)
posemb_cli_test("sinusoidal interleaved"
  ARGS sinusoidal --dim 4 --max-len 3 --output ${cli_out}/sinusoidal.npy
  CHECK values ${cli_out}/sinusoidal.npy ${cases}/sinusoidal_d4_interleaved.expected.json 2e-7)
posemb_cli_test("sinusoidal concat base 100"
  ARGS sinusoidal --dim 4 --max-len 2 --layout concat --base 100 --output ${cli_out}/sinusoidal_concat.npy
  CHECK values ${cli_out}/sinusoidal_concat.npy ${cases}/sinusoidal_d4_concat_base100.expected.json 2e-7)
add_test(NAME cli.make_zero_embeddings
  COMMAND posemb_cli_check zeros ${cli_out}/zeros_1x3x4.npy 1 3 4)
set_tests_properties(cli.make_zero_embeddings PROPERTIES FIXTURES_SETUP posemb_cli_zeros)
posemb_cli_test("apply sinusoidal model adds the table"
  ARGS apply ${cases}/xglm_sinusoidal.json --input ${cli_out}/zeros_1x3x4.npy --output ${cli_out}/xglm.npy
  CHECK values ${cli_out}/xglm.npy ${cases}/xglm_zeros_plus_table.expected.json 2e-7)
set_tests_properties(cli.apply_sinusoidal_model_adds_the_table PROPERTIES FIXTURES_REQUIRED posemb_cli_zeros)

# ---- buckets (T5) and alibi with max_bias and a head slice, against values worked out by hand.
posemb_cli_test("buckets bidirectional exact edges"
  ARGS buckets --num-buckets 32 --max-distance 128 --bidirectional --q-len 1 --k-len 17 --q-offset 8
       --output ${cli_out}/buckets_bi_edges.npy
  CHECK values ${cli_out}/buckets_bi_edges.npy ${cases}/buckets_bidirectional_edges.expected.json 0)
posemb_cli_test("buckets bidirectional logarithmic"
  ARGS buckets --num-buckets 32 --max-distance 128 --bidirectional --q-len 1 --k-len 2 --q-offset 64
       --output ${cli_out}/buckets_bi_log.npy
  CHECK values ${cli_out}/buckets_bi_log.npy ${cases}/buckets_bidirectional_log.expected.json 0)
posemb_cli_test("buckets causal decode default q-offset"
  ARGS buckets --num-buckets 32 --max-distance 128 --causal --q-len 2 --k-len 3
       --output ${cli_out}/buckets_causal_decode.npy
  CHECK values ${cli_out}/buckets_causal_decode.npy ${cases}/buckets_causal_decode.expected.json 0)
posemb_cli_test("buckets causal logarithmic"
  ARGS buckets --num-buckets 32 --max-distance 128 --causal --q-len 1 --k-len 3 --q-offset 32
       --output ${cli_out}/buckets_causal_log.npy
  CHECK values ${cli_out}/buckets_causal_log.npy ${cases}/buckets_causal_log.expected.json 0)
posemb_cli_test("alibi max-bias 16"
  ARGS alibi --heads 4 --q-len 1 --k-len 3 --max-bias 16 --output ${cli_out}/alibi_max_bias.npy
  CHECK values ${cli_out}/alibi_max_bias.npy ${cases}/alibi_h4_max_bias16.expected.json 0)
posemb_cli_test("alibi head slice"
  ARGS alibi --heads 6 --q-len 1 --k-len 2 --head-begin 4 --head-end 6 --output ${cli_out}/alibi_slice.npy
  CHECK values ${cli_out}/alibi_slice.npy ${cases}/alibi_h6_heads_4_6.expected.json 0)

# ---- inspect, against values worked out by hand.
# YaRN factor 4: attention factor 0.1 ln 4 + 1 = 1.1386294361119891.
posemb_cli_test("inspect yarn" ARGS inspect ${cli_data}/hf/yarn_hd64.json --seq-len 8192
  STDOUT_MATCHES "attention factor: 1\\.138629436111989")
# Llama 3.1 (theta 500000, d 32, L0 8192, low/high_freq_factor 1/4): pair 8 has inv_freq
# 500000^(-1/2) = 0.0014142135623730951, 1 full turn in L0 (wavelength 4443 tokens, between
# L0/4 and L0): ramp; pair 7 (4 turns) is kept, pair 9 (0 turns) interpolated.
posemb_cli_test("inspect llama3 bands" ARGS inspect ${cli_data}/hf/llama3_hd32.json
  STDOUT_MATCHES " 7  [0-9.e-]+ +[0-9.e-]+ +[0-9.]+ +4  kept.* 8  0\\.00141421356237309[0-9]* +[0-9.e-]+ +[0-9.]+ +1  ramp.* 9  [0-9.e-]+ +[0-9.e-]+ +[0-9.]+ +0  interpolated")
# FoPE N = 4096, head_dim 64: D_in = 23 (tests/data/fope/README.md), pair 23 is the first clipped.
posemb_cli_test("inspect fope" ARGS inspect ${fope_c2}/config.json
  STDOUT_MATCHES "D_in: 23 retained frequencies \\(9 clipped, dropped\\).* 22  [0-9.e-]+ +[0-9.e-]+ +[0-9.]+ +1  kept.* 23  [0-9.e-]+ +0 +inf +0  clipped")
# ALiBi, 4 heads: slopes 2^-2, 2^-4, 2^-6, 2^-8.
posemb_cli_test("inspect alibi" ARGS inspect ${cases}/bloom_alibi.json
  STDOUT_MATCHES "0  0\\.25.*1  0\\.0625.*2  0\\.015625.*3  0\\.00390625")
posemb_cli_test("help apply" ARGS apply --help STDOUT_MATCHES "--fope-sin-coef")

# ---- keys the reader did not use: inspect lists them, --strict refuses them (exit 2, one line);
# what transformers warns about loads and inspect says so (tests/data/models/README.md).
set(unused ${cases}/unused_rope_keys.json)
posemb_cli_test("inspect lists ignored keys" ARGS inspect ${unused}
  STDOUT_MATCHES "\nignored keys: rope_scaling\\.banana, rope_scaling\\.beta_fast\n")
posemb_cli_test("freqs without --strict uses the keys it knows" ARGS freqs ${unused}
  STDOUT_MATCHES "\"rope_type\": \"llama3\"")
foreach(command IN ITEMS inspect freqs layers)
  posemb_cli_test("${command} --strict refuses ignored keys" EXIT 2
    LINE "${unused}: --strict: rope_scaling.banana is not used (and 1 more)"
    ARGS ${command} ${unused} --strict)
endforeach()
posemb_cli_test("apply --strict refuses ignored keys" EXIT 2
  LINE "${unused}: --strict: rope_scaling.banana is not used (and 1 more)"
  ARGS apply ${unused} --strict --input ${fope_a}/x.npy --output ${cli_out}/must_not_exist.npy
  OUTPUT ${cli_out}/must_not_exist.npy)
posemb_cli_test("layers --strict accepts a config it uses whole"
  ARGS layers ${cli_data}/models/syn-gpt-oss-defaults.json --strict STDOUT_MATCHES "sinks")
# Hunyuan's alpha in the pattern line (modeling_hunyuan_v1_dense.py).
posemb_cli_test("inspect hunyuan alpha" ARGS inspect ${cli_data}/models/syn-hunyuan-dense-alpha.json
  STDOUT_MATCHES "layers 0-1 global \\(1e4, dynamic 1, alpha 1000\\)")
# Ministral 3: rope_parameters.max_position_embeddings is in the config class's
# ignore_keys_at_rope_validation; unused by posemb and ignored by transformers too.
set(ministral3_max ${cases}/ministral3_rope_max_position.json)
posemb_cli_test("inspect names keys transformers ignores too" ARGS inspect ${ministral3_max}
  STDOUT_MATCHES "\nignored keys \\(transformers ignores them too\\): text_config\\.rope_parameters\\.max_position_embeddings\n")
foreach(command IN ITEMS inspect freqs layers)
  posemb_cli_test("${command} --strict accepts keys transformers ignores too"
    ARGS ${command} ${ministral3_max} --strict STDOUT_MATCHES "yarn")
endforeach()
posemb_cli_test("inspect reports what transformers warns about"
  ARGS inspect ${cli_data}/models/syn-llama3-equal-freq-factors.json --strict
  STDOUT_MATCHES "transformers warns: rope_scaling\\.high_freq_factor = 1 is not greater than rope_scaling\\.low_freq_factor = 1")

# ---- error paths: exit status 1 (bad input) or 2 (usage), one line on stderr naming the culprit,
# nothing written to --output.
set(out ${cli_out}/must_not_exist.npy)
posemb_cli_test("error missing config" EXIT 1
  LINE "${cases}/no_such_config.json: cannot open config file: No such file or directory"
  ARGS freqs ${cases}/no_such_config.json)
# Files that cannot be read: a directory, an empty file, a path through a regular file (it fails
# for root too, where a chmod 000 file would not).
posemb_cli_test("error config is a directory" EXIT 1
  LINE "${cases}: cannot read config file: Is a directory" ARGS freqs ${cases})
posemb_cli_test("error empty config" EXIT 1
  LINE "${cases}/empty.json: empty file: expected a JSON object" ARGS inspect ${cases}/empty.json)
posemb_cli_test("error config under a regular file" EXIT 1
  LINE "${rope_config}/config.json: cannot open config file: Not a directory"
  ARGS layers ${rope_config}/config.json)
posemb_cli_test("error input is a directory" EXIT 1
  LINE "${cases}: cannot read .npy file: Is a directory"
  ARGS apply ${rope_config} --input ${cases} --output ${out} OUTPUT ${out})
posemb_cli_test("error empty input" EXIT 1
  LINE "${cases}/empty.npy: empty file: expected a .npy file"
  ARGS apply ${rope_config} --input ${cases}/empty.npy --output ${out} OUTPUT ${out})
posemb_cli_test("error positions under a regular file" EXIT 1
  LINE "${rope_config}/p.npy: cannot open .npy file: Not a directory"
  ARGS apply ${rope_config} --input ${fope_a}/x.npy --positions ${rope_config}/p.npy --output ${out}
  OUTPUT ${out})
# int32 positions: the message names what --positions takes (int64 or float64).
posemb_cli_test("error int32 positions" EXIT 1
  LINE "${cases}/positions_i4.npy: dtype = <i4: expected int64 or float64 [seq] or [batch, seq] = [32] or [1, 32]"
  ARGS apply ${rope_config} --input ${fope_a}/x.npy --positions ${cases}/positions_i4.npy --output ${out}
  OUTPUT ${out})
posemb_cli_test("error missing input" EXIT 1 STDERR "no_such_x\\.npy: cannot open"
  ARGS apply ${rope_config} --input ${cases}/no_such_x.npy --output ${out} OUTPUT ${out})
posemb_cli_test("error bad json" EXIT 1 STDERR "bad_json\\.json: malformed JSON"
  ARGS apply ${cases}/bad_json.json --input ${fope_a}/x.npy --output ${out} OUTPUT ${out})
# A number beyond double (nlohmann-json's out_of_range, not a parse error): named like any JSON error.
posemb_cli_test("error number overflow" EXIT 1
  LINE "${cases}/number_overflow.json: malformed JSON: [json.exception.out_of_range.406] number overflow parsing '1e400'"
  ARGS freqs ${cases}/number_overflow.json)
posemb_cli_test("error unknown rope type" EXIT 1
  STDERR "unknown_rope_type\\.json: rope_scaling\\.rope_type = \"banana\""
  ARGS apply ${cases}/unknown_rope_type.json --input ${fope_a}/x.npy --output ${out} OUTPUT ${out})
posemb_cli_test("error fope missing key" EXIT 1
  STDERR "fope_no_train_length\\.json: rope_scaling\\.train_length: missing"
  ARGS freqs ${cases}/fope_no_train_length.json)
posemb_cli_test("error input dtype" EXIT 1
  STDERR "positions\\.npy: dtype = <i8: expected float32 or float64"
  ARGS apply ${rope_config} --input ${fope_a}/positions.npy --output ${out} OUTPUT ${out})
posemb_cli_test("error positions dtype" EXIT 1 STDERR "x\\.npy: dtype = <f4: expected int64"
  ARGS apply ${rope_config} --input ${fope_a}/x.npy --positions ${fope_a}/x.npy --output ${out}
  OUTPUT ${out})
posemb_cli_test("error coefficient dtype" EXIT 1 STDERR "positions\\.npy: dtype = <i8: expected float32"
  ARGS apply ${fope_a}/config.json --input ${fope_a}/x.npy --fope-sin-coef ${fope_a}/positions.npy
       --fope-cos-coef ${fope_a}/cos_coef.npy --output ${out} OUTPUT ${out})
posemb_cli_test("error input rank" EXIT 1 STDERR "inv_freq\\.npy: shape = \\[16\\]: expected"
  ARGS apply ${rope_config} --input ${fope_a}/inv_freq.npy --output ${out} OUTPUT ${out})
posemb_cli_test("error positions shape" EXIT 1 STDERR "positions\\.npy: shape = \\[128\\]: expected int64 or float64 \\[seq\\]"
  ARGS apply ${rope_config} --input ${fope_a}/x.npy --positions ${fope_b}/positions.npy --output ${out}
  OUTPUT ${out})
# A head of another width than the config's head_dim is refused, never rotated in part.
posemb_cli_test("error head_dim narrower than the config" EXIT 1
  STDERR "b_hd16_h2_N64_S128_extrap/x\\.npy: head_dim = 16: expected 64, the head_dim of .*default_hd64\\.json \\(rotary_dim 64\\)"
  ARGS apply ${rope_config} --input ${fope_b}/x.npy --output ${out} OUTPUT ${out})
posemb_cli_test("error head_dim wider than the config" EXIT 1
  STDERR "a_hd64_h8_N512_S32/x\\.npy: head_dim = 64: expected 32, the head_dim of .*llama3_hd32\\.json \\(rotary_dim 32\\)"
  ARGS apply ${cli_data}/hf/llama3_hd32.json --input ${fope_a}/x.npy --output ${out} OUTPUT ${out})
# Positions as many as the tokens of the other --layout's seq axis: the layout is named.
posemb_cli_test("error positions fit the bshd seq axis" EXIT 1
  STDERR "positions\\.npy: shape = \\[32\\]: expected int64 or float64 \\[seq\\] or \\[batch, seq\\] = \\[8\\] or \\[1, 8\\] for X \\[1, 32, 8, 64\\] read as --layout bhsd \\[batch, heads, seq, head_dim\\]. 32 is X's seq under --layout bshd: if X \\[1, 32, 8, 64\\] is \\[batch, seq, heads, head_dim\\], pass --layout bshd"
  ARGS apply ${rope_config} --input ${fope_a}/x.npy --layout bhsd --positions ${fope_a}/positions.npy
       --output ${out} OUTPUT ${out})
posemb_cli_test("error positions fit the bhsd seq axis" EXIT 1
  STDERR "positions\\.npy: shape = \\[32\\]: .* for X \\[1, 8, 32, 64\\] read as --layout bshd \\[batch, seq, heads, head_dim\\]. 32 is X's seq under --layout bhsd: if X \\[1, 8, 32, 64\\] is \\[batch, heads, seq, head_dim\\], pass --layout bhsd"
  ARGS apply ${rope_config} --input ${cli_out}/x_bhsd.npy --positions ${fope_a}/positions.npy
       --output ${out} OUTPUT ${out})
set_tests_properties(cli.error_positions_fit_the_bhsd_seq_axis PROPERTIES FIXTURES_REQUIRED posemb_cli_head_dims)
# Positions that fit neither axis get no layout hint.
posemb_cli_test("error positions fit no seq axis" EXIT 1
  STDERR "positions\\.npy: shape = \\[128\\]: .* for X \\[1, 32, 8, 64\\] read as --layout bshd \\[batch, seq, heads, head_dim\\][^a-z]*$"
  ARGS apply ${rope_config} --input ${fope_a}/x.npy --positions ${fope_b}/positions.npy
       --output ${out} OUTPUT ${out})
# --verbose says how X was read, where the positions come from and what rotates.
posemb_cli_test("apply verbose bshd"
  ARGS apply ${rope_config} --input ${fope_a}/x.npy --positions ${fope_a}/positions.npy --verbose
       --output ${cli_out}/verbose_bshd.npy
  STDOUT_MATCHES "X: .*x\\.npy float32 \\[1, 32, 8, 64\\] read as --layout bshd \\[batch, seq, heads, head_dim\\]: batch 1, seq 32, heads 8, head_dim 64.positions: .*positions\\.npy, one per token along X's seq axis \\(32 tokens\\).scheme: rope, rope_type default, head_dim 64, rotary_dim 64, pairing rotate_half, seq_len [0-9]+, attention_scale 1.")
posemb_cli_test("apply verbose bhsd partial rotary"
  ARGS apply ${cli_data}/hf/partial_half.json --input ${fope_a}/x.npy --layout bhsd --offset 3 --verbose
       --output ${cli_out}/verbose_bhsd.npy
  STDOUT_MATCHES "read as --layout bhsd \\[batch, heads, seq, head_dim\\]: batch 1, seq 8, heads 32, head_dim 64.positions: --offset 3: token s at 3 \\+ s.scheme: rope, rope_type default, head_dim 64, rotary_dim 32 \\(partial rotary: the other features pass through\\)")
posemb_cli_test("error coefficient shape" EXIT 1 STDERR "sin_coef\\.npy, .*cos_coef\\.npy: sin_coef\\.dimension\\(0\\) = 4: expected n_kv_heads = 8"
  ARGS apply ${fope_a}/config.json --input ${fope_a}/x.npy --fope-sin-coef ${fope_c}/sin_coef.npy
       --fope-cos-coef ${fope_c}/cos_coef.npy --output ${out} OUTPUT ${out})
posemb_cli_test("error fope interleaved" EXIT 2 STDERR "--pairing = interleaved: FoPE rotates with rotate_half"
  ARGS apply ${fope_a}/config.json --input ${fope_a}/x.npy --pairing interleaved --output ${out}
  OUTPUT ${out})
posemb_cli_test("error coefficients for a rope config" EXIT 2 STDERR "--fope-sin-coef: the config .* is not a FoPE config"
  ARGS apply ${rope_config} --input ${fope_a}/x.npy --fope-sin-coef ${fope_a}/sin_coef.npy
       --fope-cos-coef ${fope_a}/cos_coef.npy --output ${out} OUTPUT ${out})
posemb_cli_test("error unwritable output" EXIT 1 STDERR "no_such_dir/y\\.npy: cannot write: No such file or directory"
  ARGS alibi --heads 2 --q-len 2 --k-len 2 --output ${cli_out}/no_such_dir/y.npy)
posemb_cli_test("error output is a directory" EXIT 1 STDERR "cli_out: cannot write: Is a directory"
  ARGS sinusoidal --dim 4 --max-len 2 --output ${cli_out})
posemb_cli_test("error apply alibi model" EXIT 1 STDERR "bloom_alibi\\.json: the model uses ALiBi"
  ARGS apply ${cases}/bloom_alibi.json --input ${fope_a}/x.npy --output ${out} OUTPUT ${out})
posemb_cli_test("error apply learned model" EXIT 1 STDERR "gpt2_learned\\.json: the model uses learned absolute positions"
  ARGS apply ${cases}/gpt2_learned.json --input ${fope_a}/x.npy --output ${out} OUTPUT ${out})
# freqs describes a layer of any kind: an ALiBi layer rotates nothing.
posemb_cli_test("freqs alibi model" ARGS freqs ${cases}/bloom_alibi.json
  STDOUT_MATCHES "\"positions\": \"alibi\", \"rope_type\": null, .*\"rotary_dim\": 0, \"rotary_offset\": 0, \"inv_freq\": \\[\\]")
posemb_cli_test("error layer out of range" EXIT 2 STDERR "--layer = 26: expected a layer in \\[0, 26\\)"
  ARGS freqs ${cli_data}/models/gemma-3-1b-it.json --layer 26)
posemb_cli_test("error negative layer" EXIT 2 LINE "--layer = -1: expected an integer >= 0"
  ARGS apply ${cli_data}/models/gemma-3-1b-it.json --layer -1 --input ${fope_a}/x.npy --output ${out}
  OUTPUT ${out})
posemb_cli_test("error layer types length" EXIT 1 STDERR "bad_layer_types\\.json: layer_types\\.size\\(\\) = 3: expected num_hidden_layers = 4"
  ARGS layers ${cases}/bad_layer_types.json --json)
# inspect prints the layer pattern in one line: Gemma 3 1B, 5 sliding layers at base 1e4 with a
# 512 window, then one global layer at 1e6, over 26 layers.
posemb_cli_test("inspect layer pattern" ARGS inspect ${cli_data}/models/gemma-3-1b-it.json
  STDOUT_MATCHES "layers 0-4 sliding \\(1e4, window 512\\), 5 global \\(1e6\\), repeating every 6 of 26")
# Usage errors: exit status 2.
posemb_cli_test("usage no subcommand" EXIT 2 STDERR "subcommand is required" ARGS "")
posemb_cli_test("usage unknown option" EXIT 2 STDERR "--frobnicate"
  ARGS apply ${rope_config} --input ${fope_a}/x.npy --output ${out} --frobnicate OUTPUT ${out})
posemb_cli_test("usage missing output" EXIT 2 STDERR "--output is required"
  ARGS apply ${rope_config} --input ${fope_a}/x.npy)
posemb_cli_test("usage positions and offset" EXIT 2 STDERR "--positions excludes --offset"
  ARGS apply ${rope_config} --input ${fope_a}/x.npy --positions ${fope_a}/positions.npy --offset 3
       --output ${out} OUTPUT ${out})
posemb_cli_test("usage bad layout" EXIT 2 STDERR "--layout: bsdh not in"
  ARGS apply ${rope_config} --input ${fope_a}/x.npy --layout bsdh --output ${out} OUTPUT ${out})
posemb_cli_test("usage sin coefficients without cos" EXIT 2 STDERR "--fope-sin-coef requires --fope-cos-coef"
  ARGS apply ${fope_a}/config.json --input ${fope_a}/x.npy --fope-sin-coef ${fope_a}/sin_coef.npy
       --output ${out} OUTPUT ${out})
posemb_cli_test("usage causal and symmetric" EXIT 2 STDERR "--causal excludes --symmetric"
  ARGS alibi --heads 2 --q-len 2 --k-len 2 --causal --symmetric --output ${out} OUTPUT ${out})
posemb_cli_test("usage zero heads" EXIT 2 LINE "--heads = 0: expected an integer from 1 to 1048576"
  ARGS alibi --heads 0 --q-len 2 --k-len 2 --output ${out} OUTPUT ${out})
posemb_cli_test("usage odd dim" EXIT 2 STDERR "--dim = 3: expected an even number"
  ARGS sinusoidal --dim 3 --max-len 2 --output ${out} OUTPUT ${out})
# Every numeric option: one line "--flag = text: expected ...", exit status 2.
posemb_cli_test("usage negative seq-len" EXIT 2 LINE "--seq-len = -5: expected an integer >= 1"
  ARGS freqs ${rope_config} --seq-len -5)
posemb_cli_test("usage non-numeric seq-len" EXIT 2 LINE "--seq-len = abc: expected an integer >= 1"
  ARGS apply ${rope_config} --input ${fope_a}/x.npy --seq-len abc --output ${out} OUTPUT ${out})
posemb_cli_test("usage zero max-len" EXIT 2 LINE "--max-len = 0: expected an integer >= 1"
  ARGS sinusoidal --dim 4 --max-len 0 --output ${out} OUTPUT ${out})
posemb_cli_test("usage non-numeric max-len" EXIT 2 LINE "--max-len = abc: expected an integer >= 1"
  ARGS sinusoidal --dim 4 --max-len abc --output ${out} OUTPUT ${out})
posemb_cli_test("usage zero dim" EXIT 2 LINE "--dim = 0: expected an integer from 2 to 1073741824"
  ARGS sinusoidal --dim 0 --max-len 2 --output ${out} OUTPUT ${out})
posemb_cli_test("usage zero base" EXIT 2 LINE "--base = 0: expected a finite number > 0"
  ARGS sinusoidal --dim 4 --max-len 2 --base 0 --output ${out} OUTPUT ${out})
posemb_cli_test("usage non-numeric max-bias" EXIT 2 LINE "--max-bias = x: expected a finite number > 0"
  ARGS alibi --heads 2 --q-len 1 --k-len 1 --max-bias x --output ${out} OUTPUT ${out})
posemb_cli_test("usage fractional offset" EXIT 2
  LINE "--offset = 1.5: expected an integer from -9223372036854775808 to 9223372036854775807"
  ARGS apply ${rope_config} --input ${fope_a}/x.npy --offset 1.5 --output ${out} OUTPUT ${out})
posemb_cli_test("usage q-len beyond int64" EXIT 2 LINE "--q-len = 99999999999999999999: expected an integer >= 1"
  ARGS buckets --num-buckets 32 --max-distance 128 --causal --q-len 99999999999999999999 --k-len 1
       --output ${out} OUTPUT ${out})
posemb_cli_test("usage zero num-buckets" EXIT 2 LINE "--num-buckets = 0: expected an integer >= 2"
  ARGS buckets --num-buckets 0 --max-distance 128 --causal --q-len 1 --k-len 1 --output ${out} OUTPUT ${out})
posemb_cli_test("usage negative head-begin" EXIT 2 LINE "--head-begin = -1: expected an integer from 0 to 1048576"
  ARGS alibi --heads 2 --q-len 1 --k-len 1 --head-begin -1 --head-end 2 --output ${out} OUTPUT ${out})
# ALiBi keys sit at 0 .. k_len - 1: a causal query before key 0 would get a row of -inf only.
posemb_cli_test("usage alibi more queries than keys" EXIT 2
  LINE "--q-len = 5: expected at most --k-len = 2 (the queries are the last q_len keys), or a --q-offset"
  ARGS alibi --heads 2 --q-len 5 --k-len 2 --output ${out} OUTPUT ${out})
posemb_cli_test("usage alibi negative q-offset" EXIT 2 LINE "--q-offset = -3: expected an integer >= 0"
  ARGS alibi --heads 2 --q-len 5 --k-len 2 --q-offset -3 --output ${out} OUTPUT ${out})
posemb_cli_test("alibi more queries than keys with q-offset"
  ARGS alibi --heads 1 --q-len 3 --k-len 2 --q-offset 0 --output ${cli_out}/alibi_q3_k2.npy
  CHECK values ${cli_out}/alibi_q3_k2.npy ${cases}/alibi_h1_q3_k2.expected.json 0)
posemb_cli_test("version" ARGS --version STDOUT_MATCHES "^posemb ${PROJECT_VERSION}\n$")
posemb_cli_test("version_verbose" ARGS --version --verbose
  STDOUT_MATCHES "^posemb ${PROJECT_VERSION}\nkernels: level [a-z0-9]+ \\(best on this CPU: [a-z0-9]+\\)\nstreaming stores: auto, threshold [0-9.]+ [KM]iB \\(half the counted cache\\); .*\\((sysfs|cpuid|sysconf|fallback)\\); usable CPUs: [0-9]+; counted: [0-9.]+ [KM]iB")
posemb_cli_test("help names the size cap" ARGS sinusoidal --help STDOUT_MATCHES "at most 2\\^28 values")

# ---- per-layer schemes on every model conformance case (tests/data/models/README.md):
# `layers --json` against every layer; `freqs --layer I` against layer 0, the first layer that
# differs from layer 0 and the last; `freqs` without --layer gives layer 0 when all layers are
# alike and exits 2 naming --layer otherwise.
file(GLOB model_expected ${cli_data}/models/*.expected.json)
foreach(expected IN LISTS model_expected)
  get_filename_component(file ${expected} NAME)
  string(REGEX REPLACE "\\.expected\\.json$" "" case ${file})
  set(seq_args)
  if(case MATCHES "^(.*)\\.seq([0-9]+)$")
    set(config ${cli_data}/models/${CMAKE_MATCH_1}.json)
    set(seq_args --seq-len ${CMAKE_MATCH_2})
  else()
    set(config ${cli_data}/models/${case}.json)
  endif()
  posemb_cli_test("layers ${case}"
    ARGS layers ${config} ${seq_args} --json
    STDOUT ${cli_out}/layers_${case}.json
    CHECK layers ${cli_out}/layers_${case}.json ${expected})

  # Which layers differ from layer 0 (everything but "layer" compared).
  file(READ ${expected} expected_text)
  string(JSON count LENGTH "${expected_text}" layers)
  math(EXPR last "${count} - 1")
  string(JSON first_object GET "${expected_text}" layers 0)
  string(JSON first_object REMOVE "${first_object}" layer)
  set(differing "")
  foreach(i RANGE ${last})
    string(JSON object GET "${expected_text}" layers ${i})
    string(JSON object REMOVE "${object}" layer)
    if(NOT differing STREQUAL "" OR object STREQUAL first_object)
      continue()
    endif()
    set(differing ${i})
  endforeach()
  set(checked_layers 0 ${differing} ${last})
  list(REMOVE_DUPLICATES checked_layers)
  foreach(i IN LISTS checked_layers)
    posemb_cli_test("freqs ${case} layer ${i}"
      ARGS freqs ${config} --layer ${i} ${seq_args}
      STDOUT ${cli_out}/freqs_${case}_layer${i}.json
      CHECK layer ${cli_out}/freqs_${case}_layer${i}.json ${expected} ${i})
  endforeach()
  if(differing STREQUAL "")
    posemb_cli_test("freqs ${case} alike layers"
      ARGS freqs ${config} ${seq_args}
      STDOUT ${cli_out}/freqs_${case}_alike.json
      CHECK layer ${cli_out}/freqs_${case}_alike.json ${expected} 0)
  else()
    posemb_cli_test("freqs ${case} layers differ" EXIT 2 STDERR "--layer"
      ARGS freqs ${config} ${seq_args})
  endif()
endforeach()
# Usage errors of buckets and of alibi's head slice and max-bias: exit status 2.
posemb_cli_test("usage buckets num-buckets" EXIT 2
  STDERR "--num-buckets = 3: expected a number >= 4 for bidirectional buckets"
  ARGS buckets --num-buckets 3 --max-distance 128 --bidirectional --q-len 1 --k-len 1 --output ${out}
  OUTPUT ${out})
posemb_cli_test("usage buckets max-distance" EXIT 2 STDERR "--max-distance = 8: expected a number > max_exact = 8"
  ARGS buckets --num-buckets 32 --max-distance 8 --bidirectional --q-len 1 --k-len 1 --output ${out}
  OUTPUT ${out})
posemb_cli_test("usage buckets without a direction" EXIT 2 STDERR "one of --bidirectional or --causal is required"
  ARGS buckets --num-buckets 32 --max-distance 128 --q-len 1 --k-len 1 --output ${out} OUTPUT ${out})
posemb_cli_test("usage buckets both directions" EXIT 2 STDERR "--bidirectional excludes --causal"
  ARGS buckets --num-buckets 32 --max-distance 128 --bidirectional --causal --q-len 1 --k-len 1
       --output ${out} OUTPUT ${out})
posemb_cli_test("usage alibi max-bias" EXIT 2 STDERR "--max-bias = 0: expected a finite number > 0"
  ARGS alibi --heads 2 --q-len 1 --k-len 1 --max-bias 0 --output ${out} OUTPUT ${out})
posemb_cli_test("usage alibi head slice outside" EXIT 2
  STDERR "--head-begin, --head-end = 2, 9: expected 0 <= begin < end <= --heads = 8"
  ARGS alibi --heads 8 --q-len 1 --k-len 1 --head-begin 2 --head-end 9 --output ${out} OUTPUT ${out})
posemb_cli_test("usage alibi head-begin alone" EXIT 2 STDERR "--head-begin requires --head-end"
  ARGS alibi --heads 8 --q-len 1 --k-len 1 --head-begin 2 --output ${out} OUTPUT ${out})

# ---- T5 relative position bias from a T5 config and a table (table[b, h] = b + 100 h), against
# values worked out by hand from modeling_t5.py's bucket rules.
set(t5 ${cli_data}/t5)
posemb_cli_test("bias t5 encoder 2x3"
  ARGS bias ${t5}/t5_small_2heads.json --table ${t5}/table_32x2.npy --q-len 2 --k-len 3 --q-offset 0
       --output ${cli_out}/t5_encoder_2x3.npy
  CHECK values ${cli_out}/t5_encoder_2x3.npy ${cases}/t5_encoder_2x3.expected.json 0)
posemb_cli_test("bias t5 decoder default offset"
  ARGS bias ${t5}/t5_small_2heads.json --table ${t5}/table_32x2.npy --q-len 2 --k-len 3 --decoder
       --output ${cli_out}/t5_decoder_default.npy
  CHECK values ${cli_out}/t5_decoder_default.npy ${cases}/t5_decoder_default_offset.expected.json 0)
posemb_cli_test("bias t5 decoder rel -128"
  ARGS bias ${t5}/t5_small_2heads.json --table ${t5}/table_32x2.npy --q-len 1 --k-len 1 --q-offset 128
       --decoder --output ${cli_out}/t5_decoder_m128.npy
  CHECK values ${cli_out}/t5_decoder_m128.npy ${cases}/t5_decoder_rel_minus_128.expected.json 0)
posemb_cli_test("bias t5 encoder rel -64"
  ARGS bias ${t5}/t5_small_2heads.json --table ${t5}/table_32x2.npy --q-len 1 --k-len 1 --q-offset 64
       --output ${cli_out}/t5_encoder_m64.npy
  CHECK values ${cli_out}/t5_encoder_m64.npy ${cases}/t5_encoder_rel_minus_64.expected.json 0)
posemb_cli_test("bias t5 encoder rel 127"
  ARGS bias ${t5}/t5_encoder_only.json --table ${t5}/table_32x2.npy --q-len 1 --k-len 1 --q-offset=-127
       --output ${cli_out}/t5_encoder_127.npy
  CHECK values ${cli_out}/t5_encoder_127.npy ${cases}/t5_encoder_rel_127.expected.json 0)
posemb_cli_test("error bias table shape" EXIT 1
  STDERR "table_16x2\\.npy: shape = \\[16, 2\\]: expected float32 \\[num_buckets, heads\\] = \\[32, 2\\]"
  ARGS bias ${t5}/t5_small_2heads.json --table ${t5}/table_16x2.npy --q-len 1 --k-len 1
       --output ${out} OUTPUT ${out})
posemb_cli_test("error bias decoder of an encoder" EXIT 1
  STDERR "t5_encoder_only\\.json: the model has no decoder"
  ARGS bias ${t5}/t5_encoder_only.json --table ${t5}/table_32x2.npy --q-len 1 --k-len 1 --decoder
       --output ${out} OUTPUT ${out})
posemb_cli_test("error bias of a rope model" EXIT 1
  STDERR "default_hd64\\.json: the model's positions are rope, not a T5 relative position bias"
  ARGS bias ${rope_config} --table ${t5}/table_32x2.npy --q-len 1 --k-len 1 --output ${out} OUTPUT ${out})
# T5 layers: the encoder's bidirectional buckets, the decoder's causal ones, each stack's table in
# its first layer.
posemb_cli_test("layers t5" ARGS layers ${t5}/t5_small_2heads.json --json
  STDOUT_MATCHES "\"layer\": 0, \"positions\": \"relative_bias\".*\"softmax_scale\": 1,.*\"stack\": \"encoder\", \"relative_attention\": {\"num_buckets\": 32, \"max_distance\": 128, \"bidirectional\": true, \"table_layer\": 0}.*\"layer\": 11, .*\"stack\": \"decoder\", \"relative_attention\": {\"num_buckets\": 32, \"max_distance\": 128, \"bidirectional\": false, \"table_layer\": 6}")

# ---- apply for inference engines: float64 positions, --inverse, --output-layout.
set(yarn_config ${cli_data}/hf/yarn_hd64.json)
add_test(NAME cli.make_float64_positions
  COMMAND posemb_cli_check to-f64 ${fope_a}/positions.npy ${cli_out}/positions_f64.npy)
set_tests_properties(cli.make_float64_positions PROPERTIES FIXTURES_SETUP posemb_cli_positions_f64)
posemb_cli_test("apply rope integer positions"
  ARGS apply ${yarn_config} --input ${fope_a}/x.npy --positions ${fope_a}/positions.npy
       --output ${cli_out}/yarn_int_positions.npy)
set_tests_properties(cli.apply_rope_integer_positions PROPERTIES FIXTURES_SETUP posemb_cli_yarn_forward)
# Whole-valued float64 positions give the int64 result bit for bit.
posemb_cli_test("apply rope float64 positions equal int64"
  ARGS apply ${yarn_config} --input ${fope_a}/x.npy --positions ${cli_out}/positions_f64.npy
       --output ${cli_out}/yarn_f64_positions.npy
  CHECK same ${cli_out}/yarn_f64_positions.npy ${cli_out}/yarn_int_positions.npy)
set_tests_properties(cli.apply_rope_float64_positions_equal_int64 PROPERTIES
  FIXTURES_REQUIRED "posemb_cli_positions_f64;posemb_cli_yarn_forward")
# --inverse undoes the forward rotation (YaRN's attention factor included).
posemb_cli_test("apply rope inverse undoes forward"
  ARGS apply ${yarn_config} --input ${cli_out}/yarn_int_positions.npy --positions ${fope_a}/positions.npy
       --inverse --output ${cli_out}/yarn_back.npy
  CHECK close ${cli_out}/yarn_back.npy ${fope_a}/x.npy)
set_tests_properties(cli.apply_rope_inverse_undoes_forward PROPERTIES FIXTURES_REQUIRED posemb_cli_yarn_forward)
# --output-layout bhsd writes the same values transposed.
posemb_cli_test("apply rope output layout bhsd"
  ARGS apply ${yarn_config} --input ${fope_a}/x.npy --positions ${fope_a}/positions.npy
       --output-layout bhsd --output ${cli_out}/yarn_bhsd.npy
  CHECK transposed ${cli_out}/yarn_bhsd.npy ${cli_out}/yarn_int_positions.npy)
set_tests_properties(cli.apply_rope_output_layout_bhsd PROPERTIES FIXTURES_REQUIRED posemb_cli_yarn_forward)
posemb_cli_test("usage inverse on alibi model"
  ARGS apply ${cases}/bloom_alibi.json --input ${fope_a}/x.npy --inverse --output ${cli_out}/never.npy
  EXIT 2 STDERR "--inverse: the config's positions \\(alibi\\) are not a rotation"
  OUTPUT ${cli_out}/never.npy)

# ---- the multimodal conformance cases (tests/data/multimodal/README.md): each case.json's
# args with {case} = its folder and {out} = a scratch folder, checked by the case's criterion.
file(GLOB multimodal_cases ${cli_data}/multimodal/*/case.json)
foreach(case_json IN LISTS multimodal_cases)
  get_filename_component(dir ${case_json} DIRECTORY)
  get_filename_component(case ${dir} NAME)
  set(out ${cli_out}/multimodal_${case})
  file(MAKE_DIRECTORY ${out})
  file(READ ${case_json} case_text)
  string(JSON count LENGTH "${case_text}" args)
  math(EXPR last "${count} - 1")
  set(args)
  foreach(i RANGE ${last})
    string(JSON arg GET "${case_text}" args ${i})
    string(REPLACE "{case}" "${dir}" arg "${arg}")
    string(REPLACE "{out}" "${out}" arg "${arg}")
    list(APPEND args "${arg}")
  endforeach()
  posemb_cli_test("multimodal ${case}"
    ARGS ${args}
    STDOUT ${out}/stdout.json
    CHECK multimodal ${dir} ${out})
endforeach()

# Multimodal errors: sections that do not fit, a bad segment spec (named), a grid the merge
# does not divide, positions whose first dimension is not 3.
set(mm ${cli_data}/multimodal)
posemb_cli_test("mrope-index bad segment"
  ARGS mrope-index ${mm}/mrope_index_qwen2vl_image/config.json --segments text:3,image:1x4,text:2
       --output ${cli_out}/mm_bad_segment.npy
  EXIT 2 OUTPUT ${cli_out}/mm_bad_segment.npy STDERR "segment 2 = 'image:1x4'")
posemb_cli_test("mrope-index grid not divisible"
  ARGS mrope-index ${mm}/mrope_index_qwen2vl_image/config.json --segments text:3,image:1x5x6
       --output ${cli_out}/mm_bad_grid.npy
  EXIT 1 OUTPUT ${cli_out}/mm_bad_grid.npy STDERR "segments\\[1\\].h = 5: expected a multiple of spatial_merge_size = 2")
posemb_cli_test("mrope-index 1-D model"
  ARGS mrope-index ${cli_data}/hf/default_hd64.json --segments text:3 --output ${cli_out}/mm_1d.npy
  EXIT 1 OUTPUT ${cli_out}/mm_1d.npy STDERR "no M-RoPE position rules")
posemb_cli_test("mrope-index bad resume"
  ARGS mrope-index ${mm}/mrope_index_qwen2vl_image/config.json --segments text:3 --resume v5
       --output ${cli_out}/mm_bad_resume.npy
  EXIT 2 OUTPUT ${cli_out}/mm_bad_resume.npy
  STDERR "--resume = 'v5': expected 'past_largest' or 'spatial_extent'")
posemb_cli_test("apply vision grid not divisible"
  ARGS apply ${mm}/vision_qwen2vl_1x4x6/config.json --vision --grid 1x3x6
       --input ${mm}/vision_qwen2vl_1x4x6/X.npy --output ${cli_out}/mm_bad_vision.npy
  EXIT 1 OUTPUT ${cli_out}/mm_bad_vision.npy STDERR "grid h = 3: expected a multiple of spatial_merge_size = 2")
posemb_cli_test("apply mrope positions of 2 axes"
  ARGS apply ${mm}/apply_batch2_bhsd_hd32/config.json --layout bhsd
       --input ${mm}/apply_batch2_bhsd_hd32/X.npy --positions ${mm}/apply_batch2_bhsd_hd32/X.npy
       --output ${cli_out}/mm_bad_positions.npy
  EXIT 1 OUTPUT ${cli_out}/mm_bad_positions.npy STDERR "expected int64")

# Partial rotary is judged against the width RoPE runs over: DeepSeek-V3's 64-wide
# qk_rope_head_dim slice of a 192-wide head is rotated whole; GPT-NeoX-20B rotates 24 of 96.
posemb_cli_test("inspect deepseek rope slice is not partial"
  ARGS inspect ${posemb_SOURCE_DIR}/examples/configs/deepseek_v3_mla_yarn.json
  STDOUT_MATCHES "head_dim: 192.rotary_dim: 64.pairing: interleaved")
# Where that slice sits: the trailing 64 of the 192 (q split [qk_nope 128, qk_rope 64],
# modeling_deepseek_v3.py), in inspect and in every layer's plan.
posemb_cli_test("inspect deepseek rotated slice is the trailing qk_rope_head_dim"
  ARGS inspect ${posemb_SOURCE_DIR}/examples/configs/deepseek_v3_mla_yarn.json
  STDOUT_MATCHES "rotated features: 128-191 of 192")
posemb_cli_test("freqs deepseek rotary_offset"
  ARGS freqs ${posemb_SOURCE_DIR}/examples/configs/deepseek_v3_mla_yarn.json
  STDOUT_MATCHES "\"head_dim\": 192, \"rotary_dim\": 64, \"rotary_offset\": 128")
# DeepSeek-V3.2: MLA interleaved, the lightning indexer rotate-half on its first 64 of 128.
posemb_cli_test("inspect deepseek v3.2 indexer"
  ARGS inspect ${posemb_SOURCE_DIR}/examples/configs/deepseek_v32_indexer.json
  STDOUT_MATCHES "layers 0-60 indexed \\(1e4, yarn 40, rotary 64, indexer rotate_half 0-63 of 128\\)")
posemb_cli_test("inspect gpt-neox partial rotary"
  ARGS inspect ${posemb_SOURCE_DIR}/examples/configs/gpt_neox_20b_partial.json
  STDOUT_MATCHES "head_dim: 96.rotary_dim: 24 \\(partial rotary\\).pairing: rotate_half")

# ---- diff --engine vllm (posemb/model/engine_vllm.hpp): LongRoPE, original context 2048.
set(vllm_longrope ${cli_data}/models/syn-longrope-partial.json)
posemb_cli_test("diff vllm longrope factors fixed by max_model_len" EXIT 3
  ARGS diff --engine vllm --max-model-len 32768 ${vllm_longrope}
  STDOUT_MATCHES "^layer 0 inv_freq: vllm [^\n]*phi3_long_rope_scaled_rope\\.py")
posemb_cli_test("diff vllm longrope long sequence agrees"
  ARGS diff --engine vllm --max-model-len 32768 ${vllm_longrope} --seq-len 4096)
posemb_cli_test("diff vllm longrope within the original context agrees"
  ARGS diff --engine vllm --max-model-len 2048 ${vllm_longrope})
# GLM-4V's text without partial_rotary_factor / mrope_section (vLLM's Glm4Attention: 0.5) and
# GLM-5 without indexer_rope_interleave (vLLM's indexer rotates half).
posemb_cli_test("diff vllm glm4v text partial rotary default" EXIT 3
  ARGS diff --engine vllm --max-model-len 32768 ${cli_source}/data/vllm_glm4v_no_partial.json
  STDOUT_MATCHES "^layer 0 rotary_dim: vllm 32 config 64 [^\n]*glm4\.py")
posemb_cli_test("diff vllm glm5 indexer pairing" EXIT 3
  ARGS diff --engine vllm --max-model-len 202752
       ${cli_source}/data/vllm_glm5_no_indexer_interleave.json
  STDOUT_MATCHES "^layer 0 indexer_pairing: vllm \"rotate_half\" config \"interleaved\" [^\n]*deepseek_v32/attention\.py")
posemb_cli_test("diff vllm usage max-model-len missing" EXIT 2
  STDERR "--max-model-len is missing" ARGS diff --engine vllm ${vllm_longrope})
posemb_cli_test("diff vllm usage max-model-len without engine" EXIT 2
  STDERR "--max-model-len needs --engine vllm" ARGS diff a.gguf ${vllm_longrope} --max-model-len 5)
posemb_cli_test("diff vllm usage two files" EXIT 2
  STDERR "a second file" ARGS diff --engine vllm --max-model-len 5 ${vllm_longrope} ${vllm_longrope})

# ---- GGUF files, diff and --weights checkpoints: gguf_cli_tests.cmake.
include(${cli_source}/gguf_cli_tests.cmake)

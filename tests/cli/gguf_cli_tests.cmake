# End-to-end tests of the GGUF commands (freqs, layers, inspect, diff) and of --weights,
# included from cli_tests.cmake. posemb_gguf_check (gguf_check.cpp) checks the outputs and writes
# the hostile GGUF files and the safetensors checkpoints.
set(gguf_cases ${cli_data}/gguf)
set(gguf_out ${cli_out}/gguf)
set(weights ${gguf_out}/weights)
set(hostile ${gguf_out}/files)
set(out ${cli_out}/gguf_not_written.npy)

# A regex matching `text` in any case ("magic" -> "[mM][aA][gG][iI][cC]"); characters other than
# letters, digits and spaces match any character.
function(case_insensitive_regex out text)
  string(REGEX REPLACE "[^A-Za-z0-9 ]" "." text "${text}")
  string(LENGTH "${text}" length)
  set(regex "")
  if(length GREATER 0)
    math(EXPR last "${length} - 1")
    foreach(i RANGE ${last})
      string(SUBSTRING "${text}" ${i} 1 c)
      string(TOLOWER "${c}" lower)
      string(TOUPPER "${c}" upper)
      if(lower STREQUAL upper)
        string(APPEND regex "${c}")
      else()
        string(APPEND regex "[${lower}${upper}]")
      endif()
    endforeach()
  endif()
  set(${out} "${regex}" PARENT_SCOPE)
endfunction()

# The strings of a JSON array at `path` (a list of keys and indices) of `json`.
function(json_strings out json)
  string(JSON count LENGTH "${json}" ${ARGN})
  set(items)
  if(count GREATER 0)
    math(EXPR last "${count} - 1")
    foreach(i RANGE ${last})
      string(JSON item GET "${json}" ${ARGN} ${i})
      list(APPEND items "${item}")
    endforeach()
  endif()
  set(${out} "${items}" PARENT_SCOPE)
endfunction()

# ---- every case of tests/data/gguf as its README states the interface: each freqs run exits 0
# with the expected object, each `diff --json` run exits as expected with the expected set of
# (layer, field) pairs, each refused file exits 1 with one line naming what is wrong.
file(GLOB gguf_expected ${gguf_cases}/*/expected.json)
foreach(expected IN LISTS gguf_expected)
  get_filename_component(dir ${expected} DIRECTORY)
  get_filename_component(case ${dir} NAME)
  file(READ ${expected} json)
  string(JSON error_json ERROR_VARIABLE no_error GET "${json}" error)
  if(NOT no_error)
    json_strings(contains "${json}" error message_contains)
    string(JSON commands LENGTH "${json}" error commands)
    math(EXPR last "${commands} - 1")
    foreach(i RANGE ${last})
      json_strings(args "${json}" error commands ${i})
      list(TRANSFORM args REPLACE "{gguf}" ${dir}/model.gguf)
      list(TRANSFORM args REPLACE "{config}" ${dir}/config.json)
      foreach(text IN LISTS contains)
        case_insensitive_regex(part "${text}")
        posemb_cli_test("gguf ${case} error ${i} ${text}" EXIT 1 STDERR "${part}" ARGS ${args})
      endforeach()
    endforeach()
    continue()
  endif()
  string(JSON runs LENGTH "${json}" freqs)
  math(EXPR last "${runs} - 1")
  foreach(i RANGE ${last})
    json_strings(args "${json}" freqs ${i} args)
    posemb_cli_test("gguf ${case} freqs ${i}"
      ARGS freqs ${dir}/model.gguf ${args}
      STDOUT ${gguf_out}/${case}_freqs_${i}.json
      CHECKER posemb_gguf_check CHECK freqs ${gguf_out}/${case}_freqs_${i}.json ${expected} ${i})
  endforeach()
  # The ggml-written extra-family cases carry freqs runs only.
  string(JSON runs ERROR_VARIABLE no_diff LENGTH "${json}" diff)
  if(no_diff)
    continue()
  endif()
  math(EXPR last "${runs} - 1")
  foreach(i RANGE ${last})
    json_strings(args "${json}" diff ${i} args)
    string(JSON exit GET "${json}" diff ${i} exit)
    posemb_cli_test("gguf ${case} diff ${i}"
      ARGS diff ${dir}/model.gguf ${dir}/config.json ${args} --json EXIT ${exit}
      STDOUT ${gguf_out}/${case}_diff_${i}.json
      CHECKER posemb_gguf_check CHECK diff ${gguf_out}/${case}_diff_${i}.json ${expected} ${i})
  endforeach()
endforeach()
file(MAKE_DIRECTORY ${gguf_out})

# ---- the other GGUF commands and diff's text form, on the public cases.
set(mistral ${gguf_cases}/mistral-7b-v0.1)
set(gemma ${gguf_cases}/gemma-3-1b-it)
posemb_cli_test("gguf diff text notes the window llama.cpp does not run" EXIT 3
  ARGS diff ${mistral}/model.gguf ${mistral}/config.json
  STDOUT_MATCHES "^layer 0 sliding_window: gguf null config 4096  \\(llama.cpp runs no sliding window[^\n]*\nlayer 1 ")
posemb_cli_test("gguf diff text agrees" ARGS diff ${gguf_cases}/llama-3.1-8b/model.gguf
  ${gguf_cases}/llama-3.1-8b/config.json STDOUT_MATCHES "^$")
posemb_cli_test("gguf diff text inv_freq by its worst pair" EXIT 3
  ARGS diff ${gguf_cases}/codellama-7b-instruct-freq-base-missing/model.gguf
       ${gguf_cases}/codellama-7b-instruct-freq-base-missing/config.json
  STDOUT_MATCHES "layer 31 inv_freq: gguf [0-9.e-]+ config [0-9.e-]+ \\(worst of 64 pairs: pair [0-9]+")
posemb_cli_test("gguf layers json" ARGS layers ${gemma}/model.gguf --json
  STDOUT_MATCHES "^\\[{\"layer\": 0, [^\n]*\"sliding_window\": 512,[^\n]*\n( {\"layer\": [0-9]+[^\n]*\n)+$")
posemb_cli_test("gguf layers table" ARGS layers ${gemma}/model.gguf
  STDOUT_MATCHES "\n    5  rope       default +256 +256  rotate_half  1 +0.0625 +-  ")
posemb_cli_test("gguf inspect" ARGS inspect ${gguf_cases}/phi-3.5-mini-instruct/model.gguf --seq-len 4096
  STDOUT_MATCHES "arch: phi3\n.*context per sequence \\(n_ctx_seq\\): 4096\n.*rope_type: longrope\n")
posemb_cli_test("gguf freqs without --layer on differing layers" EXIT 2
  STDERR "model\\.gguf: the layers differ .*; choose one with --layer" ARGS freqs ${gemma}/model.gguf)
posemb_cli_test("gguf freqs without --layer on alike layers"
  ARGS freqs ${gguf_cases}/llama-3.1-8b/model.gguf STDOUT_MATCHES "^{\"layer\": 0, \"positions\": \"rope\", \"rope_type\": \"llama3\"")
posemb_cli_test("gguf freqs layer out of range" EXIT 2 STDERR "--layer = 32: expected a layer in \\[0, 32\\)"
  ARGS freqs ${mistral}/model.gguf --layer 32)

# ---- diff usage (exit 2) and unreadable files (exit 1).
posemb_cli_test("diff usage config first" EXIT 2 STDERR "config\\.json: not a GGUF file.*expected posemb diff MODEL\\.gguf CONFIG\\.json"
  ARGS diff ${mistral}/config.json ${mistral}/model.gguf)
posemb_cli_test("diff usage two GGUF files" EXIT 2 STDERR "a GGUF file where the config\\.json belongs"
  ARGS diff ${mistral}/model.gguf ${gemma}/model.gguf)
posemb_cli_test("diff usage one file" EXIT 2 STDERR "CONFIG\\.json is required" ARGS diff ${mistral}/model.gguf)
posemb_cli_test("diff usage seq-len" EXIT 2 STDERR "--seq-len = 0: expected an integer >= 1"
  ARGS diff ${mistral}/model.gguf ${mistral}/config.json --seq-len 0)
posemb_cli_test("diff missing config" EXIT 1 STDERR "no_such_config\\.json: cannot open"
  ARGS diff ${mistral}/model.gguf ${gguf_out}/no_such_config.json)
posemb_cli_test("diff missing gguf" EXIT 1 STDERR "no_such_model\\.gguf: cannot open"
  ARGS diff ${gguf_out}/no_such_model.gguf ${mistral}/config.json)
posemb_cli_test("diff malformed config" EXIT 1 STDERR "bad_json\\.json: malformed JSON"
  ARGS diff ${mistral}/model.gguf ${cli_source}/data/bad_json.json)

# ---- files the checker writes: hostile GGUF files, a 48-layer model, safetensors checkpoints.
add_test(NAME cli.gguf_write_files COMMAND posemb_gguf_check write-gguf ${hostile})
set_tests_properties(cli.gguf_write_files PROPERTIES FIXTURES_SETUP posemb_gguf_files)
add_test(NAME cli.gguf_write_weights COMMAND posemb_gguf_check write-weights ${weights})
set_tests_properties(cli.gguf_write_weights PROPERTIES FIXTURES_SETUP posemb_gguf_weights)

# A case that reads files a setup test (the fixture) writes.
function(fixture_cli_test fixture name)
  posemb_cli_test("${name}" ${ARGN})
  string(REPLACE " " "_" test_name "cli.${name}")
  set_tests_properties(${test_name} PROPERTIES FIXTURES_REQUIRED ${fixture})
endfunction()
# The cases that read the files the checker writes.
function(gguf_file_test name)
  fixture_cli_test(posemb_gguf_files "${name}" ${ARGN})
endfunction()
set(llama48 ${hostile}/llama48.gguf)
gguf_file_test("gguf 48 layers agree" ARGS diff ${llama48} ${hostile}/llama48.json STDOUT_MATCHES "^$")
gguf_file_test("gguf 48 layers differ in base" EXIT 3
  ARGS diff ${llama48} ${hostile}/llama48_theta1e4.json --json
  STDOUT_MATCHES "^\\[{\"layer\": 0, \"field\": \"inv_freq\".*\n {\"layer\": 47, \"field\": \"inv_freq\"[^\n]*}\\]\n$")
gguf_file_test("gguf 48 layers differ text" EXIT 3
  ARGS diff ${llama48} ${hostile}/llama48_theta1e4.json
  STDOUT_MATCHES "^layer 0 inv_freq: gguf [^\n]+\n(layer [0-9]+ inv_freq: [^\n]+\n)*layer 47 inv_freq: [^\n]+\n$")
gguf_file_test("gguf 48 against 47 layers" EXIT 3 ARGS diff ${llama48} ${hostile}/llama47.json --json
  STDOUT_MATCHES "^\\[{\"layer\": null, \"field\": \"layers\", \"gguf\": 48, \"config\": 47}\\]\n$")
gguf_file_test("gguf hostile freq_base stored as a string" EXIT 1
  STDERR "freq_base_string\\.gguf: llama\\.rope\\.freq_base: type STRING"
  ARGS freqs ${hostile}/freq_base_string.gguf)
gguf_file_test("gguf hostile missing block_count" EXIT 1 STDERR "no_block_count\\.gguf: .*llama\\.block_count"
  ARGS diff ${hostile}/no_block_count.gguf ${hostile}/llama48.json)
gguf_file_test("gguf hostile unknown architecture" EXIT 1
  STDERR "unknown_arch\\.gguf: .*\"mamba9\" is not an architecture of the pinned llama\\.cpp .*a broken or foreign file"
  ARGS layers ${hostile}/unknown_arch.gguf --json)
gguf_file_test("gguf architecture llama.cpp runs without a posemb row" EXIT 1
  STDERR "no_row_arch\\.gguf: general\\.architecture = \"mamba\": expected one of llama, .*llama\\.cpp \\(llama-cpp-python 0\\.3\\.36\\) runs \"mamba\" \\(a recurrent model without positions, rope type none\\); posemb has no row for it: posemb's gap, not a broken file"
  ARGS layers ${hostile}/no_row_arch.gguf)
gguf_file_test("gguf hostile truncated" EXIT 1 STDERR "truncated\\.gguf: .*truncated.* at offset [0-9]+"
  ARGS freqs ${hostile}/truncated.gguf)
gguf_file_test("gguf hostile count past the file" EXIT 1 STDERR "huge_count\\.gguf: metadata count = [0-9]+: .*offset"
  ARGS inspect ${hostile}/huge_count.gguf)
gguf_file_test("gguf hostile rope tensor past the end" EXIT 1
  STDERR "rope_freqs_past_end\\.gguf: rope_freqs\\.weight.*offset"
  ARGS freqs ${hostile}/rope_freqs_past_end.gguf)

# ---- --weights: tables written by the checker (learned: row r, column c = 0.25 + r + c/32;
# T5: b + 100 h, decoder + 10000, UMT5 block k + 1000 k); expected values recomputed by the
# checker from those formulas and the hand-worked T5 bucket ids of tests/cli/data.
set(gpt2 ${cli_source}/data/gpt2_learned.json)  # d 8, 16 positions
set(opt ${cli_source}/data/opt_learned.json)    # d 8, 16 positions (+ offset 2)
set(t5 ${cli_data}/t5)
# Every --weights case needs the files; each is checked against the formulas.
function(weights_test name)
  fixture_cli_test(posemb_gguf_weights "${name}" ${ARGN} CHECKER posemb_gguf_check)
endfunction()
set(x ${weights}/x.npy)            # [2, 5, 8]
set(p ${weights}/positions.npy)    # [2, 5], 0 .. 15
weights_test("apply gpt2 weights offset"
  ARGS apply ${gpt2} --weights ${weights}/gpt2.safetensors --input ${x} --offset 11
       --output ${gguf_out}/gpt2.npy
  CHECK learned ${gguf_out}/gpt2.npy ${x} 16 0 --offset 11)
weights_test("apply gpt2 weights float64 X float32 Y"
  ARGS apply ${gpt2} --weights ${weights}/gpt2.safetensors --input ${weights}/x64.npy --offset 3
       --output ${gguf_out}/gpt2_f64.npy
  CHECK learned ${gguf_out}/gpt2_f64.npy ${weights}/x64.npy 16 0 --offset 3)
weights_test("apply gpt2 prefixed weights positions"
  ARGS apply ${gpt2} --weights ${weights}/gpt2_prefixed.safetensors --input ${x} --positions ${p}
       --output ${gguf_out}/gpt2_prefixed.npy
  CHECK learned ${gguf_out}/gpt2_prefixed.npy ${x} 16 0 ${p})
weights_test("apply opt sharded weights offset 2"
  ARGS apply ${opt} --weights ${weights}/opt.safetensors.index.json --input ${x} --positions ${p}
       --output ${gguf_out}/opt.npy
  CHECK learned ${gguf_out}/opt.npy ${x} 18 2 ${p})
set(bert ${cli_source}/data/bert_learned.json)                # 16 positions from row 0
set(roberta ${cli_source}/data/roberta_learned.json)          # pad_token_id 1: row p + 2
set(xlm_roberta ${cli_source}/data/xlm_roberta_learned.json)  # pad_token_id 3: row p + 4
weights_test("apply bert weights positions"
  ARGS apply ${bert} --weights ${weights}/bert.safetensors --input ${x} --positions ${p}
       --output ${gguf_out}/bert.npy
  CHECK learned ${gguf_out}/bert.npy ${x} 16 0 ${p})
weights_test("apply roberta weights padding offset"
  ARGS apply ${roberta} --weights ${weights}/roberta.safetensors --input ${x} --positions ${p}
       --output ${gguf_out}/roberta.npy
  CHECK learned ${gguf_out}/roberta.npy ${x} 18 2 ${p})
weights_test("apply xlm-roberta weights pad_token_id 3"
  ARGS apply ${xlm_roberta} --weights ${weights}/xlm_roberta.safetensors --input ${x} --offset 1
       --output ${gguf_out}/xlm_roberta.npy
  CHECK learned ${gguf_out}/xlm_roberta.npy ${x} 20 4 --offset 1)
weights_test("error roberta weights position past the table" EXIT 1 OUTPUT ${out}
  STDERR "roberta\\.safetensors: roberta\\.embeddings\\.position_embeddings\\.weight .18, 8.: position = 16: expected a position in .-2, 16. .row = position . 2.\n"
  ARGS apply ${roberta} --weights ${weights}/roberta.safetensors --input ${x} --offset 12 --output ${out})
weights_test("error roberta pad_token_id null" EXIT 1 OUTPUT ${out}
  STDERR "roberta_bad_pad\\.json: pad_token_id = null: expected an integer >= 0"
  ARGS apply ${cli_source}/data/roberta_bad_pad.json --weights ${weights}/roberta.safetensors
       --input ${x} --output ${out})
weights_test("bias t5 weights encoder"
  ARGS bias ${t5}/t5_small_2heads.json --weights ${weights}/t5.safetensors --q-len 2 --k-len 3
       --q-offset 0 --output ${gguf_out}/t5_enc.npy
  CHECK t5 ${gguf_out}/t5_enc.npy ${cli_source}/data/t5_encoder_2x3.expected.json 2 0)
weights_test("bias t5 weights decoder"
  ARGS bias ${t5}/t5_small_2heads.json --weights ${weights}/t5.safetensors --q-len 2 --k-len 3
       --decoder --output ${gguf_out}/t5_dec.npy
  CHECK t5 ${gguf_out}/t5_dec.npy ${cli_source}/data/t5_decoder_default_offset.expected.json 2 10000)
weights_test("bias t5 weights block 4 uses block 0's table"
  ARGS bias ${t5}/t5_small_2heads.json --weights ${weights}/t5.safetensors --block 4 --q-len 1
       --k-len 1 --q-offset 64 --output ${gguf_out}/t5_b4.npy
  CHECK t5 ${gguf_out}/t5_b4.npy ${cli_source}/data/t5_encoder_rel_minus_64.expected.json 2 0)
weights_test("bias umt5 weights encoder block 2"
  ARGS bias ${t5}/umt5_small.json --weights ${weights}/umt5.safetensors --block 2 --q-len 1
       --k-len 1 --q-offset 64 --output ${gguf_out}/umt5_e2.npy
  CHECK t5 ${gguf_out}/umt5_e2.npy ${cli_source}/data/t5_encoder_rel_minus_64.expected.json 6 2000)
weights_test("bias umt5 weights decoder block 1"
  ARGS bias ${t5}/umt5_small.json --weights ${weights}/umt5.safetensors --block 1 --decoder
       --q-len 1 --k-len 1 --q-offset 128 --output ${gguf_out}/umt5_d1.npy
  CHECK t5 ${gguf_out}/umt5_d1.npy ${cli_source}/data/t5_decoder_rel_minus_128.expected.json 6 11000)

# Refusals: exit 1 naming the file and the tensor; 2 for flags that do not go together.
weights_test("error weights missing tensor" EXIT 1 OUTPUT ${out}
  STDERR "no_table\\.safetensors: position table: no tensor named wpe\\.weight, transformer\\.wpe\\.weight"
  ARGS apply ${gpt2} --weights ${weights}/no_table.safetensors --input ${x} --output ${out})
weights_test("error weights missing t5 table" EXIT 1 OUTPUT ${out}
  STDERR "gpt2\\.safetensors: relative_attention_bias: no tensor named encoder\\.block\\.0\\.layer"
  ARGS bias ${t5}/t5_small_2heads.json --weights ${weights}/gpt2.safetensors --q-len 1 --k-len 1
       --output ${out})
weights_test("error weights header past the end" EXIT 1 OUTPUT ${out}
  STDERR "header_past_end\\.safetensors: header length = 1000: expected at most the 2 bytes"
  ARGS apply ${gpt2} --weights ${weights}/header_past_end.safetensors --input ${x} --output ${out})
weights_test("error weights bad json" EXIT 1 OUTPUT ${out}
  STDERR "bad_json\\.safetensors: header: expected a JSON object"
  ARGS apply ${gpt2} --weights ${weights}/bad_json.safetensors --input ${x} --output ${out})
weights_test("error weights data past the end" EXIT 1 OUTPUT ${out}
  STDERR "data_past_end\\.safetensors: wpe\\.weight"
  ARGS apply ${gpt2} --weights ${weights}/data_past_end.safetensors --input ${x} --output ${out})
weights_test("error weights missing file" EXIT 1 OUTPUT ${out} STDERR "no_such\\.safetensors: cannot open"
  ARGS apply ${gpt2} --weights ${weights}/no_such.safetensors --input ${x} --output ${out})
weights_test("error weights position past the table" EXIT 1 OUTPUT ${out}
  STDERR "gpt2\\.safetensors: wpe\\.weight .16, 8.: position = 16: expected a position in .0, 16. .row = position . 0.\n"
  ARGS apply ${gpt2} --weights ${weights}/gpt2.safetensors --input ${x} --offset 12 --output ${out})
weights_test("error weights umt5 block outside" EXIT 2 OUTPUT ${out}
  STDERR "--block = 3: expected a block in .0, 3. of .*umt5_small\\.json's encoder"
  ARGS bias ${t5}/umt5_small.json --weights ${weights}/umt5.safetensors --block 3 --q-len 1 --k-len 1
       --output ${out})
weights_test("error weights on a rope model" EXIT 2 OUTPUT ${out}
  STDERR "--weights: the positions of .*default_hd64\\.json are rope"
  ARGS apply ${cli_data}/hf/default_hd64.json --weights ${weights}/gpt2.safetensors --input ${x}
       --output ${out})
posemb_cli_test("usage weights and inverse" EXIT 2 STDERR "--inverse excludes --weights"
  ARGS apply ${gpt2} --weights ${weights}/gpt2.safetensors --input ${x} --inverse --output ${out})
posemb_cli_test("usage bias table and weights" EXIT 2 STDERR "--table excludes --weights"
  ARGS bias ${t5}/t5_small_2heads.json --table ${t5}/table_32x2.npy --weights ${weights}/t5.safetensors
       --q-len 1 --k-len 1 --output ${out})
posemb_cli_test("usage bias without a table" EXIT 2 STDERR "one of --table or --weights is required"
  ARGS bias ${t5}/t5_small_2heads.json --q-len 1 --k-len 1 --output ${out})
posemb_cli_test("help diff exit statuses" ARGS diff --help
  STDOUT_MATCHES "0 they agree, 3 they differ, 2 usage error, 1 an unreadable")
posemb_cli_test("help weights" ARGS apply --help STDOUT_MATCHES "--weights")

# ---- --weights on a FoPE config: the conformance coefficients of case a, written by the checker
# under the FoPE authors' state-dict names (transformer.blocks.<i>.pos_emb.{sin,cos}_coef); Y
# against the case's y.npy (the reference module's output), 1e-5 * max(1, max |y|).
set(fope_weights ${gguf_out}/fope_weights)
add_test(NAME cli.gguf_write_fope COMMAND posemb_gguf_check write-fope ${fope_a} ${fope_weights})
set_tests_properties(cli.gguf_write_fope PROPERTIES FIXTURES_SETUP posemb_fope_weights)
function(fope_weights_test name)
  fixture_cli_test(posemb_fope_weights "${name}" ${ARGN})
endfunction()
set(fope_args --input ${fope_a}/x.npy --positions ${fope_a}/positions.npy)
fope_weights_test("apply fope weights block 1"
  ARGS apply ${fope_weights}/two_blocks.json --weights ${fope_weights}/fope.safetensors --layer 1
       ${fope_args} --output ${gguf_out}/fope_block1.npy
  CHECK close ${gguf_out}/fope_block1.npy ${fope_a}/y.npy)
fope_weights_test("apply fope weights model prefix"
  ARGS apply ${fope_a}/config.json --weights ${fope_weights}/fope_model_prefix.safetensors
       ${fope_args} --output ${gguf_out}/fope_prefix.npy
  CHECK close ${gguf_out}/fope_prefix.npy ${fope_a}/y.npy)
# Intern-S1-Pro's FoPE (tests/data/interns1_pro/tiny): the model's one coefficient pair
# model.language_model.rotary_emb.{sin,cos}_coef of a safetensors file written by the
# safetensors package; Y against vLLM 0.33.0's FourierRotaryEmbedding.forward_native (make_tiny.py).
set(interns1_pro ${cli_source}/../data/interns1_pro/tiny)
posemb_cli_test("apply interns1_pro fope weights"
  ARGS apply ${interns1_pro}/config.json --weights ${interns1_pro}/coefficients.safetensors
       --input ${interns1_pro}/x.npy --offset 0 --output ${gguf_out}/interns1_pro.npy
  CHECK close ${gguf_out}/interns1_pro.npy ${interns1_pro}/y_vllm.npy)
fope_weights_test("error fope weights missing block" EXIT 1 OUTPUT ${out}
  STDERR "fope_model_prefix\\.safetensors: sin_coef: no tensor named transformer\\.blocks\\.1\\.pos_emb\\.sin_coef, model\\.transformer\\.blocks\\.1\\.pos_emb\\.sin_coef"
  ARGS apply ${fope_weights}/two_blocks.json --weights ${fope_weights}/fope_model_prefix.safetensors
       --layer 1 ${fope_args} --output ${out})
fope_weights_test("error fope weights 2-D coefficients" EXIT 1 OUTPUT ${out}
  STDERR "fope_2d\\.safetensors: transformer\\.blocks\\.0\\.pos_emb\\.sin_coef: 2 dimensions: expected .n_kv_heads, D_in, D_out."
  ARGS apply ${fope_a}/config.json --weights ${fope_weights}/fope_2d.safetensors ${fope_args}
       --output ${out})

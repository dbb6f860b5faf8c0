/* The C API's test: every case of reference.txt (the C++ results, reference_dump.cpp) through
 * posemb.h, compared bit for bit, then every error path's status and message; then the same for
 * the KV-cache append (kv_reference.txt, reference_dump --kv).
 *   posemb_c_test REFERENCE.txt DATA_DIR KV_REFERENCE.txt
 * C11, -Wall -Wextra -Werror -pedantic. Each record is formatted from the C API's values with
 * the dumper's format and compared with the reference line as text: hex bit patterns, so equal
 * text is equal bits. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#include "cases.h"
#include "posemb/c/posemb.h"

static int failures = 0;
static int checks = 0;

#define CHECK(condition, ...)                              \
  do {                                                     \
    ++checks;                                              \
    if (!(condition)) {                                    \
      ++failures;                                          \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fprintf(stderr, "\n");                               \
    }                                                      \
  } while (0)

/* ---- a growable text buffer ---- */

typedef struct text {
  char* data;
  size_t size, capacity;
} text;

static void text_clear(text* t) {
  t->size = 0;
  if (t->data) t->data[0] = '\0';
}

static void text_add(text* t, const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int n = vsnprintf(NULL, 0, format, args);
  va_end(args);
  if (t->size + (size_t)n + 1 > t->capacity) {
    t->capacity = 2 * (t->size + (size_t)n + 1);
    t->data = realloc(t->data, t->capacity);
    if (!t->data) abort();
  }
  vsnprintf(t->data + t->size, (size_t)n + 1, format, again);
  va_end(again);
  t->size += (size_t)n;
}

/* ---- the reference file, as lines ---- */

static char** lines;
static size_t n_lines, next_line;

static void read_lines(const char* path) {
  n_lines = next_line = 0;
  FILE* file = fopen(path, "rb");
  if (!file) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(2);
  }
  fseek(file, 0, SEEK_END);
  const long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  char* all = malloc((size_t)size + 1);
  if (!all || fread(all, 1, (size_t)size, file) != (size_t)size) abort();
  all[size] = '\0';
  fclose(file);
  size_t capacity = 1024;
  lines = malloc(capacity * sizeof *lines);
  for (char* line = strtok(all, "\n"); line; line = strtok(NULL, "\n")) {
    if (n_lines == capacity) lines = realloc(lines, (capacity *= 2) * sizeof *lines);
    lines[n_lines++] = line;
  }
}

static const char* peek(void) { return next_line < n_lines ? lines[next_line] : ""; }
static const char* take(void) { return next_line < n_lines ? lines[next_line++] : ""; }
static int starts(const char* line, const char* word) {
  return strncmp(line, word, strlen(word)) == 0 && line[strlen(word)] == ' ';
}

/* The next line must equal got (a record made from the C API's values). */
static void expect_line(const char* what, const text* got) {
  const char* want = take();
  CHECK(strcmp(want, got->data) == 0, "%s: C API\n  %.300s\nC++\n  %.300s", what, got->data, want);
}

static uint64_t bits64(double value) {
  uint64_t bits;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}

static void add_values(text* t, int dtype, const void* data, size_t n) {
  text_add(t, " %zu", n);
  for (size_t i = 0; i < n; ++i) {
    if (dtype == 0) {
      uint32_t bits;
      memcpy(&bits, (const char*)data + 4 * i, 4);
      text_add(t, " %" PRIx32, bits);
    } else {
      uint16_t bits;
      memcpy(&bits, (const char*)data + 2 * i, 2);
      text_add(t, " %x", (unsigned)bits);
    }
  }
}

static void* case_input(int dtype, size_t n) {
  const size_t width = dtype == 0 ? 4 : 2;
  char* x = calloc(n, width);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t bits = posemb_case_input_bits(dtype, (uint32_t)i);
    if (dtype == 0) {
      memcpy(x + 4 * i, &bits, 4);
    } else {
      const uint16_t half = (uint16_t)bits;
      memcpy(x + 2 * i, &half, 2);
    }
  }
  return x;
}

/* ---- the model cases ---- */

static void rotate_variant(const posemb_rope* rope, int32_t head_dim, int dtype, int v, text* t) {
  const int64_t b = POSEMB_CASE_BATCH, s = POSEMB_CASE_SEQ, h = POSEMB_CASE_HEADS;
  const size_t n = (size_t)(b * s * h * head_dim);
  void* x = case_input(dtype, n);
  const posemb_dtype type = (posemb_dtype)dtype;
  posemb_status status = POSEMB_OK;
  if (v == 0) {
    const posemb_shape shape = {POSEMB_LAYOUT_BSHD, b, s, h, head_dim};
    const posemb_positions at = {1000000, NULL, 0};
    status = posemb_rope_rotate_inplace(rope, type, x, &shape, &at, POSEMB_FORWARD);
    add_values(t, dtype, x, n);
  } else if (v == 1) {
    const size_t n_out = (size_t)(b * h * POSEMB_CASE_OUT_SEQ * head_dim);
    void* out = calloc(n_out, dtype == 0 ? 4 : 2);
    const posemb_shape in = {POSEMB_LAYOUT_BSHD, b, s, h, head_dim};
    const posemb_shape to = {POSEMB_LAYOUT_BHSD, b, POSEMB_CASE_OUT_SEQ, h, head_dim};
    const posemb_positions at = {0, posemb_case_ids, b};
    status = posemb_rope_rotate(rope, type, x, &in, out, &to, POSEMB_CASE_OUT_OFFSET, &at,
                                POSEMB_INVERSE);
    add_values(t, dtype, out, n_out);
    free(out);
  } else if (v == 2) {
    posemb_rope_table* table = NULL;
    status = posemb_rope_table_create(rope, 0, POSEMB_CASE_TABLE_COUNT, &table);
    const posemb_shape shape = {POSEMB_LAYOUT_BHSD, b, s, h, head_dim};
    const posemb_positions at = {10, NULL, 0};
    if (status == POSEMB_OK) {
      status = posemb_rope_table_rotate_inplace(table, type, x, &shape, &at, POSEMB_FORWARD);
    }
    posemb_rope_table_free(table);
    add_values(t, dtype, x, n);
  } else {
    const posemb_shape shape = {POSEMB_LAYOUT_BSHD, b, s, h, head_dim};
    const posemb_positions at = {0, posemb_case_long_ids, 1};
    status = posemb_rope_rotate_inplace(rope, type, x, &shape, &at, POSEMB_FORWARD);
    add_values(t, dtype, x, n);
  }
  CHECK(status == POSEMB_OK, "rotation variant %d: %s", v, posemb_last_error());
  free(x);
}

static void check_rope(const posemb_model* model, int64_t layer, text* t) {
  posemb_rope* rope = NULL;
  CHECK(posemb_model_layer_rope(model, layer, &rope) == POSEMB_OK, "layer %" PRId64 " rope: %s",
        layer, posemb_last_error());
  if (!rope) return;
  posemb_rope_info info;
  posemb_rope_get_info(rope, &info);
  double inv_freq[4096];
  size_t count = 0;
  CHECK(posemb_rope_inv_freq(rope, inv_freq, 4096, &count) == POSEMB_OK, "inv_freq: %s",
        posemb_last_error());
  text_clear(t);
  text_add(t, "rope %" PRId64 " %d %d %d %d %" PRIx64 " %zu", layer, info.head_dim, info.rotary_dim,
           info.rotary_offset, (int)info.pairing, bits64(info.attention_scale), count);
  for (size_t i = 0; i < count; ++i) text_add(t, " %" PRIx64, bits64(inv_freq[i]));
  expect_line("rope", t);
  while (starts(peek(), "rot")) {
    int rot_layer, dtype, variant;
    if (sscanf(peek(), "rot %d %d %d", &rot_layer, &dtype, &variant) != 3) break;
    text_clear(t);
    text_add(t, "rot %d %d %d", rot_layer, dtype, variant);
    rotate_variant(rope, info.head_dim, dtype, variant, t);
    expect_line("rot", t);
  }
  posemb_rope_free(rope);
}

static void check_layer(const posemb_model* model, int64_t i, text* t) {
  posemb_position_kind kind;
  int32_t head_dim = 0, has_t5 = 0;
  const char* rope_type = NULL;
  posemb_layer_attention a;
  posemb_t5_buckets t5 = {0, 0, 0};
  CHECK(posemb_model_layer_kind(model, i, &kind) == POSEMB_OK, "kind");
  CHECK(posemb_model_layer_head_dim(model, i, &head_dim) == POSEMB_OK, "head_dim");
  CHECK(posemb_model_layer_rope_type(model, i, &rope_type) == POSEMB_OK, "rope_type");
  CHECK(posemb_model_layer_attention(model, i, &a) == POSEMB_OK, "attention");
  CHECK(posemb_model_layer_t5_buckets(model, i, &has_t5, &t5) == POSEMB_OK, "t5");
  text_clear(t);
  text_add(t,
           "layer %d %d %d %s %d %d %" PRIx64 " %d %" PRId64 " %d %" PRId64 " %d %" PRIx64
           " %" PRIx64 " %" PRId64 " %d %" PRIx64 " %d %d %d %d %d %d",
           (int)i, (int)kind, head_dim, rope_type[0] ? rope_type : "-", a.softmax_attention,
           a.has_softmax_scale, bits64(a.softmax_scale), a.has_sliding_window, a.sliding_window,
           a.has_attention_chunk_size, a.attention_chunk_size, a.has_query_temperature,
           bits64(a.query_temperature_floor_scale), bits64(a.query_temperature_attn_scale),
           a.query_temperature_position_offset, a.has_logit_softcap, bits64(a.logit_softcap),
           a.attention_sinks, a.alibi_bias_before_scale, has_t5, has_t5 ? t5.num_buckets : 0,
           has_t5 ? t5.max_distance : 0, has_t5 ? t5.bidirectional : 0);
  expect_line("layer", t);
  if (starts(peek(), "rope")) check_rope(model, i, t);
}

static int check_case(const char* data_dir, text* t) {
  char format[16], relative[512];
  int64_t seq_len = 0;
  if (sscanf(take(), "case %15s %511s %" SCNd64, format, relative, &seq_len) != 3) return 0;
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", data_dir, relative);
  posemb_model* model = NULL;
  const posemb_status status = strcmp(format, "gguf") == 0
                                   ? posemb_model_load_gguf(path, seq_len, 0, &model)
                                   : posemb_model_load_config(path, seq_len, 0, &model);
  if (starts(peek(), "error")) {
    const char* want = take() + strlen("error ");
    CHECK(status == POSEMB_ERROR_INVALID_ARGUMENT && strcmp(posemb_last_error(), want) == 0,
          "%s: status %d, message '%s', expected '%s'", relative, (int)status, posemb_last_error(),
          want);
  } else {
    CHECK(status == POSEMB_OK, "%s: %s", relative, posemb_last_error());
    int64_t n = 0;
    int32_t heads = 0, kv_heads = 0;
    posemb_model_layer_count(model, &n);
    posemb_model_heads(model, &heads, &kv_heads);
    text_clear(t);
    text_add(t, "model %" PRId64 " %d %d", n, heads, kv_heads);
    expect_line(relative, t);
    for (int64_t i = 0; i < n && status == POSEMB_OK; ++i) check_layer(model, i, t);
  }
  CHECK(strcmp(take(), "end") == 0, "%s: records left over", relative);
  posemb_model_free(model);
  return 1;
}

/* ---- M-RoPE and biases ---- */

static void check_mrope(text* t) {
  int layout, dtype;
  while (sscanf(peek(), "mrope %d %d", &layout, &dtype) == 2) {
    posemb_rope* rope = NULL;
    posemb_mrope* mrope = NULL;
    posemb_rope_create_default(128, 128, 1000000.0, POSEMB_PAIRING_ROTATE_HALF, &rope);
    CHECK(posemb_mrope_create(rope, posemb_case_mrope_sections[layout], (posemb_mrope_layout)layout,
                              &mrope) == POSEMB_OK,
          "mrope: %s", posemb_last_error());
    const size_t n = POSEMB_CASE_BATCH * POSEMB_CASE_SEQ * POSEMB_CASE_HEADS * 128;
    void* x = case_input(dtype, n);
    const posemb_shape shape = {POSEMB_LAYOUT_BSHD, POSEMB_CASE_BATCH, POSEMB_CASE_SEQ,
                                POSEMB_CASE_HEADS, 128};
    CHECK(posemb_mrope_rotate_inplace(mrope, (posemb_dtype)dtype, x, &shape, posemb_case_mrope_ids,
                                      1, POSEMB_FORWARD) == POSEMB_OK,
          "mrope rotate: %s", posemb_last_error());
    text_clear(t);
    text_add(t, "mrope %d %d", layout, dtype);
    add_values(t, dtype, x, n);
    expect_line("mrope", t);
    free(x);
    posemb_mrope_free(mrope);
    posemb_rope_free(rope);
  }
}

static void check_biases(text* t) {
  for (int n = 1; n <= 20; ++n) {
    double slopes[20];
    CHECK(posemb_alibi_slopes(n, 8.0, slopes, 20) == POSEMB_OK, "slopes");
    text_clear(t);
    text_add(t, "slopes %d", n);
    for (int h = 0; h < n; ++h) text_add(t, " %" PRIx64, bits64(slopes[h]));
    expect_line("slopes", t);
  }
  double slopes[12];
  posemb_alibi_slopes(12, 8.0, slopes, 12);
  int64_t k[POSEMB_CASE_T5_KEYS];
  for (int j = 0; j < 10; ++j) k[j] = j;
  float bias[12 * 3 * 10];
  for (int form = 0; form < 2; ++form) {
    CHECK(posemb_alibi_bias(slopes, 12, posemb_case_alibi_q, 3, k, 10, (posemb_alibi_form)form,
                            bias, 360) == POSEMB_OK,
          "alibi: %s", posemb_last_error());
    text_clear(t);
    text_add(t, "alibi %d", form);
    add_values(t, 0, bias, 360);
    expect_line("alibi", t);
  }
  for (int j = 0; j < POSEMB_CASE_T5_KEYS; ++j) k[j] = 7 * j;
  float* table = case_input(0, 32 * POSEMB_CASE_T5_HEADS);
  int64_t ids[3 * POSEMB_CASE_T5_KEYS];
  float t5[POSEMB_CASE_T5_HEADS * 3 * POSEMB_CASE_T5_KEYS];
  for (int bidirectional = 1; bidirectional >= 0; --bidirectional) {
    const posemb_t5_buckets buckets = {32, 128, bidirectional};
    CHECK(posemb_t5_buckets_of(&buckets, posemb_case_t5_q, 3, k, POSEMB_CASE_T5_KEYS, ids,
                               3 * POSEMB_CASE_T5_KEYS) == POSEMB_OK,
          "t5 buckets: %s", posemb_last_error());
    text_clear(t);
    text_add(t, "t5buckets %d %d", bidirectional, 3 * POSEMB_CASE_T5_KEYS);
    for (int i = 0; i < 3 * POSEMB_CASE_T5_KEYS; ++i) text_add(t, " %" PRId64, ids[i]);
    expect_line("t5buckets", t);
    CHECK(posemb_t5_bias(&buckets, table, POSEMB_CASE_T5_HEADS, posemb_case_t5_q, 3, k,
                         POSEMB_CASE_T5_KEYS, t5, sizeof t5 / sizeof t5[0]) == POSEMB_OK,
          "t5 bias: %s", posemb_last_error());
    text_clear(t);
    text_add(t, "t5bias %d", bidirectional);
    add_values(t, 0, t5, sizeof t5 / sizeof t5[0]);
    expect_line("t5bias", t);
  }
  free(table);
}

/* ---- errors ---- */

/* The call returned `status` with exactly `message`. */
static void expect_error(const char* what, posemb_status status, posemb_status want_status,
                         const char* want) {
  CHECK(status == want_status && strcmp(posemb_last_error(), want) == 0,
        "%s: status %d, message '%s'; expected %d, '%s'", what, (int)status, posemb_last_error(),
        (int)want_status, want);
}

#define EXPECT_ERROR(call, message) \
  expect_error(#call, call, POSEMB_ERROR_INVALID_ARGUMENT, message)

/* The next cxxerror record named `name`: the C++ message. */
static const char* cxx_message(const char* name) {
  const char* line = take();
  const size_t n = strlen("cxxerror ") + strlen(name);
  CHECK(starts(line, "cxxerror") && strncmp(line + strlen("cxxerror "), name, strlen(name)) == 0,
        "expected cxxerror %s, got %.80s", name, line);
  return strlen(line) > n ? line + n + 1 : "";
}

static int other_thread_message_empty(void* unused) {
  (void)unused;
  return posemb_last_error()[0] == '\0';
}

static void check_cxx_errors(const char* data_dir) {
  posemb_rope* rope = NULL;
  EXPECT_ERROR(posemb_rope_create_default(64, 7, 10000.0, POSEMB_PAIRING_ROTATE_HALF, &rope),
               cxx_message("odd_rotary_dim"));
  EXPECT_ERROR(posemb_rope_create_default(64, 128, 10000.0, POSEMB_PAIRING_ROTATE_HALF, &rope),
               cxx_message("rotary_dim_above_head_dim"));
  CHECK(rope == NULL, "out written on failure");
  char path[1024];
  snprintf(path, sizeof path, "%s/models/gpt2.json", data_dir);
  posemb_model* gpt2 = NULL;
  posemb_model_load_config(path, 0, 0, &gpt2);
  posemb_position_kind kind;
  EXPECT_ERROR(posemb_model_layer_kind(gpt2, 99, &kind), cxx_message("layer_out_of_range"));
  EXPECT_ERROR(posemb_model_layer_rope(gpt2, 0, &rope), cxx_message("rope_of_learned_layer"));
  posemb_model_free(gpt2);
  snprintf(path, sizeof path, "%s/models/no-such-config.json", data_dir);
  posemb_model* missing = NULL;
  EXPECT_ERROR(posemb_model_load_config(path, 0, 0, &missing), cxx_message("missing_file"));

  posemb_rope* rope64 = NULL;
  posemb_rope_table* table = NULL;
  posemb_rope_create_default(64, 64, 10000.0, POSEMB_PAIRING_ROTATE_HALF, &rope64);
  posemb_rope_table_create(rope64, 0, 64, &table);
  float x[64] = {0};
  const posemb_shape one = {POSEMB_LAYOUT_BSHD, 1, 1, 1, 64};
  const posemb_positions at100 = {100, NULL, 0};
  EXPECT_ERROR(posemb_rope_table_rotate_inplace(table, POSEMB_F32, x, &one, &at100, POSEMB_FORWARD),
               cxx_message("table_position"));
  posemb_rope* rope128 = NULL;
  posemb_mrope* mrope = NULL;
  posemb_rope_create_default(128, 128, 10000.0, POSEMB_PAIRING_ROTATE_HALF, &rope128);
  const int32_t bad_sections[3] = {16, 24, 20};
  EXPECT_ERROR(posemb_mrope_create(rope128, bad_sections, POSEMB_MROPE_CHUNKED, &mrope),
               cxx_message("mrope_sum"));
  double slopes[4];
  EXPECT_ERROR(posemb_alibi_slopes(0, 8.0, slopes, 4), cxx_message("alibi_heads"));
  const posemb_shape narrow = {POSEMB_LAYOUT_BSHD, 1, 1, 1, 32};
  const posemb_positions at0 = {0, NULL, 0};
  EXPECT_ERROR(posemb_rope_rotate_inplace(rope64, POSEMB_F32, x, &narrow, &at0, POSEMB_FORWARD),
               cxx_message("head_dim_mismatch"));

  size_t unused = 0;
  char key[256] = "";
  CHECK(sscanf(take(), "strict %zu %255s", &unused, key) == 2 && unused > 0, "strict record");
  char want[512];
  snprintf(want, sizeof want, "posemb: config.json text: strict: %s is not used", key);
  posemb_model* model = NULL;
  const char* config = POSEMB_CASE_STRICT_CONFIG;
  EXPECT_ERROR(posemb_model_parse_config(config, strlen(config), 0, 1, &model), want);
  CHECK(posemb_model_parse_config(config, strlen(config), 0, 0, &model) == POSEMB_OK,
        "not strict: %s", posemb_last_error());
  posemb_model_free(model);

  /* The message is the calling thread's: another thread has none. */
  thrd_t thread;
  int empty = 0;
  CHECK(thrd_create(&thread, other_thread_message_empty, NULL) == thrd_success &&
            thrd_join(thread, &empty) == thrd_success && empty,
        "another thread sees this thread's message");
  posemb_rope_table_free(table);
  posemb_rope_free(rope64);
  posemb_rope_free(rope128);
}

/* Beam's full layers: no RoPE, q times (1 + (p + 1) / 2048)^0.1 (modeling_beam.py,
 * compute_attention_scaling); its sliding layers: RoPE, no temperature. */
static void check_temperature_form(void) {
  static const char config[] =
      "{\"model_type\": \"beam\", \"hidden_size\": 256, \"num_attention_heads\": 2, "
      "\"num_key_value_heads\": 2, \"head_dim\": 128, \"num_hidden_layers\": 2, "
      "\"layer_types\": [\"sliding_attention\", \"full_attention\"], \"sliding_window\": 512, "
      "\"rope_parameters\": {\"sliding_attention\": {\"rope_type\": \"default\", "
      "\"rope_theta\": 10000.0}, \"full_attention\": null}}";
  posemb_model* model = NULL;
  CHECK(posemb_model_parse_config(config, strlen(config), 0, 1, &model) == POSEMB_OK, "beam: %s",
        posemb_last_error());
  posemb_layer_attention a;
  posemb_temperature_form form = POSEMB_TEMPERATURE_POWER;
  CHECK(posemb_model_layer_attention(model, 0, &a) == POSEMB_OK && !a.has_query_temperature,
        "beam layer 0: no query temperature");
  CHECK(posemb_model_layer_query_temperature_form(model, 0, &form) == POSEMB_OK &&
            form == POSEMB_TEMPERATURE_FLOOR_LOG,
        "beam layer 0: form %d", (int)form);
  CHECK(posemb_model_layer_attention(model, 1, &a) == POSEMB_OK && a.has_query_temperature &&
            a.query_temperature_floor_scale == 2048.0 && a.query_temperature_attn_scale == 0.1 &&
            a.query_temperature_position_offset == 1,
        "beam layer 1: temperature %g %g", a.query_temperature_floor_scale,
        a.query_temperature_attn_scale);
  CHECK(posemb_model_layer_query_temperature_form(model, 1, &form) == POSEMB_OK &&
            form == POSEMB_TEMPERATURE_POWER,
        "beam layer 1: form %d", (int)form);
  EXPECT_ERROR(posemb_model_layer_query_temperature_form(model, 1, NULL),
               "posemb: out = NULL: expected a posemb_temperature_form to write");
  posemb_model_free(model);
}

static void check_argument_errors(void) {
  posemb_model* model = NULL;
  EXPECT_ERROR(posemb_model_load_config(NULL, 0, 0, &model),
               "posemb: path = NULL: expected a file name");
  EXPECT_ERROR(posemb_model_load_gguf("x.gguf", 0, 0, NULL),
               "posemb: out = NULL: expected a posemb_model* to write");
  EXPECT_ERROR(posemb_model_load_config("x.json", -1, 0, &model),
               "posemb: seq_len = -1: expected 0 (none) or a length >= 1");
  EXPECT_ERROR(posemb_model_parse_config("{}", 0, 0, 0, &model),
               "posemb: size = 0: expected the text's length >= 1");
  EXPECT_ERROR(posemb_model_parse_config(NULL, 2, 0, 0, &model),
               "posemb: json = NULL: expected config.json text");
  int64_t count;
  EXPECT_ERROR(posemb_model_layer_count(NULL, &count),
               "posemb: model = NULL: expected a posemb_model");

  posemb_rope* rope = NULL;
  const double inv_freq[2] = {1.0, 0.5};
  EXPECT_ERROR(posemb_rope_create(NULL, 2, 1.0, POSEMB_PAIRING_ROTATE_HALF, 4, 0, &rope),
               "posemb: inv_freq = NULL: expected a pointer to rotary_dim / 2 inverse frequencies");
  EXPECT_ERROR(posemb_rope_create(inv_freq, 0, 1.0, POSEMB_PAIRING_ROTATE_HALF, 4, 0, &rope),
               "posemb: n_inv_freq = 0: expected 1 .. 2^30 frequencies");
  EXPECT_ERROR(posemb_rope_create(inv_freq, 2, NAN, POSEMB_PAIRING_ROTATE_HALF, 4, 0, &rope),
               "posemb: attention_scale = nan: expected a finite number > 0");
  EXPECT_ERROR(posemb_rope_create(inv_freq, 2, 1.0, (posemb_pairing)5, 4, 0, &rope),
               "posemb: pairing = 5: expected POSEMB_PAIRING_INTERLEAVED (0) or "
               "POSEMB_PAIRING_ROTATE_HALF (1)");
  CHECK(posemb_rope_create(inv_freq, 2, 1.0, POSEMB_PAIRING_ROTATE_HALF, 4, 0, &rope) == POSEMB_OK,
        "rope_create: %s", posemb_last_error());
  double small[1];
  size_t n = 0;
  EXPECT_ERROR(posemb_rope_inv_freq(rope, small, 1, &n),
               "posemb: capacity = 1: expected >= rotary_dim / 2 = 2");

  float x[2 * 3 * 2 * 4] = {0}, out[2 * 3 * 2 * 4] = {0};
  posemb_shape shape = {POSEMB_LAYOUT_BSHD, 2, 3, 2, 4};
  const posemb_positions at = {0, NULL, 0};
  EXPECT_ERROR(posemb_rope_rotate_inplace(rope, POSEMB_F32, NULL, &shape, &at, POSEMB_FORWARD),
               "posemb: x = NULL: expected a pointer to the activation buffer");
  EXPECT_ERROR(posemb_rope_rotate_inplace(rope, POSEMB_F32, x, NULL, &at, POSEMB_FORWARD),
               "posemb: shape = NULL: expected a pointer to the buffer's posemb_shape");
  EXPECT_ERROR(posemb_rope_rotate_inplace(NULL, POSEMB_F32, x, &shape, &at, POSEMB_FORWARD),
               "posemb: rope = NULL: expected a posemb_rope");
  EXPECT_ERROR(posemb_rope_rotate_inplace(rope, POSEMB_F32, x, &shape, NULL, POSEMB_FORWARD),
               "posemb: positions = NULL: expected a pointer to a posemb_positions");
  EXPECT_ERROR(posemb_rope_rotate_inplace(rope, (posemb_dtype)7, x, &shape, &at, POSEMB_FORWARD),
               "posemb: dtype = 7: expected POSEMB_F32 (0), POSEMB_F16 (1) or POSEMB_BF16 (2)");
  EXPECT_ERROR(posemb_rope_rotate_inplace(rope, POSEMB_F32, x, &shape, &at, (posemb_rotation)9),
               "posemb: rotation = 9: expected POSEMB_FORWARD (0), POSEMB_INVERSE (1) or "
               "POSEMB_TRANSPOSE (2)");
  shape.layout = (posemb_layout)5;
  EXPECT_ERROR(
      posemb_rope_rotate_inplace(rope, POSEMB_F32, x, &shape, &at, POSEMB_FORWARD),
      "posemb: shape.layout = 5: expected POSEMB_LAYOUT_BSHD (0) or POSEMB_LAYOUT_BHSD (1)");
  shape.layout = POSEMB_LAYOUT_BSHD;
  shape.batch = 0;
  EXPECT_ERROR(posemb_rope_rotate_inplace(rope, POSEMB_F32, x, &shape, &at, POSEMB_FORWARD),
               "posemb: shape.batch = 0: expected a number >= 1");
  shape.batch = 2;
  shape.heads = -3;
  EXPECT_ERROR(posemb_rope_rotate_inplace(rope, POSEMB_F32, x, &shape, &at, POSEMB_FORWARD),
               "posemb: shape.heads = -3: expected a number >= 1");
  const posemb_shape huge = {POSEMB_LAYOUT_BSHD, INT64_C(1) << 40, INT64_C(1) << 40, 2, 4};
  EXPECT_ERROR(posemb_rope_rotate_inplace(rope, POSEMB_F32, x, &huge, &at, POSEMB_FORWARD),
               "posemb: shape (batch * seq * heads * head_dim) = 1099511627776 * 1099511627776: "
               "expected an element count that fits in int64");
  shape.heads = 2;
  const posemb_positions negative = {-1, NULL, 0};
  EXPECT_ERROR(posemb_rope_rotate_inplace(rope, POSEMB_F32, x, &shape, &negative, POSEMB_FORWARD),
               "posemb: positions.offset = -1: expected >= 0");
  const posemb_positions top = {INT64_MAX, NULL, 0};
  EXPECT_ERROR(posemb_rope_rotate_inplace(rope, POSEMB_F32, x, &shape, &top, POSEMB_FORWARD),
               "posemb: positions.offset = 9223372036854775807: expected offset + seq - 1 to fit "
               "in int64");
  const int64_t ids[6] = {0, 1, 2, 3, 4, 5};
  const posemb_positions three_rows = {0, ids, 3};
  EXPECT_ERROR(posemb_rope_rotate_inplace(rope, POSEMB_F32, x, &shape, &three_rows, POSEMB_FORWARD),
               "posemb: positions.rows = 3: expected 1 or batch = 2");
  const posemb_positions both = {4, ids, 1};
  EXPECT_ERROR(posemb_rope_rotate_inplace(rope, POSEMB_F32, x, &shape, &both, POSEMB_FORWARD),
               "posemb: positions.offset = 4: expected 0 when positions.ids is given");
  EXPECT_ERROR(
      posemb_rope_rotate(rope, POSEMB_F32, x, &shape, x + 4, &shape, 0, &at, POSEMB_FORWARD),
      "posemb: out = a buffer overlapping x: expected separate buffers (rotate in place "
      "with the _inplace function)");
  EXPECT_ERROR(
      posemb_rope_rotate(rope, POSEMB_F32, x, &shape, NULL, &shape, 0, &at, POSEMB_FORWARD),
      "posemb: out = NULL: expected a pointer to the output buffer");
  CHECK(posemb_rope_rotate(rope, POSEMB_F32, x, &shape, out, &shape, 0, &at, POSEMB_FORWARD) ==
            POSEMB_OK,
        "rotate: %s", posemb_last_error());

  posemb_mrope* mrope = NULL;
  EXPECT_ERROR(posemb_mrope_create(rope, NULL, POSEMB_MROPE_CHUNKED, &mrope),
               "posemb: sections = NULL: expected a pointer to 3 section sizes (t, h, w)");
  const int32_t sections[3] = {1, 1, 0};
  EXPECT_ERROR(
      posemb_mrope_create(rope, sections, (posemb_mrope_layout)2, &mrope),
      "posemb: layout = 2: expected POSEMB_MROPE_CHUNKED (0) or POSEMB_MROPE_INTERLEAVED (1)");
  CHECK(posemb_mrope_create(rope, sections, POSEMB_MROPE_CHUNKED, &mrope) == POSEMB_OK, "mrope: %s",
        posemb_last_error());
  EXPECT_ERROR(posemb_mrope_rotate_inplace(mrope, POSEMB_F32, x, &shape, NULL, 1, POSEMB_FORWARD),
               "posemb: position_ids = NULL: expected a pointer to [3, rows, seq] positions");
  int64_t thw[3 * 3 * 3] = {0};
  EXPECT_ERROR(posemb_mrope_rotate_inplace(mrope, POSEMB_F32, x, &shape, thw, 3, POSEMB_FORWARD),
               "posemb: rows = 3: expected 1 or batch = 2");
  posemb_mrope_free(mrope);
  posemb_rope_free(rope);

  double slopes[4] = {1, 1, 1, 1};
  const int64_t q[2] = {0, 1};
  float bias[8];
  EXPECT_ERROR(posemb_alibi_slopes(8, 8.0, slopes, 4),
               "posemb: capacity = 4: expected >= n_heads = 8");
  EXPECT_ERROR(posemb_alibi_bias(slopes, 4, q, 2, q, 2, POSEMB_ALIBI_CAUSAL, bias, 8),
               "posemb: capacity = 8: expected >= heads * q_len * k_len = 16");
  EXPECT_ERROR(posemb_alibi_bias(slopes, 0, q, 2, q, 2, POSEMB_ALIBI_CAUSAL, bias, 8),
               "posemb: heads = 0: expected a number >= 1");
  EXPECT_ERROR(posemb_alibi_bias(slopes, 2, NULL, 2, q, 2, POSEMB_ALIBI_CAUSAL, bias, 8),
               "posemb: q_positions = NULL: expected a pointer to positions");
  EXPECT_ERROR(posemb_alibi_bias(slopes, 2, q, 2, q, 0, POSEMB_ALIBI_CAUSAL, bias, 8),
               "posemb: k_len = 0: expected a number >= 1");
  EXPECT_ERROR(posemb_alibi_bias(slopes, 2, q, 2, q, 2, (posemb_alibi_form)3, bias, 8),
               "posemb: form = 3: expected POSEMB_ALIBI_CAUSAL (0) or POSEMB_ALIBI_SYMMETRIC (1)");
  EXPECT_ERROR(posemb_alibi_bias(slopes, SIZE_MAX, q, 2, q, 2, POSEMB_ALIBI_CAUSAL, bias, 8),
               "posemb: heads = 18446744073709551615: expected a count that fits in int64");
  int64_t buckets_out[4];
  EXPECT_ERROR(posemb_t5_buckets_of(NULL, q, 2, q, 2, buckets_out, 4),
               "posemb: buckets = NULL: expected a posemb_t5_buckets");
  const posemb_t5_buckets buckets = {32, 128, 1};
  EXPECT_ERROR(posemb_t5_bias(&buckets, NULL, 2, q, 2, q, 2, bias, 8),
               "posemb: table = NULL: expected a pointer to the [num_buckets, heads] table");
}

/* ---- the KV-cache append (kv_reference.txt) ---- */

/* Bytes of a cache buffer of the kv case (cases.h). */
static size_t kv_bytes(int layout, int dtype, int64_t head_dim) {
  const int64_t row = dtype == 0   ? 4 * head_dim
                      : dtype <= 2 ? 2 * head_dim
                      : dtype == 3 ? head_dim
                                   : head_dim / 32 * 34;
  const int64_t slots =
      layout == 2 ? POSEMB_CASE_KV_PAGED_SLOTS : POSEMB_CASE_BATCH * POSEMB_CASE_KV_MAX_SEQ;
  return (size_t)(slots * POSEMB_CASE_HEADS * row);
}

static void add_bytes(text* t, const unsigned char* bytes, size_t n) {
  text_add(t, " %zu ", n);
  for (size_t i = 0; i < n; ++i) text_add(t, "%02x", (unsigned)bytes[i]);
}

static unsigned char* filled(size_t n) {
  unsigned char* p = malloc(n);
  if (!p) abort();
  memset(p, 0xA5, n);
  return p;
}

static void check_kv(text* t) {
  posemb_rope* rope = NULL;
  posemb_rope_table* table = NULL;
  posemb_rope_create_default(POSEMB_CASE_KV_DIM, POSEMB_CASE_KV_DIM, 10000.0,
                             POSEMB_PAIRING_ROTATE_HALF, &rope);
  posemb_rope_table_create(rope, 0, POSEMB_CASE_TABLE_COUNT, &table);
  const size_t tokens = POSEMB_CASE_BATCH * POSEMB_CASE_SEQ * POSEMB_CASE_HEADS;
  float* keys = case_input(0, tokens * POSEMB_CASE_KV_DIM);
  float* values = malloc(tokens * POSEMB_CASE_KV_VDIM * sizeof(float));
  if (!values) abort();
  for (size_t i = 0; i < tokens * POSEMB_CASE_KV_VDIM; ++i) {
    const uint32_t bits = posemb_case_input_bits(0, (uint32_t)(4096 + i));
    memcpy(values + i, &bits, 4);
  }
  const posemb_kv_shape shape = {POSEMB_CASE_BATCH, POSEMB_CASE_SEQ, POSEMB_CASE_HEADS,
                                 POSEMB_CASE_KV_DIM, POSEMB_CASE_KV_VDIM};
  const posemb_positions at_ids = {0, posemb_case_ids, POSEMB_CASE_BATCH};
  const posemb_positions at5 = {5, NULL, 0};
  int source, layout, dtype, threads, cases = 0;
  while (sscanf(peek(), "kv %d %d %d %d", &source, &layout, &dtype, &threads) == 4) {
    const size_t kb = kv_bytes(layout, dtype, POSEMB_CASE_KV_DIM);
    const size_t vb = kv_bytes(layout, dtype, POSEMB_CASE_KV_VDIM);
    unsigned char *kc = filled(kb), *vc = filled(vb);
    const posemb_kv_cache cache = {(posemb_cache_layout)layout,
                                   layout == 2 ? POSEMB_CASE_KV_PAGED_SLOTS
                                               : POSEMB_CASE_KV_MAX_SEQ,
                                   layout == 2 ? POSEMB_CASE_KV_BLOCK : 0,
                                   {kc, kb, (posemb_cache_dtype)dtype, 0.37f},
                                   {vc, vb, (posemb_cache_dtype)dtype, 1.9f}};
    const int64_t* slots = posemb_case_kv_slots[layout == 2 ? 1 : 0];
    const posemb_status status =
        source == 0 ? posemb_rope_append_rotated(rope, keys, values, &shape, &at_ids, slots, &cache,
                                                 threads)
                    : posemb_rope_table_append_rotated(table, keys, values, &shape, &at5, slots,
                                                       &cache, threads);
    CHECK(status == POSEMB_OK, "kv %d %d %d %d: %s", source, layout, dtype, threads,
          posemb_last_error());
    text_clear(t);
    text_add(t, "kv %d %d %d %d", source, layout, dtype, threads);
    add_bytes(t, kc, kb);
    add_bytes(t, vc, vb);
    expect_line("kv", t);
    free(kc);
    free(vc);
    ++cases;
  }
  CHECK(cases == 2 * 3 * 5 * 2, "%d kv cases", cases);
  free(keys);
  free(values);
  posemb_rope_table_free(table);
  posemb_rope_free(rope);
}

/* Every byte of the caches still 0xA5 (a refused call writes nothing). */
static int untouched(const unsigned char* bytes, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (bytes[i] != 0xA5) return 0;
  }
  return 1;
}

#define KV_BYTES 4096
#define EXPECT_KV_ERROR(call, message)                                                      \
  do {                                                                                      \
    expect_error(#call, call, POSEMB_ERROR_INVALID_ARGUMENT, message);                      \
    CHECK(untouched(kc, KV_BYTES) && untouched(vc, KV_BYTES), "%s wrote the cache", #call); \
  } while (0)

/* The C++ failures (kvcxxerror records, in order), then the C argument checks. */
static void check_kv_errors(void) {
  static unsigned char kc[KV_BYTES], vc[KV_BYTES];
  memset(kc, 0xA5, KV_BYTES);
  memset(vc, 0xA5, KV_BYTES);
  static float k[256], v[256];
  for (int i = 0; i < 256; ++i) k[i] = v[i] = 0.5f;
  posemb_rope* rope = NULL;
  posemb_rope_table* table = NULL;
  posemb_rope_create_default(64, 64, 10000.0, POSEMB_PAIRING_ROTATE_HALF, &rope);
  posemb_rope_table_create(rope, 0, 64, &table);
  posemb_kv_shape shape = {1, 2, 1, 64, 32};
  const posemb_positions at = {0, NULL, 0};
  const int64_t ok[2] = {0, 1}, past[2] = {0, 8}, twice[2] = {3, 3};
  const posemb_kv_cache good = {POSEMB_CACHE_BSHD,
                                8,
                                0,
                                {kc, KV_BYTES, POSEMB_CACHE_F32, 1.0f},
                                {vc, KV_BYTES, POSEMB_CACHE_F32, 1.0f}};
  posemb_kv_cache c = good;
#define APPEND(cache, slots) posemb_rope_append_rotated(rope, k, v, &shape, &at, slots, &cache, 1)
  EXPECT_KV_ERROR(APPEND(c, past), cxx_message("kv_slot_range"));
  EXPECT_KV_ERROR(APPEND(c, twice), cxx_message("kv_slot_twice"));
  c.layout = POSEMB_CACHE_PAGED;
  c.slots = 16;
  c.block_size = 5;
  EXPECT_KV_ERROR(APPEND(c, ok), cxx_message("kv_block_size"));
  c = good;
  c.keys.dtype = c.values.dtype = POSEMB_CACHE_FP8_E4M3;
  c.keys.scale = c.values.scale = 0.0f;
  EXPECT_KV_ERROR(APPEND(c, ok), cxx_message("kv_fp8_scale"));
  c.keys.scale = c.values.scale = NAN;
  EXPECT_KV_ERROR(APPEND(c, ok), cxx_message("kv_fp8_scale_nan"));
  c = good;
  c.keys.dtype = c.values.dtype = POSEMB_CACHE_Q8_0;
  shape.v_head_dim = 48;
  EXPECT_KV_ERROR(APPEND(c, ok), cxx_message("kv_q8_head_dim"));
  shape.v_head_dim = 32;
  c = good;
  c.values.data = kc + 64;
  c.values.bytes = KV_BYTES - 64;
  EXPECT_KV_ERROR(APPEND(c, ok), cxx_message("kv_overlap"));
  c = good;
  shape.head_dim = 32;
  EXPECT_KV_ERROR(APPEND(c, ok), cxx_message("kv_head_dim"));
  shape.head_dim = 64;

  EXPECT_KV_ERROR(posemb_rope_append_rotated(NULL, k, v, &shape, &at, ok, &good, 1),
                  "posemb: rope = NULL: expected a posemb_rope");
  EXPECT_KV_ERROR(posemb_rope_table_append_rotated(NULL, k, v, &shape, &at, ok, &good, 1),
                  "posemb: table = NULL: expected a posemb_rope_table");
  EXPECT_KV_ERROR(
      posemb_rope_append_rotated(rope, NULL, v, &shape, &at, ok, &good, 1),
      "posemb: keys = NULL: expected a pointer to the keys [batch, seq, kv_heads, head_dim]");
  EXPECT_KV_ERROR(
      posemb_rope_append_rotated(rope, k, NULL, &shape, &at, ok, &good, 1),
      "posemb: values = NULL: expected a pointer to the values [batch, seq, kv_heads, v_head_dim]");
  EXPECT_KV_ERROR(posemb_rope_append_rotated(rope, k, v, NULL, &at, ok, &good, 1),
                  "posemb: shape = NULL: expected a pointer to a posemb_kv_shape");
  EXPECT_KV_ERROR(posemb_rope_append_rotated(rope, k, v, &shape, &at, NULL, &good, 1),
                  "posemb: slots = NULL: expected a pointer to the slots [batch, seq]");
  EXPECT_KV_ERROR(posemb_rope_append_rotated(rope, k, v, &shape, NULL, ok, &good, 1),
                  "posemb: positions = NULL: expected a pointer to a posemb_positions");
  EXPECT_KV_ERROR(posemb_rope_append_rotated(rope, k, v, &shape, &at, ok, NULL, 1),
                  "posemb: cache = NULL: expected a pointer to a posemb_kv_cache");
  EXPECT_KV_ERROR(posemb_rope_table_append_rotated(table, k, v, &shape, &at, ok, &good, 0),
                  "posemb: threads = 0: expected a number >= 1");
  shape.kv_heads = 0;
  EXPECT_KV_ERROR(APPEND(good, ok), "posemb: shape.kv_heads = 0: expected a number >= 1");
  shape.kv_heads = 1;
  const posemb_kv_shape huge = {INT64_C(1) << 40, INT64_C(1) << 40, 1, 64, 32};
  EXPECT_KV_ERROR(posemb_rope_append_rotated(rope, k, v, &huge, &at, ok, &good, 1),
                  "posemb: shape (batch * seq * kv_heads * head_dim) = 1099511627776 * "
                  "1099511627776: expected an element count that fits in int64");
  c = good;
  c.keys.data = NULL;
  EXPECT_KV_ERROR(APPEND(c, ok),
                  "posemb: cache.keys.data = NULL: expected a pointer to the cache buffer");
  c = good;
  c.values.dtype = (posemb_cache_dtype)9;
  EXPECT_KV_ERROR(APPEND(c, ok),
                  "posemb: cache.values.dtype = 9: expected POSEMB_CACHE_F32 (0), "
                  "POSEMB_CACHE_F16 (1), POSEMB_CACHE_BF16 (2), POSEMB_CACHE_FP8_E4M3 (3) or "
                  "POSEMB_CACHE_Q8_0 (4)");
  c = good;
  c.layout = (posemb_cache_layout)7;
  EXPECT_KV_ERROR(APPEND(c, ok),
                  "posemb: cache.layout = 7: expected POSEMB_CACHE_BHSD (0), POSEMB_CACHE_BSHD "
                  "(1) or POSEMB_CACHE_PAGED (2)");
  c = good;
  c.block_size = 4;
  EXPECT_KV_ERROR(APPEND(c, ok),
                  "posemb: cache.block_size = 4: expected 0 for a contiguous cache "
                  "(POSEMB_CACHE_PAGED only)");
  c = good;
  c.slots = 0;
  EXPECT_KV_ERROR(APPEND(c, ok), "posemb: cache.slots = 0: expected a number >= 1");
  c = good;
  c.keys.bytes = 100;
  EXPECT_KV_ERROR(APPEND(c, ok),
                  "posemb: cache.keys.bytes = 100: expected >= 2048 (the cache's geometry)");
#undef APPEND
  CHECK(posemb_rope_append_rotated(rope, k, v, &shape, &at, ok, &good, 1) == POSEMB_OK,
        "kv append: %s", posemb_last_error());
  CHECK(!untouched(kc, 2 * 256), "the good call wrote nothing");
  posemb_rope_table_free(table);
  posemb_rope_free(rope);
}

/* POSEMB_TRANSPOSE is the backward: <w, R x> = <R^T w, x> for random x, w, and with an attention
 * scale m it is m^2 times the inverse (m R^T against R^T / m). */
static void check_transpose(void) {
  enum { S = 5, H = 2, D = 16, N = S * H * D };
  float x[N], w[N], rx[N], tw[N], inv[N];
  for (int i = 0; i < N; ++i) {
    x[i] = (float)((i * 37 % 23) - 11) / 7.0f;
    w[i] = (float)((i * 53 % 19) - 9) / 5.0f;
  }
  double inv_freq[D / 2];
  for (int i = 0; i < D / 2; ++i) inv_freq[i] = 1.0 / (1 + 3 * i); /* any frequencies serve */
  posemb_rope* rope = NULL;
  CHECK(posemb_rope_create(inv_freq, D / 2, 1.5, POSEMB_PAIRING_ROTATE_HALF, D, 0, &rope) ==
            POSEMB_OK,
        "%s", posemb_last_error());
  const posemb_shape shape = {POSEMB_LAYOUT_BSHD, 1, S, H, D};
  const posemb_positions at = {300, NULL, 0};
  memcpy(rx, x, sizeof x);
  memcpy(tw, w, sizeof w);
  memcpy(inv, w, sizeof w);
  CHECK(posemb_rope_rotate_inplace(rope, POSEMB_F32, rx, &shape, &at, POSEMB_FORWARD) == POSEMB_OK,
        "%s", posemb_last_error());
  CHECK(posemb_rope_rotate_inplace(rope, POSEMB_F32, tw, &shape, &at, POSEMB_TRANSPOSE) ==
            POSEMB_OK,
        "%s", posemb_last_error());
  CHECK(posemb_rope_rotate_inplace(rope, POSEMB_F32, inv, &shape, &at, POSEMB_INVERSE) == POSEMB_OK,
        "%s", posemb_last_error());
  double forward = 0.0, backward = 0.0, worst = 0.0;
  for (int i = 0; i < N; ++i) {
    forward += (double)w[i] * rx[i];
    backward += (double)tw[i] * x[i];
    const double gap = tw[i] - 2.25 * inv[i];
    if (gap > worst || -gap > worst) worst = gap > 0 ? gap : -gap;
  }
  const double mismatch = forward - backward, size = forward > 0 ? forward : -forward;
  CHECK(mismatch <= 1e-4 * size && -mismatch <= 1e-4 * size, "<w, Rx> = %g, <R^T w, x> = %g",
        forward, backward);
  CHECK(worst <= 1e-5, "transpose - m^2 inverse: %g", worst);
  posemb_rope_free(rope);
}

/* ---- gradients (ABI 1.4) ---- */

static void add_doubles(text* t, const double* values, size_t n) {
  text_add(t, " %zu", n);
  for (size_t i = 0; i < n; ++i) text_add(t, " %" PRIx64, bits64(values[i]));
}

static float float_of_bits(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

/* FoPE config c of cases.h. */
static posemb_fope_config fope_case_config(int c) {
  const posemb_fope_config config = {POSEMB_CASE_FOPE_DIM,
                                     POSEMB_CASE_FOPE_HEADS,
                                     POSEMB_CASE_FOPE_KV_HEADS,
                                     10000.0,
                                     512,
                                     1.0,
                                     1,
                                     c == 0 ? 4 : 0,
                                     1.0,
                                     c == 0 ? 0 : 3};
  return config;
}

/* The FoPE of config c with the case's coefficients; *count: elements of each array. */
static posemb_fope* fope_case(int c, size_t* count) {
  const posemb_fope_config config = fope_case_config(c);
  int32_t d_in = 0, d_out = 0;
  CHECK(posemb_fope_dims(&config, &d_in, &d_out) == POSEMB_OK, "fope dims: %s",
        posemb_last_error());
  *count = (size_t)(POSEMB_CASE_FOPE_KV_HEADS * d_in * d_out);
  float* sin_coef = malloc(*count * sizeof(float));
  float* cos_coef = malloc(*count * sizeof(float));
  for (size_t i = 0; i < *count; ++i) {
    sin_coef[i] = float_of_bits(posemb_case_input_bits(0, (uint32_t)i));
    cos_coef[i] = float_of_bits(posemb_case_input_bits(0, (uint32_t)(64 + i)));
  }
  posemb_fope* fope = NULL;
  CHECK(posemb_fope_create(&config, sin_coef, cos_coef, *count, &fope) == POSEMB_OK,
        "fope create: %s", posemb_last_error());
  free(sin_coef);
  free(cos_coef);
  return fope;
}

enum {
  FOPE_N = POSEMB_CASE_BATCH * POSEMB_CASE_SEQ * POSEMB_CASE_FOPE_HEADS * POSEMB_CASE_FOPE_DIM
};
static const posemb_shape fope_shape = {POSEMB_LAYOUT_BSHD, POSEMB_CASE_BATCH, POSEMB_CASE_SEQ,
                                        POSEMB_CASE_FOPE_HEADS, POSEMB_CASE_FOPE_DIM};

static void check_fope_case(int c, int dtype, text* t) {
  size_t count = 0;
  posemb_fope* fope = fope_case(c, &count);
  const size_t width = dtype == 0 ? 4 : 2;
  char* x = case_input(dtype, FOPE_N);
  char* grad = calloc(FOPE_N, width);
  for (size_t i = 0; i < FOPE_N; ++i) {
    const uint32_t bits = posemb_case_input_bits(dtype, (uint32_t)(4096 + i));
    if (dtype == 0) {
      memcpy(grad + 4 * i, &bits, 4);
    } else {
      const uint16_t half = (uint16_t)bits;
      memcpy(grad + 2 * i, &half, 2);
    }
  }
  const posemb_positions at = {0, posemb_case_ids, 2};
  double* d_sin = malloc(count * sizeof(double));
  double* d_cos = malloc(count * sizeof(double));
  CHECK(posemb_fope_coefficient_gradients(fope, (posemb_dtype)dtype, x, grad, &fope_shape, &at,
                                          d_sin, d_cos, count) == POSEMB_OK,
        "fope gradients: %s", posemb_last_error());
  CHECK(posemb_fope_rotate_inplace(fope, (posemb_dtype)dtype, x, &fope_shape, &at,
                                   POSEMB_FORWARD) == POSEMB_OK,
        "fope forward: %s", posemb_last_error());
  CHECK(posemb_fope_rotate_inplace(fope, (posemb_dtype)dtype, grad, &fope_shape, &at,
                                   POSEMB_TRANSPOSE) == POSEMB_OK,
        "fope transpose: %s", posemb_last_error());
  const char* parts[4] = {"rot", "tr", "dsin", "dcos"};
  for (int part = 0; part < 4; ++part) {
    text_clear(t);
    text_add(t, "fope %d %d %s", c, dtype, parts[part]);
    if (part < 2) add_values(t, dtype, part == 0 ? x : grad, FOPE_N);
    if (part >= 2) add_doubles(t, part == 2 ? d_sin : d_cos, count);
    expect_line("fope", t);
  }
  free(x);
  free(grad);
  free(d_sin);
  free(d_cos);
  posemb_fope_free(fope);
}

static void check_table_gradients(text* t) {
  enum { N = POSEMB_CASE_BATCH * POSEMB_CASE_SEQ * POSEMB_CASE_TABLE_D };
  enum { TABLE = POSEMB_CASE_TABLE_LEN * POSEMB_CASE_TABLE_D };
  float* g = case_input(0, N);
  double table[TABLE];
  for (int c = 0; c < 2; ++c) {
    const posemb_positions at =
        c == 0 ? (posemb_positions){0, posemb_case_table_ids, 2} : (posemb_positions){2, NULL, 0};
    CHECK(posemb_position_table_gradient(POSEMB_F32, g, POSEMB_CASE_BATCH, POSEMB_CASE_SEQ,
                                         POSEMB_CASE_TABLE_D, &at, POSEMB_CASE_TABLE_LEN, table,
                                         TABLE) == POSEMB_OK,
          "table gradient: %s", posemb_last_error());
    text_clear(t);
    text_add(t, "tablegrad %d", c);
    add_doubles(t, table, TABLE);
    expect_line("tablegrad", t);
  }
  free(g);
  int64_t k[POSEMB_CASE_T5_KEYS];
  for (int j = 0; j < POSEMB_CASE_T5_KEYS; ++j) k[j] = 7 * j;
  float* bias = case_input(0, POSEMB_CASE_T5_HEADS * 3 * POSEMB_CASE_T5_KEYS);
  double d_table[32 * POSEMB_CASE_T5_HEADS];
  for (int bidirectional = 1; bidirectional >= 0; --bidirectional) {
    const posemb_t5_buckets buckets = {32, 128, bidirectional};
    CHECK(posemb_t5_table_gradient(&buckets, bias, POSEMB_CASE_T5_HEADS, posemb_case_t5_q, 3, k,
                                   POSEMB_CASE_T5_KEYS, d_table,
                                   32 * POSEMB_CASE_T5_HEADS) == POSEMB_OK,
          "t5 gradient: %s", posemb_last_error());
    text_clear(t);
    text_add(t, "t5grad %d", bidirectional);
    add_doubles(t, d_table, 32 * POSEMB_CASE_T5_HEADS);
    expect_line("t5grad", t);
  }
  free(bias);
}

/* L(A) = <w, fope_A(x)> at float32 and bfloat16-free values: sum in double. */
static double fope_loss(const posemb_fope_config* config, const float* sin_coef,
                        const float* cos_coef, size_t count, const float* x, const float* w) {
  posemb_fope* fope = NULL;
  float y[FOPE_N];
  memcpy(y, x, sizeof y);
  const posemb_positions at = {0, posemb_case_ids, 2};
  CHECK(posemb_fope_create(config, sin_coef, cos_coef, count, &fope) == POSEMB_OK &&
            posemb_fope_rotate_inplace(fope, POSEMB_F32, y, &fope_shape, &at, POSEMB_FORWARD) ==
                POSEMB_OK,
        "fope loss: %s", posemb_last_error());
  posemb_fope_free(fope);
  double loss = 0.0;
  for (int i = 0; i < FOPE_N; ++i) loss += (double)w[i] * y[i];
  return loss;
}

/* Finite differences: y is linear in the coefficients and in x, so the central difference
 * (L(A + h D) - L(A - h D)) / 2h equals <dL/dA, D> up to float32 rounding, and <w, F x> equals
 * <F^T w, x>; the T5 bias copies table entries, so <w, bias(T + h D)> - <w, bias(T - h D)> =
 * 2h <dL/dT, D>; a learned table's gradient sums to the sum of dL/dy over the tokens. */
static void check_gradient_properties(void) {
  const posemb_fope_config config = fope_case_config(0);
  int32_t d_in = 0, d_out = 0;
  posemb_fope_dims(&config, &d_in, &d_out);
  enum { MAX_COEF = 2 * 8 * 8 };
  const size_t count = (size_t)(POSEMB_CASE_FOPE_KV_HEADS * d_in * d_out);
  float sin_coef[MAX_COEF], cos_coef[MAX_COEF], plus[MAX_COEF], minus[MAX_COEF], dir[MAX_COEF];
  float x[FOPE_N], w[FOPE_N], tw[FOPE_N], fx[FOPE_N];
  for (int i = 0; i < FOPE_N; ++i) {
    x[i] = (float)((i * 37 % 23) - 11) / 7.0f;
    w[i] = (float)((i * 53 % 19) - 9) / 5.0f;
  }
  for (size_t i = 0; i < count; ++i) {
    sin_coef[i] = (float)((int)(i * 29 % 17) - 8) / 8.0f;
    cos_coef[i] = (float)((int)(i * 31 % 13) - 6) / 6.0f;
    dir[i] = (float)((int)(i * 7 % 5) - 2) / 4.0f;
  }
  posemb_fope* fope = NULL;
  CHECK(posemb_fope_create(&config, sin_coef, cos_coef, count, &fope) == POSEMB_OK, "%s",
        posemb_last_error());
  const posemb_positions at = {0, posemb_case_ids, 2};
  double d_sin[MAX_COEF], d_cos[MAX_COEF];
  CHECK(posemb_fope_coefficient_gradients(fope, POSEMB_F32, x, w, &fope_shape, &at, d_sin, d_cos,
                                          MAX_COEF) == POSEMB_OK,
        "%s", posemb_last_error());
  for (int which = 0; which < 2; ++which) {
    const float* base = which == 0 ? sin_coef : cos_coef;
    for (size_t i = 0; i < count; ++i) {
      plus[i] = base[i] + 0.5f * dir[i];
      minus[i] = base[i] - 0.5f * dir[i];
    }
    const double up = which == 0 ? fope_loss(&config, plus, cos_coef, count, x, w)
                                 : fope_loss(&config, sin_coef, plus, count, x, w);
    const double down = which == 0 ? fope_loss(&config, minus, cos_coef, count, x, w)
                                   : fope_loss(&config, sin_coef, minus, count, x, w);
    double analytic = 0.0, scale = 0.0;
    for (size_t i = 0; i < count; ++i) {
      const double term = (which == 0 ? d_sin[i] : d_cos[i]) * dir[i];
      analytic += term;
      scale += term > 0 ? term : -term;
    }
    const double gap = (up - down) - analytic;
    CHECK(gap <= 1e-5 * scale && -gap <= 1e-5 * scale,
          "FoPE %s: central difference %.9g, <dL/dA, D> %.9g", which == 0 ? "A_sin" : "A_cos",
          up - down, analytic);
  }
  memcpy(fx, x, sizeof fx);
  memcpy(tw, w, sizeof tw);
  CHECK(posemb_fope_rotate_inplace(fope, POSEMB_F32, fx, &fope_shape, &at, POSEMB_FORWARD) ==
                POSEMB_OK &&
            posemb_fope_rotate_inplace(fope, POSEMB_F32, tw, &fope_shape, &at, POSEMB_TRANSPOSE) ==
                POSEMB_OK,
        "%s", posemb_last_error());
  double forward = 0.0, backward = 0.0, size = 0.0;
  for (int i = 0; i < FOPE_N; ++i) {
    forward += (double)w[i] * fx[i];
    backward += (double)tw[i] * x[i];
    size += fabs((double)w[i] * fx[i]);
  }
  CHECK(fabs(forward - backward) <= 1e-5 * size, "FoPE <w, F x> = %.9g, <F^T w, x> = %.9g", forward,
        backward);
  posemb_fope_free(fope);

  enum { H = POSEMB_CASE_T5_HEADS, K = POSEMB_CASE_T5_KEYS, BIAS = H * 3 * K };
  const posemb_t5_buckets buckets = {32, 128, 0};
  int64_t k[K];
  for (int j = 0; j < K; ++j) k[j] = 7 * j;
  float table[32 * H], up_table[32 * H], down_table[32 * H], bias[BIAS], weight[BIAS];
  double d_table[32 * H];
  for (int i = 0; i < 32 * H; ++i) {
    table[i] = (float)((i * 11 % 7) - 3) / 4.0f;
    up_table[i] = table[i] + (float)((i % 3) - 1) * 0.5f;
    down_table[i] = table[i] - (float)((i % 3) - 1) * 0.5f;
  }
  for (int i = 0; i < BIAS; ++i) weight[i] = (float)((i * 13 % 11) - 5) / 8.0f;
  CHECK(posemb_t5_table_gradient(&buckets, weight, H, posemb_case_t5_q, 3, k, K, d_table, 32 * H) ==
            POSEMB_OK,
        "%s", posemb_last_error());
  double l_up = 0.0, l_down = 0.0, analytic = 0.0;
  posemb_t5_bias(&buckets, up_table, H, posemb_case_t5_q, 3, k, K, bias, BIAS);
  for (int i = 0; i < BIAS; ++i) l_up += (double)weight[i] * bias[i];
  posemb_t5_bias(&buckets, down_table, H, posemb_case_t5_q, 3, k, K, bias, BIAS);
  for (int i = 0; i < BIAS; ++i) l_down += (double)weight[i] * bias[i];
  for (int i = 0; i < 32 * H; ++i) analytic += d_table[i] * (double)(up_table[i] - down_table[i]);
  CHECK(fabs((l_up - l_down) - analytic) <= 1e-12 * (fabs(analytic) + 1.0),
        "T5 table: difference %.17g, <dL/dT, D> %.17g", l_up - l_down, analytic);

  enum { TN = POSEMB_CASE_BATCH * POSEMB_CASE_SEQ * POSEMB_CASE_TABLE_D };
  float g[TN];
  double d_wpe[POSEMB_CASE_TABLE_LEN * POSEMB_CASE_TABLE_D];
  for (int i = 0; i < TN; ++i) g[i] = (float)((i * 5 % 9) - 4) / 3.0f;
  const posemb_positions ids = {0, posemb_case_table_ids, 2};
  CHECK(posemb_position_table_gradient(POSEMB_F32, g, POSEMB_CASE_BATCH, POSEMB_CASE_SEQ,
                                       POSEMB_CASE_TABLE_D, &ids, POSEMB_CASE_TABLE_LEN, d_wpe,
                                       POSEMB_CASE_TABLE_LEN * POSEMB_CASE_TABLE_D) == POSEMB_OK,
        "%s", posemb_last_error());
  for (int c = 0; c < POSEMB_CASE_TABLE_D; ++c) {
    double tokens = 0.0, rows = 0.0;
    for (int i = 0; i < POSEMB_CASE_BATCH * POSEMB_CASE_SEQ; ++i)
      tokens += g[i * POSEMB_CASE_TABLE_D + c];
    for (int r = 0; r < POSEMB_CASE_TABLE_LEN; ++r) rows += d_wpe[r * POSEMB_CASE_TABLE_D + c];
    CHECK(fabs(tokens - rows) <= 1e-12, "table column %d: rows sum %.17g, tokens %.17g", c, rows,
          tokens);
  }
  for (int c = 0; c < POSEMB_CASE_TABLE_D; ++c) { /* no token at positions 2, 3, 4, 6 */
    CHECK(d_wpe[2 * POSEMB_CASE_TABLE_D + c] == 0.0 && d_wpe[6 * POSEMB_CASE_TABLE_D + c] == 0.0,
          "table rows without tokens");
  }
}

static void check_gradient_errors(void) {
  posemb_fope_config config = fope_case_config(0);
  float coef[32] = {0};
  posemb_fope* fope = NULL;
  expect_error("fope count", posemb_fope_create(&config, coef, coef, 31, &fope),
               POSEMB_ERROR_INVALID_ARGUMENT,
               "posemb: count = 31: expected n_kv_heads * D_in * D_out = 32");
  CHECK(fope == NULL, "out written on failure");
  config.num_inv_freq = 9;
  expect_error("fope num_inv_freq", posemb_fope_create(&config, coef, coef, 32, &fope),
               POSEMB_ERROR_INVALID_ARGUMENT,
               "posemb: num_inv_freq = 9: expected 0 (the clip floor chooses) or 1 .. head_dim / 2 "
               "= 8");
  config = fope_case_config(0);
  CHECK(posemb_fope_create(&config, coef, coef, 32, &fope) == POSEMB_OK, "%s", posemb_last_error());
  float x[FOPE_N] = {0};
  double d[32];
  const posemb_positions at = {0, NULL, 0};
  expect_error(
      "fope capacity",
      posemb_fope_coefficient_gradients(fope, POSEMB_F32, x, x, &fope_shape, &at, d, d, 31),
      POSEMB_ERROR_INVALID_ARGUMENT,
      "posemb: capacity = 31: expected >= n_kv_heads * D_in * D_out = 32");
  posemb_shape wrong = fope_shape;
  wrong.heads = 3;
  expect_error("fope heads",
               posemb_fope_rotate_inplace(fope, POSEMB_F32, x, &wrong, &at, POSEMB_TRANSPOSE),
               POSEMB_ERROR_INVALID_ARGUMENT,
               "posemb: heads = 3: expected n_heads = 4 (queries) or n_kv_heads = 2 (keys)");
  posemb_fope_free(fope);
  double table[64];
  const posemb_positions far = {0, posemb_case_ids, 2};
  expect_error("table position",
               posemb_position_table_gradient(POSEMB_F32, x, 2, 3, 8, &far, 8, table, 64),
               POSEMB_ERROR_INVALID_ARGUMENT,
               "posemb: position = 131071: outside the position table's range [0, 8)");
  expect_error(
      "table capacity", posemb_position_table_gradient(POSEMB_F32, x, 2, 3, 8, &at, 8, table, 63),
      POSEMB_ERROR_INVALID_ARGUMENT, "posemb: capacity = 63: expected >= max_len * d = 64");
  const posemb_t5_buckets buckets = {32, 128, 1};
  const int64_t q[1] = {0};
  expect_error("t5 capacity", posemb_t5_table_gradient(&buckets, x, 2, q, 1, q, 1, table, 63),
               POSEMB_ERROR_INVALID_ARGUMENT,
               "posemb: capacity = 63: expected >= num_buckets * heads = 64");
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr,
            "usage: posemb_c_test REFERENCE.txt DATA_DIR KV_REFERENCE.txt GRAD_REFERENCE.txt\n");
    return 2;
  }
  CHECK(posemb_last_error()[0] == '\0', "a message before any failure");
  CHECK(posemb_abi_version() == ((uint32_t)POSEMB_C_ABI_MAJOR << 16 | POSEMB_C_ABI_MINOR),
        "ABI version %" PRIx32, posemb_abi_version());
  read_lines(argv[1]);
  text t = {NULL, 0, 0};
  int cases = 0;
  while (starts(peek(), "case")) cases += check_case(argv[2], &t);
  check_mrope(&t);
  check_biases(&t);
  check_cxx_errors(argv[2]);
  CHECK(next_line == n_lines, "%zu reference lines not checked", n_lines - next_line);
  check_argument_errors();
  check_temperature_form();
  check_transpose();
  size_t case_records = 0;
  for (size_t i = 0; i < n_lines; ++i) case_records += starts(lines[i], "case");
  CHECK(cases > 0 && (size_t)cases == case_records, "%d of %zu cases run", cases, case_records);
  const size_t reference_records = n_lines;
  free(lines[0]);
  free(lines);
  read_lines(argv[3]);
  check_kv(&t);
  check_kv_errors();
  CHECK(next_line == n_lines, "%zu kv reference lines not checked", n_lines - next_line);
  const size_t kv_records = n_lines;
  free(lines[0]);
  free(lines);
  read_lines(argv[4]);
  for (int c = 0; c < 2; ++c) {
    check_fope_case(c, 0, &t);
    check_fope_case(c, 2, &t);
  }
  check_table_gradients(&t);
  CHECK(next_line == n_lines, "%zu grad reference lines not checked", n_lines - next_line);
  check_gradient_properties();
  check_gradient_errors();
  printf("posemb C API: %d cases, %zu reference records, %d checks, %d failures (posemb %s)\n",
         cases, reference_records + kv_records + n_lines, checks, failures,
         posemb_version_string());
  free(t.data);
  free(lines[0]);
  free(lines);
  return failures == 0 ? 0 : 1;
}

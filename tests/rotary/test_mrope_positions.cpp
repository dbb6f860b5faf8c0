// Tests for posemb/rotary/mrope_positions.hpp: the mrope-index conformance cases and the positions
// of every apply case (tests/data/multimodal), the README's worked examples, decode continuing from
// the prefill's delta, text only = 1-D positions, and the segment parser's errors.
#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "posemb/rotary/mrope.hpp"
#include "posemb/rotary/mrope_positions.hpp"
#include "posemb/io/npy.hpp"
#include "support.hpp"

using posemb::MropeFamily;
using posemb::MropeIndexRules;
using posemb::MropeSegment;
using posemb::PositionMatrix;
using test_support::throws_with;

namespace {

const std::string multimodal_data = std::string(POSEMB_TEST_DATA_DIR) + "/multimodal/";

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

// Row `row` ([seq]) of an int64 P.npy of shape [3, seq] or [3, batch, seq], as [3, seq].
PositionMatrix expected_positions(const std::string& case_name, std::int64_t row = 0) {
  const auto p = posemb::read_npy(multimodal_data + case_name + "/P.npy");
  const auto values = p.values<std::int64_t>();
  REQUIRE(p.shape.front() == 3);
  const std::int64_t seq = p.shape.back();
  const std::int64_t rows = p.shape.size() == 3 ? p.shape[1] : 1;
  PositionMatrix out(3, seq);
  for (int a = 0; a < 3; ++a)
    for (std::int64_t s = 0; s < seq; ++s)
      out(a, s) = values[std::size_t((a * rows + row) * seq + s)];
  return out;
}

// The temporal row of a lone video after text:1 (so p = 1), minus 1: tau(0 .. T-1).
std::vector<std::int64_t> taus(const MropeIndexRules& rules, std::int64_t t, double seconds) {
  const auto index = posemb::mrope_position_ids(
      {MropeSegment::text(1), MropeSegment::video(t, 2, 2, seconds)}, rules);
  std::vector<std::int64_t> out;
  for (Eigen::Index n = 1; n < index.seq_len(); ++n) out.push_back(index.positions(0, n) - 1);
  return out;
}

}  // namespace

TEST_CASE("conformance: the mrope-index cases, positions exact, seq_len and rope_delta") {
  struct Case {
    const char* name;
    MropeIndexRules rules;
  };
  // Family from model_type; merge size and tokens_per_second from vision_config.
  const Case cases[] = {
      {"mrope_index_qwen2vl_image", {MropeFamily::Qwen2VL, 2, 4.0}},
      {"mrope_index_qwen25vl_video_fractional", {MropeFamily::Qwen25VL, 2, 1.0}},
      {"mrope_index_qwen3vl_video", {MropeFamily::Qwen3VL, 2, 4.0}},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      const auto meta = read_json(multimodal_data + c.name + "/case.json");
      const auto index = posemb::mrope_position_ids(
          posemb::parse_mrope_segments(meta.at("segments").get<std::string>()), c.rules);
      CHECK(index.positions == expected_positions(c.name));
      CHECK(index.seq_len() == meta.at("expect").at("seq_len").get<std::int64_t>());
      CHECK(index.rope_delta == meta.at("expect").at("rope_delta").get<std::int64_t>());
    }
  }
}

TEST_CASE("conformance: the positions of every apply case come from its segments") {
  struct Case {
    const char* name;
    MropeIndexRules rules;
  };
  const Case cases[] = {
      {"apply_chunked_mixed_hd16", {MropeFamily::Qwen2VL, 2, 4.0}},
      {"apply_interleaved_mixed_hd32", {MropeFamily::Qwen3VL, 2, 4.0}},
      {"apply_partial_interleaved_hd64", {MropeFamily::Qwen3VL, 2, 4.0}},  // qwen3_5
      {"apply_batch2_bhsd_hd32", {MropeFamily::Qwen25VL, 2, 1.0}},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      const auto meta = read_json(multimodal_data + c.name + "/case.json");
      const auto& from = meta.at("positions_from_segments");
      const std::vector<std::string> rows = from.is_array()
                                                ? from.get<std::vector<std::string>>()
                                                : std::vector<std::string>{from.get<std::string>()};
      for (std::size_t row = 0; row < rows.size(); ++row) {
        const auto index =
            posemb::mrope_position_ids(posemb::parse_mrope_segments(rows[row]), c.rules);
        CHECK(index.positions == expected_positions(c.name, std::int64_t(row)));
      }
    }
  }
}

TEST_CASE("the worked example: text:3, image 1x4x6, text:5 under Qwen2-VL") {
  const auto index = posemb::mrope_position_ids(
      {MropeSegment::text(3), MropeSegment::image(1, 4, 6), MropeSegment::text(5)},
      {MropeFamily::Qwen2VL, 2});
  PositionMatrix expected(3, 14);
  expected << 0, 1, 2, 3, 3, 3, 3, 3, 3, 6, 7, 8, 9, 10,  //
      0, 1, 2, 3, 3, 3, 4, 4, 4, 6, 7, 8, 9, 10,          //
      0, 1, 2, 3, 4, 5, 3, 4, 5, 6, 7, 8, 9, 10;
  CHECK(index.positions == expected);
  CHECK(index.rope_delta == -3);
}

TEST_CASE("temporal indices of each family") {
  // Qwen2.5-VL, tokens_per_second 2: the product with S, truncated afterwards.
  const MropeIndexRules qwen25{MropeFamily::Qwen25VL, 2, 2.0};
  CHECK(taus(qwen25, 4, 0.75) == std::vector<std::int64_t>{0, 1, 3, 4});
  CHECK(taus(qwen25, 3, 1.25) == std::vector<std::int64_t>{0, 2, 5});
  CHECK(taus(qwen25, 4, 0.5) == std::vector<std::int64_t>{0, 1, 2, 3});
  // Images sit at temporal index 0 whatever T.
  const auto image = posemb::mrope_position_ids({MropeSegment::image(2, 2, 2)}, qwen25);
  CHECK(image.positions.row(0).maxCoeff() == 0);
  // Qwen2-VL: tau(g) = g, S ignored.
  const MropeIndexRules qwen2{MropeFamily::Qwen2VL, 2, 2.0};
  CHECK(taus(qwen2, 3, 0.25) == std::vector<std::int64_t>{0, 1, 2});
  // Qwen3-VL: frames one after the other, each its own one-frame grid: a 2x4x4 video after text:1
  // is t = 1 1 1 1 3 3 3 3 (the second frame starts after the first's max + 1).
  const auto frames = posemb::mrope_position_ids(
      {MropeSegment::text(1), MropeSegment::video(2, 4, 4, 7.0)}, {MropeFamily::Qwen3VL, 2});
  PositionMatrix expected(3, 9);
  expected << 0, 1, 1, 1, 1, 3, 3, 3, 3,  //
      0, 1, 1, 2, 2, 3, 3, 4, 4,          //
      0, 1, 2, 1, 2, 3, 4, 3, 4;
  CHECK(frames.positions == expected);
  CHECK(frames.rope_delta == 5 - 9);
}

TEST_CASE("text only gives 1-D positions and rope_delta 0") {
  const auto index = posemb::mrope_position_ids({MropeSegment::text(4), MropeSegment::text(3)},
                                                {MropeFamily::Qwen3VL, 2});
  for (int a = 0; a < 3; ++a)
    for (int s = 0; s < 7; ++s) CHECK(index.positions(a, s) == s);
  CHECK(index.rope_delta == 0);
}

TEST_CASE("decode continues at cache_length + delta on every axis") {
  for (const MropeFamily family :
       {MropeFamily::Qwen2VL, MropeFamily::Qwen25VL, MropeFamily::Qwen3VL}) {
    CAPTURE(posemb::to_string(family));
    const MropeIndexRules rules{family, 2, 2.0};
    const std::vector<MropeSegment> prompt = {MropeSegment::text(2), MropeSegment::image(1, 4, 6),
                                              MropeSegment::text(1),
                                              MropeSegment::video(3, 4, 4, 1.5)};
    const auto prefill = posemb::mrope_position_ids(prompt, rules);
    std::vector<MropeSegment> longer = prompt;
    longer.push_back(MropeSegment::text(5));
    const auto full = posemb::mrope_position_ids(longer, rules);
    CHECK(full.rope_delta == prefill.rope_delta);
    for (Eigen::Index n = prefill.seq_len(); n < full.seq_len(); ++n) {
      for (int a = 0; a < 3; ++a) CHECK(full.positions(a, n) == prefill.decode_offset(n));
    }
    // Rotating the decode tokens at that offset equals the full prefill's last tokens.
    const posemb::MropeSpec spec = posemb::make_mrope_spec(posemb::default_rope_spec(16, 1e4),
                                                           {2, 3, 3}, posemb::MropeLayout::Chunked);
    posemb::Tensor4<double> x(1, full.seq_len(), 1, 16);
    std::mt19937 rng(5);
    std::normal_distribution<double> normal;
    for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = normal(rng);
    const auto all = posemb::rotated(x, full.positions, spec);
    const Eigen::Index cache = prefill.seq_len();
    posemb::Tensor4<double> tail = x.slice(Eigen::array<Eigen::Index, 4>{0, cache, 0, 0},
                                           Eigen::array<Eigen::Index, 4>{1, 5, 1, 16});
    posemb::rotate_inplace(tail, posemb::MropePositions::text(prefill.decode_offset(cache)), spec);
    bool same = true;
    for (Eigen::Index s = 0; s < 5; ++s)
      for (int d = 0; d < 16; ++d) same = same && tail(0, s, 0, d) == all(0, cache + s, 0, d);
    CHECK(same);
  }
}

TEST_CASE("the segment parser reads every form and names the segment that does not parse") {
  const auto segments =
      posemb::parse_mrope_segments("text:3,image:1x4x6,video:2x4x8@0.5,video:1x2x2");
  REQUIRE(segments.size() == 4);
  CHECK(segments[0].kind == MropeSegment::Kind::Text);
  CHECK(segments[0].tokens == 3);
  CHECK(segments[1].kind == MropeSegment::Kind::Image);
  CHECK((segments[1].t == 1 && segments[1].h == 4 && segments[1].w == 6));
  CHECK(segments[2].kind == MropeSegment::Kind::Video);
  CHECK((segments[2].t == 2 && segments[2].h == 4 && segments[2].w == 8));
  CHECK(segments[2].seconds_per_grid == 0.5);
  CHECK(segments[3].seconds_per_grid == 1.0);

  const auto parse = [](const char* spec) {
    return [spec] { (void)posemb::parse_mrope_segments(spec); };
  };
  throws_with(parse("text:3,image:1x4,text:5"), "segment 2 = 'image:1x4': expected text:N");
  throws_with(parse("text:3,video:2x4x4@fast"), "segment 2 = 'video:2x4x4@fast'");
  throws_with(parse("text:3,video:2x4x4@-1"), "segment 2 = 'video:2x4x4@-1'");
  throws_with(parse("image:1x4x4@2"), "segment 1 = 'image:1x4x4@2'");
  throws_with(parse("audio:3"), "segment 1 = 'audio:3'");
  throws_with(parse("text:0"), "segment 1 = 'text:0'");
  throws_with(parse("text:"), "segment 1 = 'text:'");
  throws_with(parse("text:2,,text:1"), "segment 2 = ''");
  throws_with(parse(""), "segment 1 = ''");
  throws_with(parse("text:1,image:1x4x4x4"), "segment 2 = 'image:1x4x4x4'");
}

TEST_CASE("the builder rejects grids the merge does not divide and bad rules") {
  const MropeIndexRules rules{MropeFamily::Qwen2VL, 2, 2.0};
  throws_with(
      [&] {
        (void)posemb::mrope_position_ids({MropeSegment::text(2), MropeSegment::image(1, 5, 4)},
                                         rules);
      },
      "segments[1].h = 5: expected a multiple of spatial_merge_size = 2");
  throws_with([&] { (void)posemb::mrope_position_ids({MropeSegment::video(0, 4, 4)}, rules); },
              "segments[0].t = 0");
  throws_with([&] { (void)posemb::mrope_position_ids({}, rules); }, "segments.size() = 0");
  // 2^40 tokens are refused before anything is allocated.
  throws_with(
      [&] {
        (void)posemb::mrope_position_ids({MropeSegment::image(1 << 20, 1 << 20, 1 << 20)}, rules);
      },
      "seq_len = 288230376151711744: expected at most 2^40 tokens");
#if !defined(__SANITIZE_ADDRESS__)  // ASan reports a failed allocation instead of throwing
  throws_with(
      [&] { (void)posemb::mrope_position_ids({MropeSegment::text(std::int64_t(1) << 39)}, rules); },
      "seq_len = 549755813888: expected a size whose a table of");
#endif
  throws_with(
      [&] {
        (void)posemb::mrope_position_ids({MropeSegment::text(1)}, {MropeFamily::Qwen2VL, 0});
      },
      "spatial_merge_size = 0");
  throws_with(
      [&] {
        (void)posemb::mrope_position_ids({MropeSegment::text(1)}, {MropeFamily::Qwen25VL, 2, 0.0});
      },
      "tokens_per_second = 0");
}

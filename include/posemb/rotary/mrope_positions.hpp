// The (t, h, w) positions of a multimodal prompt for M-RoPE (mrope.hpp), and the rope delta
// that continues them while decoding: HuggingFace's get_rope_index of each model family.
//
// A prompt is a list of segments: text runs, images and videos. A vision segment is a patch
// grid (T, H, W) before the spatial merge (HF's image_grid_thw / video_grid_thw); with merge
// size m it holds T * (H/m) * (W/m) tokens. With p the next free position (0 at the start):
//   text of N tokens:  token i at (p + i, p + i, p + i); then p += N
//   vision, merged grid (T, Hm, Wm) = (T, H/m, W/m): the token at (g, r, c), row-major over
//     g, r, c, at (p + tau(g), p + r, p + c); then p += max(tau(T - 1), Hm - 1, Wm - 1) + 1
// with the temporal index tau(g) of each family:
//   Qwen2-VL   (Qwen2VLModel.get_rope_index, models/qwen2_vl/modeling_qwen2_vl.py):  tau(g) = g
//   Qwen2.5-VL (get_rope_index, models/qwen2_5_vl/modeling_qwen2_5_vl.py, as released): images
//     tau = 0; videos tau(g) = floor(g * S * tokens_per_second), S = seconds per temporal grid,
//     the product taken with S fractional and truncated afterwards (later HF files cast S to an
//     integer first; HF main and vLLM multiply by the float, as here)
//   Qwen3-VL / Qwen3.5 (Qwen3VLModel.get_rope_index, models/qwen3_vl/modeling_qwen3_vl.py,
//     4.57): a video of T grids is T one-frame grids (1, H, W), each placed as an image; images
//     tau(g) = g; S is ignored (time is in timestamp text tokens)
//   GLM-4V     (Glm4vModel.get_rope_index, models/glm4v/modeling_glm4v.py, 5.25: video_grid_thw
//     repeat_interleave'd to one-frame grids): as Qwen3-VL. vLLM 0.33.0's
//     get_mrope_input_positions (glm4_1v.py) places the same frames alike
// After a vision segment, p resumes past its largest position on any axis (above: Qwen's own
// get_rope_index_25 in qwen-vl-finetune/qwenvl/data/rope2d.py, the code Qwen2.5-VL was trained
// with, and transformers up to 4.57.6), or, with MropeResume::SpatialExtent, at
// p += max(Hm, Wm), transformers 5.x (5.24, 5.25: get_rope_index's
// `current_pos += max(grid_thw[1], grid_thw[2]) // spatial_merge_size`), where the text after a
// video can overlap the video's scaled temporal positions.
// The rope delta is max(P) + 1 - seq_len (0 for text only): token n >= seq_len of the
// continuation (decode with a KV cache of n tokens) is at n + delta on every axis.
//
// Worked example (Qwen2-VL, m = 2): text:3, image 1x4x6, text:5 ->
//   t 0 1 2 3 3 3 3 3 3 6 7 8 9 10
//   h 0 1 2 3 3 3 4 4 4 6 7 8 9 10
//   w 0 1 2 3 4 5 3 4 5 6 7 8 9 10     seq_len 14, rope_delta -3
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "posemb/error.hpp"
#include "posemb/rotary/mrope.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

// Whose get_rope_index the positions follow.
enum class MropeFamily { Qwen2VL, Qwen25VL, Qwen3VL, Glm4v };

// What a family's get_rope_index does with time (the header comment), one row per MropeFamily.
struct MropeFamilyRules {
  const char* name;  // its model_type
  // Images tau = 0, videos tau(g) = floor(g * S * tokens_per_second) (Qwen2.5-VL); else
  // tau(g) = g.
  bool temporal_in_seconds;
  bool video_as_frames;  // a video of T grids is T one-frame images (Qwen3-VL)
};

inline const MropeFamilyRules& mrope_family_rules(MropeFamily family) {
  static const std::array<MropeFamilyRules, 4> rows{{
      // name, temporal_in_seconds, video_as_frames
      {"qwen2_vl", false, false},
      {"qwen2_5_vl", true, false},
      {"qwen3_vl", false, true},
      {"glm4v", false, true},
  }};
  return rows[static_cast<std::size_t>(family)];
}

inline const char* to_string(MropeFamily family) { return mrope_family_rules(family).name; }

// One segment of a prompt: `tokens` text tokens, or an image / video patch grid (t, h, w)
// before the merge with `seconds_per_grid` seconds per temporal grid (videos, Qwen2.5-VL).
struct MropeSegment {
  enum class Kind { Text, Image, Video };
  Kind kind = Kind::Text;
  std::int64_t tokens = 0;           // text
  std::int64_t t = 1, h = 0, w = 0;  // image, video: HF's grid_thw
  double seconds_per_grid = 1.0;     // video: HF's second_per_grid_ts

  static MropeSegment text(std::int64_t n) { return {Kind::Text, n, 1, 0, 0, 1.0}; }
  static MropeSegment image(std::int64_t t, std::int64_t h, std::int64_t w) {
    return {Kind::Image, 0, t, h, w, 1.0};
  }
  static MropeSegment video(std::int64_t t, std::int64_t h, std::int64_t w, double seconds = 1.0) {
    return {Kind::Video, 0, t, h, w, seconds};
  }
};

// Where the positions resume after a vision segment (see the top of this file).
enum class MropeResume {
  PastLargest,    // max(tau(T - 1), Hm - 1, Wm - 1) + 1: Qwen's code, transformers <= 4.57
  SpatialExtent,  // max(Hm, Wm): transformers 5.x
};

// The name of each MropeResume (Python's resume=, the tool's --resume).
inline const char* to_string(MropeResume resume) {
  return resume == MropeResume::SpatialExtent ? "spatial_extent" : "past_largest";
}

// The MropeResume called `name` ("past_largest" or "spatial_extent"); throws naming `parameter`.
inline MropeResume mrope_resume_of(const std::string& name,
                                   const std::string& parameter = "resume") {
  for (const MropeResume resume : {MropeResume::PastLargest, MropeResume::SpatialExtent}) {
    if (name == to_string(resume)) return resume;
  }
  detail::fail(parameter, "'" + name + "'", "expected 'past_largest' or 'spatial_extent'");
}

// The model's rules: family, spatial merge size, (Qwen2.5-VL) tokens per second, and where the
// positions resume after a vision segment.
struct MropeIndexRules {
  MropeFamily family = MropeFamily::Qwen2VL;
  int spatial_merge_size = 2;
  double tokens_per_second = 4.0;  // Qwen2_5_VLVisionConfig's default; the checkpoints say 2
  MropeResume resume = MropeResume::PastLargest;
};

// The positions of a prompt and its rope delta.
struct MropeIndex {
  PositionMatrix positions;     // [3, seq]: rows t, h, w
  std::int64_t rope_delta = 0;  // max(positions) + 1 - seq

  Eigen::Index seq_len() const { return positions.cols(); }
  // The position of token `cache_length` onward while decoding, on every axis.
  std::int64_t decode_offset(std::int64_t cache_length) const { return cache_length + rope_delta; }
};

namespace detail {

inline std::string segment_name(std::size_t i) { return "segments[" + std::to_string(i) + "]"; }

// Throws unless the segment is well formed for `rules`.
inline void check_segment(const MropeSegment& segment, std::size_t i,
                          const MropeIndexRules& rules) {
  const std::string name = segment_name(i);
  constexpr std::int64_t max_tokens = std::int64_t(1) << 40, max_side = std::int64_t(1) << 20;
  if (segment.kind == MropeSegment::Kind::Text) {
    if (segment.tokens < 1 || segment.tokens > max_tokens) {
      fail(name + ".tokens", segment.tokens, "expected 1 .. 2^40 text tokens");
    }
    return;
  }
  if (segment.t < 1 || segment.t > max_side) {
    fail(name + ".t", segment.t, "expected 1 .. 2^20 temporal grids");
  }
  const auto dimension = [&](const char* what, std::int64_t value) {
    if (value < 1 || value > max_side || value % rules.spatial_merge_size != 0) {
      fail(name + "." + what, value,
           "expected a multiple of spatial_merge_size = " +
               std::to_string(rules.spatial_merge_size) + " in 1 .. 2^20");
    }
  };
  dimension("h", segment.h);
  dimension("w", segment.w);
  if (!(std::isfinite(segment.seconds_per_grid) && segment.seconds_per_grid >= 0.0)) {
    fail(name + ".seconds_per_grid", segment.seconds_per_grid, "expected a finite number >= 0");
  }
}

// tau(g) of a vision grid of `segment` under `rules` (the header comment).
inline std::int64_t temporal_index(const MropeSegment& segment, std::int64_t g,
                                   const MropeIndexRules& rules) {
  if (!mrope_family_rules(rules.family).temporal_in_seconds) return g;
  if (segment.kind == MropeSegment::Kind::Image) return 0;
  // HF: (range * second_per_grid_t * tokens_per_second).long(), left to right
  return static_cast<std::int64_t>(
      std::floor(static_cast<double>(g) * segment.seconds_per_grid * rules.tokens_per_second));
}

}  // namespace detail

// The [3, seq] positions and rope delta of a prompt. Throws posemb::Error for an empty prompt,
// a merge size < 1, tokens_per_second <= 0 or a malformed segment (naming it).
//
// Example (Qwen2-VL: "<text> <image 1x4x6> <text>"):
//   const posemb::MropeIndex index = posemb::mrope_position_ids(
//       {posemb::MropeSegment::text(3), posemb::MropeSegment::image(1, 4, 6),
//        posemb::MropeSegment::text(5)},
//       {posemb::MropeFamily::Qwen2VL, /*spatial_merge_size=*/2});
//   posemb::rotate_inplace(q, index.positions, spec);            // prefill
//   posemb::rotate_inplace(q_step, posemb::MropePositions::text(  // decode
//       index.decode_offset(cache_length)), spec);
inline MropeIndex mrope_position_ids(const std::vector<MropeSegment>& segments,
                                     const MropeIndexRules& rules) {
  if (rules.spatial_merge_size < 1) {
    detail::fail("spatial_merge_size", rules.spatial_merge_size, "expected >= 1");
  }
  detail::require_positive_finite("tokens_per_second", rules.tokens_per_second);
  if (segments.empty()) detail::fail("segments.size()", 0, "expected at least one segment");

  // Qwen3-VL places each temporal grid of a video as a one-frame image.
  std::vector<MropeSegment> grids;
  Eigen::Index seq = 0;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const MropeSegment& segment = segments[i];
    detail::check_segment(segment, i, rules);
    const std::int64_t m = rules.spatial_merge_size;
    seq += segment.kind == MropeSegment::Kind::Text ? segment.tokens
                                                    : segment.t * (segment.h / m) * (segment.w / m);
    if (mrope_family_rules(rules.family).video_as_frames &&
        segment.kind == MropeSegment::Kind::Video) {
      for (std::int64_t g = 0; g < segment.t; ++g)
        grids.push_back(MropeSegment::image(1, segment.h, segment.w));
    } else {
      grids.push_back(segment);
    }
    if (seq > (Eigen::Index(1) << 40)) detail::fail("seq_len", seq, "expected at most 2^40 tokens");
  }

  MropeIndex index;
  detail::allocate_sized("seq_len", seq, 3.0L * seq, sizeof(std::int64_t),
                         [&] { index.positions.resize(3, seq); });
  std::int64_t p = 0;  // the next free position
  Eigen::Index n = 0;  // the next token
  for (const MropeSegment& segment : grids) {
    if (segment.kind == MropeSegment::Kind::Text) {
      for (std::int64_t i = 0; i < segment.tokens; ++i, ++n) {
        index.positions.col(n).setConstant(p + i);
      }
      p += segment.tokens;
      continue;
    }
    const std::int64_t rows = segment.h / rules.spatial_merge_size;
    const std::int64_t cols = segment.w / rules.spatial_merge_size;
    for (std::int64_t g = 0; g < segment.t; ++g) {
      const std::int64_t tau = detail::temporal_index(segment, g, rules);
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t c = 0; c < cols; ++c, ++n) {
          index.positions(kAxisT, n) = p + tau;
          index.positions(kAxisH, n) = p + r;
          index.positions(kAxisW, n) = p + c;
        }
      }
    }
    const std::int64_t last_tau = detail::temporal_index(segment, segment.t - 1, rules);
    p += rules.resume == MropeResume::SpatialExtent ? std::max(rows, cols)
                                                    : std::max({last_tau, rows - 1, cols - 1}) + 1;
  }
  index.rope_delta = index.positions.maxCoeff() + 1 - seq;
  return index;
}

// Parses a prompt layout "text:N,image:TxHxW,video:TxHxW[@S]" (comma-separated; S seconds per
// temporal grid, default 1). Throws posemb::Error naming the segment that does not parse.
//
// Example:
//   const auto segments = posemb::parse_mrope_segments("text:3,image:1x4x6,text:5");
inline std::vector<MropeSegment> parse_mrope_segments(const std::string& spec) {
  const std::string expected =
      "expected text:N, image:TxHxW or video:TxHxW[@S] (N, T, H, W positive integers, S >= 0)";
  std::vector<MropeSegment> segments;
  std::size_t begin = 0;
  for (std::size_t i = 0;; ++i) {
    const std::size_t end = std::min(spec.find(',', begin), spec.size());
    const std::string text = spec.substr(begin, end - begin);
    const auto bad = [&]() {
      detail::fail("segment " + std::to_string(i + 1), "'" + text + "'", expected);
    };
    // A positive integer filling [from, to) of text.
    const auto integer = [&](std::size_t from, std::size_t to) -> std::int64_t {
      if (from >= to || to - from > 12 || text.find_first_not_of("0123456789", from) < to) {
        bad();
      }
      const std::int64_t value = std::stoll(text.substr(from, to - from));
      if (value < 1) bad();
      return value;
    };
    const std::size_t colon = text.find(':');
    if (colon == std::string::npos) bad();
    const std::string kind = text.substr(0, colon);
    if (kind == "text") {
      segments.push_back(MropeSegment::text(integer(colon + 1, text.size())));
    } else if (kind == "image" || kind == "video") {
      const std::size_t at = std::min(text.find('@'), text.size());
      if (kind == "image" && at != text.size()) bad();
      const std::size_t x1 = text.find('x', colon + 1);
      const std::size_t x2 = x1 == std::string::npos ? x1 : text.find('x', x1 + 1);
      if (x2 == std::string::npos || x2 > at) bad();
      const std::int64_t t = integer(colon + 1, x1), h = integer(x1 + 1, x2),
                         w = integer(x2 + 1, at);
      double seconds = 1.0;
      if (at != text.size()) {
        const std::string number = text.substr(at + 1);
        char* stop = nullptr;
        seconds = number.empty() ? -1.0 : std::strtod(number.c_str(), &stop);
        if (number.empty() || *stop != '\0' || !std::isfinite(seconds) || seconds < 0.0) bad();
      }
      segments.push_back(kind == "image" ? MropeSegment::image(t, h, w)
                                         : MropeSegment::video(t, h, w, seconds));
    } else {
      bad();
    }
    if (end == spec.size()) break;
    begin = end + 1;
  }
  return segments;
}

}  // namespace posemb

// multimodal_positions: the M-RoPE positions of a prompt with an image and a video.
//
//   multimodal_positions [FAMILY [SEGMENTS]]
//
// FAMILY: qwen2_vl (default), qwen2_5_vl or qwen3_vl. SEGMENTS: text:N,image:TxHxW,
// video:TxHxW@S (default "text:3,image:1x4x6,text:2,video:3x4x4@0.5,text:4"), grids before the
// spatial merge of 2; Qwen2.5-VL counts 2 tokens per second.
//
// Prints every token's (t, h, w) with the axes that advanced since the token before it, the
// seq_len, the rope delta and where decoding continues. Then it rotates random queries of a
// text-only prompt with M-RoPE (Qwen2-VL-7B's sections [16, 24, 24]) and with 1-D RoPE and
// shows the two are equal bit for bit (exit status 1 otherwise).
#include <posemb/rotary/mrope.hpp>
#include <posemb/rotary/mrope_positions.hpp>
#include <posemb/rotary/rope.hpp>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <string>

namespace {

int usage() {
  std::cerr << "usage: multimodal_positions [qwen2_vl|qwen2_5_vl|qwen3_vl [SEGMENTS]]\n";
  return 2;
}

const char* kind_name(posemb::MropeSegment::Kind kind) {
  switch (kind) {
    case posemb::MropeSegment::Kind::Text:
      return "text";
    case posemb::MropeSegment::Kind::Image:
      return "image";
    default:
      return "video";
  }
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc > 3) return usage();
  posemb::MropeIndexRules rules{posemb::MropeFamily::Qwen2VL, 2, 2.0};
  if (argc >= 2) {
    const std::string family = argv[1];
    if (family == "qwen2_vl") {
      rules.family = posemb::MropeFamily::Qwen2VL;
    } else if (family == "qwen2_5_vl") {
      rules.family = posemb::MropeFamily::Qwen25VL;
    } else if (family == "qwen3_vl") {
      rules.family = posemb::MropeFamily::Qwen3VL;
    } else {
      return usage();
    }
  }
  const std::string spec = argc == 3 ? argv[2] : "text:3,image:1x4x6,text:2,video:3x4x4@0.5,text:4";
  const auto segments = posemb::parse_mrope_segments(spec);
  const posemb::MropeIndex index = posemb::mrope_position_ids(segments, rules);

  std::printf("%s, spatial merge %d: %s\n\n", posemb::to_string(rules.family),
              rules.spatial_merge_size, spec.c_str());
  std::printf("%5s  %-14s %6s %6s %6s   advanced\n", "token", "segment", "t", "h", "w");
  Eigen::Index n = 0;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const auto& segment = segments[i];
    const Eigen::Index tokens = segment.kind == posemb::MropeSegment::Kind::Text
                                    ? segment.tokens
                                    : segment.t * (segment.h / rules.spatial_merge_size) *
                                          (segment.w / rules.spatial_merge_size);
    for (Eigen::Index k = 0; k < tokens; ++k, ++n) {
      std::string advanced;
      for (int a = 0; a < 3; ++a) {
        if (n == 0 || index.positions(a, n) > index.positions(a, n - 1)) advanced += "thw"[a];
      }
      const std::string name = std::to_string(i + 1) + " " + kind_name(segment.kind);
      std::printf("%5ld  %-14s %6ld %6ld %6ld   %s\n", static_cast<long>(n),
                  k == 0 ? name.c_str() : "", static_cast<long>(index.positions(0, n)),
                  static_cast<long>(index.positions(1, n)),
                  static_cast<long>(index.positions(2, n)), advanced.c_str());
    }
  }
  std::printf("\nseq_len %ld, rope_delta %ld: decode token %ld sits at %ld on every axis\n\n",
              static_cast<long>(index.seq_len()), static_cast<long>(index.rope_delta),
              static_cast<long>(index.seq_len()),
              static_cast<long>(index.decode_offset(index.seq_len())));

  // Text only: M-RoPE with t = h = w is 1-D RoPE.
  const posemb::MropeSpec mrope = posemb::make_mrope_spec(
      posemb::default_rope_spec(128, 1000000.0), {16, 24, 24}, posemb::MropeLayout::Chunked);
  const posemb::MropeIndex text =
      posemb::mrope_position_ids({posemb::MropeSegment::text(64)}, rules);
  posemb::Tensor4<float> q(1, 64, 4, 128);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  for (Eigen::Index i = 0; i < q.size(); ++i) q.data()[i] = normal(rng);
  const auto by_mrope = posemb::rotated(q, text.positions, mrope);
  const auto by_rope = posemb::rotated(q, /*offset=*/0, mrope.rope);
  const bool same = std::memcmp(by_mrope.data(), by_rope.data(), sizeof(float) * q.size()) == 0;
  std::printf("text only (64 tokens, rope_delta %ld): M-RoPE %s 1-D RoPE bit for bit\n",
              static_cast<long>(text.rope_delta), same ? "equals" : "DIFFERS FROM");
  return same ? 0 : 1;
} catch (const posemb::Error& e) {
  std::cerr << e.what() << "\n";
  return 2;
}

// Must not compile: fused_rope_scores rotates by RoPE, its source is a RopeSpec or a RopeTable.
#include <posemb/attention/fused.hpp>
#include <posemb/rotary/fope.hpp>

void scores(const Eigen::MatrixXf& q, const posemb::PositionVector& positions,
            const posemb::Fope& fope) {
  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> out;
  posemb::fused_rope_scores(q, positions, q, positions, out, fope);
}

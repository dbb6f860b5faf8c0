// The learned-position encoder families of the config loader (families.hpp rows bert, roberta,
// xlm-roberta): every layer learned, the table size from max_position_embeddings (the class
// default 512 when absent, configuration_bert.py / configuration_roberta.py), softmax
// head_dim^-0.5 (modeling_bert.py BertSelfAttention: / sqrt(attention_head_size)).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "posemb/model/config.hpp"

namespace {

posemb::ModelPositions parse(const std::string& text) {
  return posemb::model_positions_from_json(nlohmann::json::parse(text));
}

}  // namespace

TEST_CASE("BERT, RoBERTa and XLM-RoBERTa configs load as learned absolute positions") {
  for (const std::string type : {"bert", "roberta", "xlm-roberta"}) {
    CAPTURE(type);
    const posemb::ModelPositions model =
        parse(R"({"model_type": ")" + type +
              R"(", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 3,
            "max_position_embeddings": 40})");
    CHECK(model.kind() == posemb::PositionKind::Learned);
    REQUIRE(model.layers.size() == 3);
    CHECK(model.max_position_embeddings == 40);
    for (const posemb::LayerPositions& layer : model.layers) {
      CHECK(layer.kind == posemb::PositionKind::Learned);
      CHECK_FALSE(layer.rope);
      CHECK(*layer.attention.softmax_scale == Approx(1.0 / std::sqrt(16.0)));
    }
  }
  // Absent keys: the classes' defaults (hidden 768, 12 heads, 512 positions).
  const posemb::ModelPositions defaults = parse(R"({"model_type": "roberta"})");
  CHECK(defaults.max_position_embeddings == 512);
  CHECK(defaults.n_heads == 12);
}

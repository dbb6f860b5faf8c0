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

// RobertaConfig's and XLMRobertaConfig's default pad_token_id is 1 (transformers 5.24.0, run);
// create_position_ids_from_input_ids (modeling_roberta.py) numbers tokens from padding_idx + 1.
TEST_CASE("RoBERTa's padding_idx: pad_token_id, default 1, read with the config") {
  const std::string head = R"({"hidden_size": 64, "num_attention_heads": 4, "model_type": ")";
  CHECK(parse(head + R"(roberta"})").padding_idx == 1);
  CHECK(parse(head + R"(xlm-roberta", "pad_token_id": 3})").padding_idx == 3);
  CHECK_FALSE(parse(head + R"(bert", "pad_token_id": 0})").padding_idx);
  CHECK_FALSE(parse(head + R"(gpt2", "n_positions": 8, "pad_token_id": 5})").padding_idx);
  for (const std::string bad : {"null", "-1", "1.5", "\"1\""}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(parse(head + R"(roberta", "pad_token_id": )" + bad + "}"),
                      Catch::Contains("pad_token_id = ") &&
                          Catch::Contains("expected an integer >= 0"));
  }
  CHECK_THROWS_WITH(parse(R"({"text_config": )" + head + R"(roberta", "pad_token_id": null}})"),
                    Catch::Contains("text_config.pad_token_id = null"));
}

// error.hpp: posemb::Error's message, and the context (file, key path) it carries.
#include "posemb/error.hpp"

#include <catch2/catch.hpp>

#include <string>

TEST_CASE("fail names the parameter, the value and the expectation", "[error]") {
  try {
    posemb::detail::fail("rotary_dim", 7, "expected an even number >= 2");
    FAIL("no throw");
  } catch (const posemb::Error& error) {
    CHECK(std::string(error.what()) == "posemb: rotary_dim = 7: expected an even number >= 2");
    CHECK(error.message() == "rotary_dim = 7: expected an even number >= 2");
    CHECK(error.parameter() == "rotary_dim");
    CHECK(error.context().empty());
  }
}

TEST_CASE("context goes in front, outermost first, and qualify prefixes the parameter", "[error]") {
  posemb::Error error("beta_fast", " = 1: expected > beta_slow = 32");
  error.add_context("rope_scaling");
  error.add_context("config.json");
  CHECK(std::string(error.what()) ==
        "posemb: config.json: rope_scaling: beta_fast = 1: expected > beta_slow = 32");
  CHECK(error.context() == std::vector<std::string>{"config.json", "rope_scaling"});

  posemb::Error sigma("sigma", " = -1: expected a finite number >= 0");
  sigma.qualify("rope_scaling.");
  CHECK(sigma.parameter() == "rope_scaling.sigma");
  CHECK(sigma.message() == "rope_scaling.sigma = -1: expected a finite number >= 0");

  // A message without a parameter: qualify becomes context.
  posemb::Error plain("cannot open config file");
  plain.qualify("text_config.");
  CHECK(plain.message() == "text_config: cannot open config file");
  // Still a std::invalid_argument.
  CHECK_THROWS_AS(throw posemb::Error("x"), std::invalid_argument);
}

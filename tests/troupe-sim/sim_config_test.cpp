#include "apps/troupe-sim/sim_config.hpp"

#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>

using namespace troupe::sim;
using nlohmann::json;

TEST_CASE("every knob is a flag with dashes", "[sim_config]") {
  sim_config cfg;
  CLI::App app;
  add_flags(app, cfg);
  std::vector<std::string> args{
      "troupe-sim", "--itl-ms",      "3.5", "--output-tokens",     "7", "--role",
      "decode",     "--fail-status", "503", "--drop-after-events", "2", "--model-id",
      "m"};
  std::vector<const char*> argv;
  for (auto& a : args) {
    argv.push_back(a.c_str());
  }
  app.parse(static_cast<int>(argv.size()), argv.data());
  CHECK(cfg.itl_ms == 3.5);
  CHECK(cfg.output_tokens == 7);
  CHECK(cfg.role == worker_role::decode);
  CHECK(cfg.fail_status == 503);
  CHECK(cfg.drop_after_events == 2);
  CHECK(cfg.model_id == "m");
  CHECK_FALSE(validate(cfg).has_value());
  for (const auto& k : runtime_knobs()) {
    std::string flag = "--" + std::string(k.name);
    std::replace(flag.begin(), flag.end(), '_', '-');
    CHECK(app.get_option_no_throw(flag) != nullptr);
  }
}

TEST_CASE("knobs change at run time, all or nothing", "[sim_config]") {
  sim_config cfg;
  CHECK_FALSE(apply_knobs(cfg, {{"itl_ms", 1}, {"error_rate", 0.25}, {"fail_status", 502}}));
  CHECK(cfg.itl_ms == 1);
  CHECK(cfg.error_rate == 0.25);
  CHECK(cfg.fail_status == 502);

  auto before = to_json(cfg);
  CHECK(apply_knobs(cfg, {{"itl_ms", 9}, {"nonsense", 1}}).value().find("unknown knob") !=
        std::string::npos);
  CHECK(apply_knobs(cfg, {{"error_rate", 2}}).has_value());
  CHECK(apply_knobs(cfg, {{"output_tokens", 1.5}}).has_value());
  CHECK(apply_knobs(cfg, {{"stall_ms", "long"}}).has_value());
  CHECK(apply_knobs(cfg, {{"fail_status", 42}}).has_value());
  CHECK(apply_knobs(cfg, json::array()).has_value());
  CHECK(to_json(cfg) == before);
}

TEST_CASE("the JSON view has every knob and the static settings", "[sim_config]") {
  sim_config cfg;
  auto j = to_json(cfg);
  for (const auto& k : runtime_knobs()) {
    CHECK(j.contains(std::string(k.name)));
  }
  CHECK(j["role"] == "regular");
  CHECK(j["model_id"] == "sim-model");
  CHECK(j["drop_after_events"] == -1);
  auto l = latency(cfg);
  CHECK(l.itl_ms == cfg.itl_ms);
}

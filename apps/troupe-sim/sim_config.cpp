#include "apps/troupe-sim/sim_config.hpp"

#include <CLI/CLI.hpp>
#include <array>
#include <cmath>
#include <limits>

namespace troupe::sim {

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
using sc = sim_config;

constexpr std::array<knob, 13> knob_table{{
    {"ttft_base_ms", "Fixed part of the time to first token (ms)", &sc::ttft_base_ms, 0, inf},
    {"prefill_us_per_token", "Prefill cost per uncached prompt token (us)",
     &sc::prefill_us_per_token, 0, inf},
    {"itl_ms", "Time between two output tokens (ms)", &sc::itl_ms, 0, inf},
    {"output_tokens",
     "Tokens a sequence writes before it stops, capped by the request's max tokens",
     &sc::output_tokens, 0, 1e7},
    {"load_slowdown", "Latencies are multiplied by 1 + load_slowdown x (concurrent requests - 1)",
     &sc::load_slowdown, 0, inf},
    {"error_rate", "Fraction of data-plane requests answered 500 (0..1)", &sc::error_rate, 0, 1},
    {"fail_status", "When non-zero, every data-plane request is answered with this status",
     &sc::fail_status, 0, 599},
    {"stall_ms", "Wait this long before looking at a data-plane request (ms)", &sc::stall_ms, 0,
     inf},
    {"drop_after_events",
     "Close the connection after this many SSE events; 0 also drops non-streaming requests "
     "without a response; -1 disables",
     &sc::drop_after_events, -1, 1e15},
    {"health_status", "Status answered by GET /health and /health_generate", &sc::health_status,
     100, 599},
    {"bootstrap_timeout_ms", "How long a decode worker waits for its prefill (ms)",
     &sc::bootstrap_timeout_ms, 0, inf},
    {"kv_transfer_us_per_token",
     "vLLM decode: time to fetch the KV cache of one prompt token from the prefill (us)",
     &sc::kv_transfer_us_per_token, 0, inf},
    {"kv_hold_timeout_ms",
     "vLLM prefill: how long the KV blocks of a finished prefill stay pinned unread (ms)",
     &sc::kv_hold_timeout_ms, 0, inf},
}};

std::string flag_name(std::string_view name) {
  std::string flag = "--";
  for (char c : name) {
    flag.push_back(c == '_' ? '-' : c);
  }
  return flag;
}

std::optional<std::string> check_range(const knob& k, double v) {
  if (std::isnan(v) || v < k.min || v > k.max) {
    return std::string(k.name) + " must be between " + nlohmann::json(k.min).dump() + " and " +
           (std::isinf(k.max) ? std::string("infinity") : nlohmann::json(k.max).dump());
  }
  return std::nullopt;
}

double value_of(const sim_config& cfg, const knob& k) {
  return std::visit([&](auto member) { return static_cast<double>(cfg.*member); }, k.member);
}

} // namespace

std::string_view to_string(worker_role r) noexcept {
  switch (r) {
  case worker_role::regular:
    return "regular";
  case worker_role::prefill:
    return "prefill";
  case worker_role::decode:
    return "decode";
  }
  return "regular";
}

std::string_view to_string(engine_runtime r) noexcept {
  return r == engine_runtime::vllm ? "vllm" : "sglang";
}

std::string_view to_string(kv_connector c) noexcept {
  return c == kv_connector::mooncake ? "MooncakeConnector" : "NixlConnector";
}

std::span<const knob> runtime_knobs() noexcept {
  return knob_table;
}

void add_flags(CLI::App& app, sim_config& cfg) {
  // A flag given twice takes its last value, so scripts can append overrides.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--host", cfg.host, "Address to listen on")->capture_default_str();
  app.add_option("--port", cfg.port, "Main HTTP port")->capture_default_str();
  app.add_option("--model-id,--model-path,--served-model-name", cfg.model_id,
                 "The model served; requests naming another model get 404 model_not_found")
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--role,--disaggregation-mode",
         [&cfg](const std::string& v) {
           cfg.role = v == "prefill"  ? worker_role::prefill
                      : v == "decode" ? worker_role::decode
                                      : worker_role::regular;
         },
         "regular, prefill or decode (prefill/decode disaggregation; `null` means regular)")
      ->check(CLI::IsMember({"regular", "null", "prefill", "decode"}))
      ->default_str("regular");
  app.add_option_function<std::string>(
         "--runtime,--engine",
         [&cfg](const std::string& v) {
           cfg.runtime = v == "vllm" ? engine_runtime::vllm : engine_runtime::sglang;
         },
         "The engine played: sglang (PD by dual dispatch and bootstrap rooms) or vllm (PD in "
         "sequence: kv_transfer_params, KV blocks fetched from the prefill)")
      ->check(CLI::IsMember({"sglang", "vllm"}))
      ->default_str("sglang");
  app.add_option("--bootstrap-port,--disaggregation-bootstrap-port,--kv-port", cfg.bootstrap_port,
                 "Role prefill: port of the bootstrap server (sglang) or of the KV side channel "
                 "(vllm) its decode peers ask")
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--kv-connector",
         [&cfg](const std::string& v) {
           cfg.connector = v == "MooncakeConnector" || v == "mooncake" ? kv_connector::mooncake
                                                                       : kv_connector::nixl;
         },
         "vllm: the KV connector played, NixlConnector (the prefill returns its block ids) or "
         "MooncakeConnector (a transfer id minted by the gateway)")
      ->check(CLI::IsMember({"NixlConnector", "nixl", "MooncakeConnector", "mooncake"}))
      ->default_str("NixlConnector");
  app.add_option("--kv-engine-id", cfg.kv_engine_id,
                 "vllm: the engine id of kv_transfer_params (default: a fresh one)");
  app.add_option("--request-log-size", cfg.request_log_size, "Requests kept for GET /sim/requests")
      ->capture_default_str();
  app.add_option("--log-level", cfg.log_level, "trace, debug, info, warn, error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_option("--seed", cfg.seed, "Seed of random choices (error rate, ids)")
      ->capture_default_str();
  app.add_option("--context-length", cfg.context_length, "Context length reported to clients")
      ->capture_default_str();
  app.add_option("--embedding-dim", cfg.embedding_dim,
                 "Size of embedding vectors when the request does not ask for one")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  app.add_option("--cache-block-tokens,--page-size", cfg.cache_block_tokens,
                 "Tokens per prefix-cache block")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--cache-capacity-blocks", cfg.cache_capacity_blocks,
                 "Blocks the prefix cache holds (LRU); 0 disables it")
      ->capture_default_str();
  for (const auto& k : runtime_knobs()) {
    std::visit(
        [&](auto member) {
          app.add_option(flag_name(k.name), cfg.*member, std::string(k.help))
              ->capture_default_str();
        },
        k.member);
  }
}

std::optional<std::string> validate(const sim_config& cfg) {
  for (const auto& k : runtime_knobs()) {
    if (auto why = check_range(k, value_of(cfg, k))) {
      return why;
    }
  }
  if (cfg.fail_status != 0 && cfg.fail_status < 100) {
    return "fail_status must be 0 (off) or an HTTP status (100..599)";
  }
  if (cfg.model_id.empty()) {
    return "--model-id must not be empty";
  }
  if (cfg.role == worker_role::prefill && cfg.bootstrap_port == cfg.port && cfg.port != 0) {
    return "--bootstrap-port must differ from --port";
  }
  return std::nullopt;
}

std::optional<std::string> apply_knobs(sim_config& cfg, const nlohmann::json& knobs) {
  if (!knobs.is_object()) {
    return "the body must be a JSON object of knobs";
  }
  sim_config next = cfg;
  for (const auto& [name, value] : knobs.items()) {
    const knob* k = nullptr;
    for (const auto& candidate : runtime_knobs()) {
      if (candidate.name == name) {
        k = &candidate;
      }
    }
    if (k == nullptr) {
      std::string known;
      for (const auto& candidate : runtime_knobs()) {
        known += (known.empty() ? "" : ", ") + std::string(candidate.name);
      }
      return "unknown knob '" + name + "' (known: " + known + ")";
    }
    if (!value.is_number()) {
      return std::string(k->name) + " must be a number";
    }
    auto why = std::visit(
        [&](auto member) -> std::optional<std::string> {
          using T = std::remove_reference_t<decltype(next.*member)>;
          if constexpr (std::is_integral_v<T>) {
            if (!value.is_number_integer()) {
              return std::string(k->name) + " must be an integer";
            }
            auto v = value.get<std::int64_t>();
            if (auto bad = check_range(*k, static_cast<double>(v))) {
              return bad;
            }
            next.*member = v;
          } else {
            auto v = value.get<double>();
            if (auto bad = check_range(*k, v)) {
              return bad;
            }
            next.*member = v;
          }
          return std::nullopt;
        },
        k->member);
    if (why) {
      return why;
    }
  }
  if (auto why = validate(next)) {
    return why;
  }
  cfg = std::move(next);
  return std::nullopt;
}

nlohmann::json to_json(const sim_config& cfg) {
  nlohmann::json j = {
      {"host", cfg.host},
      {"port", cfg.port},
      {"model_id", cfg.model_id},
      {"role", to_string(cfg.role)},
      {"runtime", to_string(cfg.runtime)},
      {"bootstrap_port", cfg.bootstrap_port},
      {"kv_connector", to_string(cfg.connector)},
      {"kv_engine_id", cfg.kv_engine_id},
      {"request_log_size", cfg.request_log_size},
      {"log_level", cfg.log_level},
      {"seed", cfg.seed},
      {"context_length", cfg.context_length},
      {"embedding_dim", cfg.embedding_dim},
      {"cache_block_tokens", cfg.cache_block_tokens},
      {"cache_capacity_blocks", cfg.cache_capacity_blocks},
  };
  for (const auto& k : runtime_knobs()) {
    std::visit([&](auto member) { j[std::string(k.name)] = cfg.*member; }, k.member);
  }
  return j;
}

latency_knobs latency(const sim_config& cfg) noexcept {
  return {cfg.ttft_base_ms, cfg.prefill_us_per_token, cfg.itl_ms, cfg.load_slowdown};
}

} // namespace troupe::sim

#include "apps/troupe-sim/info_api.hpp"

#include "apps/troupe-sim/api_common.hpp"
#include "apps/troupe-sim/sim_context.hpp"

namespace troupe::sim {

namespace {

constexpr std::string_view version = "troupe-sim 0.1.0";

nlohmann::json model_card(const sim_config& cfg, const worker_facts& facts) {
  // `owned_by` names the engine, which is how gateways (smg, Troupe) detect it.
  return {{"id", cfg.model_id},          {"object", "model"},
          {"created", facts.started_at}, {"owned_by", to_string(cfg.runtime)},
          {"root", cfg.model_id},        {"max_model_len", cfg.context_length}};
}

} // namespace

void serve_models(const sim_context& ctx, const worker_facts& facts, exchange& x) {
  respond(
      *x.reply, 200,
      dump({{"object", "list"}, {"data", nlohmann::json::array({model_card(ctx.config, facts)})}}));
}

void serve_model(const sim_context& ctx, const worker_facts& facts, exchange& x) {
  if (x.params.at(0) != ctx.config.model_id) {
    return respond_error(x, make_error(protocol::error_code::model_not_found,
                                       "The model `" + x.params[0] + "` does not exist.", "model"));
  }
  respond(*x.reply, 200, dump(model_card(ctx.config, facts)));
}

void serve_model_info(const sim_context& ctx, exchange& x) {
  const auto& cfg = ctx.config;
  respond(*x.reply, 200,
          dump({{"model_path", cfg.model_id},
                {"tokenizer_path", cfg.model_id},
                {"served_model_name", cfg.model_id},
                {"is_generation", true},
                {"preferred_sampling_params", nullptr},
                {"weight_version", "default"},
                {"has_image_understanding", false},
                {"has_audio_understanding", false},
                {"model_type", "troupe_sim"},
                {"architectures", {"TroupeSimForCausalLM"}},
                {"vocab_size", vocab_size},
                {"context_length", cfg.context_length}}));
}

void serve_server_info(const sim_context& ctx, const worker_facts& facts, exchange& x) {
  const auto& cfg = ctx.config;
  const auto mode = cfg.role == worker_role::regular ? "null" : to_string(cfg.role);
  nlohmann::json info = {
      {"model_path", cfg.model_id},
      {"tokenizer_path", cfg.model_id},
      {"served_model_name", cfg.model_id},
      {"host", cfg.host},
      {"port", facts.port},
      {"disaggregation_mode", mode},
      {"disaggregation_bootstrap_port",
       facts.bootstrap_port != 0 ? nlohmann::json(facts.bootstrap_port) : nlohmann::json()},
      {"page_size", cfg.cache_block_tokens},
      {"context_length", cfg.context_length},
      {"max_total_num_tokens", cfg.cache_capacity_blocks * cfg.cache_block_tokens},
      {"tp_size", 1},
      {"dp_size", 1},
      {"version", version},
      {"internal_states",
       nlohmann::json::array({{{"load", ctx.stats.active}, {"last_gen_throughput", 0.0}}})},
      {"sim", to_json(cfg)},
  };
  if (cfg.runtime == engine_runtime::vllm) {
    // As vLLM's `/server_info` shows its config: the KV connector a gateway must speak.
    const auto kv_role = cfg.role == worker_role::prefill  ? "kv_producer"
                         : cfg.role == worker_role::decode ? "kv_consumer"
                                                           : "kv_both";
    info["kv_transfer_config"] = {{"kv_connector", to_string(cfg.connector)},
                                  {"kv_role", kv_role},
                                  {"engine_id", cfg.kv_engine_id}};
  }
  respond(*x.reply, 200, dump(info));
}

void serve_load(const sim_context& ctx, exchange& x) {
  respond(*x.reply, 200,
          dump(nlohmann::json::array({{{"dp_rank", 0},
                                       {"num_reqs", ctx.stats.active},
                                       {"num_waiting_reqs", 0},
                                       {"num_tokens", ctx.stats.active_tokens}}})));
}

void serve_version(const sim_context& ctx, exchange& x) {
  if (ctx.config.runtime != engine_runtime::vllm) {
    return respond_error(x, make_error(protocol::error_code::not_found, "Not Found: /version"));
  }
  respond(*x.reply, 200, dump({{"version", version}}));
}

void serve_health(const sim_context& ctx, exchange& x) {
  const auto status = static_cast<unsigned>(ctx.config.health_status);
  if (status == 200) {
    return respond(*x.reply, 200, "");
  }
  respond_error(x,
                make_error(code_for_status(status),
                           "unhealthy (health_status=" + std::to_string(status) + ")"),
                status);
}

void serve_flush_cache(sim_context& ctx, exchange& x) {
  ctx.cache.clear();
  respond(*x.reply, 200, "Cache flushed.\n", "text/plain");
}

} // namespace troupe::sim

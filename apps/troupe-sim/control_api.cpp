#include "apps/troupe-sim/control_api.hpp"

#include "apps/troupe-sim/api_common.hpp"
#include "apps/troupe-sim/sim_context.hpp"

namespace troupe::sim {

void serve_sim_requests(const sim_context& ctx, exchange& x) {
  respond(*x.reply, 200, dump(ctx.requests.to_json()));
}

void serve_sim_clear_requests(sim_context& ctx, exchange& x) {
  ctx.requests.clear();
  respond(*x.reply, 200, R"({"status":"ok"})");
}

void serve_sim_config(const sim_context& ctx, exchange& x) {
  respond(*x.reply, 200, dump(to_json(ctx.config)));
}

void serve_sim_set_config(sim_context& ctx, exchange& x) {
  auto knobs = nlohmann::json::parse(x.req.body(), nullptr, false);
  if (knobs.is_discarded()) {
    return respond_error(
        x, make_error(protocol::error_code::invalid_json, "the body is not valid JSON"));
  }
  if (auto why = apply_knobs(ctx.config, knobs)) {
    return respond_error(x, bad_request(*why));
  }
  ctx.logger->info("configuration changed: {}", dump(knobs));
  respond(*x.reply, 200, dump(to_json(ctx.config)));
}

void serve_sim_stats(const sim_context& ctx, exchange& x) {
  respond(*x.reply, 200, dump(ctx.stats.to_json(ctx.cache, ctx.kv)));
}

} // namespace troupe::sim

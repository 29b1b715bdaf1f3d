#include "apps/troupe-bench/run_context.hpp"

namespace troupe::bench {

run_context::run_context(const bench_config& cfg, std::vector<target> targets,
                         std::unique_ptr<workload> source, std::string model)
    : cfg_(cfg), targets_(std::move(targets)), source_(std::move(source)) {
  opts_.model = std::move(model);
  opts_.stream = cfg.stream;
  opts_.max_tokens = cfg.max_tokens;
  opts_.ignore_eos = cfg.ignore_eos;
  opts_.temperature = cfg.temperature;
  common_headers_ = "Content-Type: application/json\r\nUser-Agent: troupe-bench\r\n";
  if (cfg.stream) {
    common_headers_ += "Accept: text/event-stream\r\n";
  }
  if (!cfg.api_key.empty()) {
    common_headers_ += "Authorization: Bearer " + cfg.api_key + "\r\n";
    common_headers_ += "x-api-key: " + cfg.api_key + "\r\n";
  }
  if (cfg.api == api_kind::messages) {
    common_headers_ += "anthropic-version: 2023-06-01\r\n";
  }
  for (const auto& h : cfg.headers) {
    common_headers_ += h + "\r\n";
  }
  replay_.resize(source_->slots() * targets_.size());
}

std::shared_ptr<const std::string> run_context::serialize(const prompt& p,
                                                          std::size_t target) const {
  auto body = make_body(cfg_.api, p, opts_);
  std::string headers = common_headers_;
  if (!cfg_.routing_key_header.empty() && !p.key.empty()) {
    headers += cfg_.routing_key_header + ": " + p.key + "\r\n";
  }
  return std::make_shared<const std::string>(
      serialize_post(targets_[target], path_of(cfg_.api), headers, body));
}

run_context::next_request run_context::next() {
  next_request r;
  r.target = cursor_.fetch_add(1, std::memory_order_relaxed) % targets_.size();
  if (source_->slots() > 0) {
    // A replayed prompt is serialized once per target; later sends share the bytes.
    std::lock_guard lock{source_mutex_};
    const auto slot = source_->next_slot();
    auto& cached = replay_[slot * targets_.size() + r.target];
    if (!cached) {
      cached = serialize(source_->at(slot), r.target);
    }
    r.bytes = cached;
    return r;
  }
  prompt p;
  {
    std::lock_guard lock{source_mutex_};
    p = source_->next();
  }
  r.bytes = serialize(p, r.target);
  return r;
}

bool run_context::claim() {
  if (cfg_.requests == 0) {
    return true;
  }
  return claimed_.fetch_add(1, std::memory_order_relaxed) < cfg_.requests;
}

void run_context::begin_stage() {
  claimed_.store(0);
  counters_.sent.store(0);
  counters_.done.store(0);
  counters_.failed.store(0);
  counters_.output_tokens.store(0);
}

std::string serialize_post(const target& t, std::string_view path, std::string_view headers,
                           std::string_view body) {
  std::string out;
  out.reserve(128 + headers.size() + body.size());
  out.append("POST ").append(t.path_prefix).append(path).append(" HTTP/1.1\r\nHost: ");
  out.append(t.authority).append("\r\n").append(headers);
  out.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n\r\n");
  out.append(body);
  return out;
}

} // namespace troupe::bench

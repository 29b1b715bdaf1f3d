#include "apps/troupe-bench/stage_stats.hpp"

#include <algorithm>

namespace troupe::bench {

namespace {

constexpr std::size_t kept_errors = 5;

double ms(bench_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

} // namespace

stage_stats::stage_stats(bench_clock::time_point window_start, const std::vector<std::string>& urls)
    : window_start_(window_start), last_end_(window_start) {
  for (const auto& u : urls) {
    targets_.emplace_back().counts.url = u;
  }
}

void stage_stats::add(const request_record& r) {
  if (!r.measured) {
    ++warmup_;
    return;
  }
  ++requests_;
  if (!any_end_ || r.end > last_end_) {
    last_end_ = r.end;
    any_end_ = true;
  }
  auto& target = targets_.at(r.target);
  auto& t = target.counts;
  ++t.requests;
  if (r.result != outcome::ok) {
    auto reason = r.result == outcome::http_error ? "http_" + std::to_string(r.status)
                                                  : std::string(to_string(r.result));
    ++failures_[reason];
    if (first_errors_.size() < kept_errors) {
      first_errors_.push_back(reason + " (" + t.url + "): " + r.detail);
    }
    return;
  }
  ++ok_;
  ++t.ok;
  const long out = r.output_tokens();
  output_tokens_ += out;
  if (r.counts.prompt_tokens >= 0) {
    reported_prompt_ = true;
    prompt_tokens_ += r.counts.prompt_tokens;
    t.prompt_tokens += r.counts.prompt_tokens;
  }
  if (r.counts.cached_tokens >= 0) {
    reported_cached_ = true;
    cached_tokens_ += r.counts.cached_tokens;
    t.cached_tokens += r.counts.cached_tokens;
  }
  e2e_.add(ms(r.end - r.scheduled));
  target.e2e.add(ms(r.end - r.scheduled));
  wait_.add(ms(r.sent - r.scheduled));
  if (r.streamed && r.token_events > 0) {
    ttft_.add(ms(r.first_token - r.scheduled));
    target.ttft.add(ms(r.first_token - r.scheduled));
    for (float g : r.gaps_ms) {
      itl_.add(g);
    }
    if (out > 1) {
      tpot_.add(ms(r.end - r.first_token) / static_cast<double>(out - 1));
    }
  }
}

void stage_stats::merge(const stage_stats& o) {
  if (o.any_end_ && (!any_end_ || o.last_end_ > last_end_)) {
    last_end_ = o.last_end_;
    any_end_ = true;
  }
  requests_ += o.requests_;
  ok_ += o.ok_;
  warmup_ += o.warmup_;
  for (const auto& [k, v] : o.failures_) {
    failures_[k] += v;
  }
  for (const auto& e : o.first_errors_) {
    if (first_errors_.size() < kept_errors) {
      first_errors_.push_back(e);
    }
  }
  output_tokens_ += o.output_tokens_;
  prompt_tokens_ += o.prompt_tokens_;
  cached_tokens_ += o.cached_tokens_;
  reported_prompt_ = reported_prompt_ || o.reported_prompt_;
  reported_cached_ = reported_cached_ || o.reported_cached_;
  ttft_.merge(o.ttft_);
  itl_.merge(o.itl_);
  tpot_.merge(o.tpot_);
  e2e_.merge(o.e2e_);
  wait_.merge(o.wait_);
  for (std::size_t i = 0; i < targets_.size() && i < o.targets_.size(); ++i) {
    auto& t = targets_[i].counts;
    const auto& from = o.targets_[i].counts;
    t.requests += from.requests;
    t.ok += from.ok;
    t.prompt_tokens += from.prompt_tokens;
    t.cached_tokens += from.cached_tokens;
    targets_[i].ttft.merge(o.targets_[i].ttft);
    targets_[i].e2e.merge(o.targets_[i].e2e);
  }
}

stage_summary stage_stats::summarize(const stage_spec& spec) const {
  stage_summary s;
  s.spec = spec;
  s.duration_s = any_end_ ? std::max(0.0, ms(last_end_ - window_start_) / 1000.0) : 0.0;
  s.requests = requests_;
  s.ok = ok_;
  s.failed = requests_ - ok_;
  s.warmup = warmup_;
  s.failures = failures_;
  s.first_errors = first_errors_;
  s.output_tokens = output_tokens_;
  s.prompt_tokens = reported_prompt_ ? prompt_tokens_ : -1;
  s.cached_tokens = reported_cached_ ? cached_tokens_ : -1;
  if (s.duration_s > 0) {
    s.request_rate = static_cast<double>(ok_) / s.duration_s;
    s.output_rate = static_cast<double>(output_tokens_) / s.duration_s;
    s.input_rate = reported_prompt_ ? static_cast<double>(prompt_tokens_) / s.duration_s : 0;
  }
  if (reported_prompt_ && reported_cached_ && prompt_tokens_ > 0) {
    s.cache_hit_rate = static_cast<double>(cached_tokens_) / static_cast<double>(prompt_tokens_);
  }
  s.ttft = ttft_.summarize();
  s.itl = itl_.summarize();
  s.tpot = tpot_.summarize();
  s.e2e = e2e_.summarize();
  s.wait = wait_.summarize();
  for (const auto& t : targets_) {
    s.targets.push_back(t.counts);
    s.targets.back().ttft = t.ttft.summarize();
    s.targets.back().e2e = t.e2e.summarize();
  }
  return s;
}

} // namespace troupe::bench

#include "cluster/refusals.hpp"

#include "services/metrics.hpp"

namespace troupe::cluster {

std::string_view to_string(refusal r) noexcept {
  switch (r) {
  case refusal::no_sender:
    return "no_sender";
  case refusal::not_member:
    return "not_member";
  case refusal::too_large:
    return "too_large";
  case refusal::frame_too_large:
    return "frame_too_large";
  case refusal::routed_message:
    return "routed_message";
  case refusal::named_receiver:
    return "named_receiver";
  case refusal::malformed:
    return "malformed";
  case refusal::remote_exit:
    return "remote_exit";
  case refusal::unexpected:
    return "unexpected";
  case refusal::sync_rate:
    return "sync_rate";
  case refusal::name_clash:
    return "name_clash";
  case refusal::future_version:
    return "future_version";
  case refusal::duplicate_name:
    return "duplicate_name";
  }
  return "unexpected";
}

std::array<refusal, refusal_count> all_refusals() noexcept {
  std::array<refusal, refusal_count> out{};
  for (std::size_t i = 0; i < refusal_count; ++i) {
    out[i] = static_cast<refusal>(i);
  }
  return out;
}

void refusal_counts::add(refusal r, std::uint64_t n) {
  if (n == 0) {
    return;
  }
  counts_[static_cast<std::size_t>(r)].fetch_add(n, std::memory_order_relaxed);
  if (metrics_) {
    metrics_->on_cluster_refused(to_string(r), n);
  }
}

std::uint64_t refusal_counts::total() const noexcept {
  std::uint64_t sum = 0;
  for (auto& c : counts_) {
    sum += c.load(std::memory_order_relaxed);
  }
  return sum;
}

} // namespace troupe::cluster

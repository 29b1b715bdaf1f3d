#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace troupe::services {
class metrics;
} // namespace troupe::services

namespace troupe::cluster {

/// Why the cluster layer refused something a peer (or a stranger) sent. Each one is a label of
/// `troupe_cluster_refused_total{reason}` and a counter of the `cluster_node` in `/admin/actors`.
enum class refusal : std::uint8_t {
  no_sender,       ///< A message that names no sender.
  not_member,      ///< Gossip from an actor that is not a verified member.
  too_large,       ///< A gossip message over `--cluster-max-message-bytes`.
  frame_too_large, ///< A BASP frame claiming a payload over the limit (connection closed).
  routed_message,  ///< A BASP message relayed for a third node (connection closed).
  named_receiver,  ///< A BASP message to a named system actor other than CAF's spawn server.
  malformed,       ///< Gossip that is not a cluster message this node can read.
  remote_exit,     ///< An exit message from outside (the endpoint ignores it).
  unexpected,      ///< Any other message at the cluster endpoint.
  sync_rate,       ///< A whole-registry sync sooner after the last one than allowed.
  name_clash,      ///< A peer calling itself by this node's name.
  future_version,  ///< A record versioned too far ahead of this node's clock.
  duplicate_name,  ///< A second live node using the name of a member (another incarnation).
};

inline constexpr std::size_t refusal_count = 13;

/// The label of a reason, e.g. `not_member`.
std::string_view to_string(refusal r) noexcept;

/// Every reason, in declaration order.
std::array<refusal, refusal_count> all_refusals() noexcept;

/// Refusals counted so far. Shared by the cluster endpoint and the node actor (each on its own
/// thread): atomic counters, and the metric beside them.
class refusal_counts {
public:
  /// Counts into `metrics` too (when not null).
  explicit refusal_counts(std::shared_ptr<services::metrics> metrics = nullptr)
      : metrics_(std::move(metrics)) {}

  /// One more refusal (or `n`) for `r`.
  void add(refusal r, std::uint64_t n = 1);

  /// How many refusals for `r` so far.
  std::uint64_t get(refusal r) const noexcept {
    return counts_[static_cast<std::size_t>(r)].load(std::memory_order_relaxed);
  }

  /// All of them.
  std::uint64_t total() const noexcept;

private:
  std::shared_ptr<services::metrics> metrics_;
  std::array<std::atomic<std::uint64_t>, refusal_count> counts_{};
};

} // namespace troupe::cluster

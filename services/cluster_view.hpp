#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace troupe::services {

/// One cluster member as this node last saw it.
struct member_status {
  std::string name;            ///< Node name (`--node-name`).
  std::string api_address;     ///< Where its API listens, as it announced.
  std::string cluster_address; ///< Where its cluster port is reached.
  std::string state;           ///< `up`, `suspect` or `down`.
  bool self = false;           ///< This node.
  std::uint64_t incarnation = 0;
  std::chrono::steady_clock::time_point last_heard{}; ///< Last message from it (epoch: never).
  std::chrono::system_clock::time_point since{};      ///< When `state` last changed.
  std::string reason;                 ///< Why it is down (connection closed, timeout, left).
  std::uint64_t registry_version = 0; ///< Its snapshot version, as last reported.
  std::uint64_t shared_version = 0;   ///< Its highest record version, as last reported.
  std::uint64_t registry_digest = 0;  ///< Its registry digest, as last reported.
  std::uint32_t workers = 0;          ///< Live workers it knows.
  std::map<std::string, int> loads;   ///< Its requests in flight per worker id (up members).
};

/// Two live nodes using one name: the cluster refuses the second (docs/cluster.md).
struct name_conflict {
  std::string name;                              ///< The name both use.
  std::string member_address;                    ///< Cluster address of the one taken as member.
  std::string refused_address;                   ///< Cluster address of the one refused.
  std::chrono::system_clock::time_point since{}; ///< When this node saw it.
};

/// The cluster as this node sees it: an immutable value the cluster node publishes.
struct cluster_status {
  bool enabled = false;                      ///< False: the node runs alone (no `--cluster-port`).
  std::string self;                          ///< This node's name.
  std::string transport;                     ///< Cluster links: `tls` or `plain` (empty: alone).
  std::uint64_t registry_digest = 0;         ///< This node's registry digest.
  std::vector<member_status> members;        ///< This node first, then the peers by name.
  std::vector<name_conflict> name_conflicts; ///< Nodes refused for a name in use.
};

/// The current cluster status, readable from any thread (endpoints, metrics) without a
/// message. The cluster node is its only writer.
class cluster_view {
public:
  cluster_view() : current_(std::make_shared<const cluster_status>()) {}

  std::shared_ptr<const cluster_status> get() const {
    std::lock_guard guard{mx_};
    return current_;
  }

  void set(std::shared_ptr<const cluster_status> next) {
    std::lock_guard guard{mx_};
    current_ = std::move(next);
  }

private:
  mutable std::mutex mx_;
  std::shared_ptr<const cluster_status> current_;
};

} // namespace troupe::services

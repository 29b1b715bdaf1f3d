#include "cluster/peer_endpoint.hpp"

#include "services/logs.hpp"

#include <caf/actor_cast.hpp>
#include <caf/exit_reason.hpp>
#include <caf/make_actor.hpp>
#include <caf/monitorable_actor.hpp>
#include <caf/send.hpp>

namespace troupe::cluster {

namespace {

/// The gate: CAF calls `enqueue` on whatever thread delivers a message (BASP's workers, for
/// what peers send), so it reads only what is immutable or atomic.
class peer_gate final : public caf::monitorable_actor {
public:
  peer_gate(caf::actor_config& cfg, node_actor node, std::size_t max_bytes,
            std::shared_ptr<refusal_counts> refusals, std::shared_ptr<endpoint_switch> off)
      : caf::monitorable_actor(cfg), node_(caf::actor_cast<caf::actor_addr>(node)),
        max_bytes_(max_bytes), refusals_(std::move(refusals)), off_(std::move(off)) {}

  const char* name() const override { return "cluster_endpoint"; }

  void enqueue(caf::mailbox_element_ptr what, caf::execution_unit* host) override {
    if (!what || off_->closed.load(std::memory_order_relaxed)) {
      return;
    }
    auto& content = what->content();
    if (content.match_elements<gossip_atom, std::string>()) {
      return pass_on(std::move(what));
    }
    if (content.match_elements<caf::exit_msg>()) {
      refuse(refusal::remote_exit, "an exit message");
    } else {
      refuse(refusal::unexpected, "a message of a kind peers do not send");
    }
    if (what->mid.is_request()) {
      bounce(what, caf::sec::unexpected_message);
    }
  }

private:
  void pass_on(caf::mailbox_element_ptr what) {
    auto sender = caf::actor_cast<peer_actor>(what->sender);
    if (!sender) {
      return refuse(refusal::no_sender, "a message without a sender");
    }
    auto msg = what->move_content_to_message();
    auto& bytes = msg.get_mutable_as<std::string>(1);
    if (bytes.size() > max_bytes_) {
      return refuse(refusal::too_large, "a message over --cluster-max-message-bytes");
    }
    if (auto node = caf::actor_cast<node_actor>(node_)) {
      caf::anon_send(node, gossip_atom_v, std::move(sender), std::move(bytes));
    }
  }

  void refuse(refusal r, const char* what) {
    refusals_->add(r);
    auto n = refusals_->get(r);
    if (n <= 5 || n % 1000 == 0) {
      logs::cluster().warn("refused {} ({}, {} so far)", what, to_string(r), n);
    }
  }

  caf::actor_addr node_; ///< Weak: the node holds this gate, not the other way round.
  std::size_t max_bytes_;
  std::shared_ptr<refusal_counts> refusals_;
  std::shared_ptr<endpoint_switch> off_;
};

} // namespace

peer_actor make_peer_endpoint(caf::actor_system& sys, node_actor node,
                              std::size_t max_message_bytes,
                              std::shared_ptr<refusal_counts> refusals,
                              std::shared_ptr<endpoint_switch> off) {
  caf::actor_config cfg;
  auto gate = caf::make_actor<peer_gate, caf::strong_actor_ptr>(
      sys.next_actor_id(), sys.node(), &sys, cfg, std::move(node), max_message_bytes,
      std::move(refusals), std::move(off));
  return caf::actor_cast<peer_actor>(std::move(gate));
}

} // namespace troupe::cluster

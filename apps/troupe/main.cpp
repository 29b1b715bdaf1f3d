// troupe: one gateway node. Parses flags, builds the actor system on the io threads, runs.

#include "actors/errors.hpp"
#include "apps/troupe/flags.hpp"
#include "apps/troupe/security.hpp"
#include "cluster/cluster.hpp"
#include "gateway/asio_scheduler.hpp"
#include "gateway/gateway.hpp"
#include "protocol/type_ids.hpp"
#include "services/logs.hpp"
#include "transport/io_loop.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <iostream>
#include <memory>
#include <thread>

namespace {

/// `--busy-poll-us`, but, unless the flag was given, off under a CPU quota (polling without
/// work spends the quota the requests need) and where the kernel polls idle CPUs itself (a KVM
/// guest's haltpoll: ours would only add CPU time).
std::chrono::microseconds busy_poll_budget(const troupe::actors::gateway_config& cfg) {
  if (cfg.busy_poll.count() == 0 || cfg.busy_poll_given) {
    return cfg.busy_poll;
  }
  if (auto quota = troupe::transport::own_cpu_quota()) {
    troupe::logs::gateway().info(
        "busy polling off: this process runs under a CPU quota of {:.2f} CPUs "
        "(--busy-poll-us turns it on)",
        *quota);
    return {};
  }
  if (troupe::transport::own_kernel_halt_polls()) {
    troupe::logs::gateway().info("busy polling off: the kernel polls idle CPUs itself (cpuidle "
                                 "haltpoll; --busy-poll-us turns it on)");
    return {};
  }
  troupe::logs::gateway().info("busy polling: io threads poll for work before they sleep, "
                               "for as long as their idle spells call for, up to {} us "
                               "(--busy-poll-us)",
                               cfg.busy_poll.count());
  return cfg.busy_poll;
}

} // namespace

int main(int argc, char** argv) {
  using namespace troupe;
  int exit_code = 0;
  auto cfg = apps::parse_flags(argc, argv, exit_code);
  if (!cfg) {
    return exit_code;
  }
  logs::configure(cfg->log_level, cfg->log_json);
  apps::raise_fd_limit(cfg->max_connections);
  apps::warn_exposed_listeners(*cfg);

  boost::asio::io_context ioc{static_cast<int>(cfg->io_threads)};
  caf::actor_system_config sys_cfg;
  sys_cfg.add_message_types<caf::id_block::troupe>();
  sys_cfg.add_error_category(caf::atom("troupe"), actors::render_caf_error);
  gateway::asio_scheduler scheduler{sys_cfg, ioc};
  // With a cluster port, CAF's middleman joins the system: its multiplexer thread runs the
  // network brokers; every other actor (the cluster node included) still runs on the io threads.
  cluster::configure(sys_cfg, *cfg);
  int rc = 0;
  {
    // The flags were checked, but CAF's modules may still refuse their settings: by throwing
    // from the constructor, with threads of the half-built system left running. Exit at once.
    std::unique_ptr<caf::actor_system> system;
    try {
      system = std::make_unique<caf::actor_system>(sys_cfg);
    } catch (const std::exception& e) {
      logs::gateway().critical("cannot start the actor system: {}", e.what());
      logs::flush();
      std::_Exit(2);
    }
    auto& sys = *system;
    gateway::gateway node{sys, ioc, *cfg};
    std::unique_ptr<cluster::runtime> cl;
    try {
      node.start();
      if (cluster::wanted(*cfg)) {
        cl = std::make_unique<cluster::runtime>(sys, node.services());
        cl->start();
      }
    } catch (const std::exception& e) {
      // Exit at once and non-zero (a supervisor must see the failure): the actors already
      // started are not waited for, as none of them has any work yet.
      logs::gateway().critical("{}", e.what());
      scheduler.hand_back();
      sys.await_actors_before_shutdown(false);
      logs::flush();
      return 1;
    }
    boost::asio::signal_set signals{ioc, SIGINT, SIGTERM};
    signals.async_wait([&](boost::system::error_code ec, int sig) {
      if (ec) {
        return;
      }
      logs::gateway().info("signal {}: shutting down", sig);
      // Leave the cluster first: peers drop this node's share at once, and the state file is
      // written while the registry still answers.
      if (cl) {
        cl->stop();
      }
      node.shutdown([&ioc] { ioc.stop(); });
    });
    transport::busy_poll_options poll{busy_poll_budget(*cfg), {}};
    // The poll adapts between 0 and the budget to the idle spells each io thread sees.
    poll.adaptive = true;
    // Writes are deferred to the end of a pass on the one io thread; with several, a session's
    // handlers run on a strand that a deferred write would leave.
    poll.send_batch = cfg->io_threads == 1 ? cfg->send_batch : 0;
    auto io_stats = node.services()->io; // on /metrics and /admin/actors
    io_stats->budget_us = poll.budget.count();
    io_stats->send_batch = static_cast<std::int64_t>(poll.send_batch);
    std::vector<std::thread> threads;
    for (unsigned i = 1; i < cfg->io_threads; ++i) {
      threads.emplace_back([&] { transport::run_io_loop(ioc, poll, *io_stats); });
    }
    transport::run_io_loop(ioc, poll, *io_stats);
    for (auto& t : threads) {
      t.join();
    }
    scheduler.hand_back();
    sys.await_actors_before_shutdown(false);
  }
  logs::gateway().info("troupe stopped");
  logs::flush(); // the info lines still buffered (logs::flush_interval)
  return rc;
}

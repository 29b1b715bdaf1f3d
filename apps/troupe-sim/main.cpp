// troupe-sim: a simulated SGLang/vLLM worker for tests, benchmarks and demos.

#include "apps/troupe-sim/sim_config.hpp"
#include "apps/troupe-sim/simulator.hpp"

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

int main(int argc, char** argv) {
  using namespace troupe::sim;
  sim_config cfg;
  CLI::App app{"troupe-sim: a simulated inference worker (SGLang-compatible HTTP APIs, a "
               "latency model, a prefix cache, PD roles and failure injection)",
               "troupe-sim"};
  add_flags(app, cfg);
  CLI11_PARSE(app, argc, argv);
  if (auto why = validate(cfg)) {
    std::fprintf(stderr, "troupe-sim: %s\n", why->c_str());
    return 2;
  }

  auto log = spdlog::stdout_color_st("troupe-sim");
  log->set_level(spdlog::level::from_str(cfg.log_level));
  log->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ [%n] %v");

  boost::asio::io_context ioc{1};
  simulator sim{ioc, cfg, log};
  if (auto ec = sim.start()) {
    log->critical("cannot listen on {}:{} (bootstrap {}): {}", cfg.host, cfg.port,
                  cfg.bootstrap_port, ec.message());
    return 1;
  }
  log->info("serving {} as a {} worker on {}:{}{}", cfg.model_id, to_string(cfg.role), cfg.host,
            sim.port(),
            cfg.role == worker_role::prefill
                ? " (bootstrap port " + std::to_string(sim.bootstrap_port()) + ")"
                : std::string());

  boost::asio::signal_set signals{ioc, SIGINT, SIGTERM};
  signals.async_wait([&](boost::system::error_code ec, int signo) {
    if (ec) {
      return;
    }
    log->info("signal {}: shutting down", signo);
    sim.stop();
    ioc.stop();
  });
  ioc.run();
  return 0;
}

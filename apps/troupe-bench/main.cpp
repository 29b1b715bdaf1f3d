// troupe-bench: a load generator for LLM gateways (OpenAI chat, Anthropic messages, Responses).

#include "apps/troupe-bench/bench_config.hpp"
#include "apps/troupe-bench/jsonl_workload.hpp"
#include "apps/troupe-bench/model_discovery.hpp"
#include "apps/troupe-bench/plot.hpp"
#include "apps/troupe-bench/report.hpp"
#include "apps/troupe-bench/stage_runner.hpp"

#include <CLI/CLI.hpp>
#include <csignal>
#include <fstream>
#include <iostream>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

namespace {

using namespace troupe::bench;

// Thousands of concurrent streams need as many sockets: take the hard limit.
void raise_open_files() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
}

std::unique_ptr<workload> make_workload(const bench_config& cfg, std::string& why) {
  if (cfg.prompts_file.empty()) {
    return std::make_unique<shared_prefix_workload>(cfg.shape);
  }
  std::ifstream in{cfg.prompts_file};
  if (!in) {
    why = "--prompts " + cfg.prompts_file + ": cannot open";
    return nullptr;
  }
  return jsonl_workload::read(in, cfg.prompts_file, why);
}

bool write_json(const std::string& path, const nlohmann::json& report) {
  if (path == "-") {
    std::cout << report.dump(2) << "\n";
    return true;
  }
  std::ofstream out{path};
  out << report.dump(2) << "\n";
  return static_cast<bool>(out);
}

} // namespace

int main(int argc, char** argv) {
  bench_config cfg;
  CLI::App app{"troupe-bench: drives OpenAI chat, Anthropic messages or Responses at a fixed "
               "arrival rate or concurrency and reports TTFT, inter-token and end-to-end "
               "latency and throughput",
               "troupe-bench"};
  add_flags(app, cfg);
  CLI11_PARSE(app, argc, argv);
  if (auto why = validate(cfg)) {
    std::fprintf(stderr, "troupe-bench: %s\n", why->c_str());
    return 2;
  }
  raise_open_files();

  std::vector<target> targets;
  for (const auto& url : cfg.urls) {
    target t;
    std::string why;
    if (!resolve_target(url, t, why)) {
      std::fprintf(stderr, "troupe-bench: --url %s: %s\n", url.c_str(), why.c_str());
      return 1;
    }
    targets.push_back(std::move(t));
  }
  std::string model = cfg.model;
  if (model.empty()) {
    std::string why;
    auto found = discover_model(targets.front(), cfg.api_key, why);
    if (!found) {
      std::fprintf(stderr, "troupe-bench: %s\n", why.c_str());
      return 1;
    }
    model = *found;
  }
  std::string why;
  auto source = make_workload(cfg, why);
  if (!source) {
    std::fprintf(stderr, "troupe-bench: %s\n", why.c_str());
    return 1;
  }

  // Signals go to the main thread's sigtimedwait only: block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  run_context ctx{cfg, std::move(targets), std::move(source), model};
  run_info info;
  info.api = std::string(to_string(cfg.api));
  info.stream = cfg.stream;
  info.model = model;
  info.urls = cfg.urls;
  info.workload = ctx.source().describe();
  info.arrival = cfg.rates.empty() ? "closed loop"
                                   : (cfg.arrival == arrival_kind::poisson ? "poisson arrivals"
                                                                           : "uniform arrivals");
  info.max_tokens = cfg.max_tokens;
  info.threads = cfg.threads;
  // The report goes to stdout, unless stdout carries the JSON: then to stderr.
  std::ostream& text = cfg.json_path == "-" ? std::cerr : std::cout;
  print_header(text, info);
  text.flush();

  const bool terminal = ::isatty(STDERR_FILENO) == 1;
  progress_line progress{stderr, cfg.progress == "on" || (cfg.progress == "auto" && terminal),
                         terminal};
  std::vector<stage_summary> stages;
  bool interrupted = false;
  std::uint64_t seed = cfg.shape.seed;
  for (const auto& spec : stages_of(cfg)) {
    auto result = run_stage(ctx, spec, progress, signals, seed++);
    print_stage(text, result.summary);
    text.flush();
    stages.push_back(std::move(result.summary));
    if (result.interrupted) {
      interrupted = true;
      break;
    }
  }
  if (stages.size() > 1) {
    print_overview(text, stages);
  }
  int code = interrupted ? 130 : 0;
  // A stage whose every request failed measured nothing: its latencies are empty, its rates 0.
  // Said on stderr and in the exit code, so that a script does not plot an outage as a result.
  for (const auto& s : stages) {
    if (s.requests > 0 && s.ok == 0) {
      std::fprintf(stderr, "troupe-bench: %s: every request failed (%zu)\n", s.spec.label().c_str(),
                   s.requests);
      code = code == 0 ? 3 : code;
    }
  }
  if (!cfg.json_path.empty() && !write_json(cfg.json_path, to_json(info, stages))) {
    std::fprintf(stderr, "troupe-bench: --json %s: cannot write\n", cfg.json_path.c_str());
    code = 1;
  }
  if (!cfg.png_path.empty()) {
    auto title = info.api + (info.stream ? " streamed" : "") + ", " + info.workload;
    if (auto failed = draw_plot(plot_script(stages, cfg.png_path, title))) {
      std::fprintf(stderr, "troupe-bench: --png %s: %s\n", cfg.png_path.c_str(), failed->c_str());
      code = 1;
    }
  }
  return code;
}

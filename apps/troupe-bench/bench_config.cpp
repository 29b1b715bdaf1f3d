#include "apps/troupe-bench/bench_config.hpp"

#include "protocol/url.hpp"

#include <CLI/CLI.hpp>
#include <cmath>
#include <sstream>

namespace troupe::bench {

void add_flags(CLI::App& app, bench_config& cfg) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  // -- targets --
  app.add_option("--url", cfg.urls,
                 "Base URL of a gateway (repeat or comma-separate several: requests go round "
                 "robin, as from a load balancer)")
      ->required()
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option_function<std::string>(
         "--api", [&cfg](const std::string& v) { cfg.api = *parse_api(v); },
         "chat (OpenAI /v1/chat/completions), messages (Anthropic /v1/messages) or responses "
         "(OpenAI /v1/responses)")
      ->check(CLI::IsMember({"chat", "messages", "responses"}))
      ->default_str("chat");
  app.add_option("--model", cfg.model,
                 "Model to ask for; default: the first model of the first URL's /v1/models");
  app.add_option("--api-key", cfg.api_key,
                 "Sent as Authorization: Bearer and x-api-key (or set TROUPE_BENCH_API_KEY, "
                 "which keeps it out of the process list)")
      ->envname("TROUPE_BENCH_API_KEY");
  app.add_option("--header", cfg.headers, "Extra header `Name: value` on every request (repeat)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--routing-key-header", cfg.routing_key_header,
                 "Send each prompt's user id in this header (e.g. x-session-id, for "
                 "consistent_hash)");
  // -- requests --
  app.add_flag("--stream,!--no-stream", cfg.stream,
               "Stream responses (SSE; measures TTFT and inter-token latency) or not")
      ->capture_default_str();
  app.add_option("--max-tokens", cfg.max_tokens, "Output tokens asked per request")
      ->check(CLI::Range(1L, 10'000'000L))
      ->capture_default_str();
  app.add_flag("--ignore-eos", cfg.ignore_eos,
               "Ask for exactly --max-tokens tokens (SGLang/vLLM ignore_eos)");
  app.add_option("--temperature", cfg.temperature, "Sampling temperature sent with each request");
  // -- load --
  app.add_option("--rate", cfg.rates,
                 "Arrival rate in requests/s, open loop (a list runs one stage per rate: the "
                 "latency-vs-load curve)")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--concurrency", cfg.concurrencies,
                 "Requests kept in flight, closed loop (a list runs one stage per value)")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option_function<std::string>(
         "--arrival",
         [&cfg](const std::string& v) {
           cfg.arrival = v == "uniform" ? arrival_kind::uniform : arrival_kind::poisson;
         },
         "Gaps between arrivals at --rate: poisson (exponential) or uniform (equal)")
      ->check(CLI::IsMember({"poisson", "uniform"}))
      ->default_str("poisson");
  app.add_option("--duration", cfg.duration_s,
                 "Seconds of arrivals per stage (in-flight requests then finish); 0: no limit")
      ->check(CLI::Range(0.0, 1e7))
      ->capture_default_str();
  app.add_option("--requests", cfg.requests, "Requests per stage; 0: no limit")
      ->capture_default_str();
  app.add_option("--warmup", cfg.warmup_s,
                 "Seconds at the start of each stage whose requests are not measured")
      ->check(CLI::Range(0.0, 1e7))
      ->capture_default_str();
  app.add_option("--timeout", cfg.timeout_s, "Deadline of a whole request, in seconds")
      ->check(CLI::Range(0.001, 1e7))
      ->capture_default_str();
  app.add_option("--max-connections", cfg.max_connections,
                 "Connections per URL; an arrival finding all busy waits (its wait counts in "
                 "its latency)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24))
      ->capture_default_str();
  app.add_option("--threads", cfg.threads, "Event-loop threads sharing the load")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  // -- workload --
  app.add_option("--prompts", cfg.prompts_file,
                 "JSONL prompt file (docs/bench.md); without it the shared-prefix generator "
                 "makes the prompts")
      ->check(CLI::ExistingFile);
  auto& s = cfg.shape;
  app.add_option("--system-prompts", s.system_prompts,
                 "Generator: distinct shared system prompts (0: none)")
      ->check(CLI::Range(0, 1'000'000))
      ->capture_default_str();
  app.add_option("--system-prompt-tokens", s.system_prompt_tokens,
                 "Generator: words per system prompt")
      ->check(CLI::Range(1, 10'000'000))
      ->capture_default_str();
  app.add_option("--users", s.users, "Generator: conversations per round")
      ->check(CLI::Range(1, 100'000'000))
      ->capture_default_str();
  app.add_option("--turns", s.turns, "Generator: user turns per conversation")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  app.add_option("--user-tokens", s.user_tokens, "Generator: words per user turn")
      ->check(CLI::Range(1, 10'000'000))
      ->capture_default_str();
  app.add_option("--assistant-tokens", s.assistant_tokens,
                 "Generator: words per earlier assistant answer in the history")
      ->check(CLI::Range(1, 10'000'000))
      ->capture_default_str();
  app.add_option("--popularity-skew", s.skew,
                 "Generator: Zipf exponent of system prompt popularity (0: uniform; 1: the "
                 "first prompt twice as popular as the second)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  app.add_option("--seed", s.seed, "Seed of the generator and of the arrival times")
      ->capture_default_str();
  // -- output --
  app.add_option("--json", cfg.json_path, "Write the report as JSON to this file (- : stdout)");
  app.add_option("--png", cfg.png_path,
                 "Draw latency (TTFT, end-to-end) against throughput to this PNG (gnuplot)");
  app.add_option("--progress", cfg.progress,
                 "Progress on stderr: auto (when stderr is a terminal), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
}

std::optional<std::string> validate(const bench_config& cfg) {
  if (cfg.urls.empty()) {
    return "--url: at least one URL";
  }
  for (const auto& u : cfg.urls) {
    std::string why;
    auto url = protocol::parse_base_url(u, why);
    if (!url) {
      return "--url " + u + ": " + why;
    }
    if (url->scheme != "http") {
      return "--url " + u +
             ": only http:// is supported (put the TLS terminator's plain "
             "port in front, or benchmark the plain listener)";
    }
  }
  if (!cfg.rates.empty() && !cfg.concurrencies.empty()) {
    return "--rate and --concurrency exclude each other (open or closed loop)";
  }
  for (double r : cfg.rates) {
    if (!(r > 0) || !std::isfinite(r)) {
      return "--rate: every rate must be a positive number of requests/s";
    }
  }
  for (auto c : cfg.concurrencies) {
    if (c < 1) {
      return "--concurrency: every value must be at least 1";
    }
  }
  if (cfg.duration_s <= 0 && cfg.requests == 0) {
    return "a stage needs an end: --duration or --requests";
  }
  if (cfg.duration_s > 0 && cfg.warmup_s >= cfg.duration_s) {
    return "--warmup must be shorter than --duration";
  }
  for (const auto& h : cfg.headers) {
    auto colon = h.find(':');
    if (colon == std::string::npos || colon == 0 || h.find_first_of("\r\n") != std::string::npos) {
      return "--header " + h + ": expected `Name: value`";
    }
  }
  if (cfg.routing_key_header.find_first_of(":\r\n ") != std::string::npos) {
    return "--routing-key-header: a header name";
  }
  if (!cfg.png_path.empty() && cfg.png_path == cfg.json_path) {
    return "--png and --json name the same file";
  }
  return std::nullopt;
}

std::string stage_spec::label() const {
  std::ostringstream out;
  if (open_loop) {
    out << "rate " << rate << "/s";
  } else {
    out << "concurrency " << concurrency;
  }
  return out.str();
}

std::vector<stage_spec> stages_of(const bench_config& cfg) {
  std::vector<stage_spec> out;
  for (double r : cfg.rates) {
    out.push_back({true, r, 0});
  }
  for (auto c : cfg.concurrencies) {
    out.push_back({false, 0, c});
  }
  if (out.empty()) {
    out.push_back({false, 0, 1});
  }
  return out;
}

} // namespace troupe::bench

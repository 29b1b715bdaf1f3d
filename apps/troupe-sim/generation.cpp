#include "apps/troupe-sim/generation.hpp"

#include "apps/troupe-sim/api_common.hpp"
#include "apps/troupe-sim/kv_fetch.hpp"
#include "apps/troupe-sim/latency_model.hpp"
#include "apps/troupe-sim/pd_rendezvous.hpp"
#include "apps/troupe-sim/sim_context.hpp"
#include "protocol/sse.hpp"

#include <algorithm>

namespace troupe::sim {

namespace {

using namespace std::chrono_literals;

// Bytes of a tool call's arguments per token.
constexpr std::size_t tool_piece_bytes = 4;

// Where the tokens of `text` end, cutting every few bytes but never inside a UTF-8 character.
std::vector<std::size_t> cut_points(std::string_view text) {
  std::vector<std::size_t> cuts;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t next = std::min(at + tool_piece_bytes, text.size());
    while (next < text.size() && (static_cast<unsigned char>(text[next]) & 0xC0) == 0x80) {
      ++next;
    }
    cuts.push_back(next);
    at = next;
  }
  return cuts;
}

} // namespace

/// Frames the events of a streamed response, sends those of one instant as one chunk, and
/// drops the connection after `drop_after` events when asked to.
class generation::stream_sink final : public event_sink {
public:
  stream_sink(std::shared_ptr<sim_reply> reply, std::int64_t drop_after)
      : reply_(std::move(reply)), drop_after_(drop_after) {}

  void event(std::string_view data, std::string_view name) override {
    if (dropped_) {
      return;
    }
    if (!name.empty()) {
      pending_.append("event: ").append(name).push_back('\n');
    }
    pending_.append("data: ").append(data).append("\n\n");
    ++sent_;
    if (drop_after_ >= 0 && sent_ >= static_cast<std::size_t>(drop_after_)) {
      flush();
      dropped_ = true;
      reply_->abort();
    }
  }

  std::size_t sent() const noexcept override { return sent_; }

  /// Sends the events held back.
  void flush() {
    if (!pending_.empty() && !dropped_) {
      reply_->write_chunk(std::exchange(pending_, {}));
    }
  }

  /// The connection was dropped on purpose.
  bool dropped() const noexcept { return dropped_; }

private:
  std::shared_ptr<sim_reply> reply_;
  std::int64_t drop_after_;
  std::string pending_;
  std::size_t sent_ = 0;
  bool dropped_ = false;
};

template <class F> void generation::guarded(F&& f) noexcept {
  try {
    f();
  } catch (const std::exception& e) {
    // A bug: drop the connection rather than let the exception into the io_context.
    ctx_->logger->error("{}: generation failed: {}", st_.id, e.what());
    if (!ended_) {
      end();
      if (reply_) {
        reply_->abort();
      }
    }
  }
}

std::shared_ptr<generation> generation::start(std::shared_ptr<sim_context> ctx, api_family& family,
                                              gen_request req, std::shared_ptr<sim_reply> reply,
                                              inflight token) {
  auto g = std::make_shared<generation>(std::move(ctx), family, std::move(req), std::move(reply),
                                        std::move(token));
  g->run();
  return g;
}

generation::generation(std::shared_ptr<sim_context> ctx, api_family& family, gen_request req,
                       std::shared_ptr<sim_reply> reply, inflight token)
    : ctx_(std::move(ctx)), family_(family), reply_(std::move(reply)), token_(std::move(token)),
      timer_(ctx_->ioc) {
  st_.req = std::move(req);
  st_.role = ctx_->config.role;
  st_.created = unix_now();
  st_.started = std::chrono::steady_clock::now();
}

generation::~generation() = default;

void generation::run() {
  plan_sequences();
  admit_prompts();
  tokens_held_ = st_.prompt_tokens();
  for (const auto& s : st_.seqs) {
    tokens_held_ += s.target;
  }
  ctx_->stats.active_tokens += tokens_held_;
  family_.begin(st_, *ctx_);
  if (reply_) {
    reply_->on_disconnect([weak = weak_from_this()] {
      if (auto self = weak.lock()) {
        self->abandon();
      }
    });
  }
  if (st_.req.kv && st_.req.kv->do_remote_prefill && ctx_->config.runtime == engine_runtime::vllm) {
    // vLLM loads the remote KV before it schedules the request: no byte before the fetch.
    return start_kv_fetch();
  }
  respond_or_stream();
}

void generation::start_kv_fetch() {
  const auto& kv = *st_.req.kv;
  kv_source src;
  src.engine_id = kv.remote_engine_id.value_or("");
  src.block_keys = ctx_->cache.block_keys(st_.req.prompts.front());
  if (ctx_->config.connector == kv_connector::mooncake) {
    src.transfer_id = kv.transfer_id;
    split_host_port(kv.bootstrap_addr.value_or(""), src.host, src.port); // checked by `prepare`
  } else {
    src.host = kv.remote_host.value_or("");
    src.port = kv.remote_port.value_or(0);
    src.block_ids = kv.remote_block_ids.value_or(std::vector<std::uint64_t>{});
    src.block_keys.resize(std::min(src.block_keys.size(), src.block_ids.size()));
    if (src.block_ids.empty()) {
      // A prompt shorter than a block: vLLM transfers nothing and computes it here.
      return respond_or_stream();
    }
  }
  const auto timeout = std::chrono::milliseconds{
      static_cast<std::int64_t>(std::max(0.0, ctx_->config.bootstrap_timeout_ms))};
  kv_fetch_ =
      ctx_->kv_reader.fetch(src, timeout, [self = shared_from_this(), src](kv_fetch_result r) {
        self->kv_fetch_.reset();
        if (self->ended_) {
          return;
        }
        self->guarded([&] {
          if (!r.ok) {
            ++self->ctx_->stats.kv.fetch_failures;
            self->ctx_->logger->warn("{}: KV fetch from {}:{} failed: {}", self->st_.id, src.host,
                                     src.port, r.detail);
            return self->fail(make_error(
                protocol::error_code::internal_error,
                "KV transfer from the prefill worker failed: reading " +
                    (src.transfer_id ? "transfer " + *src.transfer_id
                                     : std::to_string(src.block_ids.size()) + " blocks") +
                    " of engine '" + src.engine_id + "' at " + src.host + ":" +
                    std::to_string(src.port) + ": " + r.detail));
          }
          ++self->ctx_->stats.kv.fetches;
          self->ctx_->stats.kv.fetched_blocks += r.blocks;
          self->st_.kv_fetched_tokens =
              std::min(self->st_.prompt_tokens(), r.blocks * self->ctx_->config.cache_block_tokens);
          self->respond_or_stream();
        });
      });
}

void generation::respond_or_stream() {
  if (st_.req.stream && reply_) {
    sink_ = std::make_unique<stream_sink>(reply_, ctx_->config.drop_after_events);
    reply_->begin_stream(200,
                         {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}});
    family_.open(st_, *sink_);
    if (sink_->dropped()) {
      return abandon();
    }
  }
  if (st_.role == worker_role::decode && ctx_->config.runtime == engine_runtime::sglang) {
    return start_rendezvous();
  }
  after_rendezvous();
}

bool generation::receives_kv() const noexcept {
  if (ctx_->config.runtime == engine_runtime::sglang) {
    return true; // the bootstrap room hands it over
  }
  return st_.req.kv && st_.req.kv->do_remote_prefill;
}

void generation::plan_sequences() {
  const auto& req = st_.req;
  const auto& cfg = ctx_->config;
  if (req.tool) {
    tool_cuts_ = cut_points(req.tool->arguments);
  }
  for (std::size_t p = 0; p < req.prompts.size(); ++p) {
    const auto prompt_seed = hash_tokens(req.prompts[p]);
    for (std::size_t c = 0; c < req.n; ++c) {
      sequence s;
      s.prompt = p;
      s.choice = c;
      s.seed = mix64(prompt_seed, c);
      std::size_t natural =
          req.tool ? tool_cuts_.size()
                   : static_cast<std::size_t>(std::max<std::int64_t>(cfg.output_tokens, 0));
      if (req.ignore_eos && req.max_tokens && !req.tool) {
        natural = *req.max_tokens;
      }
      natural = std::min(natural, cfg.context_length);
      s.target = req.max_tokens && !req.tool ? std::min(natural, *req.max_tokens) : natural;
      if (st_.role == worker_role::prefill && cfg.runtime == engine_runtime::sglang) {
        // SGLang's prefill returns once the prompt is computed, with the first token. (vLLM's
        // writes what it is asked: the gateway asks for one token.)
        s.target = std::min<std::size_t>(s.target, 1);
      }
      s.ids.reserve(s.target);
      st_.seqs.push_back(std::move(s));
    }
  }
}

void generation::admit_prompts() {
  st_.prompts.resize(st_.req.prompts.size());
  for (std::size_t p = 0; p < st_.req.prompts.size(); ++p) {
    const auto& tokens = st_.req.prompts[p];
    st_.prompts[p].tokens = tokens.size();
    // A decode worker receives the KV cache; it computes no prompt. (A vLLM decode worker sent
    // no KV transfer params computes the prompt itself, as an engine of its own.)
    if (st_.role != worker_role::decode || !receives_kv()) {
      st_.prompts[p].cached = ctx_->cache.admit(tokens);
    }
  }
  if (st_.role == worker_role::decode && !receives_kv()) {
    ++ctx_->stats.kv.recomputed;
  }
  if (st_.role == worker_role::prefill && ctx_->config.runtime == engine_runtime::sglang) {
    for (const auto& b : st_.req.bootstrap) {
      if (b.room) {
        ctx_->rooms.arrive(*b.room);
        ++ctx_->stats.rendezvous.rooms;
      }
    }
  }
}

void generation::start_rendezvous() {
  std::vector<rendezvous_target> targets;
  for (const auto& b : st_.req.bootstrap) {
    if (b.room && b.host && b.port) {
      targets.push_back({*b.host, *b.port, *b.room});
    } else {
      ++ctx_->stats.rendezvous.skipped;
    }
  }
  if (targets.empty()) {
    return after_rendezvous();
  }
  const auto timeout = std::chrono::milliseconds{
      static_cast<std::int64_t>(std::max(0.0, ctx_->config.bootstrap_timeout_ms))};
  rendezvous_ = ctx_->rendezvous.await(
      std::move(targets), timeout, [self = shared_from_this()](rendezvous_result r) {
        self->rendezvous_.reset();
        self->ctx_->stats.rendezvous.met += r.met;
        self->ctx_->stats.rendezvous.timeouts += r.timed_out;
        if (self->ended_) {
          return;
        }
        self->guarded([&] {
          if (!r.ok()) {
            self->ctx_->logger->warn("{}: PD rendezvous failed: {}", self->st_.id, r.detail);
            return self->fail(
                make_error(protocol::error_code::internal_error,
                           "KV transfer from the prefill worker failed: " + r.detail));
          }
          self->after_rendezvous();
        });
      });
}

void generation::after_rendezvous() {
  const auto knobs = latency(ctx_->config);
  std::size_t uncached = 0;
  std::chrono::microseconds transfer{0};
  if (st_.role != worker_role::decode || !receives_kv()) {
    for (const auto& p : st_.prompts) {
      uncached += p.tokens - p.cached;
    }
  } else if (ctx_->config.runtime == engine_runtime::vllm) {
    // What was fetched arrives at the transfer's pace; the rest (vLLM moves only full blocks)
    // is computed here.
    uncached = st_.prompt_tokens() - st_.kv_fetched_tokens;
    transfer = std::chrono::microseconds{static_cast<std::int64_t>(
        static_cast<double>(st_.kv_fetched_tokens) * ctx_->config.kv_transfer_us_per_token *
        load_factor(knobs, ctx_->stats.active))};
  }
  auto ttft = transfer + time_to_first_token(knobs, uncached, ctx_->stats.active);
  if (st_.req.stream && reply_) {
    return wait_then(ttft, &generation::run_steps);
  }
  // Not streamed: one wait for the whole response.
  std::size_t steps = 0;
  for (const auto& s : st_.seqs) {
    steps = std::max(steps, s.target);
  }
  auto total = ttft + inter_token_latency(knobs, ctx_->stats.active) *
                          static_cast<std::int64_t>(steps > 0 ? steps - 1 : 0);
  wait_then(total, &generation::complete);
}

void generation::wait_then(std::chrono::microseconds delay, void (generation::*next)()) {
  if (delay <= 0us) {
    return (this->*next)();
  }
  if (sink_) {
    sink_->flush();
  }
  timer_.expires_after(delay);
  timer_.async_wait([self = shared_from_this(), next](boost::system::error_code ec) {
    if (!ec && !self->ended_) {
      self->guarded([&] { (self.get()->*next)(); });
    }
  });
}

void generation::prefill_done() {
  if (std::exchange(prefill_done_, true)) {
    return;
  }
  if (st_.role == worker_role::prefill) {
    for (const auto& b : st_.req.bootstrap) {
      if (b.room) {
        ctx_->rooms.ready(*b.room);
      }
    }
  }
}

void generation::write_piece(sequence& s) {
  const auto i = s.ids.size();
  s.last_piece = s.text.size();
  if (st_.req.tool) {
    const auto& args = st_.req.tool->arguments;
    const auto from = i == 0 ? 0 : tool_cuts_[i - 1];
    const auto piece = std::string_view(args).substr(from, tool_cuts_[i] - from);
    s.text.append(piece);
    s.ids.push_back(piece_id(piece));
  } else {
    const auto word = output_word(s.seed, i);
    if (i > 0) {
      s.text.push_back(' ');
    }
    s.text.append(word);
    s.ids.push_back(piece_id(word));
  }
  s.ends.push_back(s.text.size());
  if (s.ids.size() >= s.target) {
    if (st_.req.tool) {
      s.finish = finish_reason::tool;
    } else {
      const bool capped = st_.req.max_tokens && s.target >= *st_.req.max_tokens;
      const bool sglang_prefill =
          st_.role == worker_role::prefill && ctx_->config.runtime == engine_runtime::sglang;
      s.finish = capped || sglang_prefill ? finish_reason::length : finish_reason::stop;
    }
  }
}

bool generation::step() {
  prefill_done();
  bool all_done = true;
  for (std::size_t i = 0; i < st_.seqs.size(); ++i) {
    auto& s = st_.seqs[i];
    if (s.finish != finish_reason::none) {
      continue;
    }
    if (s.target == 0) {
      s.finish = st_.req.max_tokens && *st_.req.max_tokens == 0 ? finish_reason::length
                                                                : finish_reason::stop;
    } else {
      write_piece(s);
      if (sink_) {
        family_.token(st_, i, *sink_);
      }
    }
    if (s.finish != finish_reason::none) {
      if (sink_) {
        family_.finish(st_, i, *sink_);
      }
    } else {
      all_done = false;
    }
    if (ended_) {
      return true;
    }
  }
  return all_done;
}

void generation::run_steps() {
  for (;;) {
    if (step()) {
      if (sink_ && sink_->dropped()) {
        return abandon();
      }
      return complete();
    }
    if (sink_ && sink_->dropped()) {
      return abandon();
    }
    auto itl = inter_token_latency(latency(ctx_->config), ctx_->stats.active);
    if (itl > 0us) {
      return wait_then(itl, &generation::run_steps);
    }
  }
}

void generation::complete() {
  if (ended_) {
    return;
  }
  if (!sink_) {
    // Not streamed: write every token now (the wait covered all of them).
    while (!step()) {
    }
    pin_kv_blocks();
    end();
    if (reply_) {
      transport::response res{transport::http::status::ok, 11};
      res.set(transport::http::field::content_type, "application/json");
      res.body() = family_.body(st_);
      if (!st_.kv_out.is_null() && !res.body().empty() && res.body().back() == '}') {
        // vLLM returns the handoff at the top level of the response.
        auto& body = res.body();
        body.pop_back();
        body.append(R"(,"kv_transfer_params":)").append(dump(st_.kv_out)).push_back('}');
      }
      reply_->respond(std::move(res));
    }
    return;
  }
  pin_kv_blocks(); // vLLM pins them even for a stream, which cannot say which they are
  family_.close(st_, *sink_);
  if (sink_->dropped()) {
    return abandon();
  }
  sink_->flush();
  end();
  reply_->end_stream();
}

void generation::pin_kv_blocks() {
  const auto& cfg = ctx_->config;
  if (cfg.runtime != engine_runtime::vllm || !st_.req.kv || !st_.req.kv->do_remote_decode ||
      st_.req.prompts.size() != 1) {
    return;
  }
  // vLLM's connectors hand over only a prefill cut by its length limit (the gateway asks for one
  // token); one that stopped by itself returns no params.
  for (const auto& s : st_.seqs) {
    if (s.finish != finish_reason::length) {
      return;
    }
  }
  // Only full blocks travel; the decode computes the rest of the prompt itself.
  auto keys = ctx_->cache.block_keys(st_.req.prompts.front());
  const auto hold =
      std::chrono::milliseconds{static_cast<std::int64_t>(std::max(0.0, cfg.kv_hold_timeout_ms))};
  if (cfg.connector == kv_connector::mooncake) {
    // Push-based: the blocks are named by the gateway's transfer id; nothing is returned.
    if (st_.req.kv->transfer_id) {
      ctx_->kv.pin(keys, st_.req.kv->transfer_id, hold);
    }
    return;
  }
  auto ids = ctx_->kv.pin(keys, std::nullopt, hold);
  st_.kv_out = {{"do_remote_prefill", true},  {"do_remote_decode", false},
                {"remote_block_ids", ids},    {"remote_engine_id", ctx_->kv.engine_id()},
                {"remote_host", cfg.host},    {"remote_port", ctx_->kv_port},
                {"remote_request_id", st_.id}};
}

void generation::fail(const protocol::api_error& err) {
  if (ended_) {
    return;
  }
  st_.failed = true;
  if (sink_) {
    family_.stream_error(st_, err, *sink_);
    sink_->flush();
    end();
    reply_->end_stream();
    return;
  }
  end();
  if (reply_) {
    transport::response res{static_cast<transport::http::status>(protocol::http_status(err.code)),
                            11};
    res.set(transport::http::field::content_type, "application/json");
    res.body() = protocol::render_error_body(err, family_.format());
    reply_->respond(std::move(res));
  }
}

void generation::cancel() {
  if (ended_) {
    return;
  }
  st_.cancelled = true;
  if (sink_) {
    family_.close(st_, *sink_);
    sink_->flush();
    end();
    reply_->end_stream();
    return;
  }
  end();
  if (reply_) {
    transport::response res{transport::http::status::ok, 11};
    res.set(transport::http::field::content_type, "application/json");
    res.body() = family_.body(st_);
    reply_->respond(std::move(res));
  }
}

void generation::abandon() {
  if (ended_) {
    return;
  }
  st_.abandoned = true;
  end();
}

void generation::end() {
  ended_ = true;
  ctx_->stats.active_tokens -= std::exchange(tokens_held_, 0);
  timer_.cancel();
  if (auto r = std::exchange(rendezvous_, nullptr)) {
    r->cancel();
  }
  if (auto f = std::exchange(kv_fetch_, nullptr)) {
    f->cancel();
  }
  token_.release();
  family_.ended(st_);
}

} // namespace troupe::sim

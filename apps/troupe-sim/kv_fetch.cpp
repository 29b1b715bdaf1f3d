#include "apps/troupe-sim/kv_fetch.hpp"

#include "transport/collect_sink.hpp"
#include "transport/upstream_exchange.hpp"
#include "transport/upstream_pool.hpp"

#include <nlohmann/json.hpp>

namespace troupe::sim {

namespace {

constexpr std::size_t answer_limit = 64 * 1024;

} // namespace

class kv_fetch_client::call final : public kv_fetch,
                                    public std::enable_shared_from_this<kv_fetch_client::call> {
public:
  explicit call(std::function<void(kv_fetch_result)> done) : done_(std::move(done)) {}

  void start(std::shared_ptr<transport::upstream_pool> pool, transport::upstream_call c) {
    sink_ = std::make_shared<transport::collect_sink>(answer_limit);
    exchange_ = transport::upstream_exchange::start(
        std::move(pool), std::move(c), sink_,
        [weak = weak_from_this()](transport::exchange_result r) {
          if (auto self = weak.lock()) {
            self->on_done(r);
          }
        });
  }

  void cancel() override {
    done_ = nullptr;
    if (auto ex = std::exchange(exchange_, nullptr)) {
      ex->cancel();
    }
  }

private:
  void on_done(const transport::exchange_result& r) {
    exchange_.reset();
    auto done = std::exchange(done_, nullptr);
    if (!done) {
      return;
    }
    kv_fetch_result out;
    if (r.status != transport::exchange_status::ok) {
      out.detail = std::string(transport::to_string(r.status)) +
                   (r.detail.empty() ? std::string() : ": " + r.detail);
      return done(std::move(out));
    }
    auto body = nlohmann::json::parse(sink_->body(), nullptr, false);
    if (r.http_status == 200 && body.is_object() && body.contains("blocks") &&
        body["blocks"].is_number_unsigned()) {
      out.ok = true;
      out.blocks = body["blocks"].get<std::size_t>();
      return done(std::move(out));
    }
    out.detail = "HTTP " + std::to_string(r.http_status) +
                 (body.is_object() && body.contains("error") && body["error"].is_string()
                      ? ": " + body["error"].get<std::string>()
                      : std::string());
    done(std::move(out));
  }

  std::function<void(kv_fetch_result)> done_;
  std::shared_ptr<transport::collect_sink> sink_;
  std::shared_ptr<transport::upstream_exchange> exchange_;
};

kv_fetch_client::kv_fetch_client(net::io_context& ioc) : ioc_(ioc) {}

kv_fetch_client::~kv_fetch_client() {
  for (auto& [_, pool] : pools_) {
    pool->close_idle();
  }
}

std::shared_ptr<transport::upstream_pool> kv_fetch_client::pool_for(const std::string& host,
                                                                    std::uint16_t port) {
  auto& pool = pools_[host + ":" + std::to_string(port)];
  if (!pool) {
    pool = std::make_shared<transport::upstream_pool>(ioc_, host, port, 32);
  }
  return pool;
}

std::shared_ptr<kv_fetch> kv_fetch_client::fetch(const kv_source& source,
                                                 std::chrono::milliseconds timeout,
                                                 std::function<void(kv_fetch_result)> done) {
  nlohmann::json body = {{"engine_id", source.engine_id}, {"block_keys", source.block_keys}};
  if (source.transfer_id) {
    body["transfer_id"] = *source.transfer_id;
  } else {
    body["block_ids"] = source.block_ids;
  }
  transport::upstream_call c;
  c.method = transport::http::verb::post;
  c.target = "/kv/read";
  c.body = body.dump();
  c.headers.add("Content-Type", "application/json");
  c.deadline = std::chrono::steady_clock::now() + timeout;
  auto f = std::make_shared<call>(std::move(done));
  f->start(pool_for(source.host, source.port), std::move(c));
  return f;
}

} // namespace troupe::sim

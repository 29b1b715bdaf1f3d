#include "gateway/metered_reply.hpp"

#include <atomic>

namespace troupe::gateway {

namespace {

/// Status counted for a response that never ended: the client closed the request.
constexpr unsigned client_closed_status = 499;

class metered_reply final : public transport::reply_channel {
public:
  metered_reply(std::shared_ptr<transport::reply_channel> inner,
                std::shared_ptr<services::metrics> m, std::string_view method,
                std::string_view path, std::chrono::steady_clock::time_point received)
      : inner_(std::move(inner)), metrics_(std::move(m)), method_(method), path_(path),
        received_(received) {}

  ~metered_reply() override { record(client_closed_status); }

  void respond(transport::response res) override {
    auto status = res.result_int();
    inner_->respond(std::move(res));
    record(status);
  }

  void respond_serialized(transport::serialized_head head, std::string body) override {
    auto status = head.status;
    inner_->respond_serialized(std::move(head), std::move(body));
    record(status);
  }

  void begin_stream(unsigned status, transport::header_list headers) override {
    status_.store(status, std::memory_order_relaxed);
    inner_->begin_stream(status, std::move(headers));
  }

  void begin_stream_serialized(transport::serialized_head head) override {
    status_.store(head.status, std::memory_order_relaxed);
    inner_->begin_stream_serialized(std::move(head));
  }

  void write_chunk(std::string data) override { inner_->write_chunk(std::move(data)); }

  void end_stream() override {
    inner_->end_stream();
    record(status_.load(std::memory_order_relaxed));
  }

  void set_flow_source(std::weak_ptr<transport::flow_source> source) override {
    inner_->set_flow_source(std::move(source));
  }

  void on_disconnect(std::function<void()> f) override { inner_->on_disconnect(std::move(f)); }

  bool stopped_reading() const override { return inner_->stopped_reading(); }

  void abort() override { inner_->abort(); }

private:
  /// Counts the response once; a stream's own status wins over the fallback.
  void record(unsigned status) {
    if (recorded_.exchange(true, std::memory_order_acq_rel)) {
      return;
    }
    if (auto streamed = status_.load(std::memory_order_relaxed);
        streamed != 0 && status == client_closed_status) {
      status = streamed;
    }
    metrics_->on_http_response(method_, path_, status,
                               std::chrono::steady_clock::now() - received_);
  }

  std::shared_ptr<transport::reply_channel> inner_;
  std::shared_ptr<services::metrics> metrics_;
  std::string_view method_;
  std::string_view path_;
  std::chrono::steady_clock::time_point received_;
  std::atomic<unsigned> status_{0};
  std::atomic<bool> recorded_{false};
};

} // namespace

std::shared_ptr<transport::reply_channel>
make_metered_reply(std::shared_ptr<transport::reply_channel> inner,
                   std::shared_ptr<services::metrics> m, std::string_view method,
                   std::string_view path, std::chrono::steady_clock::time_point received) {
  return std::make_shared<metered_reply>(std::move(inner), std::move(m), method, path, received);
}

} // namespace troupe::gateway

#pragma once

#include "protocol/error.hpp"
#include "protocol/logprobs.hpp"
#include "protocol/sse.hpp"
#include "transport/reply_channel.hpp"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace troupe::actors {

/// The decode leg's way to the client in prefill/decode mode. A reply channel in front of the
/// client's that holds what the decode relay sends until the prefill leg has succeeded
/// (`open`), so a failed pair is answered with a clean error instead of half a response; then
/// lets the rest through as it comes, merging the prefill's input logprobs into bodies and
/// events when asked. A decode error response (status >= 400) is always held, for the request
/// actor to answer in the API's format. Thread-safe: the relay writes from the exchange's
/// strand, the request actor opens or fails it from its own thread.
class pd_reply_gate final : public transport::reply_channel {
public:
  /// A gate in front of `client` holding at most `hold_limit` bytes of streamed events.
  pd_reply_gate(std::shared_ptr<transport::reply_channel> client, std::size_t hold_limit);

  void respond(transport::response res) override;
  void begin_stream(unsigned status, transport::header_list headers) override;
  void write_chunk(std::string data) override;
  void end_stream() override;
  void set_flow_source(std::weak_ptr<transport::flow_source> source) override;
  void on_disconnect(std::function<void()> f) override;
  void abort() override;

  /// The prefill leg succeeded: sends what is held and lets the rest through, merging
  /// `logprobs` (unless empty) into JSON bodies and stream events.
  void open(protocol::input_logprobs logprobs = {});

  /// The pair failed and the decode exchange is over: discards what is held and answers `err`
  /// in `format` (an error response, or an error event ending a stream the client already
  /// gets), or the decode worker's held error response when `use_held_error`. Later calls do
  /// nothing. Returns the status the client got.
  unsigned fail(const protocol::api_error& err, protocol::api_format format,
                const std::string& request_id, unsigned version, bool use_held_error = false);

  /// True once anything reached the client (a failure can no longer choose the status).
  bool touched_client() const;

  /// True when more events came than the gate may hold.
  bool overflowed() const;

  /// The decode worker's error response (status >= 400), held: its status and body.
  std::optional<std::pair<unsigned, std::string>> error_response() const;

private:
  void flush_locked();
  std::string transform_locked(std::string data);

  mutable std::mutex mx_;
  std::shared_ptr<transport::reply_channel> client_;
  std::size_t hold_limit_;
  bool open_ = false;
  bool closed_ = false;      ///< Failed or overflowed: everything is dropped.
  bool failed_ = false;      ///< `fail` answered the client.
  bool touched_ = false;     ///< Something reached the client.
  bool client_done_ = false; ///< The client's response is complete.
  bool overflowed_ = false;
  unsigned status_ = 0; ///< The status the client got.
  protocol::input_logprobs logprobs_;
  protocol::sse_framer framer_; ///< Re-frames events when merging logprobs.

  // -- held while closed --
  std::optional<transport::response> response_;
  std::optional<std::pair<unsigned, transport::header_list>> head_;
  std::string chunks_;
  bool ended_ = false;
};

} // namespace troupe::actors

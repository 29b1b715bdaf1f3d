#pragma once

#include "apps/troupe-sim/gen_request.hpp"
#include "protocol/error.hpp"

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>

namespace troupe::sim {

struct sim_context;

/// Where an API family writes the events of a streamed response.
class event_sink {
public:
  virtual ~event_sink() = default;

  /// Sends one server-sent event (`event: name` when `name` is not empty).
  virtual void event(std::string_view data, std::string_view name = {}) = 0;

  /// Events sent so far (the Responses API numbers its events).
  virtual std::size_t sent() const noexcept = 0;
};

/// A parsed request, or the client error that explains why not.
using parse_result = std::variant<gen_request, protocol::api_error>;

/// The wire format of one generative API (`/generate`, chat, completions, messages, responses):
/// how a request becomes a `gen_request` and how progress becomes bytes. The engine
/// (`generation`) is shared; families differ in data, not in pacing.
class api_family {
public:
  virtual ~api_family() = default;

  /// The error format of the API.
  virtual protocol::api_format format() const noexcept { return protocol::api_format::openai; }

  /// Validates `body` and says what to generate.
  virtual parse_result parse(const nlohmann::json& body, sim_context& ctx) = 0;

  /// Sets what the family decides once per request (its id, tool call ids, ...).
  virtual void begin(gen_state& st, sim_context& ctx) = 0;

  /// The body of a complete, non-streamed response.
  virtual std::string body(const gen_state& st) = 0;

  /// Events before the first token.
  virtual void open(const gen_state& st, event_sink& out) {}

  /// Sequence `seq` wrote a token (`st.seqs[seq].piece()`); it may have finished with it.
  virtual void token(const gen_state& st, std::size_t seq, event_sink& out) = 0;

  /// Sequence `seq` finished (after its last `token`, or at once when it writes nothing).
  virtual void finish(const gen_state& st, std::size_t seq, event_sink& out) {}

  /// Every sequence finished: closing events.
  virtual void close(const gen_state& st, event_sink& out) = 0;

  /// An error after the stream started.
  virtual void stream_error(const gen_state& st, const protocol::api_error& err, event_sink& out);

  /// The request ended (complete or cancelled); the Responses API stores it.
  virtual void ended(const gen_state& st) {}
};

} // namespace troupe::sim

#pragma once

#include "apps/troupe-sim/api_family.hpp"
#include "apps/troupe-sim/exchange.hpp"
#include "apps/troupe-sim/response_store.hpp"

namespace troupe::sim {

/// OpenAI `POST /v1/responses`: `input` (a string or message items), `instructions`,
/// `max_output_tokens`, `previous_response_id` (its conversation prefixes the prompt), `store`
/// (default true), `background`, `stream`. Streams named events `response.created` ...
/// `response.completed`, each carrying its `type` and `sequence_number`. Stored responses are
/// read, listed, deleted and cancelled through `store()`.
class responses_api final : public api_family {
public:
  parse_result parse(const nlohmann::json& body, sim_context& ctx) override;
  void begin(gen_state& st, sim_context& ctx) override;
  std::string body(const gen_state& st) override;
  void open(const gen_state& st, event_sink& out) override;
  void token(const gen_state& st, std::size_t seq, event_sink& out) override;
  void finish(const gen_state& st, std::size_t seq, event_sink& out) override;
  void close(const gen_state& st, event_sink& out) override;
  void stream_error(const gen_state& st, const protocol::api_error& err, event_sink& out) override;
  void ended(const gen_state& st) override;

  /// The response object of `st` as it stands.
  nlohmann::json response_object(const gen_state& st) const;

  /// The stored responses.
  response_store& store() noexcept { return store_; }

  // -- stored responses: `/v1/responses/{id}...` (404 for an unknown id) --

  /// `GET /v1/responses/{id}`: the response as it stands.
  void serve_get(exchange& x);

  /// `DELETE /v1/responses/{id}`: stops it if it runs, forgets it.
  void serve_delete(exchange& x);

  /// `POST /v1/responses/{id}/cancel`: stops a background response (400 for another).
  void serve_cancel(exchange& x);

  /// `GET /v1/responses/{id}/input_items`.
  void serve_input_items(exchange& x);

private:
  nlohmann::json output_item(const gen_state& st, bool done) const;
  void send(event_sink& out, std::string_view type, nlohmann::json ev) const;

  response_store store_;
};

} // namespace troupe::sim

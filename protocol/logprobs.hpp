#pragma once

#include "protocol/routes.hpp"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::protocol {

/// True when a PD request asks for input logprobs that only its prefill leg computes: its
/// operation's flag (`operation_info::input_logprobs`: `return_logprob` on `/generate`) is
/// true, or true for some sequence of a batch.
bool wants_input_logprobs(operation op, const nlohmann::ordered_json& body);

/// The `meta_info.input_token_logprobs` a prefill worker returned, per sequence: the position
/// in a batch response, or the `index` of streamed chunks. Absent entries have none.
struct input_logprobs {
  std::vector<std::optional<nlohmann::ordered_json>> items;

  /// The logprobs of sequence `index`, or nullptr.
  const nlohmann::ordered_json* find(std::size_t index) const;

  /// True when no sequence has any.
  bool empty() const;
};

/// Reads the input logprobs from a prefill response: a JSON object, a JSON array (batch), or an
/// SSE stream (the last non-empty list each `index` carried). Malformed input yields none.
input_logprobs read_input_logprobs(std::string_view body, bool event_stream);

/// Prepends `prefill`'s input logprobs to those of a decode JSON body (an object, or an array
/// for a batch). A decode `meta_info` without `input_token_logprobs` gets the prefill's. Returns
/// the merged body, or nothing when there was nothing to merge (use the body unchanged).
std::optional<std::string> merge_input_logprobs(std::string_view decode_body,
                                                const input_logprobs& prefill);

/// The same for one raw SSE event of a decode stream (as `sse_framer` delivers it): returns the
/// event re-framed with merged data, or nothing (`[DONE]`, non-JSON data, no `meta_info`).
std::optional<std::string> merge_input_logprobs_event(std::string_view raw_event,
                                                      const input_logprobs& prefill);

} // namespace troupe::protocol

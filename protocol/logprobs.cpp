#include "protocol/logprobs.hpp"

#include "protocol/sse.hpp"

namespace troupe::protocol {

namespace {

using json = nlohmann::ordered_json;

/// Bound on sequence indexes taken from a worker response (an index is not trusted).
constexpr std::size_t max_items = 65536;

constexpr const char* meta_key = "meta_info";
constexpr const char* input_key = "input_token_logprobs";

/// The input logprobs list of one response object, or nullptr.
const json* logprobs_of(const json& obj) {
  if (!obj.is_object()) {
    return nullptr;
  }
  auto meta = obj.find(meta_key);
  if (meta == obj.end() || !meta->is_object()) {
    return nullptr;
  }
  auto lp = meta->find(input_key);
  return lp != meta->end() && lp->is_array() ? &*lp : nullptr;
}

/// The `index` of a streamed chunk (0 when absent).
std::size_t index_of(const json& obj) {
  auto it = obj.find("index");
  if (it != obj.end() && it->is_number_unsigned()) {
    return it->get<std::size_t>();
  }
  return 0;
}

void put(input_logprobs& out, std::size_t index, const json& lp) {
  if (index >= max_items) {
    return;
  }
  if (out.items.size() <= index) {
    out.items.resize(index + 1);
  }
  // A later empty list (incremental streaming) does not hide an earlier full one.
  if (!out.items[index] || !lp.empty()) {
    out.items[index] = lp;
  }
}

/// Prepends `prefill` to the input logprobs of `obj`; false when `obj` has no `meta_info`.
bool merge_into(json& obj, const json& prefill) {
  if (!obj.is_object()) {
    return false;
  }
  auto meta = obj.find(meta_key);
  if (meta == obj.end() || !meta->is_object()) {
    return false;
  }
  auto lp = meta->find(input_key);
  if (lp == meta->end() || lp->is_null()) {
    (*meta)[input_key] = prefill;
    return true;
  }
  if (!lp->is_array()) {
    return false;
  }
  auto merged = prefill;
  for (auto& e : *lp) {
    merged.push_back(std::move(e));
  }
  *lp = std::move(merged);
  return true;
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

} // namespace

bool wants_input_logprobs(operation op, const json& body) {
  auto flag = info(op).input_logprobs;
  if (flag.empty() || !body.is_object()) {
    return false;
  }
  auto it = body.find(flag);
  if (it == body.end()) {
    return false;
  }
  // A batch may ask per sequence.
  if (it->is_array()) {
    for (auto& e : *it) {
      if (e.is_boolean() && e.get<bool>()) {
        return true;
      }
    }
    return false;
  }
  return it->is_boolean() && it->get<bool>();
}

const json* input_logprobs::find(std::size_t index) const {
  return index < items.size() && items[index] ? &*items[index] : nullptr;
}

bool input_logprobs::empty() const {
  for (auto& i : items) {
    if (i) {
      return false;
    }
  }
  return true;
}

input_logprobs read_input_logprobs(std::string_view body, bool event_stream) {
  input_logprobs out;
  if (event_stream) {
    sse_framer framer;
    auto on_event = [&](std::string_view raw) {
      auto ev = parse_sse_event(raw);
      auto j = json::parse(ev.data, nullptr, false);
      if (auto* lp = logprobs_of(j)) {
        put(out, index_of(j), *lp);
      }
    };
    framer.feed(body, on_event);
    if (auto rest = framer.pending(); !rest.empty()) {
      on_event(rest);
    }
    return out;
  }
  auto j = json::parse(body, nullptr, false);
  if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) {
      if (auto* lp = logprobs_of(j[i])) {
        put(out, i, *lp);
      }
    }
  } else if (auto* lp = logprobs_of(j)) {
    put(out, 0, *lp);
  }
  return out;
}

std::optional<std::string> merge_input_logprobs(std::string_view decode_body,
                                                const input_logprobs& prefill) {
  if (prefill.empty()) {
    return std::nullopt;
  }
  auto j = json::parse(decode_body, nullptr, false);
  bool merged = false;
  if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) {
      if (auto* lp = prefill.find(i)) {
        merged = merge_into(j[i], *lp) || merged;
      }
    }
  } else if (auto* lp = prefill.find(0)) {
    merged = merge_into(j, *lp);
  }
  if (!merged) {
    return std::nullopt;
  }
  return dump(j);
}

std::optional<std::string> merge_input_logprobs_event(std::string_view raw_event,
                                                      const input_logprobs& prefill) {
  if (prefill.empty() || is_done_event(raw_event)) {
    return std::nullopt;
  }
  auto ev = parse_sse_event(raw_event);
  auto j = json::parse(ev.data, nullptr, false);
  if (!j.is_object()) {
    return std::nullopt;
  }
  auto* lp = prefill.find(index_of(j));
  if (!lp || !merge_into(j, *lp)) {
    return std::nullopt;
  }
  return format_sse_event(dump(j), ev.event);
}

} // namespace troupe::protocol

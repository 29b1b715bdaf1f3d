#include "protocol/bootstrap.hpp"

#include <nlohmann/json.hpp>
#include <random>

namespace troupe::protocol {

namespace {

using json = nlohmann::ordered_json;

/// A non-empty array's length, when its first element satisfies `first`.
template <class Pred>
std::optional<std::size_t> list_size(const json& body, const char* key, Pred first) {
  auto it = body.find(key);
  if (it == body.end() || !it->is_array() || it->empty() || !first(it->front())) {
    return std::nullopt;
  }
  return it->size();
}

} // namespace

room_source::room_source() {
  std::random_device rd;
  state_.store((static_cast<std::uint64_t>(rd()) << 32) ^ rd(), std::memory_order_relaxed);
}

std::uint64_t room_source::next() noexcept {
  // SplitMix64: a bijective mix of a Weyl sequence; the top bit is dropped for [0, 2^63).
  auto z =
      state_.fetch_add(0x9e3779b97f4a7c15ULL, std::memory_order_relaxed) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return z >> 1;
}

std::optional<std::size_t> bootstrap_batch_size(operation op, const json& body) {
  if (!body.is_object()) {
    return std::nullopt;
  }
  switch (info(op).batch) {
  case batch_rule::text_or_ids: {
    if (auto n = list_size(body, "text", [](const json&) { return true; })) {
      return n;
    }
    // `input_ids` is a token list (one prompt) or a list of token lists (a batch).
    return list_size(body, "input_ids", [](const json& e) { return e.is_array(); });
  }
  case batch_rule::choices: {
    auto it = body.find("n");
    if (it != body.end() && it->is_number_integer() && it->get<std::int64_t>() > 1) {
      return static_cast<std::size_t>(it->get<std::int64_t>());
    }
    return std::nullopt;
  }
  case batch_rule::prompt_list:
    // A list of strings or of token lists is a batch; a flat token list is one prompt.
    return list_size(body, "prompt", [](const json& e) { return e.is_string() || e.is_array(); });
  case batch_rule::none:
    break;
  }
  return std::nullopt;
}

std::vector<std::uint64_t> inject_bootstrap(json& body, std::optional<std::size_t> batch,
                                            const bootstrap_target& target, room_source& rooms) {
  auto port = target.port ? json(*target.port) : json(nullptr);
  std::vector<std::uint64_t> used;
  if (!batch) {
    used.push_back(rooms.next());
    body["bootstrap_host"] = target.host;
    body["bootstrap_port"] = std::move(port);
    body["bootstrap_room"] = used.front();
    return used;
  }
  used.reserve(*batch);
  auto hosts = json::array();
  auto ports = json::array();
  for (std::size_t i = 0; i < *batch; ++i) {
    used.push_back(rooms.next());
    hosts.push_back(target.host);
    ports.push_back(port);
  }
  body["bootstrap_host"] = std::move(hosts);
  body["bootstrap_port"] = std::move(ports);
  body["bootstrap_room"] = used;
  return used;
}

std::string dump_body(const json& body) {
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

} // namespace troupe::protocol

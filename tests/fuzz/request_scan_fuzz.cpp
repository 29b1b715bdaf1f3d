// Fuzzes the hand-written JSON scanner as the gateway uses it: every body goes through
// `scan_and_validate` for its operation, and the cache-aware policy takes the prompt from the
// spans the scan reported. The properties: no crash, an answer that is either facts or a client
// error, and facts that describe the body (every span lies inside it and holds a value of the
// kind reported).

#include "protocol/prompt.hpp"
#include "protocol/request_scan.hpp"
#include "protocol/routes.hpp"
#include "protocol/validation.hpp"
#include "tests/fuzz/fuzz_check.hpp"

#include <charconv>
#include <cstdint>
#include <limits>
#include <string_view>

using namespace troupe::protocol;

namespace {

bool is_ws(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/// The raw value of a field fact agrees with its kind.
void check_fact(const field_fact& f, std::string_view body) {
  if (f.kind == json_kind::absent) {
    FUZZ_CHECK(f.length == 0);
    return;
  }
  FUZZ_CHECK(f.length > 0);
  FUZZ_CHECK(f.offset <= body.size() && f.length <= body.size() - f.offset);
  auto raw = body.substr(f.offset, f.length);
  FUZZ_CHECK(!is_ws(raw.front()) && !is_ws(raw.back()));
  switch (f.kind) {
  case json_kind::null:
    FUZZ_CHECK(raw == "null");
    break;
  case json_kind::boolean:
    FUZZ_CHECK(raw == "true" || raw == "false");
    break;
  case json_kind::string:
    FUZZ_CHECK(raw.size() >= 2 && raw.front() == '"' && raw.back() == '"');
    FUZZ_CHECK(f.empty == (raw == "\"\""));
    break;
  case json_kind::array:
  case json_kind::object: {
    char open = f.kind == json_kind::array ? '[' : '{';
    char close = f.kind == json_kind::array ? ']' : '}';
    FUZZ_CHECK(raw.size() >= 2 && raw.front() == open && raw.back() == close);
    auto inner = raw.substr(1, raw.size() - 2);
    bool blank = true;
    for (char c : inner) {
      blank = blank && is_ws(c);
    }
    FUZZ_CHECK(f.empty == blank);
    break;
  }
  case json_kind::integer: {
    FUZZ_CHECK(raw.find_first_of(".eE") == std::string_view::npos);
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), v);
    if (ec == std::errc::result_out_of_range) {
      v = raw.front() == '-' ? std::numeric_limits<std::int64_t>::min()
                             : std::numeric_limits<std::int64_t>::max();
    } else {
      FUZZ_CHECK(ec == std::errc{} && ptr == raw.data() + raw.size());
    }
    FUZZ_CHECK(f.integer == v);
    break;
  }
  case json_kind::number:
    FUZZ_CHECK(raw.find_first_of(".eE") != std::string_view::npos);
    FUZZ_CHECK(raw.front() == '-' || (raw.front() >= '0' && raw.front() <= '9'));
    break;
  case json_kind::absent:
    break;
  }
}

constexpr operation body_operations[] = {
    operation::generate,         operation::chat_completions, operation::completions,
    operation::embeddings,       operation::rerank,           operation::messages,
    operation::responses_create,
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body{reinterpret_cast<const char*>(data), size};
  bool accepted = false;
  bool first = true;
  for (auto op : body_operations) {
    // scan_and_validate, in its two steps.
    auto watched = watched_fields(op);
    auto plain = scan_request(body, watched);
    if (plain.error) {
      FUZZ_CHECK(plain.error->code == error_code::invalid_json ||
                 plain.error->code == error_code::bad_request);
      FUZZ_CHECK(!plain.error->message.empty());
    } else if (auto invalid = validate(op, plain.facts)) {
      FUZZ_CHECK(invalid->code == error_code::bad_request && !invalid->message.empty());
    }
    // The syntax verdict does not depend on the operation.
    FUZZ_CHECK(first || accepted == !plain.error);
    accepted = !plain.error;
    first = false;
    if (plain.error) {
      continue;
    }
    FUZZ_CHECK(plain.facts.fields.size() == watched.size());
    for (auto& f : plain.facts.fields) {
      check_fact(f, body);
    }
    if (plain.facts.model) {
      FUZZ_CHECK(troupe::fuzz::valid_utf8(*plain.facts.model));
    }
    if (plain.facts.previous_response_id) {
      FUZZ_CHECK(troupe::fuzz::valid_utf8(*plain.facts.previous_response_id));
    }
    auto prompt = find_prompt(op, plain.facts, body);
    for (auto part : prompt.parts) {
      FUZZ_CHECK(part.empty() || (part.data() >= body.data() &&
                                  part.data() + part.size() <= body.data() + body.size()));
    }
  }
  return 0;
}

// Differential fuzzing of the hand-written JSON scanner against nlohmann/json: for every body,
// both must accept or reject it alike (and reject it for the same reason: invalid JSON, or a
// client error of shape), and an accepted body must yield the facts nlohmann's parse of it
// gives. A repeated top-level key counts by its last occurrence, as in every JSON parser the
// body later meets (nlohmann's in the gateway, the engine's behind it).
//
// Known, deliberate differences, which the reference models rather than skips:
// - nesting deeper than the scanner's limit (512) is a client error, not a parse;
// - a UTF-8 byte order mark is invalid JSON (RFC 8259 forbids sending one; nlohmann skips it);
// - a NUL byte outside a string is invalid JSON (nlohmann takes it for the end of the input,
//   so it accepts `{}` followed by NUL and anything).
// A number beyond the range of a double is valid JSON to the scanner and an error to nlohmann
// (406): such a body is only checked for the scanner's own properties.

#include "protocol/request_scan.hpp"
#include "tests/fuzz/fuzz_check.hpp"

#include <array>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

using namespace troupe::protocol;
using json = nlohmann::json;

namespace {

constexpr int max_depth = 512; // request_scan.cpp

/// The watched fields: the ones the endpoints watch, plus the routing facts themselves.
constexpr std::array<std::string_view, 12> watched{
    "model", "stream",    "messages", "max_tokens", "prompt", "input",
    "text",  "input_ids", "system",   "n",          "tools",  "previous_response_id"};

enum class verdict { ok, invalid_json, bad_request, inconclusive };

/// What nlohmann sees in a body: the verdict and the last occurrence of each watched key.
struct reference {
  verdict outcome = verdict::ok;
  std::array<std::optional<json>, watched.size()> last;
};

std::optional<std::size_t> watched_index(std::string_view key) {
  for (std::size_t i = 0; i < watched.size(); ++i) {
    if (watched[i] == key) {
      return i;
    }
  }
  return std::nullopt;
}

reference nlohmann_reference(std::string_view body) {
  reference ref;
  if (body.size() >= 3 && body.substr(0, 3) == "\xEF\xBB\xBF") {
    ref.outcome = verdict::invalid_json;
    return ref;
  }
  bool top_is_object = false;
  bool seen_top = false;
  std::string key; // the current top-level key
  std::optional<verdict> semantic;
  // Reports the first client error of shape in document order; parsing goes on (the scanner
  // stops there, so what follows cannot change its verdict).
  auto shape_error = [&] {
    if (!semantic) {
      semantic = verdict::bad_request;
    }
  };
  auto top_value = [&](const json& v) {
    if (!top_is_object || semantic) {
      return;
    }
    if (key == "stream" && !v.is_boolean()) {
      return shape_error();
    }
    if (key == "model" && !v.is_string() && !v.is_null()) {
      return shape_error();
    }
    if (auto i = watched_index(key)) {
      ref.last[*i] = v;
    }
  };
  auto cb = [&](int depth, json::parse_event_t ev, json& parsed) {
    using pe = json::parse_event_t;
    if (semantic) {
      return true;
    }
    bool start = ev == pe::object_start || ev == pe::array_start;
    if (depth == 0 && !seen_top) {
      seen_top = true;
      top_is_object = ev == pe::object_start;
    }
    if (start) {
      if (depth == 1 && top_is_object && (key == "stream" || key == "model")) {
        shape_error();
        return true;
      }
      // The scanner's depth of this container (its top-level object is 0, a top-level
      // array 1) must stay within the limit.
      int scanner_depth = top_is_object ? depth : depth + 1;
      if (scanner_depth > max_depth) {
        shape_error();
      }
      return true;
    }
    if (depth == 1 && ev == pe::key) {
      key = parsed.get<std::string>();
      return true;
    }
    if (depth == 1 && (ev == pe::value || ev == pe::object_end || ev == pe::array_end)) {
      top_value(parsed);
    }
    return true;
  };
  try {
    auto doc = json::parse(body, cb);
    if (semantic) {
      ref.outcome = *semantic;
    } else if (body.find('\0') != std::string_view::npos) {
      ref.outcome = verdict::invalid_json; // after the value: a string cannot hold one
    } else if (!doc.is_object()) {
      ref.outcome = verdict::bad_request;
    }
  } catch (const json::out_of_range& e) {
    ref.outcome = semantic ? *semantic : verdict::inconclusive; // 406: number overflow
  } catch (const json::exception&) {
    ref.outcome = semantic ? *semantic : verdict::invalid_json;
  }
  return ref;
}

verdict of(const scan_result& r) {
  if (!r.error) {
    return verdict::ok;
  }
  return r.error->code == error_code::invalid_json ? verdict::invalid_json : verdict::bad_request;
}

json_kind kind_of(const json& v, std::string_view raw) {
  switch (v.type()) {
  case json::value_t::null:
    return json_kind::null;
  case json::value_t::boolean:
    return json_kind::boolean;
  case json::value_t::number_integer:
  case json::value_t::number_unsigned:
    return json_kind::integer;
  case json::value_t::number_float:
    // nlohmann stores an integer beyond 64 bits as a double; JSON-wise it is still integral.
    return raw.find_first_of(".eE") == std::string_view::npos ? json_kind::integer
                                                              : json_kind::number;
  case json::value_t::string:
    return json_kind::string;
  case json::value_t::array:
    return json_kind::array;
  case json::value_t::object:
    return json_kind::object;
  default:
    return json_kind::absent;
  }
}

std::int64_t clamp(const json& v, std::string_view raw) {
  if (v.is_number_integer() && !v.is_number_unsigned()) {
    return v.get<std::int64_t>();
  }
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    return u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
               ? std::numeric_limits<std::int64_t>::max()
               : static_cast<std::int64_t>(u);
  }
  return raw.front() == '-' ? std::numeric_limits<std::int64_t>::min()
                            : std::numeric_limits<std::int64_t>::max();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body{reinterpret_cast<const char*>(data), size};
  auto r = scan_request(body, watched);
  auto ref = nlohmann_reference(body);
  if (ref.outcome == verdict::inconclusive) {
    return 0;
  }
  FUZZ_CHECK(of(r) == ref.outcome);
  if (r.error) {
    return 0;
  }
  auto& facts = r.facts;
  FUZZ_CHECK(facts.fields.size() == watched.size());
  for (std::size_t i = 0; i < watched.size(); ++i) {
    auto& f = facts.fields[i];
    auto& want = ref.last[i];
    FUZZ_CHECK((f.kind == json_kind::absent) == !want.has_value());
    if (!want) {
      continue;
    }
    FUZZ_CHECK(f.offset <= body.size() && f.length <= body.size() - f.offset);
    auto raw = body.substr(f.offset, f.length);
    // The span holds exactly the value, and it is the last occurrence's value.
    auto again = json::parse(raw, nullptr, false);
    FUZZ_CHECK(!again.is_discarded() && again == *want);
    FUZZ_CHECK(f.kind == kind_of(*want, raw));
    if (f.kind == json_kind::integer) {
      FUZZ_CHECK(f.integer == clamp(*want, raw));
    }
    if (want->is_string()) {
      FUZZ_CHECK(f.empty == want->get_ref<const std::string&>().empty());
    } else if (want->is_array() || want->is_object()) {
      FUZZ_CHECK(f.empty == want->empty());
    }
  }
  auto& model = ref.last[0];
  FUZZ_CHECK(facts.model.has_value() == (model && model->is_string()));
  if (facts.model) {
    FUZZ_CHECK(*facts.model == model->get<std::string>());
  }
  auto& stream = ref.last[1];
  FUZZ_CHECK(facts.stream == (stream && stream->get<bool>()));
  auto& prev = ref.last[11];
  FUZZ_CHECK(facts.previous_response_id.has_value() == (prev && prev->is_string()));
  if (facts.previous_response_id) {
    FUZZ_CHECK(*facts.previous_response_id == prev->get<std::string>());
  }
  return 0;
}

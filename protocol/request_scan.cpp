#include "protocol/request_scan.hpp"

#include <limits>
#include <nlohmann/json.hpp>

namespace troupe::protocol {

std::string_view describe(json_kind k) noexcept {
  switch (k) {
  case json_kind::absent:
    return "absent";
  case json_kind::null:
    return "null";
  case json_kind::boolean:
    return "a boolean";
  case json_kind::integer:
    return "an integer";
  case json_kind::number:
    return "a number";
  case json_kind::string:
    return "a string";
  case json_kind::array:
    return "an array";
  case json_kind::object:
    return "an object";
  }
  return "absent";
}

namespace {

using json = nlohmann::json;

/// SAX handler: tracks depth, records top-level `model` and `stream` and the watched fields,
/// rejects wrong types.
class facts_handler : public nlohmann::json_sax<json> {
public:
  explicit facts_handler(std::span<const std::string_view> watched) : watched_(watched) {
    facts.fields.resize(watched.size());
  }

  request_facts facts;
  std::optional<api_error> error;
  bool saw_root_object = false;

  bool null() override {
    note(json_kind::null);
    return scalar("null");
  }
  bool boolean(bool val) override {
    note(json_kind::boolean);
    if (top_key("stream")) {
      facts.stream = val;
      return true;
    }
    return scalar("boolean");
  }
  bool number_integer(number_integer_t val) override {
    note(json_kind::integer, val);
    return scalar("number");
  }
  bool number_unsigned(number_unsigned_t val) override {
    constexpr auto max = static_cast<number_unsigned_t>(std::numeric_limits<std::int64_t>::max());
    note(json_kind::integer, static_cast<std::int64_t>(std::min(val, max)));
    return scalar("number");
  }
  bool number_float(number_float_t, const string_t&) override {
    note(json_kind::number);
    return scalar("number");
  }
  bool string(string_t& val) override {
    if (auto* f = note(json_kind::string)) {
      f->empty = val.empty();
    }
    if (top_key("model")) {
      facts.model = std::move(val);
      return true;
    }
    if (top_key("previous_response_id")) {
      facts.previous_response_id = std::move(val);
      return true;
    }
    return scalar("string");
  }
  bool binary(binary_t&) override { return scalar("binary"); }
  bool start_object(std::size_t) override {
    if (depth_ == 0) {
      saw_root_object = true;
    } else if (!check_container()) {
      return false;
    } else {
      open(note(json_kind::object));
    }
    ++depth_;
    return true;
  }
  bool key(string_t& val) override {
    child();
    if (depth_ == 1) {
      key_ = std::move(val);
    }
    return true;
  }
  bool end_object() override {
    --depth_;
    close();
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 0) {
      return fail(error_code::bad_request, "the request body must be a JSON object", "");
    }
    if (!check_container()) {
      return false;
    }
    open(note(json_kind::array));
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    close();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception&) override {
    if (!error) {
      fail(error_code::invalid_json,
           "the request body is not valid JSON (error at byte " + std::to_string(position) + ")",
           "");
    }
    return false;
  }

private:
  bool top_key(std::string_view name) const { return depth_ == 1 && key_ == name; }

  // Records a value: a top-level one of a watched field, or the first element of an open
  // watched container (which is then not empty). Returns the watched field's fact, if any.
  field_fact* note(json_kind kind, std::int64_t integer = 0) {
    child();
    if (depth_ != 1) {
      return nullptr;
    }
    for (std::size_t i = 0; i < watched_.size(); ++i) {
      if (watched_[i] == key_) {
        auto& f = facts.fields[i];
        f = field_fact{kind, integer, false};
        return &f;
      }
    }
    return nullptr;
  }

  // A watched array or object was opened: empty until an element (or key) shows up.
  void open(field_fact* f) {
    if (f) {
      f->empty = true;
      open_ = f;
    }
  }

  void child() {
    if (open_ && depth_ == 2) {
      open_->empty = false;
      open_ = nullptr;
    }
  }

  void close() {
    if (depth_ == 1) {
      open_ = nullptr;
    }
  }

  // A scalar value at the top level or below; `what` names its JSON type for the error.
  bool scalar(std::string_view what) {
    if (depth_ == 0) {
      return fail(error_code::bad_request, "the request body must be a JSON object", "");
    }
    if (top_key("stream")) {
      return fail(error_code::bad_request, "'stream' must be a boolean, got " + std::string(what),
                  "stream");
    }
    if (top_key("model") && what != "null") {
      return fail(error_code::bad_request, "'model' must be a string, got " + std::string(what),
                  "model");
    }
    return true;
  }

  bool check_container() { return scalar(depth_ == 1 ? "object or array" : "nested"); }

  bool fail(error_code code, std::string message, std::string param) {
    error = api_error{code, std::move(message), std::move(param)};
    return false;
  }

  std::span<const std::string_view> watched_;
  int depth_ = 0;
  std::string key_;
  field_fact* open_ = nullptr; ///< The watched container whose first element is awaited.
};

} // namespace

scan_result scan_request(std::string_view body, std::span<const std::string_view> watched) {
  facts_handler handler{watched};
  bool ok = json::sax_parse(body, &handler, json::input_format_t::json, true, false);
  if (!ok || handler.error) {
    if (!handler.error) {
      handler.error = api_error{error_code::invalid_json, "the request body is not valid JSON", ""};
    }
    return {{}, std::move(handler.error)};
  }
  if (!handler.saw_root_object) {
    return {{}, api_error{error_code::bad_request, "the request body must be a JSON object", ""}};
  }
  return {std::move(handler.facts), std::nullopt};
}

} // namespace troupe::protocol

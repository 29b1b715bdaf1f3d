#include "protocol/request_scan.hpp"

#include <nlohmann/json.hpp>

namespace troupe::protocol {

namespace {

using json = nlohmann::json;

/// SAX handler: tracks depth, records top-level `model` and `stream`, rejects wrong types.
class facts_handler : public nlohmann::json_sax<json> {
public:
  request_facts facts;
  std::optional<api_error> error;
  bool saw_root_object = false;

  bool null() override { return scalar("null"); }
  bool boolean(bool val) override {
    if (top_key("stream")) {
      facts.stream = val;
      return true;
    }
    return scalar("boolean");
  }
  bool number_integer(number_integer_t) override { return scalar("number"); }
  bool number_unsigned(number_unsigned_t) override { return scalar("number"); }
  bool number_float(number_float_t, const string_t&) override { return scalar("number"); }
  bool string(string_t& val) override {
    if (top_key("model")) {
      facts.model = std::move(val);
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
    }
    ++depth_;
    return true;
  }
  bool key(string_t& val) override {
    if (depth_ == 1) {
      key_ = std::move(val);
    }
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 0) {
      return fail(error_code::bad_request, "the request body must be a JSON object", "");
    }
    if (!check_container()) {
      return false;
    }
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
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

  // A scalar value at the top level or below; `what` names its JSON type for the error.
  bool scalar(std::string_view what) {
    if (depth_ == 0) {
      return fail(error_code::bad_request, "the request body must be a JSON object", "");
    }
    if (top_key("stream")) {
      return fail(error_code::bad_request,
                  "'stream' must be a boolean, got " + std::string(what), "stream");
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

  int depth_ = 0;
  std::string key_;
};

} // namespace

scan_result scan_request(std::string_view body) {
  facts_handler handler;
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

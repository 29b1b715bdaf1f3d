#include "protocol/kv_transfer.hpp"

#include <cstdio>

namespace troupe::protocol {

bool vllm_serves_in_sequence(operation op) noexcept {
  return op == operation::chat_completions || op == operation::completions ||
         op == operation::messages || op == operation::responses_create;
}

std::uint64_t sampling_n(const nlohmann::ordered_json& body) noexcept {
  auto it = body.find("n");
  if (it == body.end() || !it->is_number_unsigned()) {
    return 1;
  }
  return it->get<std::uint64_t>();
}

void make_prefill_leg(nlohmann::ordered_json& body, operation op,
                      const nlohmann::ordered_json& params) {
  body["stream"] = false;
  body.erase("stream_options"); // refused without stream: true by strict engines
  if (body.contains("n")) {
    body["n"] = 1;
  }
  // A floor of output tokens would put decode work on the prefill worker.
  body.erase("min_tokens");
  body.erase("min_completion_tokens");
  if (op == operation::responses_create) {
    body["max_output_tokens"] = 1;
  } else if (op == operation::chat_completions && body.contains("max_completion_tokens")) {
    body["max_completion_tokens"] = 1;
    body.erase("max_tokens");
  } else {
    body["max_tokens"] = 1;
  }
  if (!params.is_null()) {
    body["kv_transfer_params"] = params;
  }
}

nlohmann::ordered_json prefill_params(kv_connector c, std::string_view transfer_id) {
  nlohmann::ordered_json p;
  switch (effective(c)) {
  case kv_connector::passthrough:
    return nullptr;
  case kv_connector::mooncake:
    p["do_remote_decode"] = true;
    p["do_remote_prefill"] = false;
    p["transfer_id"] = std::string(transfer_id);
    return p;
  default:
    p["do_remote_decode"] = true;
    p["do_remote_prefill"] = false;
    return p;
  }
}

std::optional<nlohmann::ordered_json> harvest_params(std::string_view prefill_answer) {
  auto j = nlohmann::ordered_json::parse(prefill_answer, nullptr, false);
  if (!j.is_object()) {
    return std::nullopt;
  }
  auto it = j.find("kv_transfer_params");
  if (it == j.end() || !it->is_object()) {
    return std::nullopt;
  }
  return std::move(*it);
}

nlohmann::ordered_json mooncake_decode_params(std::string_view transfer_id,
                                              std::string_view engine_id, std::string_view host,
                                              std::uint16_t port) {
  nlohmann::ordered_json p;
  p["do_remote_decode"] = false;
  p["do_remote_prefill"] = true;
  p["transfer_id"] = std::string(transfer_id);
  p["remote_engine_id"] = std::string(engine_id);
  const bool v6 = host.find(':') != std::string_view::npos;
  p["remote_bootstrap_addr"] = "http://" + std::string(v6 ? "[" : "") + std::string(host) +
                               (v6 ? "]" : "") + ":" + std::to_string(port);
  return p;
}

std::string transfer_id(std::uint64_t a, std::uint64_t b) {
  char out[48];
  std::snprintf(out, sizeof out, "xfer-%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return out;
}

} // namespace troupe::protocol

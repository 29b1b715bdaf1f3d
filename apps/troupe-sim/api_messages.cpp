#include "apps/troupe-sim/api_messages.hpp"

#include "apps/troupe-sim/api_common.hpp"
#include "apps/troupe-sim/sim_context.hpp"

namespace troupe::sim {

namespace {

nlohmann::json stop_reason(finish_reason f) {
  switch (f) {
  case finish_reason::stop:
    return "end_turn";
  case finish_reason::length:
    return "max_tokens";
  case finish_reason::tool:
    return "tool_use";
  case finish_reason::none:
    break;
  }
  return nullptr;
}

nlohmann::json usage(const gen_state& st, std::size_t output_tokens) {
  return {{"input_tokens", st.prompt_tokens() - st.cached_tokens()},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", st.cached_tokens()},
          {"output_tokens", output_tokens}};
}

std::optional<protocol::api_error>
read_anthropic_tools(const nlohmann::json& body, std::string_view last_user, gen_request& req) {
  std::vector<tool_def> tools;
  if (auto it = body.find("tools"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) {
      return bad_request("tools: Input should be a valid list", "tools");
    }
    for (const auto& t : *it) {
      if (!t.is_object() || !t.contains("name") || !t["name"].is_string()) {
        return bad_request("tools: every tool needs a name", "tools");
      }
      tools.push_back({t["name"].get<std::string>(), t.value("input_schema", nlohmann::json())});
    }
  }
  auto mode = tools.empty() ? tool_mode::none : tool_mode::automatic;
  std::string named;
  if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
    const auto type = it->is_object() ? it->value("type", "") : std::string();
    if (type == "auto") {
      mode = tools.empty() ? tool_mode::none : tool_mode::automatic;
    } else if (type == "any") {
      mode = tool_mode::required;
    } else if (type == "tool") {
      mode = tool_mode::named;
      named = it->value("name", "");
    } else if (type == "none") {
      mode = tool_mode::none;
    } else {
      return bad_request("tool_choice: type must be auto, any, tool or none", "tool_choice");
    }
    if ((type == "any" || type == "tool") && tools.empty()) {
      return bad_request("tool_choice: requires tools", "tool_choice");
    }
  }
  const auto* chosen = choose_tool(tools, mode, named, last_user);
  if (mode == tool_mode::named && chosen == nullptr) {
    return bad_request("tool_choice: tool '" + named + "' not found in tools", "tool_choice");
  }
  if (chosen != nullptr) {
    req.tool = tool_call{"", chosen->name, dump(example_arguments(chosen->schema))};
  }
  return std::nullopt;
}

nlohmann::json content_block(const gen_state& st, const sequence& s) {
  if (st.req.tool) {
    auto input = nlohmann::json::parse(s.text, nullptr, false);
    return {{"type", "tool_use"},
            {"id", st.req.tool->id},
            {"name", st.req.tool->name},
            {"input", input.is_discarded() ? nlohmann::json::object() : std::move(input)}};
  }
  return {{"type", "text"}, {"text", s.text}};
}

} // namespace

parse_result messages_api::parse(const nlohmann::json& body, sim_context&) {
  gen_request req;
  const auto model = body.find("model");
  if (model == body.end() || !model->is_string()) {
    return bad_request("model: Field required", "model");
  }
  const auto max_tokens = body.find("max_tokens");
  if (max_tokens == body.end() || max_tokens->is_null()) {
    return bad_request("max_tokens: Field required", "max_tokens");
  }
  if (!max_tokens->is_number_integer() || max_tokens->get<std::int64_t>() < 1) {
    return bad_request("max_tokens: Input should be an integer greater than or equal to 1",
                       "max_tokens");
  }
  const auto messages = body.find("messages");
  if (messages == body.end() || messages->is_null()) {
    return bad_request("messages: Field required", "messages");
  }
  if (!messages->is_array() || messages->empty()) {
    return bad_request("messages: at least one message is required", "messages");
  }
  std::string prompt;
  if (auto system = body.find("system"); system != body.end() && !system->is_null()) {
    prompt.append("system: ").append(content_text(*system)).push_back('\n');
  }
  std::string last_user;
  for (const auto& m : *messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return bad_request("messages: every message needs a role", "messages");
    }
    const auto role = m["role"].get<std::string>();
    if (role != "user" && role != "assistant") {
      return bad_request("messages: roles must be user or assistant", "messages");
    }
    auto text = content_text(m.value("content", nlohmann::json()));
    prompt.append(role).append(": ").append(text).push_back('\n');
    last_user = role == "user" ? text : std::string();
  }
  req.prompts.push_back(tokenize(prompt));
  req.max_tokens = max_tokens->get<std::size_t>();
  std::optional<protocol::api_error> err;
  req.stream = opt_bool(body, "stream", false, err);
  if (err) {
    return *err;
  }
  if (auto why = read_anthropic_tools(body, last_user, req)) {
    return *why;
  }
  auto boot = parse_bootstrap(body, 1, false);
  if (auto* e = std::get_if<protocol::api_error>(&boot)) {
    return *e;
  }
  req.bootstrap = std::get<std::vector<bootstrap_info>>(std::move(boot));
  req.model = model->get<std::string>();
  return req;
}

void messages_api::begin(gen_state& st, sim_context& ctx) {
  st.id = make_id("msg_", ctx.rng);
  if (st.req.tool) {
    st.req.tool->id = make_id("toolu_", ctx.rng);
  }
}

std::string messages_api::body(const gen_state& st) {
  const auto& s = st.seqs.front();
  return dump({{"id", st.id},
               {"type", "message"},
               {"role", "assistant"},
               {"model", st.req.model},
               {"content", nlohmann::json::array({content_block(st, s)})},
               {"stop_reason", stop_reason(s.finish)},
               {"stop_sequence", nullptr},
               {"usage", usage(st, st.completion_tokens())}});
}

void messages_api::open(const gen_state& st, event_sink& out) {
  out.event(dump({{"type", "message_start"},
                  {"message",
                   {{"id", st.id},
                    {"type", "message"},
                    {"role", "assistant"},
                    {"model", st.req.model},
                    {"content", nlohmann::json::array()},
                    {"stop_reason", nullptr},
                    {"stop_sequence", nullptr},
                    {"usage", usage(st, 0)}}}}),
            "message_start");
  nlohmann::json block = {{"type", "text"}, {"text", ""}};
  if (st.req.tool) {
    block = {{"type", "tool_use"},
             {"id", st.req.tool->id},
             {"name", st.req.tool->name},
             {"input", nlohmann::json::object()}};
  }
  out.event(dump({{"type", "content_block_start"}, {"index", 0}, {"content_block", block}}),
            "content_block_start");
  out.event(R"({"type":"ping"})", "ping");
}

void messages_api::token(const gen_state& st, std::size_t seq, event_sink& out) {
  const auto& s = st.seqs[seq];
  nlohmann::json delta =
      st.req.tool ? nlohmann::json{{"type", "input_json_delta"}, {"partial_json", s.piece()}}
                  : nlohmann::json{{"type", "text_delta"}, {"text", s.piece()}};
  out.event(dump({{"type", "content_block_delta"}, {"index", 0}, {"delta", std::move(delta)}}),
            "content_block_delta");
}

void messages_api::finish(const gen_state& st, std::size_t seq, event_sink& out) {
  const auto& s = st.seqs[seq];
  out.event(R"({"type":"content_block_stop","index":0})", "content_block_stop");
  out.event(dump({{"type", "message_delta"},
                  {"delta", {{"stop_reason", stop_reason(s.finish)}, {"stop_sequence", nullptr}}},
                  {"usage", {{"output_tokens", s.ids.size()}}}}),
            "message_delta");
}

void messages_api::close(const gen_state&, event_sink& out) {
  out.event(R"({"type":"message_stop"})", "message_stop");
}

} // namespace troupe::sim

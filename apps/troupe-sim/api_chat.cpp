#include "apps/troupe-sim/api_chat.hpp"

#include "apps/troupe-sim/api_common.hpp"
#include "apps/troupe-sim/sim_context.hpp"

namespace troupe::sim {

namespace {

nlohmann::json logprob_entry(token_id id, std::string_view text, std::size_t pos) {
  auto bytes = nlohmann::json::array();
  for (unsigned char c : text) {
    bytes.push_back(c);
  }
  return {{"token", text},
          {"logprob", token_logprob(id, pos)},
          {"bytes", std::move(bytes)},
          {"top_logprobs", nlohmann::json::array()}};
}

nlohmann::json tool_call_json(const tool_call& t) {
  return {{"id", t.id},
          {"type", "function"},
          {"function", {{"name", t.name}, {"arguments", t.arguments}}}};
}

// Reads `tools` and `tool_choice`; the tool to call, if any.
std::optional<protocol::api_error> read_chat_tools(const nlohmann::json& body,
                                                   std::string_view last_user, gen_request& req) {
  std::vector<tool_def> tools;
  if (auto it = body.find("tools"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) {
      return bad_request("'tools' must be a list", "tools");
    }
    for (const auto& t : *it) {
      const auto fn = t.is_object() ? t.find("function") : t.end();
      if (!t.is_object() || fn == t.end() || !fn->is_object() || !fn->contains("name") ||
          !(*fn)["name"].is_string()) {
        return bad_request("every tool needs a 'function' with a 'name'", "tools");
      }
      tools.push_back(
          {(*fn)["name"].get<std::string>(), fn->value("parameters", nlohmann::json())});
    }
  }
  auto mode = tools.empty() ? tool_mode::none : tool_mode::automatic;
  std::string named;
  if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
    if (it->is_string()) {
      const auto choice = it->get<std::string>();
      if (choice == "none") {
        mode = tool_mode::none;
      } else if (choice == "required") {
        mode = tool_mode::required;
      } else if (choice != "auto") {
        return bad_request("'tool_choice' must be none, auto, required or a function",
                           "tool_choice");
      }
    } else if (it->is_object() && it->contains("function") && (*it)["function"].is_object()) {
      mode = tool_mode::named;
      named = (*it)["function"].value("name", "");
    } else {
      return bad_request("'tool_choice' must be none, auto, required or a function", "tool_choice");
    }
  }
  if (mode != tool_mode::none && tools.empty()) {
    return bad_request("'tool_choice' needs 'tools'", "tool_choice");
  }
  const auto* chosen = choose_tool(tools, mode, named, last_user);
  if (mode == tool_mode::named && chosen == nullptr) {
    return bad_request("tool '" + named + "' is not among 'tools'", "tool_choice");
  }
  if (chosen != nullptr) {
    req.tool = tool_call{"", chosen->name, dump(example_arguments(chosen->schema))};
  }
  return std::nullopt;
}

} // namespace

parse_result chat_api::parse(const nlohmann::json& body, sim_context& ctx) {
  gen_request req;
  const auto messages = body.find("messages");
  if (messages == body.end() || !messages->is_array() || messages->empty()) {
    return bad_request("'messages' must be a non-empty list", "messages");
  }
  std::string prompt;
  std::string last_user;
  for (const auto& m : *messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return bad_request("every message needs a 'role'", "messages");
    }
    const auto role = m["role"].get<std::string>();
    auto text = content_text(m.value("content", nlohmann::json()));
    if (auto calls = m.find("tool_calls"); calls != m.end() && calls->is_array()) {
      for (const auto& c : *calls) {
        if (c.is_object() && c.contains("function") && c["function"].is_object()) {
          text +=
              " " + c["function"].value("name", "") + " " + c["function"].value("arguments", "");
        }
      }
    }
    prompt.append(role).append(": ").append(text).push_back('\n');
    last_user = role == "user" ? text : std::string();
  }
  req.prompts.push_back(tokenize(prompt));

  std::optional<protocol::api_error> err;
  auto max_completion = opt_count(body, "max_completion_tokens", err);
  auto max_tokens = opt_count(body, "max_tokens", err);
  req.max_tokens = max_completion ? max_completion : max_tokens;
  req.n = opt_count(body, "n", err).value_or(1);
  req.stream = opt_bool(body, "stream", false, err);
  req.logprobs = opt_bool(body, "logprobs", false, err);
  req.ignore_eos = opt_bool(body, "ignore_eos", false, err);
  if (err) {
    return *err;
  }
  if (req.n < 1 || req.n > 128) {
    return bad_request("'n' must be between 1 and 128", "n");
  }
  if (auto so = body.find("stream_options"); so != body.end() && so->is_object()) {
    req.extra["include_usage"] = so->value("include_usage", false);
  }
  if (auto why = read_chat_tools(body, last_user, req)) {
    return *why;
  }
  auto boot = parse_bootstrap(body, 1, false);
  if (auto* e = std::get_if<protocol::api_error>(&boot)) {
    return *e;
  }
  req.bootstrap = std::get<std::vector<bootstrap_info>>(std::move(boot));
  req.model = model_of(body, ctx.config.model_id);
  return req;
}

void chat_api::begin(gen_state& st, sim_context& ctx) {
  st.id = make_id("chatcmpl-", ctx.rng);
  if (st.req.tool) {
    st.req.tool->id = make_id("call_", ctx.rng);
  }
}

std::string chat_api::body(const gen_state& st) {
  auto choices = nlohmann::json::array();
  for (const auto& s : st.seqs) {
    nlohmann::json message = {{"role", "assistant"}};
    if (st.req.tool) {
      message["content"] = nullptr;
      message["tool_calls"] = nlohmann::json::array({tool_call_json(*st.req.tool)});
    } else {
      message["content"] = s.text;
    }
    nlohmann::json logprobs;
    if (st.req.logprobs) {
      auto content = nlohmann::json::array();
      for (std::size_t i = 0; i < s.ids.size(); ++i) {
        content.push_back(logprob_entry(s.ids[i], s.piece_at(i), i));
      }
      logprobs = {{"content", std::move(content)}};
    }
    choices.push_back({{"index", s.index(st.req.n)},
                       {"message", std::move(message)},
                       {"logprobs", std::move(logprobs)},
                       {"finish_reason", openai_finish(s.finish)}});
  }
  return dump({{"id", st.id},
               {"object", "chat.completion"},
               {"created", st.created},
               {"model", st.req.model},
               {"choices", std::move(choices)},
               {"usage", openai_usage(st)}});
}

nlohmann::json chat_api::chunk(const gen_state& st, nlohmann::json choices) const {
  return {{"id", st.id},
          {"object", "chat.completion.chunk"},
          {"created", st.created},
          {"model", st.req.model},
          {"choices", std::move(choices)}};
}

void chat_api::open(const gen_state& st, event_sink& out) {
  for (const auto& s : st.seqs) {
    nlohmann::json delta = {{"role", "assistant"}, {"content", ""}};
    if (st.req.tool) {
      auto head = tool_call_json(*st.req.tool);
      head["index"] = 0;
      head["function"]["arguments"] = "";
      delta = {{"role", "assistant"},
               {"content", nullptr},
               {"tool_calls", nlohmann::json::array({std::move(head)})}};
    }
    out.event(dump(chunk(st, nlohmann::json::array({{{"index", s.index(st.req.n)},
                                                     {"delta", std::move(delta)},
                                                     {"logprobs", nullptr},
                                                     {"finish_reason", nullptr}}}))));
  }
}

void chat_api::token(const gen_state& st, std::size_t seq, event_sink& out) {
  const auto& s = st.seqs[seq];
  nlohmann::json delta;
  if (st.req.tool) {
    delta = {{"tool_calls",
              nlohmann::json::array({{{"index", 0}, {"function", {{"arguments", s.piece()}}}}})}};
  } else {
    delta = {{"content", s.piece()}};
  }
  nlohmann::json logprobs;
  if (st.req.logprobs) {
    logprobs = {{"content", nlohmann::json::array(
                                {logprob_entry(s.ids.back(), s.piece(), s.ids.size() - 1)})}};
  }
  out.event(dump(chunk(st, nlohmann::json::array({{{"index", s.index(st.req.n)},
                                                   {"delta", std::move(delta)},
                                                   {"logprobs", std::move(logprobs)},
                                                   {"finish_reason", nullptr}}}))));
}

void chat_api::finish(const gen_state& st, std::size_t seq, event_sink& out) {
  const auto& s = st.seqs[seq];
  out.event(dump(chunk(st, nlohmann::json::array({{{"index", s.index(st.req.n)},
                                                   {"delta", nlohmann::json::object()},
                                                   {"logprobs", nullptr},
                                                   {"finish_reason", openai_finish(s.finish)}}}))));
}

void chat_api::close(const gen_state& st, event_sink& out) {
  if (st.req.extra.is_object() && st.req.extra.value("include_usage", false)) {
    auto last = chunk(st, nlohmann::json::array());
    last["usage"] = openai_usage(st);
    out.event(dump(last));
  }
  out.event("[DONE]");
}

} // namespace troupe::sim

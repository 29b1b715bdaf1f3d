#include "apps/troupe-sim/api_responses.hpp"

#include "apps/troupe-sim/api_common.hpp"
#include "apps/troupe-sim/generation.hpp"
#include "apps/troupe-sim/sim_context.hpp"

namespace troupe::sim {

namespace {

protocol::api_error unknown(const std::string& id) {
  return make_error(protocol::error_code::not_found, "Response with id '" + id + "' not found.");
}

std::string status_of(const gen_state& st, bool done) {
  if (st.cancelled) {
    return "cancelled";
  }
  if (st.failed) {
    return "failed";
  }
  if (st.abandoned) {
    return "incomplete";
  }
  return done ? "completed" : "in_progress";
}

bool finished(const gen_state& st) {
  for (const auto& s : st.seqs) {
    if (s.finish == finish_reason::none) {
      return false;
    }
  }
  return !st.seqs.empty();
}

// Normalizes one input item to the shape `input_items` lists; appends its text to `prompt`.
std::optional<nlohmann::json> read_item(const nlohmann::json& item, std::string& prompt,
                                        std::string& last_user) {
  if (!item.is_object()) {
    return std::nullopt;
  }
  const auto type = item.value("type", "message");
  if (type == "message") {
    if (!item.contains("role") || !item["role"].is_string()) {
      return std::nullopt;
    }
    const auto role = item["role"].get<std::string>();
    const auto content = item.value("content", nlohmann::json());
    const auto text = content_text(content);
    prompt.append(role).append(": ").append(text).push_back('\n');
    last_user = role == "user" ? text : std::string();
    auto parts = nlohmann::json::array();
    if (content.is_string()) {
      parts.push_back(
          {{"type", role == "assistant" ? "output_text" : "input_text"}, {"text", text}});
    } else if (content.is_array()) {
      parts = content;
    }
    return nlohmann::json{{"type", "message"}, {"role", role}, {"content", std::move(parts)}};
  }
  // Other items (function_call_output, ...) are kept as sent; their text joins the prompt.
  prompt.append(type).append(": ").append(content_text(item.value("output", nlohmann::json())));
  prompt.push_back('\n');
  return item;
}

} // namespace

parse_result responses_api::parse(const nlohmann::json& body, sim_context& ctx) {
  gen_request req;
  std::string prompt;
  if (auto instructions = body.find("instructions");
      instructions != body.end() && !instructions->is_null()) {
    if (!instructions->is_string()) {
      return bad_request("'instructions' must be a string", "instructions");
    }
    prompt.append("system: ").append(instructions->get<std::string>()).push_back('\n');
  }
  nlohmann::json previous;
  if (auto prev = body.find("previous_response_id"); prev != body.end() && !prev->is_null()) {
    if (!prev->is_string()) {
      return bad_request("'previous_response_id' must be a string", "previous_response_id");
    }
    const auto* stored = store_.find(prev->get<std::string>());
    if (stored == nullptr) {
      return make_error(protocol::error_code::not_found,
                        "Previous response with id '" + prev->get<std::string>() + "' not found.",
                        "previous_response_id");
    }
    prompt.append(stored->conversation);
    previous = *prev;
  }
  const auto input = body.find("input");
  if (input == body.end() || input->is_null()) {
    return bad_request("Missing required parameter: 'input'.", "input");
  }
  auto items = nlohmann::json::array();
  std::string last_user;
  if (input->is_string()) {
    items.push_back({{"type", "message"},
                     {"role", "user"},
                     {"content", {{{"type", "input_text"}, {"text", input->get<std::string>()}}}}});
    prompt.append("user: ").append(input->get<std::string>()).push_back('\n');
  } else if (input->is_array()) {
    for (const auto& item : *input) {
      auto normalized = read_item(item, prompt, last_user);
      if (!normalized) {
        return bad_request("every input item needs a 'role' or a 'type'", "input");
      }
      items.push_back(std::move(*normalized));
    }
  } else {
    return bad_request("'input' must be a string or a list of items", "input");
  }
  for (auto& item : items) {
    item["id"] = make_id(item.value("type", "message") == "message" ? "msg_" : "item_", ctx.rng);
  }
  req.prompts.push_back(tokenize(prompt));

  std::optional<protocol::api_error> err;
  req.max_tokens = opt_count(body, "max_output_tokens", err);
  req.stream = opt_bool(body, "stream", false, err);
  const bool store = opt_bool(body, "store", true, err);
  const bool background = opt_bool(body, "background", false, err);
  if (err) {
    return *err;
  }
  if (background && !store) {
    return bad_request("background responses must be stored", "background");
  }
  auto boot = parse_bootstrap(body, 1, false);
  if (auto* e = std::get_if<protocol::api_error>(&boot)) {
    return *e;
  }
  req.bootstrap = std::get<std::vector<bootstrap_info>>(std::move(boot));
  req.model = model_of(body, ctx.config.model_id);
  req.extra = {{"input_items", std::move(items)},
               {"prompt_text", std::move(prompt)},
               {"store", store},
               {"background", background},
               {"previous_response_id", previous},
               {"instructions", body.value("instructions", nlohmann::json())},
               {"max_output_tokens", body.value("max_output_tokens", nlohmann::json())}};
  return req;
}

void responses_api::begin(gen_state& st, sim_context& ctx) {
  st.id = make_id("resp_", ctx.rng);
  st.req.extra["message_id"] = make_id("msg_", ctx.rng);
  if (st.req.extra["store"].get<bool>()) {
    stored_response r;
    r.response = response_object(st);
    r.input_items = st.req.extra["input_items"];
    r.background = st.req.extra["background"].get<bool>();
    store_.put(st.id, std::move(r));
  }
}

nlohmann::json responses_api::output_item(const gen_state& st, bool done) const {
  const auto& s = st.seqs.front();
  auto content = nlohmann::json::array();
  if (done) {
    content.push_back(
        {{"type", "output_text"}, {"text", s.text}, {"annotations", nlohmann::json::array()}});
  }
  return {{"type", "message"},
          {"id", st.req.extra["message_id"]},
          {"status", done ? status_of(st, true) : "in_progress"},
          {"role", "assistant"},
          {"content", std::move(content)}};
}

nlohmann::json responses_api::response_object(const gen_state& st) const {
  const bool done = finished(st) || st.cancelled || st.abandoned || st.failed;
  const auto& x = st.req.extra;
  nlohmann::json usage;
  auto output = nlohmann::json::array();
  if (done) {
    const auto prompt = st.prompt_tokens();
    const auto completion = st.completion_tokens();
    usage = {{"input_tokens", prompt},
             {"input_tokens_details", {{"cached_tokens", st.cached_tokens()}}},
             {"output_tokens", completion},
             {"output_tokens_details", {{"reasoning_tokens", 0}}},
             {"total_tokens", prompt + completion}};
    output.push_back(output_item(st, true));
  }
  return {{"id", st.id},
          {"object", "response"},
          {"created_at", st.created},
          {"status", status_of(st, done)},
          {"background", x["background"]},
          {"error", nullptr},
          {"incomplete_details", nullptr},
          {"instructions", x["instructions"]},
          {"max_output_tokens", x["max_output_tokens"]},
          {"model", st.req.model},
          {"output", std::move(output)},
          {"parallel_tool_calls", true},
          {"previous_response_id", x["previous_response_id"]},
          {"store", x["store"]},
          {"temperature", 1.0},
          {"text", {{"format", {{"type", "text"}}}}},
          {"tool_choice", "auto"},
          {"tools", nlohmann::json::array()},
          {"top_p", 1.0},
          {"truncation", "disabled"},
          {"usage", std::move(usage)},
          {"metadata", nlohmann::json::object()}};
}

std::string responses_api::body(const gen_state& st) {
  return dump(response_object(st));
}

void responses_api::send(event_sink& out, std::string_view type, nlohmann::json ev) const {
  ev["type"] = type;
  ev["sequence_number"] = out.sent();
  out.event(dump(ev), type);
}

void responses_api::open(const gen_state& st, event_sink& out) {
  auto snapshot = response_object(st);
  send(out, "response.created", {{"response", snapshot}});
  send(out, "response.in_progress", {{"response", std::move(snapshot)}});
  send(out, "response.output_item.added", {{"output_index", 0}, {"item", output_item(st, false)}});
  send(out, "response.content_part.added",
       {{"item_id", st.req.extra["message_id"]},
        {"output_index", 0},
        {"content_index", 0},
        {"part",
         {{"type", "output_text"}, {"text", ""}, {"annotations", nlohmann::json::array()}}}});
}

void responses_api::token(const gen_state& st, std::size_t seq, event_sink& out) {
  send(out, "response.output_text.delta",
       {{"item_id", st.req.extra["message_id"]},
        {"output_index", 0},
        {"content_index", 0},
        {"delta", st.seqs[seq].piece()},
        {"logprobs", nlohmann::json::array()}});
}

void responses_api::finish(const gen_state& st, std::size_t seq, event_sink& out) {
  const auto& s = st.seqs[seq];
  const auto& item_id = st.req.extra["message_id"];
  send(out, "response.output_text.done",
       {{"item_id", item_id},
        {"output_index", 0},
        {"content_index", 0},
        {"text", s.text},
        {"logprobs", nlohmann::json::array()}});
  send(out, "response.content_part.done",
       {{"item_id", item_id},
        {"output_index", 0},
        {"content_index", 0},
        {"part",
         {{"type", "output_text"}, {"text", s.text}, {"annotations", nlohmann::json::array()}}}});
  send(out, "response.output_item.done", {{"output_index", 0}, {"item", output_item(st, true)}});
}

void responses_api::close(const gen_state& st, event_sink& out) {
  send(out, "response.completed", {{"response", response_object(st)}});
}

void responses_api::stream_error(const gen_state& st, const protocol::api_error& err,
                                 event_sink& out) {
  send(out, "error",
       {{"code", protocol::to_string(err.code)}, {"message", err.message}, {"param", nullptr}});
  auto failed = response_object(st);
  failed["status"] = "failed";
  failed["error"] = {{"code", "server_error"}, {"message", err.message}};
  send(out, "response.failed", {{"response", std::move(failed)}});
}

void responses_api::ended(const gen_state& st) {
  auto* stored = store_.find(st.id);
  if (stored == nullptr) {
    return; // not stored, or deleted meanwhile
  }
  stored->response = response_object(st);
  stored->running.reset();
  std::string conversation = st.req.extra["prompt_text"].get<std::string>();
  conversation.append("assistant: ").append(st.seqs.front().text).push_back('\n');
  stored->conversation = std::move(conversation);
}

// -- stored responses --

void responses_api::serve_get(exchange& x) {
  const auto& id = x.params.at(0);
  if (auto* stored = store_.find(id)) {
    return respond(*x.reply, 200, dump(stored->response));
  }
  respond_error(x, unknown(id));
}

void responses_api::serve_delete(exchange& x) {
  const auto& id = x.params.at(0);
  auto* stored = store_.find(id);
  if (stored == nullptr) {
    return respond_error(x, unknown(id));
  }
  if (auto g = stored->running.lock()) {
    g->cancel();
  }
  store_.erase(id);
  respond(*x.reply, 200, dump({{"id", id}, {"object", "response"}, {"deleted", true}}));
}

void responses_api::serve_cancel(exchange& x) {
  const auto& id = x.params.at(0);
  auto* stored = store_.find(id);
  if (stored == nullptr) {
    return respond_error(x, unknown(id));
  }
  if (!stored->background) {
    return respond_error(
        x, bad_request("Only responses created with background=true can be cancelled.", "id"));
  }
  if (auto g = stored->running.lock()) {
    g->cancel(); // `ended` updates the stored response
  }
  respond(*x.reply, 200, dump(stored->response));
}

void responses_api::serve_input_items(exchange& x) {
  const auto& id = x.params.at(0);
  auto* stored = store_.find(id);
  if (stored == nullptr) {
    return respond_error(x, unknown(id));
  }
  const auto& items = stored->input_items;
  auto id_of = [&](const nlohmann::json& item) { return nlohmann::json(item.value("id", "")); };
  respond(*x.reply, 200,
          dump({{"object", "list"},
                {"data", items},
                {"first_id", items.empty() ? nlohmann::json() : id_of(items.front())},
                {"last_id", items.empty() ? nlohmann::json() : id_of(items.back())},
                {"has_more", false}}));
}

} // namespace troupe::sim

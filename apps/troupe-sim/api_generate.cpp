#include "apps/troupe-sim/api_generate.hpp"

#include "apps/troupe-sim/api_common.hpp"
#include "apps/troupe-sim/sim_context.hpp"

namespace troupe::sim {

namespace {

// The end-of-sequence token SGLang reports as `matched` for a natural stop.
constexpr token_id eos_token = 2;

nlohmann::json finish_json(const gen_state& st, const sequence& s) {
  if (s.finish == finish_reason::none) {
    if (st.cancelled || st.abandoned) {
      return {{"type", "abort"}, {"message", "request aborted"}};
    }
    return nullptr;
  }
  if (s.finish == finish_reason::stop) {
    return {{"type", "stop"}, {"matched", eos_token}};
  }
  return {{"type", "length"}, {"length", s.ids.size()}};
}

nlohmann::json token_logprobs(std::span<const token_id> ids, bool first_is_null) {
  auto out = nlohmann::json::array();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    nlohmann::json lp =
        i == 0 && first_is_null ? nlohmann::json() : nlohmann::json(token_logprob(ids[i], i));
    out.push_back({std::move(lp), ids[i], nullptr});
  }
  return out;
}

} // namespace

parse_result generate_api::parse(const nlohmann::json& body, sim_context& ctx) {
  gen_request req;
  const auto text = body.find("text");
  const auto ids = body.find("input_ids");
  const bool has_text = text != body.end() && !text->is_null();
  const bool has_ids = ids != body.end() && !ids->is_null();
  if (has_text == has_ids) {
    return bad_request("Either text or input_ids should be provided.", has_text ? "text" : "");
  }
  if (has_text) {
    if (text->is_string()) {
      req.prompts.push_back(tokenize(text->get<std::string>()));
    } else if (text->is_array() && !text->empty()) {
      req.batch = true;
      for (const auto& t : *text) {
        if (!t.is_string()) {
          return bad_request("'text' must be a string or a list of strings", "text");
        }
        req.prompts.push_back(tokenize(t.get<std::string>()));
      }
    } else {
      return bad_request("'text' must be a string or a non-empty list of strings", "text");
    }
  } else {
    if (!ids->is_array() || ids->empty()) {
      return bad_request("'input_ids' must be a non-empty list", "input_ids");
    }
    if (ids->front().is_array()) {
      req.batch = true;
      for (const auto& list : *ids) {
        std::vector<token_id> prompt;
        if (!read_token_ids(list, prompt)) {
          return bad_request("'input_ids' must hold lists of token ids", "input_ids");
        }
        req.prompts.push_back(std::move(prompt));
      }
    } else {
      std::vector<token_id> prompt;
      if (!read_token_ids(*ids, prompt)) {
        return bad_request("'input_ids' must be a list of token ids", "input_ids");
      }
      req.prompts.push_back(std::move(prompt));
    }
  }

  std::optional<protocol::api_error> err;
  auto sp = body.find("sampling_params");
  nlohmann::json params = sp != body.end() && sp->is_object() ? *sp : nlohmann::json::object();
  if (sp != body.end() && !sp->is_null() && !sp->is_object()) {
    return bad_request("'sampling_params' must be an object", "sampling_params");
  }
  req.max_tokens = opt_count(params, "max_new_tokens", err).value_or(default_max_new_tokens);
  req.n = opt_count(params, "n", err).value_or(1);
  req.ignore_eos = opt_bool(params, "ignore_eos", false, err);
  req.stream = opt_bool(body, "stream", false, err);
  req.logprobs = opt_bool(body, "return_logprob", false, err);
  if (err) {
    return *err;
  }
  if (req.n < 1 || req.n > 128) {
    return bad_request("'n' must be between 1 and 128", "n");
  }
  auto boot = parse_bootstrap(body, req.prompts.size(), req.batch);
  if (auto* e = std::get_if<protocol::api_error>(&boot)) {
    return *e;
  }
  req.bootstrap = std::get<std::vector<bootstrap_info>>(std::move(boot));
  if (auto rid = body.find("rid"); rid != body.end() && !rid->is_null()) {
    req.extra["rid"] = *rid;
  }
  req.model = ctx.config.model_id;
  return req;
}

void generate_api::begin(gen_state& st, sim_context& ctx) {
  // One request id per prompt: the client's `rid` (a string, or a list for a batch) or a new one.
  const auto rid =
      st.req.extra.is_object() ? st.req.extra.value("rid", nlohmann::json()) : nlohmann::json();
  auto rids = nlohmann::json::array();
  for (std::size_t p = 0; p < st.req.prompts.size(); ++p) {
    if (rid.is_string() && p == 0) {
      rids.push_back(rid);
    } else if (rid.is_array() && p < rid.size() && rid[p].is_string()) {
      rids.push_back(rid[p]);
    } else {
      rids.push_back(make_id("", ctx.rng));
    }
  }
  st.id = rids[0].get<std::string>();
  st.req.extra["rids"] = std::move(rids);
}

nlohmann::json generate_api::result(const gen_state& st, const sequence& s) const {
  const auto& usage = st.prompts[s.prompt];
  auto id = st.req.extra["rids"][s.prompt].get<std::string>();
  if (s.choice > 0) {
    id += "-" + std::to_string(s.choice);
  }
  nlohmann::json meta = {{"id", std::move(id)},           {"finish_reason", finish_json(st, s)},
                         {"prompt_tokens", usage.tokens}, {"completion_tokens", s.ids.size()},
                         {"cached_tokens", usage.cached}, {"e2e_latency", st.elapsed_seconds()}};
  if (st.req.logprobs) {
    // A decode worker never saw the prompt computed: input logprobs come from the prefill.
    if (st.role != worker_role::decode) {
      meta["input_token_logprobs"] = token_logprobs(st.req.prompts[s.prompt], true);
    }
    meta["output_token_logprobs"] = token_logprobs(s.ids, false);
  }
  nlohmann::json r = {{"text", s.text}, {"meta_info", std::move(meta)}};
  if (st.req.batch || st.req.n > 1) {
    r["index"] = s.index(st.req.n);
  }
  return r;
}

std::string generate_api::body(const gen_state& st) {
  if (!st.req.batch && st.req.n == 1) {
    auto r = result(st, st.seqs.front());
    r.erase("index");
    return dump(r);
  }
  auto list = nlohmann::json::array();
  for (const auto& s : st.seqs) {
    auto r = result(st, s);
    r.erase("index");
    list.push_back(std::move(r));
  }
  return dump(list);
}

void generate_api::token(const gen_state& st, std::size_t seq, event_sink& out) {
  out.event(dump(result(st, st.seqs[seq])));
}

void generate_api::finish(const gen_state& st, std::size_t seq, event_sink& out) {
  // A sequence that wrote nothing still reports how it ended.
  if (st.seqs[seq].ids.empty()) {
    out.event(dump(result(st, st.seqs[seq])));
  }
}

void generate_api::close(const gen_state&, event_sink& out) {
  out.event("[DONE]");
}

} // namespace troupe::sim

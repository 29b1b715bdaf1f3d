#include "apps/troupe-sim/api_completions.hpp"

#include "apps/troupe-sim/api_common.hpp"
#include "apps/troupe-sim/sim_context.hpp"

namespace troupe::sim {

parse_result completions_api::parse(const nlohmann::json& body, sim_context& ctx) {
  gen_request req;
  const auto prompt = body.find("prompt");
  const auto bad_prompt = [] {
    return bad_request("'prompt' must be a string, a list of strings or token ids", "prompt");
  };
  if (prompt == body.end() || prompt->is_null()) {
    return bad_request("'prompt' is a required property", "prompt");
  }
  if (prompt->is_string()) {
    req.prompts.push_back(tokenize(prompt->get<std::string>()));
  } else if (prompt->is_array() && !prompt->empty()) {
    const auto& first = prompt->front();
    if (first.is_number_integer()) {
      std::vector<token_id> ids;
      if (!read_token_ids(*prompt, ids)) {
        return bad_prompt();
      }
      req.prompts.push_back(std::move(ids));
    } else {
      req.batch = true;
      for (const auto& p : *prompt) {
        if (p.is_string()) {
          req.prompts.push_back(tokenize(p.get<std::string>()));
        } else if (p.is_array()) {
          std::vector<token_id> ids;
          if (!read_token_ids(p, ids)) {
            return bad_prompt();
          }
          req.prompts.push_back(std::move(ids));
        } else {
          return bad_prompt();
        }
      }
    }
  } else {
    return bad_prompt();
  }

  std::optional<protocol::api_error> err;
  req.max_tokens = opt_count(body, "max_tokens", err);
  req.n = opt_count(body, "n", err).value_or(1);
  req.stream = opt_bool(body, "stream", false, err);
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
  auto boot = parse_bootstrap(body, req.prompts.size(), req.batch);
  if (auto* e = std::get_if<protocol::api_error>(&boot)) {
    return *e;
  }
  req.bootstrap = std::get<std::vector<bootstrap_info>>(std::move(boot));
  req.model = model_of(body, ctx.config.model_id);
  return req;
}

void completions_api::begin(gen_state& st, sim_context& ctx) {
  st.id = make_id("cmpl-", ctx.rng);
}

std::string completions_api::body(const gen_state& st) {
  auto choices = nlohmann::json::array();
  for (const auto& s : st.seqs) {
    choices.push_back({{"index", s.index(st.req.n)},
                       {"text", s.text},
                       {"logprobs", nullptr},
                       {"finish_reason", openai_finish(s.finish)}});
  }
  return dump({{"id", st.id},
               {"object", "text_completion"},
               {"created", st.created},
               {"model", st.req.model},
               {"choices", std::move(choices)},
               {"usage", openai_usage(st)}});
}

nlohmann::json completions_api::chunk(const gen_state& st, const sequence& s,
                                      std::string_view text) const {
  return {{"id", st.id},
          {"object", "text_completion"},
          {"created", st.created},
          {"model", st.req.model},
          {"choices", nlohmann::json::array({{{"index", s.index(st.req.n)},
                                              {"text", text},
                                              {"logprobs", nullptr},
                                              {"finish_reason", nullptr}}})}};
}

void completions_api::token(const gen_state& st, std::size_t seq, event_sink& out) {
  const auto& s = st.seqs[seq];
  out.event(dump(chunk(st, s, s.piece())));
}

void completions_api::finish(const gen_state& st, std::size_t seq, event_sink& out) {
  const auto& s = st.seqs[seq];
  auto c = chunk(st, s, "");
  c["choices"][0]["finish_reason"] = openai_finish(s.finish);
  out.event(dump(c));
}

void completions_api::close(const gen_state& st, event_sink& out) {
  if (st.req.extra.is_object() && st.req.extra.value("include_usage", false)) {
    nlohmann::json last = {
        {"id", st.id},           {"object", "text_completion"},        {"created", st.created},
        {"model", st.req.model}, {"choices", nlohmann::json::array()}, {"usage", openai_usage(st)}};
    out.event(dump(last));
  }
  out.event("[DONE]");
}

} // namespace troupe::sim

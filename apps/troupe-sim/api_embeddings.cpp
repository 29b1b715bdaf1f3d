#include "apps/troupe-sim/api_embeddings.hpp"

#include "apps/troupe-sim/api_common.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_set>

namespace troupe::sim {

namespace {

std::string base64(const unsigned char* data, std::size_t n) {
  static constexpr char table[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (std::size_t i = 0; i < n; i += 3) {
    std::uint32_t v = static_cast<std::uint32_t>(data[i]) << 16;
    if (i + 1 < n) {
      v |= static_cast<std::uint32_t>(data[i + 1]) << 8;
    }
    if (i + 2 < n) {
      v |= data[i + 2];
    }
    out.push_back(table[(v >> 18) & 63]);
    out.push_back(table[(v >> 12) & 63]);
    out.push_back(i + 1 < n ? table[(v >> 6) & 63] : '=');
    out.push_back(i + 2 < n ? table[v & 63] : '=');
  }
  return out;
}

} // namespace

std::size_t embeddings_request::tokens() const noexcept {
  std::size_t n = 0;
  for (const auto& in : inputs) {
    n += in.size();
  }
  return n;
}

std::size_t rerank_request::tokens() const noexcept {
  std::size_t n = 0;
  for (const auto& d : document_tokens) {
    n += query.size() + d.size();
  }
  return n;
}

std::variant<embeddings_request, protocol::api_error>
parse_embeddings(const nlohmann::json& body, std::size_t default_dim, const std::string& model) {
  embeddings_request req;
  const auto input = body.find("input");
  const auto bad = [] {
    return bad_request("'input' must be a string, a list of strings or token ids", "input");
  };
  if (input == body.end() || input->is_null()) {
    return bad_request("'input' is a required property", "input");
  }
  if (input->is_string()) {
    req.inputs.push_back(tokenize(input->get<std::string>()));
  } else if (input->is_array() && !input->empty()) {
    if (input->front().is_number_integer()) {
      std::vector<token_id> ids;
      if (!read_token_ids(*input, ids)) {
        return bad();
      }
      req.inputs.push_back(std::move(ids));
    } else {
      for (const auto& item : *input) {
        std::vector<token_id> ids;
        if (item.is_string()) {
          ids = tokenize(item.get<std::string>());
        } else if (!read_token_ids(item, ids)) {
          return bad();
        }
        req.inputs.push_back(std::move(ids));
      }
    }
  } else {
    return bad();
  }
  std::optional<protocol::api_error> err;
  req.dimensions = opt_count(body, "dimensions", err).value_or(default_dim);
  if (err) {
    return *err;
  }
  if (req.dimensions < 1 || req.dimensions > 65536) {
    return bad_request("'dimensions' must be between 1 and 65536", "dimensions");
  }
  if (auto fmt = body.find("encoding_format"); fmt != body.end() && !fmt->is_null()) {
    if (!fmt->is_string() || (*fmt != "float" && *fmt != "base64")) {
      return bad_request("'encoding_format' must be float or base64", "encoding_format");
    }
    req.base64 = *fmt == "base64";
  }
  req.model = model_of(body, model);
  return req;
}

std::vector<float> embed(std::span<const token_id> tokens, std::size_t dim) {
  std::vector<float> v(dim, 0.0f);
  const auto seed = hash_tokens(tokens);
  double norm = 0;
  for (std::size_t j = 0; j < dim; ++j) {
    // In [-1, 1), a function of the whole input and the coordinate.
    auto h = mix64(seed, j);
    v[j] = static_cast<float>(static_cast<double>(h >> 11) / 4503599627370496.0 - 1.0);
    norm += static_cast<double>(v[j]) * v[j];
  }
  norm = std::sqrt(norm);
  if (norm > 0) {
    for (auto& x : v) {
      x = static_cast<float>(x / norm);
    }
  }
  return v;
}

std::string render_embeddings(const embeddings_request& req) {
  auto data = nlohmann::json::array();
  for (std::size_t i = 0; i < req.inputs.size(); ++i) {
    auto v = embed(req.inputs[i], req.dimensions);
    nlohmann::json embedding;
    if (req.base64) {
      embedding =
          base64(reinterpret_cast<const unsigned char*>(v.data()), v.size() * sizeof(float));
    } else {
      embedding = v;
    }
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", std::move(embedding)}});
  }
  return dump({{"object", "list"},
               {"data", std::move(data)},
               {"model", req.model},
               {"usage", {{"prompt_tokens", req.tokens()}, {"total_tokens", req.tokens()}}}});
}

std::variant<rerank_request, protocol::api_error> parse_rerank(const nlohmann::json& body,
                                                               const std::string& model) {
  rerank_request req;
  const auto query = body.find("query");
  if (query == body.end() || !query->is_string()) {
    return bad_request("'query' must be a string", "query");
  }
  req.query = tokenize(query->get<std::string>());
  const auto docs = body.find("documents");
  if (docs == body.end() || !docs->is_array() || docs->empty()) {
    return bad_request("'documents' must be a non-empty list", "documents");
  }
  for (const auto& d : *docs) {
    std::string text;
    if (d.is_string()) {
      text = d.get<std::string>();
    } else if (d.is_object() && d.contains("text") && d["text"].is_string()) {
      text = d["text"].get<std::string>();
    } else {
      return bad_request("every document must be a string or {\"text\": ...}", "documents");
    }
    req.document_tokens.push_back(tokenize(text));
    req.documents.push_back(std::move(text));
  }
  std::optional<protocol::api_error> err;
  auto top = opt_count(body, "top_n", err);
  if (!top) {
    top = opt_count(body, "top_k", err);
  }
  req.top_n = top.value_or(0);
  req.return_documents = opt_bool(body, "return_documents", true, err);
  if (err) {
    return *err;
  }
  req.model = model_of(body, model);
  return req;
}

double rerank_score(std::span<const token_id> query, std::span<const token_id> document) {
  const std::unordered_set<token_id> words(document.begin(), document.end());
  std::size_t found = 0;
  for (auto t : query) {
    found += words.count(t);
  }
  const double overlap = query.empty() ? 0.0 : static_cast<double>(found) / query.size();
  const double jitter =
      static_cast<double>(mix64(hash_tokens(query), hash_tokens(document)) % 1000) / 20000.0;
  return std::min(1.0, 0.95 * overlap + jitter);
}

std::string render_rerank(const rerank_request& req, const std::string& id) {
  std::vector<std::pair<double, std::size_t>> scored;
  for (std::size_t i = 0; i < req.documents.size(); ++i) {
    scored.emplace_back(rerank_score(req.query, req.document_tokens[i]), i);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  if (req.top_n > 0 && req.top_n < scored.size()) {
    scored.resize(req.top_n);
  }
  auto results = nlohmann::json::array();
  for (const auto& [score, i] : scored) {
    nlohmann::json r = {{"index", i}, {"score", score}, {"relevance_score", score}};
    if (req.return_documents) {
      r["document"] = {{"text", req.documents[i]}};
    }
    results.push_back(std::move(r));
  }
  return dump({{"id", id},
               {"object", "rerank"},
               {"model", req.model},
               {"results", std::move(results)},
               {"usage", {{"prompt_tokens", req.tokens()}, {"total_tokens", req.tokens()}}}});
}

} // namespace troupe::sim

#pragma once

#include "apps/troupe-sim/tokenizer.hpp"
#include "protocol/error.hpp"

#include <cstddef>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace troupe::sim {

// The non-generative APIs: one prefill, no tokens out.

/// A parsed `POST /v1/embeddings`.
struct embeddings_request {
  std::vector<std::vector<token_id>> inputs; ///< One per input.
  std::size_t dimensions = 0;                ///< Vector size.
  bool base64 = false;                       ///< `encoding_format: base64`.
  std::string model;

  /// Tokens of all inputs.
  std::size_t tokens() const noexcept;
};

/// Reads `input` (a string, strings, token ids or lists of token ids), `dimensions` (default
/// `default_dim`) and `encoding_format`.
std::variant<embeddings_request, protocol::api_error>
parse_embeddings(const nlohmann::json& body, std::size_t default_dim, const std::string& model);

/// A deterministic unit vector of `dim` floats for `tokens`: equal inputs, equal vectors.
std::vector<float> embed(std::span<const token_id> tokens, std::size_t dim);

/// `{"object":"list","data":[{"object":"embedding","index","embedding"}],"model","usage"}`.
std::string render_embeddings(const embeddings_request& req);

/// A parsed rerank request (`/v1/rerank`, `/rerank`).
struct rerank_request {
  std::vector<token_id> query;
  std::vector<std::string> documents;
  std::vector<std::vector<token_id>> document_tokens;
  std::size_t top_n = 0; ///< Results returned (all when 0).
  bool return_documents = true;
  std::string model;

  /// Tokens scored: the query once per document plus each document.
  std::size_t tokens() const noexcept;
};

/// Reads `query`, `documents` (strings or `{"text"}` objects), `top_n` (or `top_k`) and
/// `return_documents`.
std::variant<rerank_request, protocol::api_error> parse_rerank(const nlohmann::json& body,
                                                               const std::string& model);

/// Relevance in [0, 1]: the share of the query's tokens found in the document, plus a little
/// deterministic jitter below 0.05 so that ties are broken the same way every time.
double rerank_score(std::span<const token_id> query, std::span<const token_id> document);

/// `{"id","object":"rerank","model","results":[{"index","score","relevance_score","document"}],
/// "usage"}`, best first.
std::string render_rerank(const rerank_request& req, const std::string& id);

} // namespace troupe::sim

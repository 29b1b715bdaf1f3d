// Differential fuzzing of the client request parser (`transport::request_parser`, fields kept
// flat in `request_fields`) against Beast's own `http::request_parser<string_body>`, which the
// server used before: both are given the same bytes in the same pieces (the input's first byte
// picks the piece size and the limits), and after every `put` they must have taken as many
// bytes and said the same (error or not, head done, message done). Once both have a head, its
// method, target, version, fields (in order: Beast's enum, the name as written, the value),
// keep-alive, chunked and content-length facts must agree; once both are done, the body too, and
// the head as `http::write` serializes it must be the same bytes. A copy of the parsed request
// must equal it, and changing keep-alive or the content length on both must leave them agreeing.

#include "tests/fuzz/fuzz_check.hpp"
#include "transport/request_parser.hpp"

#include <algorithm>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/ostream.hpp>
#include <cctype>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

using namespace troupe::transport;

namespace {

using beast_request = http::request<http::string_body>;

struct field_triple {
  http::field known;
  std::string name;
  std::string value;
  bool operator==(const field_triple&) const = default;
};

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

/// The fields, grouped by name (ignoring case) in a stable order: the same for both parsers
/// when they hold the same fields and each name's fields in the same order.
template <class Message> std::vector<field_triple> fields_of(const Message& m) {
  std::vector<field_triple> out;
  for (const auto& f : m) {
    out.push_back({f.name(), std::string(f.name_string()), std::string(f.value())});
  }
  std::stable_sort(out.begin(), out.end(), [](const field_triple& a, const field_triple& b) {
    return lower(a.name) < lower(b.name);
  });
  return out;
}

/// The head as `http::write` puts it on the wire (what a test client sends): the request line,
/// then its field lines grouped as `fields_of` groups them.
template <class Message> std::vector<std::string> head_lines(const Message& m) {
  std::ostringstream os;
  os << m.base();
  auto text = os.str();
  FUZZ_CHECK(text.size() >= 4 && text.substr(text.size() - 4) == "\r\n\r\n");
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at + 2 < text.size()) {
    auto end = text.find("\r\n", at);
    lines.push_back(text.substr(at, end - at));
    at = end + 2;
  }
  std::stable_sort(lines.begin() + 1, lines.end(), [](const std::string& a, const std::string& b) {
    return lower(a.substr(0, a.find(':'))) < lower(b.substr(0, b.find(':')));
  });
  return lines;
}

template <class A, class B> void check_same_head(const A& ours, const B& theirs) {
  FUZZ_CHECK(ours.method() == theirs.method());
  FUZZ_CHECK(ours.method_string() == theirs.method_string());
  FUZZ_CHECK(ours.target() == theirs.target());
  FUZZ_CHECK(ours.version() == theirs.version());
  FUZZ_CHECK(fields_of(ours) == fields_of(theirs));
  FUZZ_CHECK(ours.keep_alive() == theirs.keep_alive());
  FUZZ_CHECK(ours.chunked() == theirs.chunked());
  FUZZ_CHECK(ours.has_content_length() == theirs.has_content_length());
  for (auto name :
       {http::field::host, http::field::content_type, http::field::content_length,
        http::field::connection, http::field::transfer_encoding, http::field::authorization}) {
    FUZZ_CHECK(ours[name] == theirs[name]);
    FUZZ_CHECK(ours.count(name) == theirs.count(name));
  }
  for (std::string_view name : {"x-request-id", "X-Request-Id", "anthropic-beta", "host"}) {
    FUZZ_CHECK(ours[name] == theirs[beast::string_view(name.data(), name.size())]);
    FUZZ_CHECK(ours.count(name) == theirs.count(beast::string_view(name.data(), name.size())));
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  // The first byte: the piece size (1-16, or the whole input) and small or default limits.
  auto mode = data[0];
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  std::size_t piece = (mode & 0x0F) == 0 ? bytes.size() : (mode & 0x0F);
  bool small_limits = (mode & 0x10) != 0;
  bool eager = (mode & 0x20) != 0;

  request_parser ours;
  http::request_parser<http::string_body> theirs;
  for (auto* p : {static_cast<http::basic_parser<true>*>(&ours),
                  static_cast<http::basic_parser<true>*>(&theirs)}) {
    if (small_limits) {
      p->header_limit(256);
      p->body_limit(128);
    }
    p->eager(eager);
  }

  // Both parsers see the same buffer: what they have not taken stays in it, and the next piece
  // is appended (as the server's read buffer does).
  std::string pending;
  std::size_t at = 0;
  bool checked_head = false;
  while (true) {
    if (at < bytes.size()) {
      auto n = std::min(piece, bytes.size() - at);
      pending.append(bytes.substr(at, n));
      at += n;
    }
    beast::error_code ec_ours;
    beast::error_code ec_theirs;
    auto n_ours = ours.put(net::buffer(pending.data(), pending.size()), ec_ours);
    auto n_theirs = theirs.put(net::buffer(pending.data(), pending.size()), ec_theirs);
    FUZZ_CHECK(n_ours == n_theirs);
    FUZZ_CHECK(ec_ours == ec_theirs);
    FUZZ_CHECK(ours.is_header_done() == theirs.is_header_done());
    FUZZ_CHECK(ours.is_done() == theirs.is_done());
    pending.erase(0, n_ours);
    if (ours.is_header_done() && !checked_head) {
      checked_head = true;
      check_same_head(ours.get(), theirs.get());
      FUZZ_CHECK(ours.content_length() == theirs.content_length());
      FUZZ_CHECK(ours.need_eof() == theirs.need_eof());
    }
    if (ec_ours && ec_ours != http::error::need_more) {
      break; // refused alike
    }
    if (ours.is_done()) {
      break;
    }
    if (at >= bytes.size() && (n_ours == 0 || pending.empty())) {
      break; // the bytes ended before the message
    }
  }
  if (!ours.is_done()) {
    return 0;
  }
  request mine = ours.release();
  beast_request reference = theirs.release();
  check_same_head(mine, reference);
  FUZZ_CHECK(mine.body() == reference.body());
  FUZZ_CHECK(head_lines(mine) == head_lines(reference));

  // A copy is the same request, its text its own.
  request copy = mine;
  check_same_head(copy, reference);
  FUZZ_CHECK(head_lines(copy) == head_lines(reference));

  // What the server does to a request (partial_request, tests, the simulator): set keep-alive
  // and the payload, then read the facts back.
  for (bool keep : {false, true}) {
    mine.keep_alive(keep);
    reference.keep_alive(keep);
    FUZZ_CHECK(mine.keep_alive() == reference.keep_alive());
    FUZZ_CHECK(mine.keep_alive() == keep);
  }
  mine.prepare_payload();
  reference.prepare_payload();
  FUZZ_CHECK(mine.has_content_length() == reference.has_content_length());
  FUZZ_CHECK(mine[http::field::content_length] == reference[http::field::content_length]);
  FUZZ_CHECK(mine.chunked() == reference.chunked());
  return 0;
}

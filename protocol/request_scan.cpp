#include "protocol/request_scan.hpp"

#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TROUPE_SCAN_AVX2 1
#endif

namespace troupe::protocol {

std::string_view describe(json_kind k) noexcept {
  switch (k) {
  case json_kind::absent:
    return "absent";
  case json_kind::null:
    return "null";
  case json_kind::boolean:
    return "a boolean";
  case json_kind::integer:
    return "an integer";
  case json_kind::number:
    return "a number";
  case json_kind::string:
    return "a string";
  case json_kind::array:
    return "an array";
  case json_kind::object:
    return "an object";
  }
  return "absent";
}

namespace {

#if defined(TROUPE_SCAN_AVX2)
/// Thirty-two bytes at a time up to the first quote, backslash, control or non-ASCII byte of a
/// string, or to fewer than 32 bytes before `end` (the caller's loops go on from there). Built
/// for AVX2 whatever the build's target; called only where the CPU has it (`has_avx2`): a
/// 100 KB prompt is ~10% of the gateway's time in this scan.
__attribute__((target("avx2"))) const char* skip_plain_avx2(const char* q, const char* end) {
  const __m256i quote = _mm256_set1_epi8('"');
  const __m256i backslash = _mm256_set1_epi8('\\');
  const __m256i space = _mm256_set1_epi8(0x20);
  while (end - q >= 32) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
    // A signed compare: below 0x20 are the control bytes and, negative, the non-ASCII ones.
    __m256i special = _mm256_or_si256(
        _mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, backslash)),
        _mm256_cmpgt_epi8(space, v));
    if (auto mask = static_cast<unsigned>(_mm256_movemask_epi8(special))) {
      return q + __builtin_ctz(mask);
    }
    q += 32;
  }
  return q;
}

const bool has_avx2 = (__builtin_cpu_init(), __builtin_cpu_supports("avx2"));
#endif

/// Deeper nesting is refused: no engine accepts it either, and it bounds the recursion.
constexpr int max_depth = 512;

/// A strict RFC 8259 validator over the raw bytes that notes the routing facts on the way.
/// Every request body goes through it, so it allocates nothing but the facts it returns and
/// looks at each byte once (nlohmann's SAX parser copies every string char by char: this
/// scanner is ~20x cheaper on a 1 KB chat request, see docs/performance.md).
class scanner {
public:
  scanner(std::string_view body, std::span<const std::string_view> watched)
      : begin_(body.data()), p_(body.data()), end_(body.data() + body.size()), watched_(watched) {
    facts.fields.resize(watched.size());
  }

  request_facts facts;
  std::optional<api_error> error;

  void run() {
    skip_ws();
    if (p_ == end_) {
      syntax();
      return;
    }
    if (*p_ != '{') {
      // Valid JSON that is not an object is the client's mistake of shape, not of syntax.
      if (value(0, nullptr) && (skip_ws(), p_ == end_)) {
        fail(error_code::bad_request, "the request body must be a JSON object", "");
      } else if (!error) {
        syntax();
      }
      return;
    }
    if (!object(0)) {
      return;
    }
    skip_ws();
    if (p_ != end_) {
      syntax();
    }
  }

private:
  // -- grammar --

  // Parses one value at `depth`. `top` names the top-level field it belongs to, if watched
  // or a routing fact; null otherwise.
  bool value(int depth, std::string_view* top_key) {
    if (p_ == end_) {
      return syntax();
    }
    switch (*p_) {
    case '{':
      return container_value(depth, top_key, json_kind::object);
    case '[':
      return container_value(depth, top_key, json_kind::array);
    case '"': {
      auto start = p_;
      bool escaped = false;
      if (!string(escaped)) {
        return false;
      }
      return scalar(top_key, json_kind::string, start, escaped);
    }
    case 't':
      return literal("true") && boolean(top_key, true);
    case 'f':
      return literal("false") && boolean(top_key, false);
    case 'n':
      return literal("null") && scalar(top_key, json_kind::null, nullptr, false);
    default: {
      auto start = p_;
      bool integral = true;
      if (!number(integral)) {
        return false;
      }
      return number_value(top_key, start, integral);
    }
    }
  }

  bool container_value(int depth, std::string_view* top_key, json_kind kind) {
    field_fact* watched = nullptr;
    if (top_key) {
      if (*top_key == "stream") {
        return fail(error_code::bad_request, "'stream' must be a boolean, got object or array",
                    "stream");
      }
      if (*top_key == "model") {
        return fail(error_code::bad_request, "'model' must be a string, got object or array",
                    "model");
      }
      watched = note(*top_key, kind);
    }
    if (depth + 1 > max_depth) {
      return fail(error_code::bad_request,
                  "the request body nests deeper than " + std::to_string(max_depth) + " levels",
                  "");
    }
    auto before = p_;
    bool ok = kind == json_kind::object ? object(depth + 1) : array(depth + 1);
    if (ok && watched) {
      watched->empty = is_empty_container(before);
    }
    return ok;
  }

  bool object(int depth) {
    ++p_; // '{'
    skip_ws();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      return true;
    }
    for (;;) {
      skip_ws();
      if (p_ == end_ || *p_ != '"') {
        return syntax();
      }
      auto key_start = p_;
      bool escaped = false;
      if (!string(escaped)) {
        return false;
      }
      skip_ws();
      if (p_ == end_ || *p_ != ':') {
        return syntax();
      }
      ++p_;
      skip_ws();
      if (depth == 0) {
        std::string decoded;
        std::string_view key = unquote(key_start, escaped, decoded);
        forget(key);
        auto value_start = p_;
        if (!value(depth, &key)) {
          return false;
        }
        note_span(key, value_start);
      } else if (!value(depth, nullptr)) {
        return false;
      }
      skip_ws();
      if (p_ == end_) {
        return syntax();
      }
      if (*p_ == ',') {
        ++p_;
        continue;
      }
      if (*p_ == '}') {
        ++p_;
        return true;
      }
      return syntax();
    }
  }

  bool array(int depth) {
    ++p_; // '['
    skip_ws();
    if (p_ != end_ && *p_ == ']') {
      ++p_;
      return true;
    }
    for (;;) {
      skip_ws();
      if (!value(depth, nullptr)) {
        return false;
      }
      skip_ws();
      if (p_ == end_) {
        return syntax();
      }
      if (*p_ == ',') {
        ++p_;
        continue;
      }
      if (*p_ == ']') {
        ++p_;
        return true;
      }
      return syntax();
    }
  }

  // Validates a string starting at the opening quote; leaves `p_` after the closing quote.
  bool string(bool& escaped) {
    ++p_; // '"'
    while (p_ != end_) {
      // Plain ASCII runs (the bulk of any prompt) need no look beyond the table.
      const char* q = p_; // a local: stores through `char*` may alias the member
#if defined(TROUPE_SCAN_AVX2)
      if (has_avx2) {
        q = skip_plain_avx2(q, end_);
      }
#endif
#if defined(__SSE2__)
      // Sixteen bytes at a time up to the first quote, backslash, control or non-ASCII byte (a
      // signed compare with 0x20 finds both of the last two).
      const __m128i quote = _mm_set1_epi8('"');
      const __m128i backslash = _mm_set1_epi8('\\');
      const __m128i space = _mm_set1_epi8(0x20);
      while (end_ - q >= 16) {
        __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
        __m128i special =
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                         _mm_cmplt_epi8(v, space));
        if (auto mask = static_cast<unsigned>(_mm_movemask_epi8(special))) {
          q += __builtin_ctz(mask);
          break;
        }
        q += 16;
      }
#endif
      // Eight bytes at a time while none is a quote, a backslash, a control or non-ASCII byte.
      constexpr std::uint64_t ones = 0x0101010101010101ULL;
      constexpr std::uint64_t highs = 0x8080808080808080ULL;
      auto zero_byte = [](std::uint64_t x) { return (x - ones) & ~x & highs; };
      while (end_ - q >= 8) {
        std::uint64_t v;
        std::memcpy(&v, q, 8);
        auto special = zero_byte(v ^ (ones * '"')) | zero_byte(v ^ (ones * '\\')) |
                       ((v - ones * 0x20) & ~v & highs) | (v & highs);
        if (special) {
          break;
        }
        q += 8;
      }
      while (q != end_ && plain_[static_cast<unsigned char>(*q)]) {
        ++q;
      }
      p_ = q;
      if (p_ == end_) {
        break;
      }
      auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c == '\\') {
        escaped = true;
        if (!escape()) {
          return false;
        }
        continue;
      }
      if (c < 0x20) {
        return syntax(); // control characters must be escaped
      }
      if (c < 0x80) {
        ++p_;
        continue;
      }
      if (!utf8()) {
        return false;
      }
    }
    return syntax();
  }

  bool escape() {
    ++p_; // '\\'
    if (p_ == end_) {
      return syntax();
    }
    switch (*p_) {
    case '"':
    case '\\':
    case '/':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't':
      ++p_;
      return true;
    case 'u': {
      ++p_;
      unsigned cp = 0;
      if (!hex4(cp)) {
        return false;
      }
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        // A high surrogate must be followed by an escaped low surrogate.
        if (end_ - p_ < 6 || p_[0] != '\\' || p_[1] != 'u') {
          return syntax();
        }
        p_ += 2;
        unsigned low = 0;
        if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) {
          return syntax();
        }
      } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        return syntax();
      }
      return true;
    }
    default:
      return syntax();
    }
  }

  bool hex4(unsigned& cp) {
    if (end_ - p_ < 4) {
      return syntax();
    }
    for (int i = 0; i < 4; ++i, ++p_) {
      char c = *p_;
      unsigned d;
      if (c >= '0' && c <= '9') {
        d = static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        d = static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        d = static_cast<unsigned>(c - 'A' + 10);
      } else {
        return syntax();
      }
      cp = cp * 16 + d;
    }
    return true;
  }

  // One well-formed UTF-8 sequence (no overlongs, no surrogates, at most U+10FFFF).
  bool utf8() {
    auto c = static_cast<unsigned char>(*p_);
    int len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) {
        lo = 0xA0;
      } else if (c == 0xED) {
        hi = 0x9F;
      }
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) {
        lo = 0x90;
      } else if (c == 0xF4) {
        hi = 0x8F;
      }
    } else {
      return syntax();
    }
    if (end_ - p_ < len) {
      return syntax();
    }
    for (int i = 1; i < len; ++i) {
      auto b = static_cast<unsigned char>(p_[i]);
      if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) {
        return syntax();
      }
    }
    p_ += len;
    return true;
  }

  bool number(bool& integral) {
    if (*p_ == '-') {
      ++p_;
    }
    if (p_ == end_) {
      return syntax();
    }
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') {
        ++p_;
      }
    } else {
      return syntax();
    }
    if (p_ != end_ && *p_ == '.') {
      integral = false;
      ++p_;
      if (!digits()) {
        return false;
      }
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      integral = false;
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) {
        ++p_;
      }
      if (!digits()) {
        return false;
      }
    }
    return true;
  }

  bool digits() {
    auto start = p_;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') {
      ++p_;
    }
    return p_ != start || syntax();
  }

  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() ||
        std::string_view{p_, word.size()} != word) {
      return syntax();
    }
    p_ += word.size();
    return true;
  }

  void skip_ws() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) {
      ++p_;
    }
  }

  // -- facts --

  bool scalar(std::string_view* top_key, json_kind kind, const char* start, bool escaped) {
    if (!top_key) {
      return true;
    }
    auto* f = note(*top_key, kind);
    if (kind == json_kind::string) {
      std::string decoded;
      auto text = unquote(start, escaped, decoded);
      if (f) {
        f->empty = text.empty();
      }
      if (*top_key == "model") {
        facts.model = std::string(text);
        return true;
      }
      if (*top_key == "previous_response_id") {
        facts.previous_response_id = std::string(text);
        return true;
      }
    }
    return check_type(*top_key, kind);
  }

  bool boolean(std::string_view* top_key, bool v) {
    if (!top_key) {
      return true;
    }
    note(*top_key, json_kind::boolean);
    if (*top_key == "stream") {
      facts.stream = v;
      return true;
    }
    return check_type(*top_key, json_kind::boolean);
  }

  bool number_value(std::string_view* top_key, const char* start, bool integral) {
    if (!top_key) {
      return true;
    }
    auto* f = note(*top_key, integral ? json_kind::integer : json_kind::number);
    if (f && integral) {
      f->integer = clamp_integer(std::string_view{start, static_cast<std::size_t>(p_ - start)});
    }
    return check_type(*top_key, integral ? json_kind::integer : json_kind::number);
  }

  // The routing facts must have their types: `stream` a boolean, `model` a string or null.
  bool check_type(std::string_view key, json_kind kind) {
    auto what = [&]() -> std::string {
      switch (kind) {
      case json_kind::null:
        return "null";
      case json_kind::boolean:
        return "boolean";
      case json_kind::string:
        return "string";
      default:
        return "number";
      }
    };
    if (key == "stream") {
      return fail(error_code::bad_request, "'stream' must be a boolean, got " + what(), "stream");
    }
    if (key == "model" && kind != json_kind::null) {
      return fail(error_code::bad_request, "'model' must be a string, got " + what(), "model");
    }
    return true;
  }

  // A repeated top-level key counts by its last occurrence, as in the parsers the body meets
  // later (nlohmann's in the gateway, the engine's): what an earlier one set is dropped.
  void forget(std::string_view key) {
    if (key == "model") {
      facts.model.reset();
    } else if (key == "previous_response_id") {
      facts.previous_response_id.reset();
    } else if (key == "stream") {
      facts.stream = false;
    }
  }

  field_fact* note(std::string_view key, json_kind kind) {
    for (std::size_t i = 0; i < watched_.size(); ++i) {
      if (watched_[i] == key) {
        auto& f = facts.fields[i];
        f = field_fact{};
        f.kind = kind;
        return &f;
      }
    }
    return nullptr;
  }

  // Where the raw value of watched field `key` lies: from `start` to the cursor.
  void note_span(std::string_view key, const char* start) {
    for (std::size_t i = 0; i < watched_.size(); ++i) {
      if (watched_[i] == key) {
        auto& f = facts.fields[i];
        f.offset = static_cast<std::size_t>(start - begin_);
        f.length = static_cast<std::size_t>(p_ - start);
        return;
      }
    }
  }

  // `[` or `{` at `open`, then only whitespace, then the closing bracket.
  static bool is_empty_container(const char* open) {
    const char* q = open + 1;
    while (*q == ' ' || *q == '\n' || *q == '\r' || *q == '\t') {
      ++q;
    }
    return *q == ']' || *q == '}';
  }

  static std::int64_t clamp_integer(std::string_view digits) {
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec == std::errc::result_out_of_range) {
      return digits.front() == '-' ? std::numeric_limits<std::int64_t>::min()
                                   : std::numeric_limits<std::int64_t>::max();
    }
    return v;
  }

  // The text of the validated string literal at `start` (quote included); escapes are decoded
  // into `buf` only when present.
  std::string_view unquote(const char* start, bool escaped, std::string& buf) const {
    const char* q = start + 1;
    if (!escaped) {
      const char* e = q;
      while (*e != '"') {
        ++e;
      }
      return {q, static_cast<std::size_t>(e - q)};
    }
    for (;;) {
      char c = *q++;
      if (c == '"') {
        return buf;
      }
      if (c != '\\') {
        buf.push_back(c);
        continue;
      }
      char e = *q++;
      switch (e) {
      case 'b':
        buf.push_back('\b');
        break;
      case 'f':
        buf.push_back('\f');
        break;
      case 'n':
        buf.push_back('\n');
        break;
      case 'r':
        buf.push_back('\r');
        break;
      case 't':
        buf.push_back('\t');
        break;
      case 'u': {
        unsigned cp = read_hex(q);
        q += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          unsigned low = read_hex(q + 2);
          q += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        append_utf8(buf, cp);
        break;
      }
      default:
        buf.push_back(e); // '"', '\\', '/'
      }
    }
  }

  static unsigned read_hex(const char* q) {
    unsigned cp = 0;
    for (int i = 0; i < 4; ++i) {
      char c = q[i];
      cp = cp * 16 + static_cast<unsigned>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return cp;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // -- errors --

  bool syntax() {
    if (!error) {
      fail(error_code::invalid_json,
           "the request body is not valid JSON (error at byte " +
               std::to_string(std::min(p_, end_) - begin_ + 1) + ")",
           "");
    }
    return false;
  }

  bool fail(error_code code, std::string message, std::string param) {
    if (!error) {
      error = api_error{code, std::move(message), std::move(param)};
    }
    return false;
  }

  /// Bytes that can be skipped inside a string: ASCII except controls, quote and backslash.
  static constexpr auto plain_ = [] {
    std::array<bool, 256> t{};
    for (int c = 0x20; c < 0x80; ++c) {
      t[static_cast<std::size_t>(c)] = c != '"' && c != '\\';
    }
    return t;
  }();

  const char* begin_;
  const char* p_;
  const char* end_;
  std::span<const std::string_view> watched_;
};

} // namespace

scan_result scan_request(std::string_view body, std::span<const std::string_view> watched) {
  scanner s{body, watched};
  s.run();
  if (s.error) {
    return {{}, std::move(s.error)};
  }
  return {std::move(s.facts), std::nullopt};
}

} // namespace troupe::protocol

#include "json.hpp"

#include <cstdlib>
#include <limits>
#include <utility>

namespace bench::json {

parse_error::parse_error(const std::string& what, std::size_t offset)
    : std::runtime_error(what + " at byte " + std::to_string(offset)), offset_(offset) {}

value value::make_boolean(bool b) {
  value v;
  v.kind_ = kind::boolean;
  v.boolean_ = b;
  return v;
}

value value::make_number(double d) {
  value v;
  v.kind_ = kind::number;
  v.number_ = d;
  return v;
}

value value::make_string(std::string s) {
  value v;
  v.kind_ = kind::string;
  v.string_ = std::move(s);
  return v;
}

value value::make_array(std::vector<value> items) {
  value v;
  v.kind_ = kind::array;
  v.items_ = std::move(items);
  return v;
}

value value::make_object(std::vector<std::string> keys, std::vector<value> values) {
  value v;
  v.kind_ = kind::object;
  v.keys_ = std::move(keys);
  v.values_ = std::move(values);
  return v;
}

bool value::boolean_or(bool fallback) const noexcept {
  return kind_ == kind::boolean ? boolean_ : fallback;
}

double value::number_or(double fallback) const noexcept {
  return kind_ == kind::number ? number_ : fallback;
}

std::string value::string_or(std::string_view fallback) const {
  return kind_ == kind::string ? string_ : std::string(fallback);
}

const value* value::find(std::string_view key) const noexcept {
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) return &values_[i];
  }
  return nullptr;
}

namespace {

class parser {
 public:
  explicit parser(std::string_view text) : text_(text) {}

  value document() {
    value v = any(0);
    skip_space();
    if (pos_ != text_.size()) fail("trailing characters after the document");
    return v;
  }

 private:
  // Google Benchmark nests three levels deep; this only stops a corrupt
  // file from overflowing the stack.
  static constexpr int max_depth = 64;

  [[noreturn]] void fail(const std::string& what) const { throw parse_error(what, pos_); }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool consume(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  char peek() {
    skip_space();
    if (pos_ == text_.size()) fail("unexpected end of input");
    return text_[pos_];
  }

  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  value any(int depth) {
    if (depth > max_depth) fail("nesting too deep");
    const char c = peek();
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return value::make_string(string());
    if (consume("true")) return value::make_boolean(true);
    if (consume("false")) return value::make_boolean(false);
    if (consume("null")) return value{};
    if (consume("NaN")) return value::make_number(std::numeric_limits<double>::quiet_NaN());
    if (consume("Infinity")) return value::make_number(std::numeric_limits<double>::infinity());
    if (consume("-Infinity")) return value::make_number(-std::numeric_limits<double>::infinity());
    return value::make_number(number());
  }

  value object(int depth) {
    expect('{');
    std::vector<std::string> keys;
    std::vector<value> values;
    if (peek() == '}') {
      ++pos_;
      return value::make_object(std::move(keys), std::move(values));
    }
    for (;;) {
      if (peek() != '"') fail("expected a member name");
      keys.push_back(string());
      expect(':');
      values.push_back(any(depth + 1));
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      return value::make_object(std::move(keys), std::move(values));
    }
  }

  value array(int depth) {
    expect('[');
    std::vector<value> items;
    if (peek() == ']') {
      ++pos_;
      return value::make_array(std::move(items));
    }
    for (;;) {
      items.push_back(any(depth + 1));
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']');
      return value::make_array(std::move(items));
    }
  }

  double number() {
    const std::size_t start = pos_;
    auto digits_or_sign = [](char c) {
      return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
    };
    while (pos_ < text_.size() && digits_or_sign(text_[pos_])) ++pos_;
    if (pos_ == start) fail("expected a value");
    const std::string token(text_.substr(start, pos_ - start));
    char* end = nullptr;
    const double d = std::strtod(token.c_str(), &end);
    if (end != token.c_str() + token.size()) {
      pos_ = start;
      fail("malformed number '" + token + "'");
    }
    return d;
  }

  unsigned hex4() {
    if (text_.size() - pos_ < 4) fail("truncated \\u escape");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      code <<= 4;
      if (c >= '0' && c <= '9') {
        code |= static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        code |= static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        code |= static_cast<unsigned>(c - 'A' + 10);
      } else {
        fail("bad hex digit in \\u escape");
      }
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (pos_ == text_.size()) fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ == text_.size()) fail("unterminated escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned code = hex4();
          // A surrogate pair encodes one code point above U+FFFF.
          if (code >= 0xD800 && code < 0xDC00 && consume("\\u")) {
            const unsigned low = hex4();
            if (low >= 0xDC00 && low < 0xE000) {
              code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
            }
          }
          append_utf8(out, code);
          break;
        }
        default:
          fail(std::string("unknown escape '\\") + e + "'");
      }
    }
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

value parse(std::string_view text) { return parser(text).document(); }

}  // namespace bench::json

// A small JSON reader, enough for what Google Benchmark writes with
// --benchmark_out_format=json (objects, arrays, strings with escapes,
// numbers, true/false/null, and the bare NaN / Infinity it may print for a
// counter). Not a general-purpose library: no streaming, no writer.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace bench::json {

class parse_error : public std::runtime_error {
 public:
  parse_error(const std::string& what, std::size_t offset);
  std::size_t offset() const noexcept { return offset_; }

 private:
  std::size_t offset_;
};

class value {
 public:
  enum class kind { null, boolean, number, string, array, object };

  value() = default;
  static value make_boolean(bool b);
  static value make_number(double d);
  static value make_string(std::string s);
  static value make_array(std::vector<value> items);
  static value make_object(std::vector<std::string> keys, std::vector<value> values);

  kind type() const noexcept { return kind_; }
  bool is(kind k) const noexcept { return kind_ == k; }

  // The value if it has that kind, else `fallback`.
  bool boolean_or(bool fallback) const noexcept;
  double number_or(double fallback) const noexcept;
  std::string string_or(std::string_view fallback) const;

  // Array elements; empty for anything but an array.
  const std::vector<value>& items() const noexcept { return items_; }
  // Object members in document order; empty for anything but an object.
  const std::vector<std::string>& keys() const noexcept { return keys_; }
  const std::vector<value>& values() const noexcept { return values_; }
  // The member called `key`, or nullptr (also for non-objects).
  const value* find(std::string_view key) const noexcept;

 private:
  kind kind_ = kind::null;
  bool boolean_ = false;
  double number_ = 0.0;
  std::string string_;
  std::vector<value> items_;       // array elements
  std::vector<std::string> keys_;  // object member names
  std::vector<value> values_;      // object member values, parallel to keys_
};

// Parses one JSON document; throws parse_error on malformed input.
value parse(std::string_view text);

}  // namespace bench::json

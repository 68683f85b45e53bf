// Small string helpers shared by config, CLI and logs: edit distance for "did you mean" hints,
// splitting/joining, and human-readable numbers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace detrain {

// Levenshtein distance (insert/delete/substitute, each cost 1).
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word` by edit distance, or "" when none is reasonably close
// (distance more than half the word's length, and it is not a prefix/suffix match).
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

std::vector<std::string> split(std::string_view text, char sep);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string trim(std::string_view text);
bool starts_with(std::string_view text, std::string_view prefix);
bool ends_with(std::string_view text, std::string_view suffix);

// 1234567 -> "1,234,567"
std::string with_thousands(int64_t value);
// bytes -> "1.5 GB" style
std::string human_bytes(double bytes);

}  // namespace detrain

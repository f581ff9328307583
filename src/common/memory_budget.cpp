#include "common/memory_budget.h"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/number_text.h"

namespace mpa::memory_budget {

namespace {

std::atomic<int64_t> bytes_in_use{0};
std::atomic<int64_t> budget{-1};  // -1: not set yet, default_limit() at first use

// A number of bytes read from a one-number file (none for cgroup v2's "max": no limit).
std::optional<int64_t> read_bytes_file(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text)) return std::nullopt;
  return parse_count(text);
}

// The value of `key` in a "key value [unit]" file (/proc/meminfo, a cgroup's memory.stat).
std::optional<int64_t> keyed_value(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name, value;
    if (fields >> name >> value && name == key) return parse_count(value);
  }
  return std::nullopt;
}

std::optional<int64_t> meminfo_available() {
  const std::optional<int64_t> kib = keyed_value("/proc/meminfo", "MemAvailable:");
  return kib ? std::optional<int64_t>(*kib * 1024) : std::nullopt;
}

// What the cgroup's limit leaves: limit - usage, where usage leaves out the inactive page cache, which the
// kernel reclaims before it fails an allocation (the working set, as kubelet and docker count it).
// cgroup v2 first, then v1 (whose "unlimited" is too long a number to read, thus no limit).
std::optional<int64_t> cgroup_room() {
  struct Files {
    const char *limit, *usage, *stat, *inactive;
  };
  static const Files versions[] = {
      {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory.stat", "inactive_file"},
      {"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes",
       "/sys/fs/cgroup/memory/memory.stat", "total_inactive_file"}};
  for (const Files& files : versions)
    if (auto limit = read_bytes_file(files.limit)) {
      const int64_t usage = read_bytes_file(files.usage).value_or(0);
      const int64_t inactive = keyed_value(files.stat, files.inactive).value_or(0);
      return std::max<int64_t>(*limit - std::max<int64_t>(usage - inactive, 0), 0);
    }
  return std::nullopt;
}

std::string over_budget(const std::string& what, uint64_t bytes, int64_t used) {
  const int64_t cap = limit();
  const uint64_t left = static_cast<uint64_t>(std::max<int64_t>(cap - used, 0));
  std::string need = bytes_text(bytes), room = bytes_text(left);
  if (need == room) {  // a few bytes apart: say how many, or the message reads as a contradiction
    need += " (" + std::to_string(bytes) + " bytes)";
    room += " (" + std::to_string(left) + " bytes)";
  }
  return what + " needs " + need + ", more than the memory budget leaves: " + room + " of " +
         bytes_text(static_cast<uint64_t>(cap)) + " (see --max-memory)";
}

}  // namespace

int64_t available() {
  int64_t room = meminfo_available().value_or(std::numeric_limits<int64_t>::max());
  if (auto cgroup = cgroup_room()) room = std::min(room, *cgroup);
  return room;
}

int64_t default_limit() {
  static const int64_t computed = [] {
    const int64_t room = available();
    return room == std::numeric_limits<int64_t>::max() ? room : room / 5 * 4;
  }();
  return computed;
}

int64_t limit() {
  const int64_t set = budget.load(std::memory_order_relaxed);
  return set >= 0 ? set : default_limit();
}

void set_limit(int64_t bytes) { budget.store(std::max<int64_t>(bytes, 0), std::memory_order_relaxed); }

int64_t in_use() { return bytes_in_use.load(std::memory_order_relaxed); }

void require(const std::string& what, uint64_t bytes) {
  if (!(bytes <= static_cast<uint64_t>(std::max<int64_t>(limit() - in_use(), 0)))) refuse(what, bytes);
}

bool try_charge(uint64_t bytes) noexcept {
  const int64_t cap = limit();
  if (!(bytes <= static_cast<uint64_t>(cap))) return false;
  const int64_t amount = static_cast<int64_t>(bytes);
  if (bytes_in_use.fetch_add(amount, std::memory_order_relaxed) > cap - amount) {
    bytes_in_use.fetch_sub(amount, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void refuse(const std::string& what, uint64_t bytes) { throw MemoryBudgetExceeded(over_budget(what, bytes, in_use())); }

void release(uint64_t bytes) noexcept {
  bytes_in_use.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed);
}

std::string bytes_text(uint64_t bytes) {
  static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

std::optional<int64_t> parse_size(const std::string& text) {
  const size_t number_end = text.find_first_not_of("0123456789.");
  const std::string number = text.substr(0, number_end),
                    unit = number_end == std::string::npos ? "" : text.substr(number_end);
  const std::optional<double> value = parse_finite_number(number);
  if (!value || *value < 0) return std::nullopt;
  double bytes = 0;
  if (unit == "%") {
    if (!(*value <= 100)) return std::nullopt;
    bytes = static_cast<double>(available()) * *value / 100;
  } else {
    // Units in any case, as docker and JVM options accept them (8g, 512m, 1.5GiB).
    std::string upper = unit;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    static const std::pair<const char*, double> units[] = {
        {"", 1},         {"B", 1},       {"K", 0x1p10},   {"KB", 0x1p10}, {"KIB", 0x1p10},
        {"M", 0x1p20},   {"MB", 0x1p20}, {"MIB", 0x1p20}, {"G", 0x1p30},  {"GB", 0x1p30},
        {"GIB", 0x1p30}, {"T", 0x1p40},  {"TB", 0x1p40},  {"TIB", 0x1p40}};
    bool known = false;
    for (const auto& [name, scale] : units)
      if (upper == name) {
        bytes = *value * scale;
        known = true;
      }
    if (!known) return std::nullopt;
  }
  if (!(bytes >= 1 && bytes < 0x1p62)) return std::nullopt;
  return static_cast<int64_t>(bytes);
}

}  // namespace mpa::memory_budget

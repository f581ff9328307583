// Where a tensor's bytes live. A host tensor's bytes are ordinary memory; a device tensor's belong to the
// backend that made it (backends/backend.h) and reach the host only by an explicit transfer, which the
// executor makes and counts. Kinds are listed here, not discovered, so a report names a device the same way
// whichever backends a build has.
#pragma once
#include <cstdint>
#include <string>

namespace mpa {

struct Device {
  enum class Kind : uint8_t { Host, Cuda, Fake };
  Kind kind = Kind::Host;
  int index = 0;

  bool is_host() const { return kind == Kind::Host; }
  friend bool operator==(const Device& a, const Device& b) { return a.kind == b.kind && a.index == b.index; }
  friend bool operator!=(const Device& a, const Device& b) { return !(a == b); }
  friend bool operator<(const Device& a, const Device& b) {
    return a.kind != b.kind ? a.kind < b.kind : a.index < b.index;
  }
  // "cpu", "cuda:0", "fake:0": as --device names it.
  std::string name() const {
    switch (kind) {
      case Kind::Host: return "cpu";
      case Kind::Cuda: return "cuda:" + std::to_string(index);
      case Kind::Fake: return "fake:" + std::to_string(index);
    }
    return "unknown";
  }
};

}  // namespace mpa

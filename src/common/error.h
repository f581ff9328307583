// Errors that reach the user: one line, naming the file/node/op, exit code 2 (see src/cli/main.cpp).
#pragma once
#include <stdexcept>
#include <string>

namespace mpa {

// Any problem with user input (model, inputs, options). The CLI maps it to exit code 2.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// An element type the runtime does not store (string, float8, int4, complex...). The conformance runner
// counts cases that hit it as unsupported, never as passed. Throw it for nothing else.
class UnsupportedType : public Error {
 public:
  using Error::Error;
};

[[noreturn]] inline void fail(const std::string& message) { throw Error(message); }

// Checks a condition about user data and fails with a one-line message when it does not hold.
inline void require(bool condition, const std::string& message) {
  if (!condition) fail(message);
}

// Calls f(); an Error out of it goes on with "file: " in front, unless its message already starts with the
// file (errors deep in the runtime name the node, the command knows the file).
template <class F>
auto naming_file(const std::string& file, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    const std::string message = e.what();
    if (message.rfind(file, 0) == 0) throw;
    throw Error(file + ": " + message);
  }
}

}  // namespace mpa

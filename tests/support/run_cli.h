// Runs the real mpaudit binary (MPA_CLI_PATH, a compile definition of the test target) through the shell,
// so tests see exactly what a user or CI job sees: exit code, stdout and stderr.
#pragma once
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/model_builder.h"

namespace mpa::test {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string read_whole_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_whole_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// `args` is appended to the binary's path as shell text: quote arguments the shell would otherwise interpret
// (e.g. "--fail-on 'unsafe_nodes>0'"). stdout and stderr go through files in `dir`.
inline CliResult run_cli(const TempDir& dir, const std::string& args) {
  const std::string cmd = std::string(MPA_CLI_PATH) + " " + args + " >" + (dir / "stdout.txt").string() + " 2>" +
                          (dir / "stderr.txt").string();
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_whole_file(dir / "stdout.txt");
  r.err = read_whole_file(dir / "stderr.txt");
  return r;
}

// The contract for bad input: exit 2, exactly one line on stderr, containing every expected fragment.
inline void expect_clean_error(const CliResult& r, const std::vector<std::string>& fragments) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("mpaudit: error: ", 0), 0u) << r.err;
  for (const auto& f : fragments) EXPECT_NE(r.err.find(f), std::string::npos) << "missing '" << f << "' in: " << r.err;
}

}  // namespace mpa::test

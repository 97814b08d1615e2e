#pragma once
// Runs one of the product's command-line programs and keeps its exit code,
// stdout and stderr apart (the admin CLI tests: fedrt-keys, fedrt-status).

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace fedrt::net::testing {

namespace fs = std::filesystem;

struct CliResult {
  int rc = -1;  // exit code; -2: killed by a signal
  std::string out, err;
};

inline std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh folder per test under FEDRT_ADMIN_TMP, named after the test.
inline fs::path TestDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::path(FEDRT_ADMIN_TMP) / (std::string(info->test_suite_name()) + "." + info->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// FEDRT_BIN_DIR/program args..., run in `cwd`.
inline CliResult RunCli(const std::string& program, const std::vector<std::string>& args, const fs::path& cwd) {
  const fs::path out = cwd / ".cli.out", err = cwd / ".cli.err";
  const std::string bin = std::string(FEDRT_BIN_DIR) + "/" + program;
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    std::vector<char*> argv = {const_cast<char*>(bin.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  CliResult r;
  int st = 0;
  ::waitpid(pid, &st, 0);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -2;
  r.out = Slurp(out);
  r.err = Slurp(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

inline std::string Show(const CliResult& r) {
  return "exit " + std::to_string(r.rc) + "\n--- stdout ---\n" + r.out + "--- stderr ---\n" + r.err;
}

}  // namespace fedrt::net::testing

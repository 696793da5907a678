#pragma once
// Other processes for the store tests: a forked child (optionally as the unprivileged user
// nobody, so that file permissions apply even when the tests run as root), and this very test
// binary started again as "another process" that opens a database, reads or writes, and exits.

#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace attnscope::test {

inline constexpr uid_t kNobody = 65534;

// Runs `body` in a forked child and returns its exit status (or 128 + signal). The child must
// not inherit an open SQLite connection: call this with every Store of the test closed. With
// as_nobody (only possible as root) the child drops to uid/gid 65534 first.
inline int inChild(const std::function<int()>& body, bool as_nobody = false) {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int code = 0;
    try {
      if (as_nobody && (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0)) _exit(90);
      code = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      code = 91;
    }
    std::fflush(nullptr);
    _exit(code);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Starts this test binary again with `env` added ("NAME=value"), as a separate program (exec:
// no inherited SQLite state at all), and returns its exit status. Safe to call from several
// threads at once: everything the child needs is built before fork, and the child only calls
// execve (a child of a multithreaded process that allocates can deadlock on a lock another
// thread held at the fork: putenv did, under ASan's allocator).
inline int inNewProcess(const std::vector<std::string>& env) {
  std::vector<std::string> all;
  for (char** e = environ; e && *e; ++e) all.emplace_back(*e);
  for (const auto& e : env) {
    const std::string name = e.substr(0, e.find('=') + 1);
    std::erase_if(all, [&](const std::string& x) { return x.rfind(name, 0) == 0; });
    all.push_back(e);
  }
  std::vector<char*> envp;
  for (auto& e : all) envp.push_back(e.data());
  envp.push_back(nullptr);
  char arg0[] = "store-test-child";
  char* argv[] = {arg0, nullptr};
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    execve("/proc/self/exe", argv, envp.data());
    _exit(92);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace attnscope::test

#pragma once
// Finding a program as a shell would (the torch backends' Python, Slurm's sbatch and squeue), and
// running one to collect what it prints (Slurm's commands).

#include <string>
#include <vector>

namespace attnscope {

// `command` when it names a path (has a slash) to an executable regular file; else the first
// executable `dir/command` along PATH (an empty entry is the current folder); else "".
std::string resolveCommand(const std::string& command);

struct CommandOutput {
  int status = -1;  // exit status (128 + signal when killed); -1 when it could not be started
  std::string out, err;
};

// Runs argv (argv[0] found with resolveCommand) with stdin from /dev/null, collecting stdout and
// stderr until it exits. Safe in a threaded process (the GUI polls Slurm from a pool thread):
// everything is allocated before fork, the pipes are close-on-exec, so a child started meanwhile
// by another thread never holds them open.
CommandOutput runCommand(const std::vector<std::string>& argv);

}  // namespace attnscope

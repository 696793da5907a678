#pragma once
// Finding a program as a shell would: the torch backends' Python, Slurm's sbatch and squeue.

#include <string>

namespace attnscope {

// `command` when it names a path (has a slash) to an executable regular file; else the first
// executable `dir/command` along PATH (an empty entry is the current folder); else "".
std::string resolveCommand(const std::string& command);

}  // namespace attnscope

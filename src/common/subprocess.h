// Running another program to completion without a shell: the argument vector goes to
// posix_spawn as it is (no quoting, no word splitting), stdin reads /dev/null and stdout and
// stderr go together to one file. A spawn, unlike fork, is safe after LibTorch started its
// thread pools.
#pragma once

#include <string>
#include <vector>

namespace detrain {

// Runs `program` with `argv` (argv[0] included) and waits for it. stdout and stderr go to
// `output_path` (created or truncated; "/dev/null" discards them). Returns the exit code, or
// 128 + N when signal N ended it, as a shell reports it. Throws IoError when the output file
// cannot be opened or the program cannot be started.
int run_program(const std::string& program, const std::vector<std::string>& argv,
                const std::string& output_path);

// The same in two halves, for programs that run side by side: start_program returns the
// child's pid at once; wait_program(pid) waits for it and returns its exit code as above
// (`program` names it in errors).
int start_program(const std::string& program, const std::vector<std::string>& argv,
                  const std::string& output_path);
int wait_program(int pid, const std::string& program);

}  // namespace detrain

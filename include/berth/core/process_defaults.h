// Environment defaults that must be set before any library initialises: OpenMP's wait policy.
#pragma once

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

namespace berth::runtime::detail {

// Runs from the executable's .preinit_array: the libraries are mapped but none has initialised yet,
// libtorch's heavy static initialisers included. libgomp reads OMP_WAIT_POLICY in its constructor and libc
// publishes the environment only after this point (so a setenv here is lost), which leaves one way to give
// libgomp a default: execute the program again, now, with the variable added. It costs the dynamic linker's
// mapping, not a second start-up. A value the user set (any value) is kept.
inline void set_process_defaults(int, char** argv, char** envp) {
  static const char kSetting[] = "OMP_WAIT_POLICY=PASSIVE";
  size_t count = 0;
  for (; envp[count] != nullptr; ++count) {
    if (strncmp(envp[count], "OMP_WAIT_POLICY=", 16) == 0) return;
  }
  char** env = static_cast<char**>(malloc((count + 2) * sizeof(char*)));
  if (env == nullptr) return;
  memcpy(env, envp, count * sizeof(char*));
  env[count] = const_cast<char*>(kSetting);
  env[count + 1] = nullptr;
  execve("/proc/self/exe", argv, env);
  free(env);  // exec failed (no /proc, say): carry on with libgomp's spinning default
}

}  // namespace berth::runtime::detail

// Put once at namespace scope in the file holding a program's main(). libgomp reads OMP_WAIT_POLICY in its
// constructor, before main runs, and its default spinning wait fights OpenBLAS's threads for the cores
// (0.45x here, docs/threading.md); setting the variable inside main is too late. Programs only: shared
// libraries have no .preinit_array.
#define BERTH_PROCESS_DEFAULTS()                                                           \
  __attribute__((section(".preinit_array"), used)) static void (*berth_process_defaults_)( \
      int, char**, char**) = &::berth::runtime::detail::set_process_defaults

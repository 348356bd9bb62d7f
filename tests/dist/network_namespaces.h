// NetworkNamespaces: two or three "hosts" on one machine for multi-node fault tests, each a network namespace
// joined to a bridge in a "switch" namespace of its own by a veth pair, on addresses no one else uses
// (10.213.<pid-derived>.<host + 1>/24), so the machine's own network is never touched; HostProcess: a
// command started inside one of them, its output in a file, waited for with a bound.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace berth::testing {

class NetworkNamespaces {
 public:
  // The reason these tests cannot run here (not root, no `ip netns`), or "" when they can.
  static std::string unavailable_reason();

  // Creates `hosts` namespaces (after removing any left by an earlier crashed run of this fixture).
  explicit NetworkNamespaces(int hosts);
  ~NetworkNamespaces();  // kills every process inside and deletes every namespace
  NetworkNamespaces(const NetworkNamespaces&) = delete;
  NetworkNamespaces& operator=(const NetworkNamespaces&) = delete;

  const std::string& name(int host) const { return names_.at(host); }
  std::string address(int host) const;              // "10.213.N.<host + 1>"
  std::string interface() const { return "eth0"; }  // each host's link to the switch
  // Every process whose network namespace is `host`'s.
  std::vector<pid_t> pids(int host) const;
  // Runs `command` inside `host` (`ip netns exec`), waiting for it; its exit code.
  int exec(int host, const std::string& command) const;

 private:
  std::vector<std::string> names_;
  std::string switch_;
  int subnet_;
};

class HostProcess {
 public:
  // Starts `command` (a shell line) in `host`'s namespace, in a process group of its own, its stdout and
  // stderr into `log`.
  HostProcess(const NetworkNamespaces& net, int host, const std::string& command, const std::string& log);
  ~HostProcess();  // kills the process group when it is still there
  HostProcess(const HostProcess&) = delete;
  HostProcess& operator=(const HostProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Waits up to `seconds` for the exit; true when it exited.
  bool wait(double seconds);
  bool exited() const { return exited_; }
  int exit_code() const { return exit_code_; }
  std::string output() const;

 private:
  pid_t pid_ = -1;
  std::string log_;
  bool exited_ = false;
  int exit_code_ = -1;
};

}  // namespace berth::testing

// NetworkNamespaces and HostProcess: `ip netns` hosts joined by a bridge in a switch namespace, torn down
// whatever happens, and commands run inside them with bounded waits.
#include "dist/network_namespaces.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace berth::testing {
namespace {

constexpr const char* kNetnsPrefix = "berthns";

// Runs a shell line, its output discarded; the exit code.
int netns_shell(const std::string& line) {
  const int status = std::system((line + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

std::string netns_capture(const std::string& line) {
  std::string out;
  FILE* pipe = popen((line + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  pclose(pipe);
  return out;
}

void netns_run(const std::string& line) {
  if (netns_shell(line) != 0) throw std::runtime_error("network namespace setup failed: " + line);
}

std::vector<pid_t> netns_pids(const std::string& ns) {
  std::vector<pid_t> pids;
  std::istringstream in(netns_capture("ip netns pids " + ns));
  for (pid_t pid = 0; in >> pid;) pids.push_back(pid);
  return pids;
}

// Kills everything in `ns` and deletes it.
void netns_remove(const std::string& ns) {
  for (int round = 0; round < 20; ++round) {
    const std::vector<pid_t> pids = netns_pids(ns);
    if (pids.empty()) break;
    for (pid_t pid : pids) {
      ::kill(pid, SIGCONT);
      ::kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  netns_shell("ip netns del " + ns);
}

// Namespaces of this fixture whose creating process is gone (a crashed or killed earlier run).
void netns_remove_stale() {
  std::istringstream in(netns_capture("ip netns list"));
  for (std::string line; std::getline(in, line);) {
    const std::string ns = line.substr(0, line.find(' '));
    if (ns.rfind(kNetnsPrefix, 0) != 0) continue;
    const pid_t owner = std::atoi(ns.c_str() + std::string(kNetnsPrefix).size());
    if (owner > 0 && ::kill(owner, 0) != 0) netns_remove(ns);
  }
}

}  // namespace

std::string NetworkNamespaces::unavailable_reason() {
  if (::geteuid() != 0)
    return "network namespaces need root (ip netns add); this test runs as uid " +
           std::to_string(::geteuid());
  if (netns_shell("command -v ip") != 0) return "the ip command (iproute2) is not installed";
  const std::string probe = std::string(kNetnsPrefix) + std::to_string(::getpid()) + "-probe";
  if (netns_shell("ip netns add " + probe) != 0)
    return "ip netns add fails here (no CAP_SYS_ADMIN, or a container without network namespaces)";
  const bool bridge = netns_shell("ip netns exec " + probe + " ip link add probebr type bridge") == 0;
  netns_shell("ip netns del " + probe);
  if (!bridge) return "this kernel cannot make a bridge inside a network namespace";
  return "";
}

NetworkNamespaces::NetworkNamespaces(int hosts) : subnet_(static_cast<int>(::getpid() % 250) + 1) {
  netns_remove_stale();
  const std::string base = kNetnsPrefix + std::to_string(::getpid());
  switch_ = base + "-sw";
  try {
    netns_run("ip netns add " + switch_);
    netns_run("ip netns exec " + switch_ + " ip link add br0 type bridge");
    netns_run("ip netns exec " + switch_ + " ip link set br0 up");
    for (int h = 0; h < hosts; ++h) {
      const std::string ns = base + "-h" + std::to_string(h);
      const std::string port =
          std::string("p").append(std::to_string(h));  // GCC 12 -Warray-bounds misfires on "p" + str
      netns_run("ip netns add " + ns);
      names_.push_back(ns);
      netns_run("ip link add eth0 netns " + ns + " type veth peer name " + port + " netns " + switch_);
      netns_run("ip netns exec " + switch_ + " ip link set " + port + " master br0 up");
      netns_run("ip netns exec " + ns + " ip addr add " + address(h) + "/24 dev eth0");
      netns_run("ip netns exec " + ns + " ip link set eth0 up");
      netns_run("ip netns exec " + ns + " ip link set lo up");
    }
    // No spanning tree on the bridge: its ports forward as soon as they are up.
  } catch (...) {
    for (const std::string& ns : names_) netns_remove(ns);
    netns_remove(switch_);
    throw;
  }
}

NetworkNamespaces::~NetworkNamespaces() {
  for (const std::string& ns : names_) netns_remove(ns);
  netns_remove(switch_);
}

std::string NetworkNamespaces::address(int host) const {
  return "10.213." + std::to_string(subnet_) + "." + std::to_string(host + 1);
}

std::vector<pid_t> NetworkNamespaces::pids(int host) const { return netns_pids(names_.at(host)); }

int NetworkNamespaces::exec(int host, const std::string& command) const {
  return netns_shell("ip netns exec " + names_.at(host) + " " + command);
}

HostProcess::HostProcess(const NetworkNamespaces& net, int host, const std::string& command,
                         const std::string& log)
    : log_(log) {
  const std::string line = "exec env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE " + command;
  const std::string ns = net.name(host);
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::setpgid(0, 0);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execlp("ip", "ip", "netns", "exec", ns.c_str(), "/bin/sh", "-c", line.c_str(), nullptr);
    ::_exit(127);
  }
  ::setpgid(pid_, pid_);
}

HostProcess::~HostProcess() {
  if (exited_ || pid_ <= 0) return;
  ::kill(-pid_, SIGCONT);
  ::kill(-pid_, SIGKILL);
  wait(10);
}

bool HostProcess::wait(double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!exited_) {
    int status = 0;
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      exited_ = true;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return exited_;
}

std::string HostProcess::output() const {
  std::ifstream in(log_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace berth::testing

// Rendezvous: the store every rank meets in (rank 0's TCPStore, a FileStore, or one given), an arrival check
// that names missing ranks instead of hanging in Gloo, and the communicator built over it.
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "berth/core/error.h"
#include "berth/dist/communicator.h"
#include "core/text.h"
#include "dist/c10d_communicator.h"
#include "dist/comm_text.h"
#include "dist/process_group.h"

namespace berth::dist {
namespace {

using Millis = std::chrono::milliseconds;

// A positive number of seconds in env `name`; unset -> nullopt.
std::optional<Millis> seconds_from_env(const EnvLookup& env, const std::string& name, const char* unset) {
  const std::optional<std::string> raw = env(name);
  if (!raw) return std::nullopt;
  const std::string text(text::trim(*raw));
  double seconds = 0;
  size_t used = 0;
  bool ok = !text.empty();
  if (ok) {
    try {
      seconds = std::stod(text, &used);
    } catch (const std::exception&) {
      ok = false;
    }
  }
  BERTH_CHECK(ok && used == text.size() && std::isfinite(seconds) && seconds > 0, name, "='", *raw,
              "' is not a positive number of seconds. Fix: set ", name,
              "=600 (or any seconds > 0), or unset it for ", unset, ".");
  return Millis(std::max<int64_t>(1, static_cast<int64_t>(std::llround(seconds * 1000.0))));
}

// BERTH_HEARTBEAT_TIMEOUT: how long a rank waiting in a Gloo collective lets another rank's heartbeat (or the
// store) stand still before it fails naming that rank as unresponsive (CollectiveFailure::wait). 20 s, so
// that with the exit that follows a survivor is gone within 30 s of a stop or a cut link (measured 21.6 to
// 23.2 s on two hosts in network namespaces).
Millis heartbeat_timeout_from_env() {
  return seconds_from_env(process_env(), "BERTH_HEARTBEAT_TIMEOUT", "the default of 20 s")
      .value_or(std::chrono::seconds(20));
}

std::optional<std::string> getenv_string(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// At the deadline: returns if every rank has arrived after all, else throws naming the ranks that never
// arrived and those that did (with their host and pid).
void check_every_rank_arrived(c10d::Store& store, const std::vector<std::string>& keys, int rank,
                              Millis timeout, const std::string& where) {
  const int world = static_cast<int>(keys.size());
  std::vector<int> missing;
  std::vector<std::string> arrived;
  for (int r = 0; r < world; ++r) {
    if (store.check({keys[r]})) {
      const std::vector<uint8_t> who = store.get(keys[r]);
      arrived.push_back(std::to_string(r) + " (" + std::string(who.begin(), who.end()) + ")");
    } else {
      missing.push_back(r);
    }
  }
  if (missing.empty()) return;
  BERTH_FAIL(missing.size() == 1 ? "rank " : "ranks ", join_ints(missing), " of ", world,
             " never arrived at the rendezvous at ", where, " within ", seconds_text(timeout),
             " (waiting on rank ", rank, "); ranks that arrived: ", join(arrived, ", "),
             ". Fix: start every rank, check MASTER_ADDR/MASTER_PORT (or the rendezvous address) and "
             "WORLD_SIZE agree on all of them, and that rank 0's host is reachable from the others.");
}

// This host's address on the route to `host` (the source address a connection there would use; a UDP
// "connect" sends nothing), or "" when it cannot be told. On several hosts it tells the ranks' hosts apart
// where their names may not (containers, network namespaces).
std::string address_toward(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (host.empty() || ::getaddrinfo(host.c_str(), "9", &hints, &found) != 0) return "";
  std::string address;
  const int fd = ::socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  char text[INET6_ADDRSTRLEN] = {0};
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
    const void* raw = local.ss_family == AF_INET6
                          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
                          : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
    if (::inet_ntop(local.ss_family, raw, text, sizeof(text)) != nullptr) address = text;
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(found);
  return address;
}

// "host NAME at ADDRESS pid N": the address the Gloo transport is given (--local-addr), else the one toward
// rank 0's host.
std::string describe_this_rank(const CommOptions& options, const std::optional<std::string>& master_addr) {
  std::string address = options.local_addr;
  if (address.empty()) address = getenv_string("BERTH_LOCAL_ADDR").value_or("");
  if (address.empty() && master_addr) address = address_toward(*master_addr);
  const std::string host = this_host();
  return "host " + host + (address.empty() || address == host ? "" : " at " + address) + " pid " +
         std::to_string(getpid());
}

// Every rank announces itself (`me`) and waits for the others, so a missing rank is named instead of
// hanging in Gloo. Returns what every rank announced, for failure messages.
std::vector<std::string> rendezvous(c10d::Store& store, int rank, int world, Millis timeout,
                                    const std::string& where, const std::string& me) {
  store.set("arrived/" + std::to_string(rank), std::vector<uint8_t>(me.begin(), me.end()));
  std::vector<std::string> keys;
  for (int r = 0; r < world; ++r) keys.push_back("arrived/" + std::to_string(r));
  // One check of all keys per poll: with many ranks, per-key polling would flood rank 0's store.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Millis pause{5};
  while (!store.check(keys)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      check_every_rank_arrived(store, keys, rank, timeout, where);
      break;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(Millis(100), pause * 2);
  }
  std::vector<std::string> who;
  for (const std::vector<uint8_t>& value : store.multiGet(keys)) who.emplace_back(value.begin(), value.end());
  return who;
}

// The communicator of `rank` over `store`: a key space of its own, the arrival check, the process group.
std::shared_ptr<Communicator> make_c10d(c10::intrusive_ptr<c10d::Store> store, int rank, int world,
                                        c10::Device device, const CommOptions& options,
                                        const std::string& where,
                                        const std::optional<std::string>& master_addr) {
  BERTH_CHECK(world >= 1 && rank >= 0 && rank < world, "rank ", rank, " of world size ", world,
              " is out of range: ranks are 0 to world size - 1");
  BERTH_CHECK(options.timeout.count() > 0, "the collective timeout must be positive, found ",
              options.timeout.count(), " ms");
  const std::string backend = resolve_backend(options.backend, device);

  // Each communicator made over one store gets its own key space, so a second one never reads stale keys.
  const int64_t instance = store->add("berth/instances/" + std::to_string(rank), 1);
  auto scoped = c10::make_intrusive<c10d::PrefixStore>("berth/" + std::to_string(instance), store);
  std::vector<std::string> who = rendezvous(*scoped, rank, world, options.rendezvous_timeout, where,
                                            describe_this_rank(options, master_addr));
  auto group_store = c10::make_intrusive<c10d::PrefixStore>("group", scoped);
  auto group = make_process_group(backend, group_store, rank, world, options, where, master_addr);
  return make_c10d_communicator(group, scoped, rank, world, backend, device,
                                FailureTimes{options.timeout, heartbeat_timeout_from_env()}, std::move(who));
}

// "HOST:PORT" -> (host, port); `what` names the source in errors.
std::pair<std::string, int> parse_host_port(const std::string& text, const std::string& what) {
  const size_t colon = text.rfind(':');
  BERTH_CHECK(colon != std::string::npos && colon > 0, what, " '", text,
              "' is not HOST:PORT. Fix: e.g. tcp://10.0.0.1:29500");
  const std::optional<int> port = text::parse_digits(text.substr(colon + 1));
  BERTH_CHECK(port && *port > 0 && *port < 65536, what, " '", text, "' has no valid port (1 to 65535)");
  return {text.substr(0, colon), *port};
}

c10::intrusive_ptr<c10d::Store> connect_tcp_store(const std::string& host, int port, int rank, int world,
                                                  const CommOptions& options) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(port);
  opts.isServer = rank == 0;
  opts.waitWorkers = false;  // berth's own rendezvous names the missing ranks
  opts.timeout = options.rendezvous_timeout;
  const std::string where = host + ":" + std::to_string(port);
  c10::intrusive_ptr<c10d::TCPStore> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(host, opts);
  } catch (const std::exception& e) {
    if (rank == 0)
      BERTH_FAIL("rank 0 could not host the rendezvous store on port ", port, " (", where,
                 "): ", message_of(e),
                 ". Fix: choose a free MASTER_PORT, or stop the earlier run still holding this one.");
    BERTH_FAIL(
        "rank ", rank, " of ", world, " could not reach rank 0's rendezvous store at ", where, " within ",
        seconds_text(options.rendezvous_timeout), ": ", message_of(e),
        ". Fix: start rank 0, check MASTER_ADDR/MASTER_PORT point at rank 0's host and that the port is "
        "open between the hosts.");
  }
  store->setTimeout(std::max(options.timeout, options.rendezvous_timeout));
  return store;
}

// The previous holder of `rank` in `store`'s newest communicator ("host NAME at ADDR pid N"), or "".
std::string previous_holder(c10d::Store& store, int rank) {
  try {
    const std::vector<uint8_t> count = store.get("berth/instances/" + std::to_string(rank));
    const std::string key =
        "berth/" + std::string(count.begin(), count.end()) + "/arrived/" + std::to_string(rank);
    if (!store.check({key})) return "";
    const std::vector<uint8_t> who = store.get(key);
    return std::string(who.begin(), who.end());
  } catch (const std::exception&) {
    return "";
  }
}

// A rank that finds its own rank already in rank 0's store meets a group that is still running: its host
// returned after a failure before the survivors noticed it. It waits for that group to end and its store to
// go, then joins the next one (the survivors' launchers restart theirs), instead of waiting in a key space
// rank 0 never enters. Only a process's first join of a store: a second communicator over it is legitimate.
c10::intrusive_ptr<c10d::Store> wait_for_a_fresh_store(c10::intrusive_ptr<c10d::Store> store,
                                                       const std::string& host, int port, int rank, int world,
                                                       const CommOptions& options) {
  static std::mutex mutex;
  static std::set<std::string> joined;
  const std::string where = host + ":" + std::to_string(port);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!joined.insert(where).second) return store;
  }
  const std::string key = "berth/instances/" + std::to_string(rank);
  const auto deadline = std::chrono::steady_clock::now() + options.rendezvous_timeout;
  bool waited = false;
  while (store->check({key})) {
    const std::string holder = previous_holder(*store, rank);
    std::cerr << "rank " << rank << " of " << world << ": the store at " << where
              << " serves a group that is still running, where rank " << rank << " is "
              << (holder.empty() ? "another process" : holder)
              << "; waiting for that group to end and the next one to start\n";
    waited = true;
    try {
      while (store->check({key})) {
        BERTH_CHECK(std::chrono::steady_clock::now() < deadline, "rank ", rank, " of ", world,
                    ": the store at ", where, " still serves a running group where rank ", rank, " is ",
                    holder.empty() ? "another process" : holder, ", after ",
                    seconds_text(options.rendezvous_timeout),
                    ". Fix: that process is a rank of the same --node-rank still running: stop it (or wait "
                    "for its group to fail), or give this run another --master-port");
        std::this_thread::sleep_for(Millis(250));
      }
    } catch (const Error&) {
      throw;
    } catch (const std::exception&) {
      // The old group's rank 0 has exited and its store with it: connect to the next one.
    }
    store = connect_tcp_store(host, port, rank, world, options);
  }
  if (waited)
    std::cerr << "rank " << rank << " of " << world << ": joining the new group at " << where << "\n";
  return store;
}

// rendezvous "file://PATH": a FileStore every rank opens.
std::shared_ptr<Communicator> init_over_file(const DistEnv& env, c10::Device device,
                                             const CommOptions& options) {
  const std::string& rdv = options.rendezvous;
  const std::string path = rdv.substr(7);
  BERTH_CHECK(!path.empty(), "rendezvous '", rdv,
              "' names no file. Fix: file:///shared/dir/berth-rendezvous");
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::FileStore>(path, env.world_size);
  } catch (const std::exception& e) {
    BERTH_FAIL("could not open the rendezvous file '", path, "': ", message_of(e),
               ". Fix: use a path on a file system every rank can write (and delete it between runs).");
  }
  store->setTimeout(std::max(options.timeout, options.rendezvous_timeout));
  return make_c10d(store, env.rank, env.world_size, device, options, rdv, std::nullopt);
}

// rendezvous "tcp://HOST:PORT" or "env" (MASTER_ADDR:MASTER_PORT): rank 0 hosts a TCPStore.
std::shared_ptr<Communicator> init_over_tcp(const DistEnv& env, c10::Device device,
                                            const CommOptions& options) {
  const std::string& rdv = options.rendezvous;
  std::string host;
  int port = 0;
  if (rdv.rfind("tcp://", 0) == 0) {
    std::tie(host, port) = parse_host_port(rdv.substr(6), "rendezvous");
  } else {
    BERTH_CHECK(rdv == "env", "unknown rendezvous '", rdv,
                "': expected env (MASTER_ADDR/MASTER_PORT), file://PATH or tcp://HOST:PORT");
    host = env.master_addr.value_or("127.0.0.1");
    BERTH_CHECK(
        env.master_port.has_value(), "a ", env.world_size,
        "-rank run needs MASTER_PORT for its rendezvous (rank 0 hosts the store at MASTER_ADDR:MASTER_PORT, "
        "MASTER_ADDR is ",
        env.master_addr ? *env.master_addr : "unset -> 127.0.0.1",
        "). Fix: export MASTER_PORT=29500 (and MASTER_ADDR=<rank 0's host>) on every rank, or launch with "
        "torchrun, which sets both.");
    port = *env.master_port;
  }
  auto store = connect_tcp_store(host, port, env.rank, env.world_size, options);
  if (env.rank != 0) store = wait_for_a_fresh_store(store, host, port, env.rank, env.world_size, options);
  return make_c10d(store, env.rank, env.world_size, device, options, host + ":" + std::to_string(port), host);
}

}  // namespace

std::optional<Millis> dist_timeout_from_env(const EnvLookup& env) {
  return seconds_from_env(env, "BERTH_DIST_TIMEOUT", "the default of 5 minutes");
}

std::shared_ptr<Communicator> make_communicator(c10::intrusive_ptr<c10d::Store> store, int rank,
                                                int world_size, c10::Device device,
                                                const CommOptions& options) {
  BERTH_CHECK(store, "make_communicator: no store given");
  return make_c10d(std::move(store), rank, world_size, device, options, "the given store",
                   getenv_string("MASTER_ADDR"));
}

std::shared_ptr<Communicator> init_communicator(const DistEnv& env, c10::Device device,
                                                const CommOptions& options_in) {
  CommOptions options = options_in;
  if (auto timeout = dist_timeout_from_env()) options.timeout = *timeout;
  if (env.world_size == 1) return make_local_communicator();
  if (options.rendezvous.rfind("file://", 0) == 0) return init_over_file(env, device, options);
  return init_over_tcp(env, device, options);
}

}  // namespace berth::dist

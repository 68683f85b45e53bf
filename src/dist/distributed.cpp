// Data-parallel glue on c10d; see distributed.h. Everything c10d (and gloo's headers) stays in
// this unit; a LibTorch without them builds a Distributed that refuses to start.
#include "dist/distributed.h"

#include <signal.h>
#include <spdlog/fmt/fmt.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <thread>

#include "common/errors.h"
#include "common/hash64.h"
#include "compat/torch_compat.h"

#if defined(DETRAIN_WITH_C10D)
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if defined(USE_C10D_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#endif

namespace detrain::dist {

namespace {

int64_t env_int(const std::function<const char*(const char*)>& get, const char* name,
                int64_t fallback, int64_t min_value) {
  const char* text = get(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  // Slurm writes counts such as "4(x2)"; the leading number is the one meant.
  if (end == text || v < min_value)
    throw ConfigError(
        fmt::format("environment variable {}={} is not an integer >= {}", name, text, min_value));
  return v;
}

std::string first_line(const std::string& text) {
  const auto nl = text.find('\n');
  return nl == std::string::npos ? text : text.substr(0, nl);
}

// True when process `pid` on this host has ended (gone, or a zombie not yet reaped).
bool process_gone(long pid) {
  if (::kill(static_cast<pid_t>(pid), 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z';
}

// A rank killed a moment ago has closed its sockets (what the collective saw) before the kernel
// marks it exited: give it a second to become a zombie before calling it alive.
bool process_gone_soon(long pid) {
  for (int i = 0; i < 20; ++i) {
    if (process_gone(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

std::string describe(const std::exception& e) {
  if (const auto* c = dynamic_cast<const c10::Error*>(&e))
    return first_line(c->what_without_backtrace());
  return first_line(e.what());
}

}  // namespace

DistEnv read_dist_env(const std::function<const char*(const char*)>& getenv_fn) {
  const std::function<const char*(const char*)> get =
      getenv_fn ? getenv_fn : [](const char* n) -> const char* { return std::getenv(n); };
  DistEnv env;
  const bool torchrun = get("WORLD_SIZE") && *get("WORLD_SIZE");
  const bool slurm = !torchrun && get("SLURM_NTASKS") && get("SLURM_PROCID");
  if (torchrun) {
    env.source = "env";
    env.world_size = env_int(get, "WORLD_SIZE", 1, 1);
    env.rank = env_int(get, "RANK", -1, 0);
    if (env.rank < 0)
      throw ConfigError(
          "WORLD_SIZE is set but RANK is not; set RANK (0 .. WORLD_SIZE-1) for "
          "every process, or launch with detrain train --nproc N");
    env.local_rank = env_int(get, "LOCAL_RANK", env.rank, 0);
    env.local_world_size = env_int(get, "LOCAL_WORLD_SIZE", env.world_size, 1);
  } else if (slurm) {
    env.source = "slurm";
    env.world_size = env_int(get, "SLURM_NTASKS", 1, 1);
    env.rank = env_int(get, "SLURM_PROCID", 0, 0);
    env.local_rank = env_int(get, "SLURM_LOCALID", 0, 0);
    env.local_world_size = env_int(get, "SLURM_NTASKS_PER_NODE", env.world_size, 1);
    if (const char* launch = get("SLURM_LAUNCH_NODE_IPADDR"); launch && *launch)
      env.master_addr = launch;
  }
  if (const char* addr = get("MASTER_ADDR"); addr && *addr) env.master_addr = addr;
  if (const char* agent = get("TORCHELASTIC_USE_AGENT_STORE"))
    env.agent_store = std::string(agent) == "True" || std::string(agent) == "1";
  env.elastic_restarts = env_int(get, "TORCHELASTIC_RESTART_COUNT", 0, 0);
  env.slurm_restarts = env_int(get, "SLURM_RESTART_COUNT", 0, 0);
  env.master_port = static_cast<int>(env_int(get, "MASTER_PORT", env.master_port, 1));
  if (env.master_port > 65535)
    throw ConfigError(fmt::format("MASTER_PORT={} is not a TCP port (1-65535)", env.master_port));
  if (env.rank >= env.world_size)
    throw ConfigError(
        fmt::format("rank {} is not below the world size {} (check RANK / "
                    "SLURM_PROCID and WORLD_SIZE / SLURM_NTASKS)",
                    env.rank, env.world_size));
  if (env.local_rank >= env.local_world_size)
    env.local_world_size = env.local_rank + 1;  // Slurm's per-node count can be heterogeneous
  return env;
}

std::string DistEnv::attempt() const {
  return fmt::format("attempt-{}.{}", elastic_restarts, slurm_restarts);
}

#if defined(DETRAIN_WITH_C10D)

struct Distributed::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<compat::CollectiveBackend> group;
  // The same backend behind the ProcessGroup front that c10d::Reducer calls (one sequence of
  // collectives: both paths share the backend's tags).
  c10::intrusive_ptr<c10d::ProcessGroup> process_group;
  std::chrono::milliseconds timeout{0};
  torch::Device device{torch::kCPU};  // where the group's tensors live (CUDA for NCCL)
  std::string where = "start-up";
  int64_t tick = 0;

  void wait(c10::intrusive_ptr<c10d::Work> work) { work->wait(); }
};

Distributed::Distributed(const DistEnv& env, const torch::Device& device,
                         std::chrono::milliseconds timeout)
    : env_(env), impl_(std::make_unique<Impl>()) {
  impl_->timeout = timeout;
  impl_->device = device.is_cuda() ? device : torch::Device(torch::kCPU);
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<std::uint16_t>(env.master_port);
    store_options.isServer = env.rank == 0 && !env.agent_store;
    store_options.numWorkers = static_cast<std::size_t>(env.world_size);
    // Every rank counts itself in on connecting (so rank 0 can wait for all); only the server
    // waits, and under torchrun nobody here is the server.
    store_options.waitWorkers = true;
    store_options.timeout = timeout;
    // A launcher's store holds its own keys (torchrun's rendezvous): ours live under a prefix,
    // one per attempt, since torchrun's store survives its restarts with the dead attempt's
    // keys in it (Gloo would dial the old ranks' addresses).
    impl_->store = c10::make_intrusive<c10d::PrefixStore>(
        "detrain/" + env.attempt(),
        c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options));
    if (device.is_cuda()) {
#if defined(USE_C10D_NCCL)
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout;
      impl_->group = c10::make_intrusive<c10d::ProcessGroupNCCL>(
          impl_->store, static_cast<int>(env.rank), static_cast<int>(env.world_size), options);
#else
      throw DistributedError(
          "this LibTorch has no NCCL; train on the CPU (gloo) or use a "
          "CUDA LibTorch built with NCCL");
#endif
    } else {
      auto options = c10d::ProcessGroupGloo::Options::create(timeout);
      // Loopback runs bind loopback; elsewhere GLOO_SOCKET_IFNAME picks the interface, else
      // the host name's address (PyTorch's rules).
      const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
      if (ifname && *ifname)
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
      else if (env.master_addr == "127.0.0.1" || env.master_addr == "localhost")
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      else
        options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      impl_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(
          impl_->store, static_cast<int>(env.rank), static_cast<int>(env.world_size), options);
    }
    const auto type = device.is_cuda() ? c10d::ProcessGroup::BackendType::NCCL
                                       : c10d::ProcessGroup::BackendType::GLOO;
    impl_->process_group = c10::make_intrusive<c10d::ProcessGroup>(
        impl_->store, static_cast<int>(env.rank), static_cast<int>(env.world_size));
    impl_->process_group->setBackend(impl_->device.type(), type, impl_->group);
    impl_->process_group->setDefaultBackend(type);
    // Where each rank runs, so a failure can tell a dead local rank from a slow one.
    const std::string me = host_name() + " " + std::to_string(::getpid());
    impl_->store->set("detrain/pid/" + std::to_string(env.rank),
                      std::vector<uint8_t>(me.begin(), me.end()));
  } catch (const DistributedError&) {
    throw;
  } catch (const std::exception& e) {
    throw DistributedError(fmt::format(
        "rank {}: cannot join the process group at {}:{} within {} s: {}; check MASTER_ADDR / "
        "MASTER_PORT and that all {} ranks started",
        env.rank, env.master_addr, env.master_port, timeout.count() / 1000.0, describe(e),
        env.world_size));
  }
}

Distributed::~Distributed() = default;

void Distributed::fail(const std::string& what, const std::exception& e) const {
  std::string others;
  try {
    for (int64_t r = 0; r < env_.world_size; ++r) {
      if (r == env_.rank) continue;
      const std::string key = "detrain/progress/" + std::to_string(r);
      if (!impl_->store->check({key})) {
        others += fmt::format("; rank {} never reported", r);
        continue;
      }
      const auto bytes = impl_->store->get(key);
      std::istringstream in(std::string(bytes.begin(), bytes.end()));
      int64_t tick = 0;
      in >> tick;
      std::string where;
      std::getline(in >> std::ws, where);
      const std::string pid_key = "detrain/pid/" + std::to_string(r);
      if (impl_->store->check({pid_key})) {
        const auto who = impl_->store->get(pid_key);
        std::istringstream w(std::string(who.begin(), who.end()));
        std::string host;
        long pid = 0;
        w >> host >> pid;
        if (host == host_name() && pid > 0 && process_gone_soon(pid)) {
          others += fmt::format("; rank {} (pid {}) has exited (last at {})", r, pid, where);
          continue;
        }
      }
      if (tick < impl_->tick)
        others += fmt::format("; rank {} did not arrive (last at {})", r, where);
    }
  } catch (const std::exception&) {
    others += fmt::format("; the store on {}:{} is gone, so rank 0 has exited", env_.master_addr,
                          env_.master_port);
  }
  if (others.empty()) others = "; a rank died or is stuck (see the other ranks' logs)";
  throw DistributedError(fmt::format("rank {}: {} at {} failed: {}{}", env_.rank, what,
                                     impl_->where, describe(e), others));
}

void Distributed::set_progress(int64_t tick, const std::string& where) {
  impl_->tick = tick;
  impl_->where = where;
  const std::string value = std::to_string(tick) + " " + where;
  try {
    impl_->store->set("detrain/progress/" + std::to_string(env_.rank),
                      std::vector<uint8_t>(value.begin(), value.end()));
  } catch (const std::exception& e) {
    fail("reporting progress", e);
  }
}

void Distributed::broadcast(const std::vector<torch::Tensor>& tensors, const std::string& what) {
  // One flat buffer per dtype keeps a model's few hundred tensors to a couple of collectives.
  std::map<torch::ScalarType, std::vector<torch::Tensor>> by_type;
  for (const auto& t : tensors)
    if (t.defined() && t.numel() > 0) by_type[t.scalar_type()].push_back(t);
  torch::NoGradGuard no_grad;
  try {
    for (auto& [type, list] : by_type) {
      std::vector<torch::Tensor> flat_parts;
      for (const auto& t : list) flat_parts.push_back(t.detach().reshape({-1}));
      std::vector<torch::Tensor> flat{torch::cat(flat_parts)};
      c10d::BroadcastOptions options;
      options.rootRank = 0;
      impl_->wait(impl_->group->broadcast(flat, options));
      int64_t offset = 0;
      for (auto& t : list) {
        t.detach().copy_(flat[0].narrow(0, offset, t.numel()).view_as(t));
        offset += t.numel();
      }
    }
  } catch (const std::exception& e) {
    fail("broadcast of " + what, e);
  }
}

void Distributed::average_gradients(const std::vector<torch::Tensor>& params,
                                    int64_t bucket_bytes) {
  torch::NoGradGuard no_grad;
  const double inv_world = 1.0 / static_cast<double>(env_.world_size);
  std::vector<torch::Tensor> bucket;
  int64_t bytes = 0;
  auto flush = [&] {
    if (bucket.empty()) return;
    std::vector<torch::Tensor> parts;
    for (const auto& p : bucket) parts.push_back(p.grad().reshape({-1}).to(torch::kFloat));
    std::vector<torch::Tensor> flat{torch::cat(parts)};
    impl_->wait(impl_->group->allreduce(flat));
    flat[0].mul_(inv_world);
    int64_t offset = 0;
    for (const auto& p : bucket) {
      auto& g = p.mutable_grad();
      g.copy_(flat[0].narrow(0, offset, g.numel()).view_as(g));
      offset += g.numel();
    }
    bucket.clear();
    bytes = 0;
  };
  try {
    for (const auto& p : params) {
      if (!p.requires_grad()) continue;
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      bucket.push_back(p);
      bytes += p.numel() * 4;
      if (bytes >= bucket_bytes) flush();
    }
    flush();
  } catch (const std::exception& e) {
    fail("all-reduce of the gradients", e);
  }
}

torch::Tensor Distributed::sum(const torch::Tensor& t, const std::string& what) {
  torch::NoGradGuard no_grad;
  const bool reduced = t.scalar_type() == torch::kBFloat16 || t.scalar_type() == torch::kHalf;
  // Half-precision values are summed in fp32 (one rounding at the end, and Gloo's bf16
  // support differs between versions); a private contiguous copy is reduced in place.
  std::vector<torch::Tensor> v{reduced ? t.to(torch::kFloat).contiguous()
                                       : t.detach().contiguous().clone()};
  try {
    impl_->wait(impl_->group->allreduce(v));
  } catch (const std::exception& e) {
    fail("all-reduce of " + what, e);
  }
  return reduced ? v[0].to(t.scalar_type()) : v[0];
}

bool Distributed::any(bool flag, const std::string& what) { return any_of({flag}, what)[0]; }

std::vector<bool> Distributed::any_of(const std::vector<bool>& flags, const std::string& what) {
  auto counts = torch::zeros({static_cast<int64_t>(flags.size())}, torch::kLong);
  for (size_t i = 0; i < flags.size(); ++i) counts[static_cast<int64_t>(i)] = flags[i] ? 1 : 0;
  const auto total = sum(counts.to(impl_->device), what).to(torch::kCPU);
  std::vector<bool> out;
  for (int64_t i = 0; i < total.numel(); ++i) out.push_back(total[i].item<int64_t>() > 0);
  return out;
}

std::vector<int64_t> Distributed::all_gather(int64_t value, const std::string& what) {
  const auto device = impl_->device;
  auto slots = torch::zeros({env_.world_size}, torch::dtype(torch::kLong));
  slots[env_.rank] = value;
  const auto all = sum(slots.to(device), what).to(torch::kCPU);
  return std::vector<int64_t>(all.data_ptr<int64_t>(), all.data_ptr<int64_t>() + all.numel());
}

void Distributed::barrier(const std::string& what) {
  try {
    impl_->wait(impl_->group->barrier());
  } catch (const std::exception& e) {
    fail("barrier (" + what + ")", e);
  }
}

void Distributed::notify(const std::string& key) {
  const std::string value = "1";
  try {
    impl_->store->set("detrain/" + key, std::vector<uint8_t>(value.begin(), value.end()));
  } catch (const std::exception& e) {
    fail("announcing " + key, e);
  }
}

void Distributed::wait_for(const std::string& key, std::chrono::milliseconds timeout) {
  try {
    impl_->store->wait({"detrain/" + key}, timeout);
  } catch (const std::exception& e) {
    fail(fmt::format("waiting up to {} s for rank 0 ({})", timeout.count() / 1000.0, key), e);
  }
}

std::string Distributed::from_main(const std::string& key, const std::string& value) {
  const std::string full = "detrain/value/" + key;
  try {
    if (is_main()) {
      impl_->store->set(full, std::vector<uint8_t>(value.begin(), value.end()));
      return value;
    }
    const auto bytes = impl_->store->get(full);  // waits up to the store timeout
    return std::string(bytes.begin(), bytes.end());
  } catch (const std::exception& e) {
    fail("sharing " + key, e);
  }
}

void Distributed::run_collective(const std::string& what, const std::function<void()>& body) {
  try {
    body();
  } catch (const Error&) {
    throw;  // already says what happened (a DistributedError from a nested collective)
  } catch (const c10::OutOfMemoryError&) {
    throw;  // this rank's own failure, whatever the others do
  } catch (const std::exception& e) {
    fail(what, e);
  }
}

c10d::ProcessGroup* Distributed::process_group() const { return impl_->process_group.get(); }

Replicas Distributed::replicas() {
  Replicas r;
  r.world_size = env_.world_size;
  r.rank = env_.rank;
  r.sum = [this](const torch::Tensor& t) {
    return sum(t, "a batch-statistics sum (sync BN or loss normaliser)");
  };
  return r;
}

#else  // no c10d in this LibTorch

struct Distributed::Impl {};

Distributed::Distributed(const DistEnv& env, const torch::Device&, std::chrono::milliseconds)
    : env_(env) {
  throw DistributedError(
      "this detrain was built without c10d Gloo headers (libgloo-dev / a LibTorch with "
      "distributed support), so it cannot train with WORLD_SIZE > 1; rebuild after "
      "scripts/setup.sh");
}
Distributed::~Distributed() = default;
void Distributed::fail(const std::string& what, const std::exception& e) const {
  throw DistributedError(what + ": " + e.what());
}
void Distributed::set_progress(int64_t, const std::string&) {}
void Distributed::broadcast(const std::vector<torch::Tensor>&, const std::string&) {}
void Distributed::average_gradients(const std::vector<torch::Tensor>&, int64_t) {}
torch::Tensor Distributed::sum(const torch::Tensor& t, const std::string&) { return t.clone(); }
bool Distributed::any(bool flag, const std::string&) { return flag; }
std::vector<bool> Distributed::any_of(const std::vector<bool>& flags, const std::string&) {
  return flags;
}
std::vector<int64_t> Distributed::all_gather(int64_t value, const std::string&) { return {value}; }
void Distributed::barrier(const std::string&) {}
void Distributed::notify(const std::string&) {}
std::string Distributed::from_main(const std::string&, const std::string& value) { return value; }
void Distributed::wait_for(const std::string&, std::chrono::milliseconds) {}
Replicas Distributed::replicas() { return {}; }
void Distributed::run_collective(const std::string&, const std::function<void()>& body) { body(); }
c10d::ProcessGroup* Distributed::process_group() const { return nullptr; }

#endif

int64_t tensors_hash(const std::vector<torch::Tensor>& tensors) {
  Hash64 h;
  for (const auto& t : tensors) {
    if (!t.defined()) continue;
    const auto c = t.detach().to(torch::kCPU).contiguous();
    h.update(c.data_ptr(), static_cast<size_t>(c.numel()) * c.element_size());
  }
  return static_cast<int64_t>(h.digest());
}

}  // namespace detrain::dist

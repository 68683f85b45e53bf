// Distributed training started by launchers detrain did not write: the torch wheel's torchrun
// (2 ranks on this host, its agent hosting the store), and two "hosts" — network namespaces
// joined by a veth pair, one rank in each — meeting over that link with the environment
// variables torchrun and Slurm set. Both must train the weights of one process.
#include <torch/torch.h>  // before Catch: c10's logging defines a CHECK that Catch's must replace
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "ckpt/checkpoint.h"
#include "test_support.h"
#include "train/train_fixtures.h"

using namespace detrain;
using namespace detrain::ckpt;
using namespace detrain::test;

namespace {

// One epoch of tiny_dist_args, Newton-Schulz in fp32, so the ranks' result is the single
// process's up to the order of fp32 sums.
std::string tiny_args(const TempDir& dir, const std::string& dataset, const std::string& name) {
  return tiny_dist_args(dir, dataset, name) +
         " train.epochs=1 optim.ns_dtype=fp32 train.dist_timeout_s=60";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The 2-rank run against one process, both from tiny_args, by their last checkpoints. The same
// bound as the loopback test (test_distributed.cpp): fp32 reduction order, measured 2.83e-4 on
// LibTorch 2.11 (model.0.conv.weight), the same value as over loopback.
void check_matches_one_process(const TempDir& dir, const std::string& two_run) {
  const Checkpoint a = load_checkpoint(dir.file("runs/one/weights/last.ckpt"));
  const Checkpoint b = load_checkpoint(dir.file("runs/" + two_run + "/weights/last.ckpt"));
  CHECK(a.position.optimizer_steps == b.position.optimizer_steps);
  CHECK(b.extra_scalars.at("world_size") == 2);
  const auto model = max_difference(a.model, b.model, /*relative=*/true);
  WARN(two_run << " vs 1 process: largest relative difference " << model.value << " at "
               << model.worst_name);
  CHECK(model.value < 3e-4);
}

// Two network namespaces joined by a veth pair, removed on scope exit. Addresses from
// 198.18.0.0/15 (RFC 2544, set aside for benchmarking networks): the link exists only here.
class TwoHosts {
 public:
  TwoHosts() : a_("dtA" + std::to_string(::getpid())), b_("dtB" + std::to_string(::getpid())) {
    const std::string va = "va" + std::to_string(::getpid()),
                      vb = "vb" + std::to_string(::getpid());
    ok_ =
        shell("ip netns add " + a_ + " && ip netns add " + b_ + " && ip link add " + va +
              " type veth peer name " + vb + " && ip link set " + va + " netns " + a_ +
              " && ip link set " + vb + " netns " + b_ + " && ip -n " + a_ + " addr add " + kAddrA +
              "/30 dev " + va + " && ip -n " + b_ + " addr add " + kAddrB + "/30 dev " + vb +
              " && ip -n " + a_ + " link set " + va + " up && ip -n " + b_ + " link set " + vb +
              " up && ip -n " + a_ + " link set lo up && ip -n " + b_ + " link set lo up") == 0;
    if_a_ = va;
    if_b_ = vb;
  }
  ~TwoHosts() { shell("ip netns del " + a_ + " 2>/dev/null; ip netns del " + b_ + " 2>/dev/null"); }
  TwoHosts(const TwoHosts&) = delete;
  TwoHosts& operator=(const TwoHosts&) = delete;

  bool ok() const { return ok_; }
  // `command` run inside host A or B, with GLOO_SOCKET_IFNAME naming that host's end of the link.
  std::string on_a(const std::string& command) const { return in(a_, if_a_, command); }
  std::string on_b(const std::string& command) const { return in(b_, if_b_, command); }

  static constexpr const char* kAddrA = "198.18.0.1";
  static constexpr const char* kAddrB = "198.18.0.2";

 private:
  static std::string in(const std::string& ns, const std::string& ifname,
                        const std::string& command) {
    return "ip netns exec " + ns + " env GLOO_SOCKET_IFNAME=" + ifname + " " + command;
  }
  std::string a_, b_, if_a_, if_b_;
  bool ok_ = false;
};

}  // namespace

TEST_CASE("torchrun --nproc-per-node 2 runs detrain train as 2 ranks of one process's result",
          "[smoke][dist][train]") {
  const auto torchrun = torchrun_or_skip();
  if (!torchrun) return;
  TempDir dir;
  const auto synth = tiny_synth(dir);
  const auto one = run_detrain("train " + tiny_args(dir, synth.detect_yaml, "one"), dir.path());
  INFO(one.output);
  REQUIRE(one.exit_code == 0);

  // torchrun's static rendezvous: its agent hosts the TCPStore on --master-port and tells the
  // ranks so (TORCHELASTIC_USE_AGENT_STORE); --no-python starts the binary itself.
  const std::string command = "cd '" + dir.path() + "' && '" + *torchrun +
                              "' --nnodes 1 --nproc-per-node 2 --master-addr 127.0.0.1 "
                              "--master-port " +
                              std::to_string(free_tcp_port()) + " --no-python '" +
                              detrain_binary() + "' train " +
                              tiny_args(dir, synth.detect_yaml, "torchrun") + " > tr.log 2>&1";
  const int rc = shell(command);
  const std::string log = read_file(dir.file("tr.log"));
  INFO(log);
  REQUIRE(rc == 0);
  CHECK(log.find("1 epochs (2 optimizer steps) in ") != std::string::npos);
  check_matches_one_process(dir, "torchrun");
}

TEST_CASE(
    "two hosts (network namespaces over veth) train together from torchrun and Slurm "
    "variables",
    "[smoke][dist][train]") {
  if (::geteuid() != 0) {
    skip("network namespaces need root (ip netns add)");
    return;
  }
  TwoHosts hosts;
  REQUIRE(hosts.ok());
  TempDir dir;
  const auto synth = tiny_synth(dir);
  const auto one = run_detrain("train " + tiny_args(dir, synth.detect_yaml, "one"), dir.path());
  INFO(one.output);
  REQUIRE(one.exit_code == 0);

  const std::string bin = "'" + detrain_binary() + "' train ";
  // Each host runs one rank as its node's only local rank; rank 0 hosts the store on host A's
  // end of the link, which host B reaches only through the veth pair.
  const auto run_pair = [&](const std::string& name, const std::string& env_a,
                            const std::string& env_b) {
    const std::string args = tiny_args(dir, synth.detect_yaml, name);
    const std::string script = "cd '" + dir.path() + "' && (" +
                               hosts.on_b(env_b + " " + bin + args) + " > " + name +
                               "_b.log 2>&1; echo $? > " + name + "_b.rc) & cd '" + dir.path() +
                               "' && " + hosts.on_a(env_a + " " + bin + args) + " > " + name +
                               "_a.log 2>&1; echo $? > " + name + "_a.rc; wait";
    REQUIRE(shell(script) == 0);
    INFO(read_file(dir.file(name + "_a.log")));
    INFO(read_file(dir.file(name + "_b.log")));
    CHECK(std::stoi(read_file(dir.file(name + "_a.rc"))) == 0);
    CHECK(std::stoi(read_file(dir.file(name + "_b.rc"))) == 0);
  };
  const std::string master = std::string("MASTER_ADDR=") + TwoHosts::kAddrA + " MASTER_PORT=29611";

  SECTION("torchrun's variables") {
    const std::string common = master + " WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1";
    run_pair("netns_env", "RANK=0 GROUP_RANK=0 " + common, "RANK=1 GROUP_RANK=1 " + common);
    check_matches_one_process(dir, "netns_env");
  }
  SECTION("Slurm's variables") {
    const std::string common = std::string(
                                   "SLURM_NTASKS=2 SLURM_NTASKS_PER_NODE=1 SLURM_LOCALID=0 "
                                   "SLURM_LAUNCH_NODE_IPADDR=") +
                               TwoHosts::kAddrA + " MASTER_PORT=29612";
    run_pair("netns_slurm", "SLURM_PROCID=0 SLURM_NODEID=0 " + common,
             "SLURM_PROCID=1 SLURM_NODEID=1 " + common);
    check_matches_one_process(dir, "netns_slurm");
  }
}

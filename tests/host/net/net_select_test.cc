// SPDX-License-Identifier: MIT
// Which network backend GDA gets (comm/net_setup.h, net/select.h), with ranks as threads on
// the cpu platform in two virtual nodes: an explicit CCO_NET=verbs on machines without an RDMA
// device fails, naming the ranks and the reason, instead of falling back; a malformed CCO_NET
// is refused; unset, ranks of one host keep the local backend and tcp is never set up.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "cco/cco.h"
#include "net/select.h"

namespace {

struct Outcome {
  ccoResult_t result = ccoSuccess;
  std::string message;
};

// Two ranks in two nodes each create a GDA device communicator under CCO_NET=`net`.
std::vector<Outcome> CreateUnder(const char* net) {
  setenv("CCO_PLATFORM", "cpu", 1);
  setenv("CCO_TIMEOUT_MS", "20000", 1);
  setenv("CCO_TEST_NODES_PER_HOST", "2", 1);
  if (net != nullptr) setenv("CCO_NET", net, 1);
  else unsetenv("CCO_NET");
  ccoUniqueId id;
  EXPECT_EQ(ccoGetUniqueId(&id), ccoSuccess);
  std::vector<Outcome> out(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      ccoComm* comm = nullptr;
      if (ccoCommCreate(id, 2, r, 8 << 20, &comm) != ccoSuccess) {
        out[r] = {ccoInternalError, ccoGetLastError()};
        return;
      }
      ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
      reqs.gdaConnectionType = CCO_GDA_CONNECTION_FULL;
      reqs.gdaContextCount = 1;
      ccoDevComm dc;
      out[r].result = ccoDevCommCreate(comm, &reqs, &dc);
      out[r].message = ccoGetLastError();
      if (out[r].result == ccoSuccess) ccoDevCommDestroy(comm, &dc);
      ccoCommDestroy(comm);
    });
  }
  for (auto& t : threads) t.join();
  unsetenv("CCO_NET");
  unsetenv("CCO_TEST_NODES_PER_HOST");
  return out;
}

TEST(NetSelect, ExplicitVerbsWithoutADeviceFailsNamingTheRanks) {
  for (const Outcome& o : CreateUnder("verbs")) {
    EXPECT_EQ(o.result, ccoUnsupported) << o.message;
    EXPECT_NE(o.message.find("CCO_NET=verbs"), std::string::npos) << o.message;
    EXPECT_NE(o.message.find("rank(s) 0, 1"), std::string::npos) << o.message;
  }
}

TEST(NetSelect, MalformedChoiceIsRefused) {
  for (const Outcome& o : CreateUnder("infiniband")) {
    EXPECT_EQ(o.result, ccoInvalidArgument) << o.message;
    EXPECT_NE(o.message.find("CCO_NET=infiniband"), std::string::npos) << o.message;
  }
}

TEST(NetSelect, TcpAndUnsetBothWorkBetweenNodes) {
  for (const char* net : {"tcp", static_cast<const char*>(nullptr)})
    for (const Outcome& o : CreateUnder(net)) EXPECT_EQ(o.result, ccoSuccess) << o.message;
}

}  // namespace

namespace cco {
namespace {

// Rank r's end of its queue pair to peer q, lane l: recognisably theirs.
VerbsEndpoint EndOf(int r, int q, int l) {
  VerbsEndpoint e{};
  e.qpn = static_cast<uint32_t>(r) * 100000u + static_cast<uint32_t>(q) * 10u + static_cast<uint32_t>(l);
  e.psn = static_cast<uint32_t>(r);
  return e;
}

// The verbs endpoints of 1100 ranks, two lanes each: an all-gather of each rank's whole table
// (70 KiB) passed the bootstrap's bound of one contribution (64 KiB), so verbs failed past
// 1024 ranks. In rounds, each within the bound, every rank gets exactly the peers' ends for it.
TEST(VerbsEndpoints, ExchangedInRoundsWithinTheContributionBound) {
  const int n = 1100, lanes = 2;
  const size_t bound = 64 << 10;
  for (int me : {0, 1, 1023, 1024, 1099}) {
    std::vector<VerbsEndpoint> mine(static_cast<size_t>(n) * lanes), theirs;
    for (int q = 0; q < n; ++q)
      for (int l = 0; l < lanes; ++l) mine[static_cast<size_t>(q) * lanes + l] = EndOf(me, q, l);
    int rounds = 0;
    // The all-gather every rank makes at once: rank r contributes its ends for the same peers.
    const AllGatherFn gather = [&](const std::string&, const void* data, size_t bytes, void* out) {
      EXPECT_LE(bytes, bound);
      const auto* from = static_cast<const VerbsEndpoint*>(data);
      const size_t first = static_cast<size_t>(from - mine.data()) / lanes,
                   count = bytes / (lanes * sizeof(VerbsEndpoint));
      auto* to = static_cast<VerbsEndpoint*>(out);
      for (int r = 0; r < n; ++r)
        for (size_t p = 0; p < count; ++p)
          for (int l = 0; l < lanes; ++l)
            to[(static_cast<size_t>(r) * count + p) * lanes + l] = EndOf(r, static_cast<int>(first + p), l);
      ++rounds;
      return Status::Ok();
    };
    ASSERT_TRUE(ExchangeEndpoints(n, me, lanes, mine, bound, gather, &theirs).ok());
    EXPECT_EQ(rounds, 2);
    ASSERT_EQ(theirs.size(), mine.size());
    for (int q = 0; q < n; ++q)
      for (int l = 0; l < lanes; ++l)
        ASSERT_EQ(theirs[static_cast<size_t>(q) * lanes + l].qpn, EndOf(q, me, l).qpn) << "me " << me << " q " << q;
  }
}

}  // namespace
}  // namespace cco

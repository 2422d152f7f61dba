// Which network backend GDA gets (net/select.h), with ranks as threads on the cpu platform in
// two virtual nodes: an explicit CCO_NET=verbs on machines without an RDMA device fails,
// naming the ranks and the reason, instead of falling back; a malformed CCO_NET is refused;
// unset, ranks of one host keep the local backend and tcp is never set up.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "cco/cco.h"

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

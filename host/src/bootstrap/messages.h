// SPDX-License-Identifier: MIT
// The bootstrap's messages and their encodings, apart from the I/O so that each decoder
// can be fuzzed on its own. Every decoder reads through bounds-checked WireReader calls,
// refuses trailing bytes, and bounds every string and count it reads.
//
//   rank -> root   RootHello    (first frame of a "root" connection)
//   root -> rank   RootWelcome  (the verdict, and where the hub listens)
//   rank -> hub    HubJoin      (first frame of a "hub" connection)
//   rank -> hub    Contribution (one per collective call), whose payload is, by call:
//                    Exchange        the rank's bytes
//                    Agree           a Report (status, value)
//                    ExchangeGrouped a GroupedPart (group, shared part, grouped part)
//   hub  -> rank   Answer       (the call's status first, then, on success, by call:
//                    Exchange        every contribution
//                    Agree           a Verdict
//                    ExchangeGrouped every shared part, and the rank's group's grouped parts)
//   mesh peers     MeshJoin     (first frame of a "mesh" connection), FdMessage
#ifndef CCO_HOST_BOOTSTRAP_MESSAGES_H_
#define CCO_HOST_BOOTSTRAP_MESSAGES_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "bootstrap/socket.h"
#include "bootstrap/wire.h"

namespace cco {

// The largest world a communicator may have. The root sizes a table by the nRanks a
// hello claims, so it drops any hello above this instead.
constexpr int kMaxRanks = 1 << 20;

// Per-message bounds: what a peer can make this process read and allocate.
constexpr size_t kMaxHelloBytes = 256;
constexpr size_t kMaxWelcomeBytes = 8192;
constexpr size_t kMaxJoinBytes = 64;
constexpr size_t kMaxStatusText = 4096;        // an error message travelling between ranks
constexpr size_t kMaxOpName = 128;             // a collective call's name
constexpr size_t kMaxContribution = 64 << 10;  // one rank's payload in one collective call
constexpr size_t kMaxContributionBytes = kMaxContribution + kMaxOpName + 64;
// What the payload carries, by call, so that it stays within kMaxContribution: Agree's
// value beside a status, ExchangeGrouped's parts beside the group.
constexpr size_t kMaxAgreeValue = kMaxContribution - kMaxStatusText - 64;
constexpr size_t kMaxSharedPart = 256;  // the part every rank gets of every rank
constexpr size_t kMaxGroupedPart = kMaxContribution - kMaxSharedPart - 64;
// An answer carries every rank's contribution (Exchange), or every rank's shared part and
// a group's grouped parts (ExchangeGrouped).
size_t MaxAnswerBytes(int nRanks);

// A status as it travels: code and message (cut to kMaxStatusText); alone, or as the
// first part of a larger message.
std::string EncodeStatus(const Status& s);
Status DecodeStatus(const std::string& bytes, Status* s);
void PutStatus(WireWriter& w, const Status& s);
Status GetStatus(WireReader& r, Status* s);
// The end of a message: trailing bytes are an error.
Status Finished(const WireReader& r);

struct RootHello {
  int32_t nRanks = 0;
  int32_t rank = 0;
  SockAddr hub{};  // rank 0 only
};
std::string EncodeHello(const RootHello& hello);
Status DecodeHello(const std::string& bytes, RootHello* hello);

struct RootWelcome {
  Status status;
  SockAddr hub{};
};
std::string EncodeWelcome(const RootWelcome& welcome);
Status DecodeWelcome(const std::string& bytes, RootWelcome* welcome);

struct HubJoin {
  int32_t rank = 0;
};
std::string EncodeJoin(const HubJoin& join);
Status DecodeJoin(const std::string& bytes, HubJoin* join);

struct Contribution {
  uint64_t seq = 0;
  std::string op;
  std::string payload;
};
std::string EncodeContribution(const Contribution& c);
Status DecodeContribution(const std::string& bytes, Contribution* c);

// The status an answer of any call starts with (a decoding error where it has none).
Status AnswerStatus(const std::string& bytes);

// The hub's answer to Exchange: a status, then (on success) every rank's payload.
std::string EncodeAnswer(const Status& s, const std::vector<std::string>& all);
// The answer's status (a failure is returned as the status itself); on success `all` holds
// exactly nRanks payloads.
Status DecodeAnswer(const std::string& bytes, int nRanks, std::vector<std::string>* all);

// Agree: what a rank reports, and the one verdict rank 0 makes of all the reports.
struct Report {
  Status status;
  std::string value;  // at most kMaxAgreeValue bytes
};
std::string EncodeReport(const Report& r);
Status DecodeReport(const std::string& bytes, Report* r);

struct Verdict {
  int32_t failedRank = -1;     // the lowest rank whose report was a failure (-1: none)
  Status failure;              // its status
  int32_t differentRank = -1;  // else the lowest rank whose value differs from rank 0's (-1: none)
  std::string value;           // rank 0's value
  std::string differentValue;  // rank differentRank's value
};
// Rank 0's verdict on every rank's report (reports[r] from rank r).
Verdict Judge(const std::vector<Report>& reports);
std::string EncodeVerdict(const Verdict& v);  // a successful call's answer
// A failed call's status as the failure; else the verdict, its ranks checked against nRanks.
Status DecodeVerdict(const std::string& bytes, int nRanks, Verdict* v);

// ExchangeGrouped: a rank's contribution, and the answer to the ranks of one group.
struct GroupedPart {
  uint64_t group = 0;
  std::string shared;   // at most kMaxSharedPart bytes, the same size on every rank
  std::string grouped;  // at most kMaxGroupedPart bytes
};
std::string EncodeGroupedPart(const GroupedPart& p);
Status DecodeGroupedPart(const std::string& bytes, GroupedPart* p);
struct GroupMember {
  int32_t rank = 0;
  std::string grouped;
};
// `shared`: every rank's shared part, `sharedSize` bytes each, in rank order.
std::string EncodeGroupAnswer(uint64_t sharedSize, const std::string& shared, const std::vector<GroupMember>& members);
// A failed call's status; else every shared part (nRanks equal parts) and the group's
// members, in rising rank order, each a rank in [0, nRanks).
Status DecodeGroupAnswer(const std::string& bytes, int nRanks, std::string* shared, size_t* sharedSize,
                         std::vector<GroupMember>* members);

struct MeshJoin {
  int32_t member = 0;  // the sender's index in the LSA team
};
std::string EncodeMeshJoin(const MeshJoin& join);
Status DecodeMeshJoin(const std::string& bytes, MeshJoin* join);

// The frame a memory descriptor travels with: which operation it belongs to.
std::string EncodeFdMessage(uint64_t tag);
Status DecodeFdMessage(const std::string& bytes, uint64_t* tag);

}  // namespace cco

#endif  // CCO_HOST_BOOTSTRAP_MESSAGES_H_

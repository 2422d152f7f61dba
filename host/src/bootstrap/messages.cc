// SPDX-License-Identifier: MIT
#include "bootstrap/messages.h"

#include <netinet/in.h>

namespace cco {
namespace {

// A socket address from a peer: only the families and lengths CCO itself sends.
Status GetAddress(WireReader& r, SockAddr* a) {
  CCO_RETURN_IF_ERROR(r.Get(a));
  const int family = a->storage.ss_family;
  if (family == AF_UNSPEC && a->length == 0) return Status::Ok();  // "none"
  if ((family == AF_INET && a->length == sizeof(sockaddr_in)) ||
      (family == AF_INET6 && a->length == sizeof(sockaddr_in6)))
    return Status::Ok();
  return RemoteError("a message carried a malformed socket address");
}

bool KnownCode(int32_t code) { return code >= ccoSuccess && code <= ccoInternalError; }

}  // namespace

Status Finished(const WireReader& r) {
  return r.AtEnd() ? Status::Ok() : RemoteError("a message carried trailing bytes");
}

void PutStatus(WireWriter& w, const Status& s) {
  w.Put(static_cast<int32_t>(s.code())).PutString(s.message().substr(0, kMaxStatusText));
}

Status GetStatus(WireReader& r, Status* s) {
  int32_t code = 0;
  std::string message;
  CCO_RETURN_IF_ERROR(r.Get(&code));
  CCO_RETURN_IF_ERROR(r.GetString(&message, kMaxStatusText));
  if (!KnownCode(code)) return RemoteError(Fmt("a message carried an unknown result code ", code));
  *s = Status(static_cast<ccoResult_t>(code), message);
  return Status::Ok();
}

size_t MaxAnswerBytes(int nRanks) {
  return 64 + kMaxStatusText + static_cast<size_t>(nRanks > 0 ? nRanks : 0) * (kMaxContribution + 16);
}

std::string EncodeStatus(const Status& s) {
  WireWriter w;
  PutStatus(w, s);
  return w.bytes();
}

Status DecodeStatus(const std::string& bytes, Status* s) {
  WireReader r(bytes);
  CCO_RETURN_IF_ERROR(GetStatus(r, s));
  return Finished(r);
}

std::string EncodeHello(const RootHello& h) { return WireWriter().Put(h.nRanks).Put(h.rank).Put(h.hub).bytes(); }

Status DecodeHello(const std::string& bytes, RootHello* h) {
  WireReader r(bytes);
  CCO_RETURN_IF_ERROR(r.Get(&h->nRanks));
  CCO_RETURN_IF_ERROR(r.Get(&h->rank));
  CCO_RETURN_IF_ERROR(GetAddress(r, &h->hub));
  CCO_RETURN_IF_ERROR(Finished(r));
  if (h->nRanks <= 0 || h->nRanks > kMaxRanks) return RemoteError(Fmt("a hello claims nRanks=", h->nRanks));
  return Status::Ok();
}

std::string EncodeWelcome(const RootWelcome& w) { return EncodeStatus(w.status) + WireWriter().Put(w.hub).bytes(); }

Status DecodeWelcome(const std::string& bytes, RootWelcome* w) {
  WireReader r(bytes);
  CCO_RETURN_IF_ERROR(GetStatus(r, &w->status));
  CCO_RETURN_IF_ERROR(GetAddress(r, &w->hub));
  return Finished(r);
}

std::string EncodeJoin(const HubJoin& j) { return WireWriter().Put(j.rank).bytes(); }

Status DecodeJoin(const std::string& bytes, HubJoin* j) {
  WireReader r(bytes);
  CCO_RETURN_IF_ERROR(r.Get(&j->rank));
  return Finished(r);
}

std::string EncodeContribution(const Contribution& c) {
  return WireWriter().Put(c.seq).PutString(c.op).PutString(c.payload).bytes();
}

Status DecodeContribution(const std::string& bytes, Contribution* c) {
  WireReader r(bytes);
  CCO_RETURN_IF_ERROR(r.Get(&c->seq));
  CCO_RETURN_IF_ERROR(r.GetString(&c->op, kMaxOpName));
  CCO_RETURN_IF_ERROR(r.GetString(&c->payload, kMaxContribution));
  return Finished(r);
}

std::string EncodeAnswer(const Status& s, const std::vector<std::string>& all) {
  WireWriter w;
  w.Put(static_cast<uint64_t>(all.size()));
  for (const auto& p : all) w.PutString(p);
  return EncodeStatus(s) + w.bytes();
}

Status DecodeAnswer(const std::string& bytes, int nRanks, std::vector<std::string>* all) {
  WireReader r(bytes);
  Status verdict;
  CCO_RETURN_IF_ERROR(GetStatus(r, &verdict));
  uint64_t n = 0;
  CCO_RETURN_IF_ERROR(r.Get(&n));
  if (!verdict.ok()) return verdict;
  if (n != static_cast<uint64_t>(nRanks)) return RemoteError("the hub answered for a different number of ranks");
  all->assign(n, std::string());
  for (auto& p : *all) CCO_RETURN_IF_ERROR(r.GetString(&p, kMaxContribution));
  return Finished(r);
}

Status AnswerStatus(const std::string& bytes) {
  WireReader r(bytes);
  Status verdict;
  CCO_RETURN_IF_ERROR(GetStatus(r, &verdict));
  return verdict;
}

std::string EncodeReport(const Report& report) {
  WireWriter w;
  PutStatus(w, report.status);
  return w.PutString(report.value).bytes();
}

Status DecodeReport(const std::string& bytes, Report* report) {
  WireReader r(bytes);
  CCO_RETURN_IF_ERROR(GetStatus(r, &report->status));
  CCO_RETURN_IF_ERROR(r.GetString(&report->value, kMaxAgreeValue));
  return Finished(r);
}

Verdict Judge(const std::vector<Report>& reports) {
  Verdict v;
  for (size_t r = 0; r < reports.size(); ++r) {
    if (!reports[r].status.ok()) {
      v.failedRank = static_cast<int32_t>(r);
      v.failure = reports[r].status;
      return v;
    }
  }
  if (reports.empty()) return v;
  v.value = reports[0].value;
  for (size_t r = 1; r < reports.size(); ++r) {
    if (reports[r].value != v.value) {
      v.differentRank = static_cast<int32_t>(r);
      v.differentValue = reports[r].value;
      break;
    }
  }
  return v;
}

std::string EncodeVerdict(const Verdict& v) {
  WireWriter w;
  PutStatus(w, Status::Ok());
  w.Put(v.failedRank);
  PutStatus(w, v.failure);
  w.Put(v.differentRank).PutString(v.value).PutString(v.differentValue);
  return w.bytes();
}

Status DecodeVerdict(const std::string& bytes, int nRanks, Verdict* v) {
  WireReader r(bytes);
  Status call;
  CCO_RETURN_IF_ERROR(GetStatus(r, &call));
  if (!call.ok()) return call;
  CCO_RETURN_IF_ERROR(r.Get(&v->failedRank));
  CCO_RETURN_IF_ERROR(GetStatus(r, &v->failure));
  CCO_RETURN_IF_ERROR(r.Get(&v->differentRank));
  CCO_RETURN_IF_ERROR(r.GetString(&v->value, kMaxAgreeValue));
  CCO_RETURN_IF_ERROR(r.GetString(&v->differentValue, kMaxAgreeValue));
  CCO_RETURN_IF_ERROR(Finished(r));
  // A failure names a rank and carries a failed status; a difference names a rank other than 0.
  const bool failed = v->failedRank >= 0;
  if (v->failedRank < -1 || v->failedRank >= nRanks || failed == v->failure.ok() || v->differentRank < -1 ||
      v->differentRank == 0 || v->differentRank >= nRanks || (failed && v->differentRank >= 0))
    return RemoteError("the hub sent a malformed verdict");
  return Status::Ok();
}

std::string EncodeGroupedPart(const GroupedPart& p) {
  return WireWriter().Put(p.group).PutString(p.shared).PutString(p.grouped).bytes();
}

Status DecodeGroupedPart(const std::string& bytes, GroupedPart* p) {
  WireReader r(bytes);
  CCO_RETURN_IF_ERROR(r.Get(&p->group));
  CCO_RETURN_IF_ERROR(r.GetString(&p->shared, kMaxSharedPart));
  CCO_RETURN_IF_ERROR(r.GetString(&p->grouped, kMaxGroupedPart));
  return Finished(r);
}

std::string EncodeGroupAnswer(uint64_t sharedSize, const std::string& shared, const std::vector<GroupMember>& members) {
  WireWriter w;
  PutStatus(w, Status::Ok());
  w.Put(sharedSize).PutString(shared).Put(static_cast<uint64_t>(members.size()));
  for (const auto& m : members) w.Put(m.rank).PutString(m.grouped);
  return w.bytes();
}

Status DecodeGroupAnswer(const std::string& bytes, int nRanks, std::string* shared, size_t* sharedSize,
                         std::vector<GroupMember>* members) {
  WireReader r(bytes);
  Status call;
  CCO_RETURN_IF_ERROR(GetStatus(r, &call));
  if (!call.ok()) return call;
  const uint64_t n = static_cast<uint64_t>(nRanks > 0 ? nRanks : 0);
  uint64_t size = 0, count = 0;
  CCO_RETURN_IF_ERROR(r.Get(&size));
  if (size > kMaxSharedPart)
    return RemoteError(Fmt("the hub announced ", size, "-byte shared parts (limit ", kMaxSharedPart, ")"));
  CCO_RETURN_IF_ERROR(r.GetString(shared, n * size));
  if (shared->size() != n * size) return RemoteError("the hub answered for a different number of ranks");
  CCO_RETURN_IF_ERROR(r.Get(&count));
  if (count == 0 || count > n) return RemoteError(Fmt("the hub announced a group of ", count, " ranks"));
  members->assign(count, GroupMember{});
  for (uint64_t i = 0; i < count; ++i) {
    GroupMember& m = (*members)[i];
    CCO_RETURN_IF_ERROR(r.Get(&m.rank));
    CCO_RETURN_IF_ERROR(r.GetString(&m.grouped, kMaxGroupedPart));
    if (m.rank < 0 || static_cast<uint64_t>(m.rank) >= n || (i > 0 && m.rank <= (*members)[i - 1].rank))
      return RemoteError("the hub sent a malformed group");
  }
  *sharedSize = size;
  return Finished(r);
}

std::string EncodeMeshJoin(const MeshJoin& j) { return WireWriter().Put(j.member).bytes(); }

Status DecodeMeshJoin(const std::string& bytes, MeshJoin* j) {
  WireReader r(bytes);
  CCO_RETURN_IF_ERROR(r.Get(&j->member));
  return Finished(r);
}

std::string EncodeFdMessage(uint64_t tag) { return WireWriter().Put(tag).bytes(); }

Status DecodeFdMessage(const std::string& bytes, uint64_t* tag) {
  WireReader r(bytes);
  CCO_RETURN_IF_ERROR(r.Get(tag));
  return Finished(r);
}

}  // namespace cco

// SPDX-License-Identifier: MIT
#include "comm/window_table.h"

namespace cco {
namespace {

// Whether `bytes` at `at` (from the window's start) lie inside it, without overflow.
bool Holds(const WindowRecord& w, uint64_t at, uint64_t bytes) { return at <= w.size && bytes <= w.size - at; }

}  // namespace

void WindowTable::Add(const WindowRecord& w) {
  std::lock_guard<std::mutex> lock(mu_);
  byHandle_[w.handle] = w;
  byId_[w.id] = w.handle;
}

bool WindowTable::Remove(ccoWindow_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = byHandle_.find(handle);
  if (it == byHandle_.end()) return false;
  byId_.erase(it->second.id);
  byHandle_.erase(it);
  return true;
}

void WindowTable::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  byHandle_.clear();
  byId_.clear();
}

const WindowRecord* WindowTable::Find(ccoWindow_t handle) const {
  auto it = byHandle_.find(handle);
  return it == byHandle_.end() ? nullptr : &it->second;
}

Status WindowTable::Resolve(uint32_t id, uint64_t offset, uint64_t bytes, uint64_t* inSlice) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = byId_.find(id);
  if (it == byId_.end()) return InvalidArgument(Fmt("window id ", id, " is not a live window of this communicator"));
  const WindowRecord& w = byHandle_.at(it->second);
  // The communicator's own windows hold its device communicators' words, which only its
  // proxies write, at addresses they compute: no request may name them.
  if (w.internal) return InvalidArgument(Fmt("window id ", id, " holds device communicators' resources, not data"));
  if (!Holds(w, offset, bytes))
    return InvalidArgument(Fmt(bytes, " bytes at offset ", offset, " run past window ", id, "'s ", w.size, " bytes"));
  *inSlice = w.offset + offset;
  return Status::Ok();
}

bool WindowTable::Covers(uint64_t inSlice, uint64_t bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& entry : byHandle_) {
    const WindowRecord& w = entry.second;
    if (!w.internal && inSlice >= w.offset && Holds(w, inSlice - w.offset, bytes)) return true;
  }
  return false;
}

}  // namespace cco

// Per-file interned data: the string, frame, stack, stream and thread-name tables that a trace
// file defines in Interned packets (proto/trace.proto). Ids are scoped to one file and never
// reused, and an id is always defined before the first packet that uses it, so a reader feeds
// every Interned packet to Add() as it streams and can resolve ids in the packets that follow.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "trace.pb.h"

namespace idlescope {

class InternedData {
 public:
  void Add(const Interned& interned);
  // A ModuleMap packet: the build ids of the modules the file's frames name.
  void AddModules(const ModuleMap& modules);

  // The string with id `id`; empty for id 0 or an id never defined.
  absl::string_view String(uint64_t id) const;
  bool HasString(uint64_t id) const { return strings_.contains(id); }
  // `s` as a string of this file although another file defined it (a worker's run that its
  // parent's sampler recorded names a path in the parent's table): an id of its own, above every
  // id a recorder hands out, the same one for the same string.
  uint64_t Borrow(absl::string_view s);
  // Stack `stack_id` of `from` as a stack of this file (a worker's run whose Python frames its
  // parent's sampler read): its frames, their strings and its nodes get ids of their own, as
  // Borrow; the same stack gets the same id. 0 for 0, or a stack `from` does not define whole.
  uint64_t BorrowStack(const InternedData& from, uint64_t stack_id);

  // nullptr when not defined.
  const Frame* FindFrame(uint64_t id) const;
  const InternedStream* FindStream(uint64_t id) const;
  // The build id (raw bytes) of the module whose path is string `path_id`, as the file's
  // ModuleMap packets give it; empty when none gave one, or when they gave the path two build ids
  // (a file replaced while the process ran: a frame cannot tell which it was in).
  absl::string_view BuildId(uint64_t path_id) const;
  absl::string_view ThreadName(uint32_t tid) const;

  // The frames of stack `stack_id`, innermost first. Stops at a node whose parent is undefined
  // or at a cycle (a corrupt file must not hang the reader); `complete` tells whether the walk
  // reached the root.
  std::vector<const Frame*> Stack(uint64_t stack_id, bool* complete = nullptr) const;

  // The same frames with the Python ones in their place: each native _PyEval_EvalFrameDefault
  // frame (the interpreter's evaluation loop) replaced by the run of Python frames it executed
  // (Frame.python_entry, proto/trace.proto), innermost first. Python frames whose loop is not
  // among the native frames (the native stack is cut at its depth) follow the last native frame;
  // a stack without Python frames comes back as Stack() gives it.
  std::vector<const Frame*> MergedStack(uint64_t stack_id, bool* complete = nullptr) const;

  // Native: "function (module+0xoff)", with "file:line" appended when known; "?" for unknown
  // parts. Python: "file:line in function".
  std::string FormatFrame(const Frame& frame) const;

  // Entries that redefined an existing id with a different value (a recorder bug; counted, the
  // first definition is kept).
  uint64_t conflicting_ids() const { return conflicting_ids_; }

  size_t string_count() const { return strings_.size(); }
  size_t frame_count() const { return frames_.size(); }
  size_t stack_node_count() const { return stack_nodes_.size(); }
  size_t stream_count() const { return streams_.size(); }

 private:
  struct StackNodeEntry {
    uint64_t parent;
    uint64_t frame;
  };
  absl::flat_hash_map<uint64_t, std::string> strings_;
  absl::flat_hash_map<std::string, uint64_t> borrowed_;
  // BorrowStack's: frames by their content (borrowed string ids), nodes by (parent, frame).
  absl::flat_hash_map<std::string, uint64_t> borrowed_frames_;
  absl::flat_hash_map<std::pair<uint64_t, uint64_t>, uint64_t> borrowed_nodes_;
  uint64_t borrowed_ids_ = 0;  // frames' and nodes' (each table has its own ids)
  absl::flat_hash_map<uint64_t, Frame> frames_;
  absl::flat_hash_map<uint64_t, StackNodeEntry> stack_nodes_;
  absl::flat_hash_map<uint64_t, InternedStream> streams_;
  absl::flat_hash_map<uint32_t, std::string> thread_names_;
  absl::flat_hash_map<uint64_t, std::string> build_ids_;  // by path id; "" when ambiguous
  uint64_t conflicting_ids_ = 0;
};

}  // namespace idlescope

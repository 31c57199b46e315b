#include "analyzer/trace/interned_data.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace idlescope {
namespace {

// Inserts (id, value); counts a redefinition with a different value. The first definition wins:
// ids are never reused by the recorder, so a second one is corruption, not an update.
template <typename Map, typename Value, typename Equal>
void Define(Map& map, uint64_t id, Value&& value, Equal equal, uint64_t* conflicts) {
  auto [it, inserted] = map.try_emplace(id, std::forward<Value>(value));
  if (!inserted && !equal(it->second, value)) ++*conflicts;
}

}  // namespace

void InternedData::Add(const Interned& interned) {
  for (const InternedString& s : interned.strings()) {
    if (s.id() == 0) continue;
    Define(
        strings_, s.id(), s.str(),
        [](const std::string& a, const std::string& b) { return a == b; }, &conflicting_ids_);
  }
  for (const Frame& f : interned.frames()) {
    if (f.id() == 0) continue;
    Define(
        frames_, f.id(), f,
        [](const Frame& a, const Frame& b) {
          return a.function() == b.function() && a.module() == b.module() &&
                 a.rel_pc() == b.rel_pc() && a.file() == b.file() && a.line() == b.line() &&
                 a.kind() == b.kind() && a.first_line() == b.first_line() &&
                 a.python_entry() == b.python_entry();
        },
        &conflicting_ids_);
  }
  for (const StackNode& n : interned.stack_nodes()) {
    if (n.id() == 0) continue;
    Define(
        stack_nodes_, n.id(), StackNodeEntry{n.parent(), n.frame()},
        [](const StackNodeEntry& a, const StackNodeEntry& b) {
          return a.parent == b.parent && a.frame == b.frame;
        },
        &conflicting_ids_);
  }
  for (const InternedStream& s : interned.streams()) {
    if (s.id() == 0) continue;
    Define(
        streams_, s.id(), s,
        [](const InternedStream& a, const InternedStream& b) {
          return a.handle() == b.handle() && a.device() == b.device();
        },
        &conflicting_ids_);
  }
  // Thread names may legitimately change (pthread_setname_np after start): the latest wins.
  for (const idlescope::ThreadName& t : interned.threads()) thread_names_[t.tid()] = t.name();
}

void InternedData::AddModules(const ModuleMap& modules) {
  for (const Module& m : modules.modules()) {
    if (m.path() == 0) continue;
    // The recorder writes a module again after a fork (Symbolizer::Reset): the same id.
    auto [it, inserted] = build_ids_.try_emplace(m.path(), m.build_id());
    if (!inserted && it->second != m.build_id()) it->second.clear();
  }
}

absl::string_view InternedData::BuildId(uint64_t path_id) const {
  auto it = build_ids_.find(path_id);
  return it == build_ids_.end() ? absl::string_view() : absl::string_view(it->second);
}

absl::string_view InternedData::String(uint64_t id) const {
  auto it = strings_.find(id);
  return it == strings_.end() ? absl::string_view() : absl::string_view(it->second);
}

const Frame* InternedData::FindFrame(uint64_t id) const {
  auto it = frames_.find(id);
  return it == frames_.end() ? nullptr : &it->second;
}

const InternedStream* InternedData::FindStream(uint64_t id) const {
  auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : &it->second;
}

absl::string_view InternedData::ThreadName(uint32_t tid) const {
  auto it = thread_names_.find(tid);
  return it == thread_names_.end() ? absl::string_view() : absl::string_view(it->second);
}

std::vector<const Frame*> InternedData::Stack(uint64_t stack_id, bool* complete) const {
  std::vector<const Frame*> frames;
  bool reached_root = stack_id == 0;
  absl::flat_hash_set<uint64_t> seen;
  for (uint64_t id = stack_id; id != 0;) {
    auto it = stack_nodes_.find(id);
    if (it == stack_nodes_.end() || !seen.insert(id).second) break;  // undefined, or a cycle
    if (const Frame* f = FindFrame(it->second.frame)) frames.push_back(f);
    id = it->second.parent;
    if (id == 0) reached_root = true;
  }
  if (complete != nullptr) *complete = reached_root;
  return frames;
}

std::vector<const Frame*> InternedData::MergedStack(uint64_t stack_id, bool* complete) const {
  std::vector<const Frame*> frames = Stack(stack_id, complete);
  // Innermost first, each kind in its order (the recorder stores the Python frames as the inner
  // part of the path: they come first here).
  std::vector<const Frame*> native, python;
  for (const Frame* f : frames) (f->kind() == FRAME_PYTHON ? python : native).push_back(f);
  if (python.empty()) return frames;
  std::vector<const Frame*> merged;
  merged.reserve(frames.size());
  auto next_run = python.begin();  // the innermost Python frame not placed yet
  for (const Frame* f : native) {
    absl::string_view function = String(f->function());
    // "_PyEval_EvalFrameDefault", or a part of it split off by the compiler (".cold").
    if (next_run != python.end() && absl::StartsWith(function, "_PyEval_EvalFrameDefault")) {
      // The run: Python frames up to and including the next entry frame.
      while (next_run != python.end()) {
        const Frame* p = *next_run++;
        merged.push_back(p);
        if (p->python_entry()) break;
      }
    } else {
      merged.push_back(f);
    }
  }
  merged.insert(merged.end(), next_run, python.end());
  return merged;
}

std::string InternedData::FormatFrame(const Frame& frame) const {
  if (frame.kind() == FRAME_PYTHON) {
    absl::string_view file = String(frame.file()), function = String(frame.function());
    std::string out(file.empty() ? "?" : file);
    if (frame.line() != 0) absl::StrAppend(&out, ":", frame.line());
    absl::StrAppend(&out, " in ", function.empty() ? "?" : function);
    return out;
  }
  absl::string_view function = String(frame.function());
  absl::string_view module = String(frame.module());
  // Only the module's file name: full paths make stacks unreadable and the path is in ModuleMap.
  if (size_t slash = module.rfind('/'); slash != absl::string_view::npos) {
    module = module.substr(slash + 1);
  }
  std::string out = absl::StrFormat("%s (%s+0x%x)", function.empty() ? "?" : function,
                                    module.empty() ? "?" : module, frame.rel_pc());
  if (frame.file() != 0) {
    absl::StrAppend(&out, " ", String(frame.file()));
    if (frame.line() != 0) absl::StrAppend(&out, ":", frame.line());
  }
  return out;
}

// Recorders count their ids up from 1: 2^55 is never reached (and stays below the analysis's
// marker ids, analysis/processes.h).
constexpr uint64_t kBorrowedBase = uint64_t{1} << 55;

uint64_t InternedData::Borrow(absl::string_view s) {
  auto [it, added] = borrowed_.try_emplace(std::string(s), kBorrowedBase + borrowed_.size());
  if (added) strings_[it->second] = std::string(s);
  return it->second;
}

uint64_t InternedData::BorrowStack(const InternedData& from, uint64_t stack_id) {
  if (stack_id == 0) return 0;
  bool complete = false;
  const std::vector<const Frame*> frames = from.Stack(stack_id, &complete);
  if (!complete || frames.empty()) return 0;
  auto borrow_string = [&](uint64_t id) { return id == 0 ? 0 : Borrow(from.String(id)); };
  uint64_t parent = 0;
  for (auto f = frames.rbegin(); f != frames.rend(); ++f) {  // outermost first
    Frame frame = **f;
    frame.set_function(borrow_string(frame.function()));
    frame.set_module(borrow_string(frame.module()));
    frame.set_file(borrow_string(frame.file()));
    frame.set_id(0);
    auto [known, added] =
        borrowed_frames_.try_emplace(frame.SerializeAsString(), kBorrowedBase + borrowed_ids_);
    if (added) {
      ++borrowed_ids_;
      frame.set_id(known->second);
      frames_[known->second] = frame;
    }
    auto [node, new_node] = borrowed_nodes_.try_emplace(std::pair{parent, known->second},
                                                        kBorrowedBase + borrowed_ids_);
    if (new_node) {
      ++borrowed_ids_;
      stack_nodes_[node->second] = StackNodeEntry{parent, known->second};
    }
    parent = node->second;
  }
  return parent;
}

}  // namespace idlescope

// The reader's view of a stack with Python frames (analyzer/trace/interned_data.cc): MergedStack
// puts each run of Python frames in place of the native _PyEval_EvalFrameDefault frame that
// executed it, and FormatFrame writes a Python frame as "file:line in function".
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzer/trace/interned_data.h"

namespace idlescope {
namespace {

// A stack built from frames given innermost first, as the recorder stores them (its Python
// frames, then its native frames): native "name" or Python "py:name[:entry]".
class StackBuilder {
 public:
  uint64_t Stack(const std::vector<std::string>& innermost_first) {
    // The trie is defined from the root: outermost frame first.
    uint64_t parent = 0;
    for (auto it = innermost_first.rbegin(); it != innermost_first.rend(); ++it) {
      std::string name = *it;
      const uint64_t id = ++ids_;
      Frame* f = interned_.add_frames();
      f->set_id(id);
      if (name.rfind("py:", 0) == 0) {
        name = name.substr(3);
        f->set_kind(FRAME_PYTHON);
        if (name.size() > 6 && name.substr(name.size() - 6) == ":entry") {
          name.resize(name.size() - 6);
          f->set_python_entry(true);
        }
        f->set_file(String("/job/" + name + ".py"));
        f->set_line(static_cast<uint32_t>(id));
      }
      f->set_function(String(name));
      StackNode* n = interned_.add_stack_nodes();
      n->set_id(id);
      n->set_parent(parent);
      n->set_frame(id);
      parent = id;
    }
    return parent;
  }
  const Interned& interned() const { return interned_; }
  std::vector<std::string> Merged(uint64_t stack) {
    InternedData data;
    data.Add(interned_);
    std::vector<std::string> out;
    for (const Frame* f : data.MergedStack(stack)) {
      out.push_back(std::string(data.String(f->function())));
    }
    return out;
  }

 private:
  uint64_t String(const std::string& s) {
    InternedString* x = interned_.add_strings();
    x->set_id(++strings_);
    x->set_str(s);
    return x->id();
  }
  Interned interned_;
  uint64_t ids_ = 0, strings_ = 0;
};

const char kEval[] = "_PyEval_EvalFrameDefault";

std::vector<std::string> Described(const InternedData& data, uint64_t stack) {
  std::vector<std::string> out;
  for (const Frame* f : data.MergedStack(stack)) out.push_back(data.FormatFrame(*f));
  return out;
}

// A worker's run whose Python frames its parent's sampler read: the stack, an id of the parent's
// file, becomes one of the worker's (job_reader.cc), its frames and strings the same.
TEST(MergedStack, ABorrowedStackReadsTheSameInTheFileThatBorrowedIt) {
  StackBuilder parent, worker;
  const uint64_t decode = parent.Stack({"py:decode", "py:worker_loop", "py:<module>:entry"});
  const uint64_t load = parent.Stack({"py:load", "py:worker_loop", "py:<module>:entry"});
  const uint64_t own = worker.Stack({"py:read", "read", kEval, "main"});  // ids that clash
  InternedData from, into, alone;
  from.Add(parent.interned());
  into.Add(worker.interned());
  alone.Add(worker.interned());
  const uint64_t borrowed = into.BorrowStack(from, decode);
  ASSERT_NE(borrowed, 0u);
  EXPECT_EQ(Described(into, borrowed), Described(from, decode));
  EXPECT_EQ(Described(into, borrowed)[0], "/job/decode.py:3 in decode");
  const size_t frames = into.frame_count(), nodes = into.stack_node_count();
  EXPECT_EQ(into.BorrowStack(from, decode), borrowed);  // the same stack, the same id
  EXPECT_EQ(into.frame_count(), frames);
  EXPECT_EQ(into.stack_node_count(), nodes);
  const uint64_t other = into.BorrowStack(from, load);
  EXPECT_NE(other, borrowed);
  EXPECT_EQ(Described(into, other), Described(from, load));
  // The file's own stacks are untouched; no stack, or one not defined whole, borrows nothing.
  EXPECT_EQ(Described(into, own), Described(alone, own));
  EXPECT_EQ(into.BorrowStack(from, 0), 0u);
  EXPECT_EQ(into.BorrowStack(from, 999), 0u);
}

TEST(MergedStack, RunsReplaceTheirEvaluationLoops) {
  StackBuilder b;
  // 3.11+: write_file and main ran in one loop (entry: main's caller <module>), and a second loop
  // started at cb (called from C by map()).
  uint64_t s =
      b.Stack({"py:write_file", "py:cb:entry", "py:main", "py:<module>:entry", "write", "_Py_write",
               kEval, "map_next", kEval, "PyEval_EvalCode", "Py_RunMain", "main"});
  EXPECT_EQ(b.Merged(s),
            (std::vector<std::string>{"write", "_Py_write", "write_file", "cb", "map_next", "main",
                                      "<module>", "PyEval_EvalCode", "Py_RunMain", "main"}));
}

TEST(MergedStack, Python310HasALoopPerFrame) {
  StackBuilder b;
  uint64_t s =
      b.Stack({"py:read_file:entry", "py:worker:entry", "read", kEval, "call", kEval, "start"});
  EXPECT_EQ(b.Merged(s),
            (std::vector<std::string>{"read", "read_file", "call", "worker", "start"}));
}

TEST(MergedStack, LoopsBeyondTheNativeDepthFollowTheNativeFrames) {
  StackBuilder b;
  // The native stack was cut at its depth: only one loop is among its frames.
  uint64_t s =
      b.Stack({"py:inner:entry", "py:outer:entry", "py:<module>:entry", "write", kEval, "call"});
  EXPECT_EQ(b.Merged(s), (std::vector<std::string>{"write", "inner", "call", "outer", "<module>"}));
  // None at all (stripped interpreter, or depth 1): the Python frames come after.
  uint64_t t = b.Stack({"py:f", "py:<module>:entry", "write"});
  EXPECT_EQ(b.Merged(t), (std::vector<std::string>{"write", "f", "<module>"}));
}

TEST(MergedStack, NativeStacksAreUnchanged) {
  StackBuilder b;
  uint64_t s = b.Stack({"write", kEval, "main"});
  EXPECT_EQ(b.Merged(s), (std::vector<std::string>{"write", kEval, "main"}));
}

TEST(FormatFrame, PythonFramesAreFileLineInFunction) {
  Interned in;
  InternedString* s = in.add_strings();
  s->set_id(1);
  s->set_str("/job/train.py");
  s = in.add_strings();
  s->set_id(2);
  s->set_str("train_step");
  Frame* f = in.add_frames();
  f->set_id(1);
  f->set_kind(FRAME_PYTHON);
  f->set_file(1);
  f->set_function(2);
  f->set_line(42);
  Frame* no_line = in.add_frames();
  *no_line = *f;
  no_line->set_id(2);
  no_line->set_line(0);
  InternedData data;
  data.Add(in);
  EXPECT_EQ(data.FormatFrame(*data.FindFrame(1)), "/job/train.py:42 in train_step");
  EXPECT_EQ(data.FormatFrame(*data.FindFrame(2)), "/job/train.py in train_step");
}

}  // namespace
}  // namespace idlescope

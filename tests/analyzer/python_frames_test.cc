// Python frames in evidence (analysis/python_frames.h, analysis/evidence.h): which files are the
// job's own code, the first user frame of merged stacks, evidence grouped by that line, and the
// native view (--no-python-frames).
#include "analyzer/analysis/python_frames.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/analysis/evidence.h"
#include "analyzer/model/labels.h"

namespace idlescope {
namespace {

TEST(IsUserCode, TheJobsOwnFilesAreUserCode) {
  EXPECT_TRUE(IsUserCode("/home/ada/project/train.py"));
  EXPECT_TRUE(IsUserCode("train.py"));
  EXPECT_TRUE(IsUserCode("/work/torch.py"));            // a file named torch is the user's own
  EXPECT_TRUE(IsUserCode("/work/python/data.py"));      // "python" without a version
  EXPECT_TRUE(IsUserCode("/work/python3/data.py"));     // nor is "python3"
  EXPECT_TRUE(IsUserCode("/work/torchvision_x/a.py"));  // only whole components count
  // A redacted trace's user file (IDLESCOPE_REDACT=paths): hashed directories and name.
  EXPECT_TRUE(IsUserCode("/2f1c3a9b0d4e/77a0c1d2e3f4/0a1b2c3d4e5f.py"));
}

TEST(IsUserCode, LibrariesStandardLibraryTorchAndPseudoFilesAreNot) {
  EXPECT_FALSE(IsUserCode(""));
  EXPECT_FALSE(IsUserCode("<frozen importlib._bootstrap>"));
  EXPECT_FALSE(IsUserCode("<string>"));
  EXPECT_FALSE(IsUserCode("/usr/lib/python3.11/threading.py"));
  EXPECT_FALSE(IsUserCode("/root/.pyenv/versions/3.13.1/lib/python3.13/multiprocessing/popen.py"));
  EXPECT_FALSE(IsUserCode("/opt/py/lib/python3.13t/os.py"));  // free-threaded build
  EXPECT_FALSE(IsUserCode("/usr/lib/python3/dist-packages/torch/serialization.py"));
  EXPECT_FALSE(IsUserCode("/home/ada/venv/lib/python3.12/site-packages/numpy/lib/npyio.py"));
  EXPECT_FALSE(IsUserCode("/home/ada/src/pytorch/torch/utils/data/dataloader.py"));
  EXPECT_FALSE(IsUserCode("relative/site-packages/x.py"));
  // Redacted: the library directories stay readable, the rest is hashed.
  EXPECT_FALSE(IsUserCode("/2f1c3a9b0d4e/python3.11/site-packages/torch/0a1b2c3d4e5f.py"));
  EXPECT_FALSE(IsUserCode("/2f1c3a9b0d4e/python3.11/0a1b2c3d4e5f.py"));
}

SymbolFrame Native(std::string_view function) {
  return {.function = function, .module = "/usr/bin/python3.11", .rel_pc = 0x40};
}
SymbolFrame Python(std::string_view file, uint32_t line, std::string_view function) {
  return {.function = function, .file = file, .line = line, .kind = FRAME_PYTHON};
}

TEST(ChooseFirstUser, TheInnermostUserFrameElseTheInnermostPythonFrame) {
  std::vector<SymbolFrame> frames = {
      Native("write"),
      Python("/usr/lib/python3/dist-packages/torch/serialization.py", 652, "_save"),
      Python("/w/train.py", 42, "train_step"), Python("/w/train.py", 80, "main")};
  std::optional<FirstUserChoice> choice = ChooseFirstUser(frames);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->index, 2u);
  EXPECT_TRUE(choice->user_code);

  frames = {Native("read"), Python("<frozen importlib._bootstrap_external>", 1186, "get_data"),
            Python("/usr/lib/python3.11/runpy.py", 88, "_run_code")};
  choice = ChooseFirstUser(frames);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->index, 1u);
  EXPECT_FALSE(choice->user_code);

  EXPECT_FALSE(ChooseFirstUser({Native("write"), Native("main")}).has_value());
}

class Symbols : public SymbolSource {
 public:
  std::map<std::pair<uint32_t, uint64_t>, std::vector<SymbolFrame>> stacks, native;
  std::string String(uint32_t, uint64_t) const override { return ""; }
  std::vector<SymbolFrame> Stack(uint32_t p, uint64_t id) const override {
    auto it = stacks.find({p, id});
    return it == stacks.end() ? std::vector<SymbolFrame>{} : it->second;
  }
  std::vector<SymbolFrame> NativeStack(uint32_t p, uint64_t id) const override {
    auto it = native.find({p, id});
    return it == native.end() ? SymbolSource::NativeStack(p, id) : it->second;
  }
};

// A torch.save write: libc's frames, torch's C++, torch's Python, then the job's line.
std::vector<SymbolFrame> SaveStack(std::string_view native_leaf) {
  std::vector<SymbolFrame> frames = {{.function = "Record", .module = "/x/libidlescope.so"}};
  for (std::string_view f :
       {native_leaf, std::string_view("std::ostream::write"),
        std::string_view("mz_zip_writer_add_mem"),
        std::string_view("torch::jit::PyTorchStreamWriter::writeRecord"),
        std::string_view("_PyObject_MakeTpCall"), std::string_view("PyObject_Vectorcall")}) {
    frames.push_back(Native(f));
  }
  frames.push_back(Python("/usr/lib/python3/dist-packages/torch/serialization.py", 652, "_save"));
  frames.push_back(Python("/usr/lib/python3/dist-packages/torch/serialization.py", 441, "save"));
  frames.push_back(Python("/w/train.py", 42, "train_step"));
  frames.push_back(Python("/w/train.py", 80, "main"));
  return frames;
}

TEST(PythonEvidence, AStackKnowsItsFirstUserFrameBeyondTheFramesItKeeps) {
  Symbols s;
  s.stacks[{0, 1}] = SaveStack("write");
  ReportSymbols out;
  EvidenceResolver r(s, &out);
  StackId id = r.Stack(0, 1);
  ASSERT_NE(id, 0u);
  EXPECT_EQ(out.Stack(id).size(), kEvidenceStackFrames);
  const FirstUserFrame* first = out.FirstUser(id);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(out.String(first->frame.file), "/w/train.py");
  EXPECT_EQ(first->frame.line, 42u);
  EXPECT_EQ(out.String(first->frame.function), "train_step");
  EXPECT_EQ(first->frame.kind, FRAME_PYTHON);
  EXPECT_EQ(first->depth, 8u);  // the recorder's frame left out
  EXPECT_TRUE(first->user_code);
  EXPECT_EQ(out.FirstUserLabel(id), "/w/train.py:42 in train_step");
  EXPECT_EQ(StackText(id, out),
            "/w/train.py:42 in train_step [write <- std::ostream::write <- mz_zip_writer_add_mem "
            "<- torch::jit::PyTorchStreamWriter::writeRecord <- _PyObject_MakeTpCall <- "
            "PyObject_Vectorcall]");

  // Python frames within the kept ones read by their file's base name.
  s.stacks[{0, 2}] = {Native("read"), Python("/w/data.py", 7, "Shards.__getitem__"),
                      Python("/w/train.py", 50, "main")};
  StackId read = r.Stack(0, 2);
  EXPECT_EQ(out.StackLabel(read), "read <- data.py:7 in Shards.__getitem__ <- train.py:50 in main");
  EXPECT_EQ(out.FirstUserLabel(read), "/w/data.py:7 in Shards.__getitem__");

  // No Python frame: no first user frame, the stack reads as before.
  s.stacks[{0, 3}] = {Native("write"), Native("main")};
  StackId native = r.Stack(0, 3);
  EXPECT_EQ(out.FirstUser(native), nullptr);
  EXPECT_EQ(StackText(native, out), "write <- main");
}

TEST(PythonEvidence, TheSameFramesFromAnotherLineAreAnotherStack) {
  Symbols s;
  s.stacks[{0, 1}] = SaveStack("write");
  s.stacks[{0, 2}] = SaveStack("write");
  s.stacks[{0, 2}][9].line = 61;  // train_step's other torch.save
  ReportSymbols out;
  EvidenceResolver r(s, &out);
  EXPECT_NE(r.Stack(0, 1), r.Stack(0, 2));
  s.stacks[{1, 7}] = SaveStack("write");  // the same in another process's file
  EXPECT_EQ(r.Stack(0, 1), r.Stack(1, 7));
}

TEST(PythonEvidence, OneUserLineReachedThroughOtherNativePathsIsOneItem) {
  Symbols s;
  s.stacks[{0, 1}] = SaveStack("write");
  s.stacks[{0, 2}] = SaveStack("__libc_write");  // the same torch.save, another native path
  s.stacks[{0, 3}] = SaveStack("write");
  s.stacks[{0, 3}][9].line = 61;  // another line of the job
  // Two stacks in the standard library only: not the job's code, kept apart by their frames.
  s.stacks[{0, 4}] = {Native("read"), Python("/usr/lib/python3.11/tarfile.py", 10, "read")};
  s.stacks[{0, 5}] = {Native("pread64"), Python("/usr/lib/python3.11/tarfile.py", 10, "read")};
  TopEvidence top;
  top.Add({0, 1}, 30, 300);
  top.Add({0, 2}, 20, 200);
  top.Add({0, 3}, 25, 10);
  top.Add({0, 4}, 2, 0);
  top.Add({0, 5}, 1, 0);
  ReportSymbols out;
  EvidenceResolver r(s, &out);
  std::vector<EvidenceItem> items = r.Heaviest(top, 5, [&](const EvidenceKey& k) {
    return EvidenceItem{.kind = EvidenceKind::kStack, .id = r.Stack(k.process, k.id)};
  });
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[0].ns, 50);  // train.py:42, both native paths
  EXPECT_EQ(items[0].bytes, 500u);
  EXPECT_EQ(items[0].count, 2u);
  EXPECT_EQ(out.FirstUserLabel(items[0].id), "/w/train.py:42 in train_step");
  EXPECT_EQ(out.Stack(items[0].id)[0].function, out.Intern("write"));  // the heavier path's stack
  EXPECT_EQ(items[1].ns, 25);
  EXPECT_EQ(out.FirstUser(items[1].id)->frame.line, 61u);
  EXPECT_EQ(items[2].ns, 2);
  EXPECT_EQ(items[3].ns, 1);
}

TEST(PythonEvidence, WithoutPythonFramesTheNativeStack) {
  Symbols s;
  s.stacks[{0, 1}] = SaveStack("write");
  // The stack as recorded: the evaluation loop where the merged stack has the Python frames.
  s.native[{0, 1}] = {Native("write"), Native("PyObject_Vectorcall"),
                      Native("_PyEval_EvalFrameDefault"), Native("Py_RunMain")};
  ReportSymbols out;
  EvidenceResolver r(s, &out, /*python_frames=*/false);
  StackId id = r.Stack(0, 1);
  EXPECT_EQ(out.FirstUser(id), nullptr);
  EXPECT_EQ(StackText(id, out),
            "write <- PyObject_Vectorcall <- _PyEval_EvalFrameDefault <- Py_RunMain");
  // A source without a native view of its own drops the Python frames.
  s.stacks[{0, 2}] = {Native("read"), Python("/w/train.py", 3, "main"), Native("Py_RunMain")};
  EXPECT_EQ(StackText(r.Stack(0, 2), out), "read <- Py_RunMain");
}

}  // namespace
}  // namespace idlescope

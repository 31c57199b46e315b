// IDLESCOPE_REDACT (interpose/redact.h): names gone, shapes kept, and every rule of the analyzer
// that reads a path or a command line (analyzer/analysis/event_classes.h) classifies the redacted
// trace as it does the clear one.
#include "interpose/redact.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzer/analysis/event_classes.h"
#include "analyzer/analysis/python_frames.h"

namespace idlescope::redact {
namespace {

constexpr uint8_t kKey[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

std::string File(const std::string& p) { return PathWithKey(p, PathKind::kFile, kKey); }
std::string Program(const std::string& p) { return PathWithKey(p, PathKind::kProgram, kKey); }

// A command line as the hooks pass it: the arguments separated by NUL.
std::string Joined(const std::vector<std::string>& args) {
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i > 0) out.push_back('\0');
    out += args[i];
  }
  return out;
}

TEST(Redact, SipHashReferenceVector) {
  // SipHash paper, appendix A: key 00..0f, message 00..0e.
  std::string message;
  for (char c = 0; c < 15; ++c) message.push_back(c);
  EXPECT_EQ(SipHash24(kKey, message), 0xa129ca6149be45e5ull);
}

TEST(Redact, NamesBecomeKeyedHashesAndShapesStay) {
  std::string a = File("/home/alice/data/train_000.tar");
  std::string b = File("/home/alice/data/train_001.tar");
  EXPECT_EQ(a.find("alice"), std::string::npos) << a;
  EXPECT_EQ(a.find("train"), std::string::npos) << a;
  EXPECT_EQ(a.size(), std::string("/h/h/h/h.tar").size() + 4 * 11) << a;
  EXPECT_TRUE(a.ends_with(".tar"));
  EXPECT_EQ(a.substr(0, a.rfind('/')), b.substr(0, b.rfind('/')));  // same directory
  EXPECT_NE(a, b);
  uint8_t other_key[16] = {1};
  EXPECT_NE(PathWithKey("/home/alice/x", PathKind::kFile, other_key), File("/home/alice/x"));
  // Programs and modules keep their file name.
  std::string python = Program("/home/alice/venv/bin/python3.11");
  EXPECT_TRUE(python.ends_with("/python3.11")) << python;
  EXPECT_EQ(python.find("alice"), std::string::npos);
}

TEST(Redact, SystemPathsPseudoPathsAndAddressesAreKept) {
  for (const char* p : {"/proc/self/stat", "/sys/devices/system/cpu/online", "/dev/pts/3",
                        "/dev/nvidia0", "pipe:[1234]", "socket:[99]", "anon_inode:[eventfd]"}) {
    EXPECT_EQ(File(p), p);
  }
  std::string shm = File("/dev/shm/torch_2331_4211");
  EXPECT_TRUE(shm.starts_with("/dev/shm/")) << shm;
  EXPECT_EQ(shm.find("torch"), std::string::npos);
  EXPECT_EQ(PathWithKey("10.0.0.7:29500", PathKind::kAddress, kKey), "10.0.0.7:29500");
  std::string unix_path = PathWithKey("unix:/tmp/alice.sock", PathKind::kAddress, kKey);
  EXPECT_TRUE(unix_path.starts_with("unix:/")) << unix_path;
  EXPECT_EQ(unix_path.find("alice"), std::string::npos);
  std::string abstract = PathWithKey("unix:@alice", PathKind::kAddress, kKey);
  EXPECT_TRUE(abstract.starts_with("unix:@"));
  EXPECT_EQ(abstract.find("alice"), std::string::npos);
}

// Every path rule of the analyzer gives the same answer on the redacted path.
TEST(Redact, TheAnalyzersPathRulesClassifyAlike) {
  const std::vector<std::string> paths = {
      "/home/alice/run/model.pt",
      "/home/alice/run/model.pt.tmp",
      "/ckpt/step_500/shard-0.distcp",
      "/home/alice/checkpoints/step-500/data-00000-of-00001",
      "/data/ckpt_latest/opt",
      "/models/llama/pytorch_model.bin",
      "/models/llama/adapter_model.bin",
      "/data/shards/sample00001.bin",
      "/data/imagenet/train/n01440764/n01440764_10026.JPEG",
      "/data/corpus.jsonl",
      "/usr/lib/python3/dist-packages/torch/__init__.py",
      "/usr/lib/python3/dist-packages/torch/__pycache__/__init__.cpython-311.pyc",
      "/usr/lib/x86_64-linux-gnu/libcudart.so.13",
      "/opt/conda/lib/libnccl.so",
      "/proc/self/stat",
      "/sys/class/net/eth0/speed",
      "/dev/shm/torch_2331_4211",
      "/dev/pts/2",
      "/dev/nvidiactl",
      "anon_inode:[eventfd]",
      "pipe:[2201]",
      "/weird/name with spaces/file.tar.gz",
      "/data/x.averyveryverylongextensionname",
  };
  for (const std::string& p : paths) {
    std::string r = File(p);
    SCOPED_TRACE(p + " -> " + r);
    EXPECT_EQ(IsModelCheckpointPath(r), IsModelCheckpointPath(p));
    EXPECT_EQ(IsSystemPath(r), IsSystemPath(p));
    EXPECT_EQ(IsCodeFilePath(r), IsCodeFilePath(p));
    EXPECT_EQ(IsDataFilePath(r), IsDataFilePath(p));
  }
}

// The first user frame of a Python stack (analysis/python_frames.h) is the same frame on a
// redacted trace: the library directories stay readable, the job's own are hashed.
TEST(Redact, TheFirstUserFrameRuleClassifiesAlike) {
  const std::vector<std::string> files = {
      "/home/alice/project/train.py",
      "/home/alice/project/torchtools/data.py",
      "/home/alice/python/loader.py",
      "/home/alice/venv/lib/python3.12/site-packages/numpy/lib/npyio.py",
      "/usr/lib/python3/dist-packages/torch/serialization.py",
      "/usr/lib/python3.11/threading.py",
      "/root/.pyenv/versions/3.13.1/lib/python3.13t/os.py",
      "/home/alice/src/pytorch/torch/utils/data/dataloader.py",
      "/work/torch.py",
  };
  for (const std::string& f : files) {
    std::string r = File(f);
    SCOPED_TRACE(f + " -> " + r);
    EXPECT_EQ(IsUserCode(r), IsUserCode(f));
    EXPECT_EQ(r.find("alice"), std::string::npos);
    EXPECT_EQ(r.find("project"), std::string::npos);
  }
  std::string torch = File("/usr/lib/python3/dist-packages/torch/serialization.py");
  EXPECT_TRUE(torch.find("/dist-packages/torch/") != std::string::npos) << torch;
  EXPECT_EQ(torch.find("serialization"), std::string::npos) << torch;
}

TEST(Redact, CommandLinesKeepArgv0AndInstallerWords) {
  EXPECT_EQ(
      ArgvWithKey(Joined({"python", "train.py", "--data", "/home/alice/x"}), true, false, kKey),
      "python");
  EXPECT_EQ(ArgvWithKey(Joined({"python", "-m", "pip", "install", "torch"}), true, false, kKey),
            Joined({"python", "pip", "install"}));
  EXPECT_EQ(ArgvWithKey(Joined({"sh", "-c", "pip install secret-pkg"}), true, false, kKey),
            Joined({"sh", "pip install"}));
  // paths alone: every argument stays, the paths in them redacted.
  std::string kept = ArgvWithKey(
      Joined({"/home/alice/bin/train", "--data=/home/alice/x", "--lr", "0.1"}), false, true, kKey);
  EXPECT_EQ(kept.find("alice"), std::string::npos);
  EXPECT_NE(kept.find("/train"), std::string::npos);
  EXPECT_NE(kept.find(std::string("\0--data=/", 9)), std::string::npos);
  EXPECT_NE(kept.find(std::string("\0--lr\0"
                                  "0.1",
                                  9)),
            std::string::npos);
}

TEST(Redact, TheAnalyzersInstallerRuleClassifiesAlike) {
  struct Command {
    std::string program;
    std::vector<std::string> args;
  };
  const std::vector<Command> commands = {
      {"/usr/bin/pip", {"pip", "install", "torch"}},
      {"/home/alice/venv/bin/python", {"python", "-m", "pip", "install", "-r", "req.txt"}},
      {"/bin/sh", {"sh", "-c", "pip install torch"}},
      {"/usr/bin/env", {"env", "conda", "create", "-n", "x"}},
      {"/opt/conda/bin/conda", {"conda", "env", "update"}},
      {"/usr/bin/python3", {"python3", "train.py", "--epochs", "3"}},
      {"/usr/bin/python3", {"python3", "-c", "import pip"}},
      {"/usr/local/bin/pip3.11", {"pip3.11", "list"}},
  };
  for (const Command& c : commands) {
    const std::string clear = Joined(c.args);
    std::string program = Program(c.program), argv = ArgvWithKey(clear, true, true, kKey);
    SCOPED_TRACE(c.program + " " + c.args[1]);
    EXPECT_EQ(IsInstallerCommand(program, argv), IsInstallerCommand(c.program, clear));
  }
}

// Secrets (on by default): the values of what names a secret, in every form a command line
// carries them; what only looks alike is kept.
TEST(Redact, SecretsInCommandLinesAreRedacted) {
  const struct {
    std::vector<std::string> clear, kept;
  } cases[] = {
      {{"python", "train.py", "--hf-token", "hf_abc", "--epochs", "3"},
       {"python", "train.py", "--hf-token", "<redacted>", "--epochs", "3"}},
      {{"python", "train.py", "--wandb_api_key=0123", "--api-key", "k", "--password=p"},
       {"python", "train.py", "--wandb_api_key=<redacted>", "--api-key", "<redacted>",
        "--password=<redacted>"}},
      {{"env", "AWS_SECRET_ACCESS_KEY=wJalr", "HF_TOKEN=hf_x", "LANG=C", "python"},
       {"env", "AWS_SECRET_ACCESS_KEY=<redacted>", "HF_TOKEN=<redacted>", "LANG=C", "python"}},
      {{"curl", "-H", "Authorization: Bearer eyJh", "-H", "X-Api-Key:abc", "https://x/y"},
       {"curl", "-H", "Authorization: <redacted> <redacted>", "-H", "X-Api-Key:<redacted>",
        "https://x/y"}},
      {{"pip", "install", "--index-url", "https://bob:s3cret@pypi.corp/simple", "torch"},
       {"pip", "install", "--index-url", "https://bob:<redacted>@pypi.corp/simple", "torch"}},
      {{"sh", "-c", "python train.py --token abc --lr 0.1"},
       {"sh", "-c", "python train.py --token <redacted> --lr 0.1"}},
      // A flag that names a secret but takes no value keeps the option after it.
      {{"tool", "--use-auth", "--verbose"}, {"tool", "--use-auth", "--verbose"}},
      // Other words: kept.
      {{"python", "gen.py", "--max-tokens", "128", "--tokenizer=gpt2", "--author", "me", "--key",
        "id", "ssh://git@host/repo", "http://[::1]:80/x"},
       {"python", "gen.py", "--max-tokens", "128", "--tokenizer=gpt2", "--author", "me", "--key",
        "id", "ssh://git@host/repo", "http://[::1]:80/x"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.clear[1]);
    EXPECT_EQ(SecretsRedacted(Joined(c.clear)), Joined(c.kept));
  }
  // The installer rule reads the same command after it.
  const std::string pip = Joined({"pip", "install", "--index-url", "https://u:p@h/s", "torch"});
  EXPECT_EQ(IsInstallerCommand("/usr/bin/pip", SecretsRedacted(pip)),
            IsInstallerCommand("/usr/bin/pip", pip));
}

}  // namespace
}  // namespace idlescope::redact

#include "interpose/hooks/io_fd_table.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>

namespace idlescope::io {

FsType FsTypeFromStatfsMagic(uint64_t f_type) {
  // Values from linux/magic.h and the filesystems' own sources (Lustre, GPFS, BeeGFS, Ceph
  // are out of tree or not in magic.h). statfs reports f_type as a signed long on some ABIs:
  // compare the low 32 bits.
  switch (f_type & 0xffffffffu) {
    case 0xEF53:      // ext2/3/4
    case 0x58465342:  // xfs
    case 0x9123683E:  // btrfs
    case 0x2FC12FC1:  // zfs
    case 0xF2F52010:  // f2fs
    case 0x4d44:      // vfat
    case 0x2011BAB0:  // exfat
    case 0x5346544e:  // ntfs
    case 0x73717368:  // squashfs
    case 0x9660:      // iso9660
    case 0x3153464a:  // jfs
    case 0x52654973:  // reiserfs
    case 0xE0F5E1E2:  // erofs
      return kFsLocal;
    case 0x01021994:  // tmpfs (also /dev/shm and devtmpfs)
    case 0x858458f6:  // ramfs
    case 0x958458f6:  // hugetlbfs
      return kFsTmpfs;
    case 0x6969:  // nfs (v2-v4)
      return kFsNfs;
    case 0x65735546:  // fuse (blobfuse, gcsfuse, s3fs, sshfs...)
    case 0x65735543:  // fusectl
      return kFsFuse;
    case 0xFF534D42:  // cifs
    case 0xFE534D42:  // smb2
    case 0x517B:      // smb
      return kFsCifs;
    case 0x0BD00BD0:  // lustre
      return kFsLustre;
    case 0x794c7630:  // overlayfs (container root filesystems)
      return kFsOverlay;
    case 0x50495045:  // pipefs
      return kFsPipe;
    case 0x534F434B:  // sockfs
      return kFsSocket;
    case 0x9fa0:      // proc
    case 0x62656572:  // sysfs
    case 0x1cd1:      // devpts
    case 0x27e0eb:    // cgroup
    case 0x63677270:  // cgroup2
    case 0x64626720:  // debugfs
    case 0x74726163:  // tracefs
    case 0xcafe4a11:  // bpf
      return kFsDevice;
    case 0x00C36400:  // ceph
    case 0x47504653:  // gpfs
    case 0x19830326:  // beegfs
    case 0x01021997:  // 9p (v9fs)
    case 0x5346414F:  // afs
    case 0x6B414653:  // kafs
    case 0x013111A8:  // ibrix
    case 0x61636673:  // acfs
      return kFsOtherRemote;
    default:
      return kFsOther;
  }
}

FsType FsTypeFromMode(uint32_t st_mode) {
  switch (st_mode & S_IFMT) {
    case S_IFSOCK:
      return kFsSocket;
    case S_IFIFO:
      return kFsPipe;
    case S_IFCHR:
    case S_IFBLK:
      return kFsDevice;
    default:
      return kFsUnspecified;
  }
}

void FdTable::Release() {
  for (auto& slot : chunks_) {
    std::atomic<uint64_t>* chunk = slot.exchange(nullptr);
    if (chunk != nullptr) munmap(chunk, sizeof(std::atomic<uint64_t>) * kChunkSize);
  }
}

std::atomic<uint64_t>* FdTable::ChunkFor(int fd) {
  auto& slot = chunks_[fd >> kChunkBits];
  std::atomic<uint64_t>* chunk = slot.load(std::memory_order_acquire);
  if (chunk != nullptr) return chunk;
  // mmap, not malloc: anonymous pages are zero (= kUnknown) and this is safe in any context.
  void* mem = mmap(nullptr, sizeof(std::atomic<uint64_t>) * kChunkSize, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return nullptr;
  auto* fresh = static_cast<std::atomic<uint64_t>*>(mem);
  if (slot.compare_exchange_strong(chunk, fresh, std::memory_order_acq_rel)) return fresh;
  munmap(mem, sizeof(std::atomic<uint64_t>) * kChunkSize);  // another thread won
  return chunk;
}

void FdTable::Set(int fd, const FdInfo& info) {
  if (fd < 0 || fd >= kMaxFds) return;
  std::atomic<uint64_t>* chunk = ChunkFor(fd);
  if (chunk != nullptr) chunk[fd & (kChunkSize - 1)].store(info.Pack(), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
}

void FdTable::Clear(int fd) {
  if (fd < 0 || fd >= kMaxFds) return;
  std::atomic<uint64_t>* chunk = chunks_[fd >> kChunkBits].load(std::memory_order_acquire);
  if (chunk != nullptr) chunk[fd & (kChunkSize - 1)].store(0, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
}

void FdTable::ClearRange(unsigned first, unsigned last) {
  last = std::min<unsigned>(last, kMaxFds - 1);
  for (unsigned fd = first; fd <= last;) {
    std::atomic<uint64_t>* chunk = chunks_[fd >> kChunkBits].load(std::memory_order_acquire);
    unsigned chunk_end = (fd | (kChunkSize - 1));
    unsigned end = std::min(chunk_end, last);
    if (chunk != nullptr) {
      for (unsigned i = fd; i <= end; ++i) chunk[i & (kChunkSize - 1)].store(0);
    }
    if (end == last) break;
    fd = end + 1;
  }
  generation_.fetch_add(1, std::memory_order_release);
}

}  // namespace idlescope::io

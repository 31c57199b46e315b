// Protobuf wire format, written by hand (the idea of Perfetto's protozero): the preload library
// must not load libprotobuf into a traced program that may carry its own version (TensorFlow,
// PyTorch). tests/interpose/wire_test.cc checks every message byte for byte against libprotobuf.
//
// Rules followed (those of libprotobuf's serializer for proto3): fields in field-number order,
// zero scalars omitted (callers use the Opt* helpers), `optional` scalars written when present
// even if zero, repeated scalars packed, lengths as minimal varints.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "interpose/care_heap.h"

namespace idlescope::wire {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

inline size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

inline uint8_t* WriteVarint(uint64_t v, uint8_t* p) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// A growable byte buffer (malloc'd, never through a hook: malloc is not intercepted by idlescope;
// from the care heap in a final flush that may not call malloc, care_heap.h) with nested
// length-delimited messages. A nested message reserves the 5 bytes a 32-bit length
// can take and, when it ends, moves its body down to follow a minimal varint: libprotobuf writes
// minimal lengths, and byte equality with it is part of the contract.
class Buffer {
 public:
  Buffer() = default;
  ~Buffer() { care_heap::Free(data_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() { size_ = 0; }
  std::string_view view() const {
    return std::string_view(reinterpret_cast<const char*>(data_), size_);
  }
  // Drops everything after `size` (used to roll back a message that turned out empty).
  void Truncate(size_t size) {
    if (size < size_) size_ = size;
  }

  void Reserve(size_t extra) {
    if (size_ + extra <= capacity_) return;
    size_t cap = capacity_ ? capacity_ * 2 : 4096;
    while (cap < size_ + extra) cap *= 2;
    void* p = care_heap::Reallocate(data_, size_, cap);
    if (p == nullptr) std::abort();  // out of memory in the writer: nothing sane to do
    data_ = static_cast<uint8_t*>(p);
    capacity_ = cap;
  }

  void Raw(const void* bytes, size_t n) {
    Reserve(n);
    if (n) std::memcpy(data_ + size_, bytes, n);
    size_ += n;
  }
  void Varint(uint64_t v) {
    Reserve(10);
    size_ = WriteVarint(v, data_ + size_) - data_;
  }
  void Tag(uint32_t field, WireType type) { Varint((static_cast<uint64_t>(field) << 3) | type); }

  // Scalars, always written (for `optional` fields and packed contents).
  void U64(uint32_t field, uint64_t v) {
    Tag(field, kVarint);
    Varint(v);
  }
  // int32 fields: negative values are sign-extended to 10 bytes, as libprotobuf does.
  void I32(uint32_t field, int32_t v) {
    U64(field, static_cast<uint64_t>(static_cast<int64_t>(v)));
  }
  void S64(uint32_t field, int64_t v) { U64(field, ZigZag(v)); }
  void Bool(uint32_t field, bool v) { U64(field, v ? 1 : 0); }
  void Bytes(uint32_t field, std::string_view s) {
    Tag(field, kLengthDelimited);
    Varint(s.size());
    Raw(s.data(), s.size());
  }

  // proto3 implicit presence: zero/empty values are not written.
  void OptU64(uint32_t field, uint64_t v) {
    if (v) U64(field, v);
  }
  void OptI32(uint32_t field, int32_t v) {
    if (v) I32(field, v);
  }
  void OptS64(uint32_t field, int64_t v) {
    if (v) S64(field, v);
  }
  void OptBool(uint32_t field, bool v) {
    if (v) Bool(field, v);
  }
  void OptBytes(uint32_t field, std::string_view s) {
    if (!s.empty()) Bytes(field, s);
  }

  // Nested message: Begin returns a token for End. The body is written between the two.
  size_t BeginNested(uint32_t field) {
    Tag(field, kLengthDelimited);
    Reserve(kLenReserve);
    size_ += kLenReserve;
    return size_;
  }
  void EndNested(size_t body_start) {
    size_t len = size_ - body_start;
    uint8_t tmp[10];
    size_t n = WriteVarint(len, tmp) - tmp;
    uint8_t* len_at = data_ + body_start - kLenReserve;
    std::memcpy(len_at, tmp, n);
    if (n != kLenReserve) std::memmove(len_at + n, data_ + body_start, len);
    size_ -= kLenReserve - n;
  }

  // Packed repeated varints: `values` are written as one length-delimited field.
  template <typename It, typename F>
  void PackedVarints(uint32_t field, It begin, It end, F to_u64) {
    if (begin == end) return;
    size_t len = 0;
    for (It it = begin; it != end; ++it) len += VarintSize(to_u64(*it));
    Tag(field, kLengthDelimited);
    Varint(len);
    for (It it = begin; it != end; ++it) Varint(to_u64(*it));
  }

 private:
  static constexpr size_t kLenReserve = 5;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace idlescope::wire

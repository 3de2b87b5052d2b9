// Byte-level encoding shared by the log, the operation codec and snapshot
// files: little-endian fixed-width integers, LEB128 varints (zigzag for
// signed values) and length-prefixed strings.
//
// Decoding never reads past the input: every Get* checks the bytes left and
// reports failure instead (a malformed record is an error, never UB).
//
// Thread-safety: ByteReader is a value over borrowed bytes; one user.
#ifndef LEASEKEEPER_STORAGE_CODING_H_
#define LEASEKEEPER_STORAGE_CODING_H_

#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/string_view.h"

namespace leasekeeper::storage {

inline void PutFixed32(std::string& out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out.append(b, 4);
}

inline void PutFixed64(std::string& out, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out.append(b, 8);
}

inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  }
  return v;
}

inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  }
  return v;
}

inline void PutVarint64(std::string& out, uint64_t v) {
  char b[10];
  int n = 0;
  while (v >= 0x80) {
    b[n++] = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  b[n++] = static_cast<char>(v);
  out.append(b, n);
}

inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
}

inline void PutSignedVarint64(std::string& out, int64_t v) {
  PutVarint64(out, ZigZag(v));
}

inline void PutLengthPrefixed(std::string& out, absl::string_view s) {
  PutVarint64(out, s.size());
  out.append(s.data(), s.size());
}

// Reads the encodings above from a span of bytes. Each Get* returns false
// (and leaves the reader in an unspecified position) if the input ends
// early or is not a valid encoding.
class ByteReader {
 public:
  explicit ByteReader(absl::string_view in) : in_(in) {}

  size_t remaining() const { return in_.size(); }
  bool empty() const { return in_.empty(); }

  bool GetByte(uint8_t& v) {
    if (in_.empty()) return false;
    v = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return true;
  }

  bool GetVarint64(uint64_t& v) {
    uint64_t result = 0;
    for (int shift = 0; shift <= 63; shift += 7) {
      if (in_.empty()) return false;
      const uint64_t byte = static_cast<unsigned char>(in_[0]);
      in_.remove_prefix(1);
      // The 10th byte may only carry the top bit of a 64-bit value.
      if (shift == 63 && byte > 1) return false;
      result |= (byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) {
        v = result;
        return true;
      }
    }
    return false;
  }

  bool GetSignedVarint64(int64_t& v) {
    uint64_t u;
    if (!GetVarint64(u)) return false;
    v = UnZigZag(u);
    return true;
  }

  // A length-prefixed string of at most max_bytes bytes, as a view into the
  // input (valid while the input is).
  bool GetLengthPrefixed(absl::string_view& s, uint64_t max_bytes) {
    uint64_t n;
    if (!GetVarint64(n) || n > max_bytes || n > in_.size()) return false;
    s = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
  }

  bool GetString(std::string& s, uint64_t max_bytes) {
    absl::string_view view;
    if (!GetLengthPrefixed(view, max_bytes)) return false;
    s.assign(view.data(), view.size());
    return true;
  }

 private:
  absl::string_view in_;
};

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_STORAGE_CODING_H_

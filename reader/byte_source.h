// reader/byte_source.h: where the bytes of a recording come from.
//
// The .gwt reader only needs "give me the next bytes": a file today, a socket connection or a
// decompressor later. Keeping that behind one small interface is what lets the collector daemon
// and the offline tools share the reader (recording_reader.h) and the frame decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace gapwatch {

class ByteSource {
 public:
  virtual ~ByteSource() = default;

  // Reads up to buffer.size() bytes; returns how many, 0 at the end of the data or on an error
  // (then failure() says what went wrong).
  virtual std::size_t read(std::span<uint8_t> buffer) = 0;

  // Empty while all is well; otherwise why reading stopped ("Is a directory").
  virtual const std::string& failure() const = 0;
};

// A file, read with plain POSIX calls so that errors (missing file, a directory, no permission)
// come back as the system's own words.
class FileByteSource final : public ByteSource {
 public:
  explicit FileByteSource(const std::string& path);
  ~FileByteSource() override;
  FileByteSource(const FileByteSource&) = delete;
  FileByteSource& operator=(const FileByteSource&) = delete;

  // False when the file could not be opened; failure() says why.
  bool isOpen() const { return fd_ >= 0; }

  std::size_t read(std::span<uint8_t> buffer) override;
  const std::string& failure() const override { return failure_; }

 private:
  int fd_ = -1;
  std::string failure_;
};

// Bytes already in memory (tests, fuzzing). Does not own them.
class MemoryByteSource final : public ByteSource {
 public:
  explicit MemoryByteSource(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  std::size_t read(std::span<uint8_t> buffer) override;
  const std::string& failure() const override { return failure_; }

 private:
  std::span<const uint8_t> bytes_;
  std::size_t position_ = 0;
  std::string failure_;  // always empty
};

}  // namespace gapwatch

#pragma once
// gzip (RFC 1952, by zlib) for the exposition: rendered straight into its
// compressed form once per sweep and kept only so (at 80k ports the text is
// hundreds of MB, the gzip a few percent of it). A gzip scrape is served
// those bytes as they are; a plain one streams them out inflated, slice by
// slice, never holding the whole text.
//
// Thread-safety: none per object; GunzipReader only reads the bytes it
// borrows, so any number may read one snapshot's exposition at once.

#include <zlib.h>

#include <array>
#include <cstddef>
#include <streambuf>
#include <string>

namespace ibfabric::exporter {

// An ostream's buffer that deflates what is written into a gzip member.
//   GzipWriter w;  std::ostream out(&w);  out << ...;  std::string gz = w.Finish();
class GzipWriter final : public std::streambuf {
 public:
  // `expected`: the compressed size to make room for at once (the last
  // exposition's and a little more): no doubling of the buffer on the way
  // and no copy at Finish when it was about right.
  explicit GzipWriter(int level = Z_DEFAULT_COMPRESSION, std::size_t expected = 0);
  ~GzipWriter() override;
  GzipWriter(const GzipWriter&) = delete;
  GzipWriter& operator=(const GzipWriter&) = delete;

  // Ends the member and hands it over; nothing may be written after.
  std::string Finish();
  // Bytes written so far (the plain text's size).
  std::size_t plain_bytes() const { return plain_ + static_cast<std::size_t>(pptr() - pbase()); }

 protected:
  int_type overflow(int_type ch) override;

 private:
  void Deflate(int flush);

  z_stream z_{};
  std::array<char, 64 * 1024> in_{};
  std::string out_;
  std::size_t plain_ = 0;
  bool finished_ = false;
};

// The whole of `text` as one gzip member (tests, small bodies).
std::string Gzip(const std::string& text);

// Reads a gzip member back, a slice at a time. Borrows `gz`.
class GunzipReader {
 public:
  explicit GunzipReader(const std::string& gz);
  ~GunzipReader();
  GunzipReader(const GunzipReader&) = delete;
  GunzipReader& operator=(const GunzipReader&) = delete;

  // Up to `max` (> 0) more bytes of the text into *out (replacing what it
  // held). False when there is no more: at the end, or on input that is not
  // gzip or is cut short (error() says which).
  bool Next(std::string* out, std::size_t max);
  bool error() const { return error_; }

 private:
  z_stream z_{};
  const std::string& gz_;
  bool ended_ = false;
  bool error_ = false;
};

// The whole text back (tests, --once); empty when `gz` is not valid gzip.
std::string Gunzip(const std::string& gz);

}  // namespace ibfabric::exporter

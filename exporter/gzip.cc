#include "exporter/gzip.h"

#include <stdexcept>

namespace ibfabric::exporter {
namespace {

// windowBits 15 + 16: a gzip header and trailer rather than zlib's (zlib.h).
constexpr int kGzipWindow = 15 + 16;
constexpr std::size_t kOutSlice = 64 * 1024;

}  // namespace

GzipWriter::GzipWriter(int level, std::size_t expected) {
  out_.reserve(expected);
  if (deflateInit2(&z_, level, Z_DEFLATED, kGzipWindow, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("gzip: deflateInit2 failed");
  }
  setp(in_.data(), in_.data() + in_.size());
}

GzipWriter::~GzipWriter() { deflateEnd(&z_); }

void GzipWriter::Deflate(int flush) {
  const std::size_t n = static_cast<std::size_t>(pptr() - pbase());
  plain_ += n;
  z_.next_in = reinterpret_cast<Bytef*>(pbase());
  z_.avail_in = static_cast<uInt>(n);
  int rc = Z_OK;
  do {
    const std::size_t had = out_.size();
    out_.resize(had + kOutSlice);
    z_.next_out = reinterpret_cast<Bytef*>(out_.data() + had);
    z_.avail_out = static_cast<uInt>(kOutSlice);
    rc = deflate(&z_, flush);
    out_.resize(had + kOutSlice - z_.avail_out);
    if (rc == Z_STREAM_ERROR) throw std::runtime_error("gzip: deflate failed");
  } while (z_.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
  setp(in_.data(), in_.data() + in_.size());
}

GzipWriter::int_type GzipWriter::overflow(int_type ch) {
  if (finished_) return traits_type::eof();
  Deflate(Z_NO_FLUSH);
  if (!traits_type::eq_int_type(ch, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(ch);
    pbump(1);
  }
  return traits_type::not_eof(ch);
}

std::string GzipWriter::Finish() {
  if (!finished_) {
    Deflate(Z_FINISH);
    finished_ = true;
    setp(nullptr, nullptr);
  }
  // A copy to give back what a growing buffer left unused (up to half).
  if (out_.capacity() - out_.size() > out_.size() / 8 + kOutSlice) out_.shrink_to_fit();
  return std::move(out_);
}

std::string Gzip(const std::string& text) {
  GzipWriter w;
  w.sputn(text.data(), static_cast<std::streamsize>(text.size()));
  return w.Finish();
}

GunzipReader::GunzipReader(const std::string& gz) : gz_(gz) {
  if (inflateInit2(&z_, kGzipWindow) != Z_OK) throw std::runtime_error("gzip: inflateInit2 failed");
  z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz_.data()));
  z_.avail_in = static_cast<uInt>(gz_.size());
}

GunzipReader::~GunzipReader() { inflateEnd(&z_); }

bool GunzipReader::Next(std::string* out, std::size_t max) {
  out->clear();
  if (ended_ || error_ || max == 0) return false;
  out->resize(max);
  z_.next_out = reinterpret_cast<Bytef*>(out->data());
  z_.avail_out = static_cast<uInt>(max);
  while (z_.avail_out > 0) {
    const int rc = inflate(&z_, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      ended_ = true;
      break;
    }
    if (rc != Z_OK || (z_.avail_in == 0 && z_.avail_out > 0)) {
      // Corrupt, or the input ended before the member did.
      error_ = true;
      break;
    }
  }
  out->resize(max - z_.avail_out);
  if (error_) return false;
  return !out->empty() || !ended_;
}

std::string Gunzip(const std::string& gz) {
  GunzipReader r(gz);
  std::string text, slice;
  while (r.Next(&slice, kOutSlice)) text += slice;
  return r.error() ? std::string() : text;
}

}  // namespace ibfabric::exporter

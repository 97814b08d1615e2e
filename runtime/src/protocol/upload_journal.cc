#include "fedrt/protocol/upload_journal.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace fedrt::protocol {

namespace {
Status IoError(const char* what) {
  return Status(StatusCode::kInternal, std::string("upload journal: ") + what + ": " + std::strerror(errno));
}
}  // namespace

UploadJournal::~UploadJournal() {
  if (file_ != nullptr) std::fclose(file_);
}

Status UploadJournal::reset() {
  if (file_ == nullptr) {
    file_ = std::tmpfile();
    if (file_ == nullptr) return IoError("cannot create a temporary file");
  } else if (size_ > 0) {
    if (std::fflush(file_) != 0 || ::ftruncate(fileno(file_), 0) != 0) return IoError("truncate");
  }
  size_ = 0;
  if (std::fseek(file_, 0, SEEK_SET) != 0) return IoError("seek");
  return Status::Ok();
}

Status UploadJournal::append(const uint8_t* data, size_t n) {
  if (file_ == nullptr) FEDRT_TRY(reset());
  if (std::fseek(file_, static_cast<long>(size_), SEEK_SET) != 0) return IoError("seek");
  if (std::fwrite(data, 1, n, file_) != n) return IoError("write");
  size_ += n;
  return Status::Ok();
}

Status UploadJournal::read(uint64_t offset, uint8_t* out, size_t n) const {
  if (offset + n > size_) return Status::OutOfRange("upload journal: read past the bytes taken");
  if (std::fflush(file_) != 0 || std::fseek(file_, static_cast<long>(offset), SEEK_SET) != 0) return IoError("seek");
  if (std::fread(out, 1, n, file_) != n) return IoError("read");
  return Status::Ok();
}

}  // namespace fedrt::protocol
